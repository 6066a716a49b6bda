"""The shared machinery of higher-order ops: speculate a body into its own subgraph.

A higher-order op (`torch.cond`, `map`, `wrap`, `checkpoint`) takes Python callables and
tensors. Its bodies are traced, not called: each into a child FX graph
(`OutputGraph.subgraph()`), inside a speculation scope (`SideEffects.scope()`, Note
[Speculation scopes] in vars/base.py) so that a write to anything made outside the body is
refused, with the tensors it receives as the child's first placeholders and every outer
tensor it reads (a closed-over local, a global, a parameter or buffer, a tensor computed
earlier) lifted to a further placeholder. `speculate(tx, op, trace)` runs the whole op
under one checkpoint (Note [Checkpoints]): when a body breaks the graph (a refused write,
an untraceable call) or raises, everything is restored as if the op had never been traced
and the graph breaks at the op's call, which then runs eagerly; under `fullgraph=True` the
user gets `Unsupported` with the body's reason (the variable, the op, the user's line).

Bodies exchange pytrees with the op: `flatten`/`unflatten` turn tensors, constants and
tuples/lists/dicts of them into leaves and a spec (a nested tuple, compared with `==`).
"""
from __future__ import annotations

import operator
from dataclasses import dataclass

import torch
import torch.fx
from torch.multiprocessing.reductions import StorageWeakRef

from ...errors import GraphBreak, TracedRaise
from ..constant import ConstantVariable
from ..containers import DictVariable, ListVariable, TupleVariable
from ..tensor import TensorVariable

TENSOR = ("tensor",)


def flatten(tx, vt, what: str, constants: bool = False) -> tuple:
    """(leaves, spec) of pytree `vt`: tensors (and, if `constants`, Python constants kept
    in the spec) inside tuples, lists and dicts. Anything else breaks, naming `what`."""
    leaves: list = []
    return leaves, _flatten(tx, vt, what, constants, leaves)


def _flatten(tx, vt, what, constants, leaves):
    if vt.is_tensor:
        leaves.append(vt)
        return TENSOR
    kind = vt.python_type()
    if kind in (tuple, list) and type(vt) in (TupleVariable, ListVariable):
        return (kind.__name__, tuple(_flatten(tx, i, what, constants, leaves) for i in vt.sequence_items()))
    if kind is dict and type(vt) is DictVariable and all(type(k) in (str, int) for k in vt.items):
        return ("dict", tuple(vt.items), tuple(_flatten(tx, v, what, constants, leaves) for v in vt.items.values()))
    if constants and vt.is_python_constant() and vt.python_type() in (int, float, bool, str, type(None)):
        return ("const", vt.as_python_constant())
    tx.unsupported(f"{what} holds {vt.describe()}, which is not a tensor"
                   + (", a constant" if constants else "") + " or a tuple, list or dict of them",
                   category="higher-order op", hint="pass and return tensors (in tuples, lists or dicts)")


def unflatten(spec, leaves) -> object:
    """The tracker of pytree `spec` with its tensor leaves taken in order from iterator `leaves`."""
    kind = spec[0]
    if kind == "tensor":
        return next(leaves)
    if kind == "const":
        return ConstantVariable(spec[1])
    if kind == "dict":
        return DictVariable({k: unflatten(s, leaves) for k, s in zip(spec[1], spec[2])})
    items = [unflatten(s, leaves) for s in spec[1]]
    return TupleVariable(items) if kind == "tuple" else ListVariable(items)


def describe_spec(spec) -> str:
    kind = spec[0]
    if kind == "tensor":
        return "a tensor"
    if kind == "const":
        return repr(spec[1])
    if kind == "dict":
        return "{" + ", ".join(f"{k!r}: {describe_spec(s)}" for k, s in zip(spec[1], spec[2])) + "}"
    inner = ", ".join(describe_spec(s) for s in spec[1])
    if kind == "list":
        return f"[{inner}]"
    return f"({inner},)" if len(spec[1]) == 1 else f"({inner})"


@dataclass
class Body:
    """One traced body: its child graph, placeholders and outputs."""

    name: str             # how errors name it ("the true branch of torch.cond (t)")
    graph: torch.fx.Graph
    inputs: list          # the placeholders of the tensors the op passes in, in order
    lifted: list          # (outer node, placeholder) of the outer values it reads
    outputs: list         # the nodes it returns (tensor leaves of `spec`)
    examples: list        # their fake values
    spec: tuple           # the pytree spec of what it returns


def trace_body(tx, fn_vt, name: str, examples: list, build_args, constants: bool = False) -> Body:
    """Trace `fn_vt` into a child graph. Its tensor inputs are placeholders with fake values
    `examples`; `build_args(placeholder trackers) -> (args, kwargs)` makes the call's
    arguments. The placeholders belong to the caller's scope: the body must not change them
    in place either."""
    output = tx.output
    grad_enabled, autocast = output.grad_enabled, output.autocast
    with output.subgraph() as sub:
        inputs = []
        for i, example in enumerate(examples):
            node = sub.graph.placeholder(f"arg{i}")
            node.meta["example_value"] = example
            inputs.append(TensorVariable(node, example))
        args, kwargs = build_args(inputs)
        with output.side_effects.scope(name):
            result = fn_vt.call_function(tx, args, kwargs)
            leaves, spec = flatten(tx, result, f"the value {name} returns", constants)
            nodes = [leaf.as_fx_arg(tx) for leaf in leaves]
    if output.grad_enabled != grad_enabled or output.autocast is not autocast:
        tx.unsupported(f"{name} leaves the grad mode or autocast state changed", category="higher-order op",
                       hint="enter and exit grad-mode and autocast blocks inside the body")
    return Body(name, sub.graph, [vt.node for vt in inputs], list(sub.lifted), nodes,
                [leaf.example for leaf in leaves], spec)


def lifted_union(bodies) -> list:
    """The outer nodes any of `bodies` reads, in first-use order (each body's extra inputs)."""
    seen: dict = {}
    for body in bodies:
        for outer, _ in body.lifted:
            seen.setdefault(outer, None)
    return list(seen)


def body_graph(body: Body, extra: list, copies=()) -> torch.fx.Graph:
    """`body` as a graph (a GraphModule once the graph calling it is made) taking its inputs,
    then the outer values `extra` (those it does not read are unused placeholders, so sibling
    bodies share one signature), and returning a tuple of its outputs (a copy of those at the
    indices `copies`)."""
    graph = torch.fx.Graph()
    env: dict = {}
    for node in body.inputs:
        env[node] = _placeholder(graph, node.name, node)
    inner_of = dict(body.lifted)
    for outer in extra:
        inner = inner_of.get(outer)
        placeholder = _placeholder(graph, outer.name, outer)
        if inner is not None:
            env[inner] = placeholder
    for node in body.graph.nodes:
        if node.op != "placeholder":
            env[node] = graph.node_copy(node, env.__getitem__)
    outputs = [env[n] for n in body.outputs]
    for i in copies:
        outputs[i] = graph.call_method("clone", (outputs[i],))
    graph.output(tuple(outputs))
    return graph


def aliased_outputs(body: Body) -> list:
    """(index, what) of each output of `body` sharing storage with one of its inputs or
    an earlier output (a tensor returned as it is, or a view of it)."""
    seen = {}
    for node in [*body.inputs, *(inner for _, inner in body.lifted)]:
        example = node.meta["example_value"]
        if isinstance(example, torch.Tensor):  # a lifted SymInt/SymFloat (a dynamic number) has no storage
            seen.setdefault(StorageWeakRef(example.untyped_storage()), "an input")
    found = []
    for i, example in enumerate(body.examples):
        key = StorageWeakRef(example.untyped_storage())
        if key in seen:
            found.append((i, seen[key]))
        else:
            seen[key] = "another output"
    return found


def _placeholder(graph: torch.fx.Graph, name: str, like: torch.fx.Node) -> torch.fx.Node:
    node = graph.placeholder(name)
    node.meta["example_value"] = like.meta.get("example_value")
    return node


def speculate(tx, op: str, trace):
    """Run `trace()` (trace the op's bodies, emit its node) under one checkpoint. When it
    breaks or raises, nothing it did is kept and the graph breaks at the op's call."""
    cp = tx.checkpoint()
    try:
        result = trace()
    except GraphBreak as brk:
        tx.restore(cp)
        tx.release(cp)
        where = "" if brk.location in brk.reason else f" (at {brk.location})"
        tx.unsupported(f"{op} is not captured: {brk.reason}{where}", category=brk.category, hint=brk.hint)
    except TracedRaise as raised:
        tx.restore(cp)
        tx.release(cp)
        tx.unsupported(f"{op} is not captured: its body raises {raised.exc.message()} at {raised.location}",
                       category="higher-order op", hint="the op runs eagerly, raising there")
    tx.release(cp)
    return result


def emit(tx, target, args: tuple, examples: list, spec, kind: str = "call_function", kwargs: dict | None = None):
    """Add the op's node (returning a tuple of tensors with fake values `examples`) and
    return the tracker of its result, shaped as `spec`."""
    node = tx.output.add_node(kind, target, args, kwargs)
    node.meta["example_value"] = tuple(examples)
    node.meta["bg_frames"] = tx.frames()
    leaves = []
    for i, example in enumerate(examples):
        item = tx.output.add_node("call_function", operator.getitem, (node, i))
        item.meta["example_value"] = example
        leaves.append(TensorVariable(item, example))
    return unflatten(spec, iter(leaves))


def needs_grad(node) -> bool:
    """Whether graph value `node` is a tensor requiring grad (a lifted SymInt/SymFloat, a
    dynamic number, never does)."""
    example = node.meta["example_value"] if isinstance(node, torch.fx.Node) else None
    return isinstance(example, torch.Tensor) and example.requires_grad


def fresh_fake(example, requires_grad: bool, batch: int | None = None):
    """A new fake tensor with `example`'s metadata (a batch dimension first if `batch`)."""
    shape = tuple(example.shape) if batch is None else (batch, *example.shape)
    fake = torch.empty(shape, dtype=example.dtype, device=example.device)
    if requires_grad:
        fake.requires_grad_(True)
    return fake


def differentiable(example) -> bool:
    return example.dtype.is_floating_point or example.dtype.is_complex
