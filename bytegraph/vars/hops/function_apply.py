"""`MyFunction.apply(*args)` of a custom `torch.autograd.Function` where a gradient flows
(grad mode on, a tensor argument requires grad): forward and backward traced, as
torch.compile does, into one `torch.ops.higher_order.autograd_function_apply` node.

The op (torch/_functorch/autograd_function.py) makes a new autograd.Function per call
whose `forward` runs graph `fwd_body_N(*operands) -> (outputs, saved)` and whose `backward`
runs `bwd_body_N(*grads, *saved) -> one gradient (or None) per operand`; it marks the
outputs at `non_differentiable_idx` non-differentiable, and `saved_for_backward_idx` names
the saved values that came from `ctx.save_for_backward`. Eager runs it as such;
aot_autograd traces through it (the forward into the joint graph, the backward where
autograd calls it), so every backend computes the user's gradients.

Both bodies are traced with the machinery of vars/hops/body.py (one checkpoint, each body
in its own subgraph and speculation scope):
- the forward with the tensor arguments as placeholders (other arguments passed as they
  are), under grad mode off as autograd runs it (not recorded: the op sets it), with a
  `FunctionCtxVariable` made inside it; its result is processed as the C `apply` does
  (`wrap_outputs`). The body returns the output tensors, the tensors given to
  `save_for_backward`, and the tensors held by ctx attributes;
- the backward with one placeholder per output tensor (its gradient; None for a constant
  output) and one per saved tensor, under grad mode off, not recorded (so the graph runs in
  the mode of the backward pass, as eager's backward does), with a ctx whose
  `saved_tensors` and attributes are those placeholders.
The operands are the tensor arguments, then every outer value either body reads (lifted); an
outer value read by the backward is passed through the forward as a saved value. The
backward's result is checked against eager's rules (one gradient per argument, extra ones
None, None for a non-tensor argument); the outputs' fake values (their `requires_grad`)
come from running the op itself on the fake operands.

Anything else is a graph break naming the Function (the apply then runs eagerly, with the
user's backward): a backward or forward that cannot be traced or has effects (a print, a
global write, a write to an outer object), keyword arguments, `once_differentiable`
(eager refuses a double backward through it), `set_materialize_grads(False)`, `mark_dirty`,
an output that is not a tensor or a constant, a ctx attribute that is neither a constant, an
object from outside nor a structure of tensors, a backward reading a forward value it was not
given through ctx.
"""
from __future__ import annotations

import torch
from torch.autograd.function import once_differentiable

from ..constant import ConstantVariable
from ..containers import TupleVariable
from ..function_ctx import FunctionCtxVariable, wrap_outputs
from .body import (TENSOR, body_graph, describe_spec, differentiable, emit, flatten, fresh_fake, lifted_union,
                   speculate, trace_body, unflatten)

FUNCTION_APPLY_OP = torch.ops.higher_order.autograd_function_apply
_ONCE_DIFFERENTIABLE = once_differentiable(lambda ctx: None).__code__
_CONSTANT_OUTPUTS = (int, float, bool, str, type(None))


def capture_apply(tx, cls_vt, args: list, kwargs: dict, needs: tuple):
    """The tracker of `cls.apply(*args, **kwargs)` captured as one op, or a graph break."""
    cls = cls_vt.as_python_constant()
    op = f"autograd.Function {cls.__qualname__}"
    if kwargs:
        tx.unsupported(f"{op} applied with keyword arguments where a gradient flows", category="unsupported call",
                       hint="pass its arguments positionally")
    if getattr(cls.backward, "__code__", None) is _ONCE_DIFFERENTIABLE:
        tx.unsupported(f"{op} has a once_differentiable backward (eager refuses a double backward through it)",
                       category="unsupported call")
    return speculate(tx, op, lambda: _capture(tx, cls_vt, cls, op, args, needs))


class _Forward:
    """Calls `forward` as the C `apply` does, from inside the forward body (whose scope its
    ctx belongs to), and records what the backward needs: the ctx, the outputs' structure,
    which outputs are non-differentiable, the specs of the ctx attributes."""

    def __init__(self, cls_vt, cls, op: str, args: list, needs: tuple):
        self.cls_vt, self.cls, self.op, self.args, self.needs = cls_vt, cls, op, args, needs
        self.inputs: list = []
        self.ctx = None
        self.is_tuple = False
        self.item_specs: tuple = ()
        self.non_differentiable: list = []  # indices among the output tensors
        self.attr_specs: dict = {}          # name -> pytree spec of a tensor-holding attribute
        self.constant_attrs: dict = {}      # name -> tracker of a constant or outside attribute

    def arguments(self, placeholders):
        self.inputs = list(placeholders)
        it = iter(placeholders)
        return [next(it) if a.is_tensor else a for a in self.args], {}

    def call_function(self, tx, args, kwargs):
        op = self.op
        ctx = self.ctx = FunctionCtxVariable(self.cls._backward_cls, self.needs)
        out = self.cls_vt.var_getattr(tx, "forward").call_function(tx, [ctx, *args], kwargs)
        if ctx.dirty:
            tx.unsupported(f"{op} marks tensors dirty where a gradient flows", category="unsupported call")
        if not ctx.materialize_grads:
            tx.unsupported(f"{op} sets materialize_grads to False where a gradient flows", category="unsupported call")
        self.is_tuple = out.python_type() is tuple and out.sequence_items() is not None
        items = list(out.sequence_items()) if self.is_tuple else [out]
        tensor_index = 0
        for item in items:
            if item.is_tensor:
                if any(item is nd for nd in ctx.non_differentiable):
                    self.non_differentiable.append(tensor_index)
                tensor_index += 1
            elif not (item.is_python_constant() and type(item.as_python_constant()) in _CONSTANT_OUTPUTS):
                tx.unsupported(f"the forward of {op} returns {item.describe()} among its outputs, which is "
                               "neither a tensor nor a constant", category="higher-order op")
        if not tensor_index:
            tx.unsupported(f"the forward of {op} returns no tensor", category="higher-order op")
        for vt in ctx.saved:
            if not (vt.is_tensor or vt.is_none()):
                tx.unsupported(f"the forward of {op} saves {vt.describe()} for backward, which is not a tensor",
                               category="higher-order op")
        attr_leaves = []
        for name, vt in ctx.attrs.items():
            if vt.is_python_constant() or (vt.source is not None and not vt.is_tensor):
                self.constant_attrs[name] = vt  # a constant, or an object from outside (the body cannot write it)
                continue
            leaves, self.attr_specs[name] = flatten(tx, vt, f"ctx.{name} (set by the forward of {op})",
                                                    constants=True)
            attr_leaves.extend(leaves)
        wrapped = wrap_outputs(tx, out, self.inputs, ctx.dirty)
        items = list(wrapped.sequence_items()) if self.is_tuple else [wrapped]
        return TupleVariable([TupleVariable(items), TupleVariable(list(ctx.saved)), TupleVariable(attr_leaves)])

    def out_spec(self, spec):
        """The spec of what `apply` returns, from the forward body's spec."""
        self.item_specs = spec[1][0][1]
        return ("tuple", self.item_specs) if self.is_tuple else self.item_specs[0]


def _capture(tx, cls_vt, cls, op: str, args: list, needs: tuple):
    output = tx.output
    tensor_args = [a for a in args if a.is_tensor]
    forward = _Forward(cls_vt, cls, op, args, needs)
    with output.grad_mode_set_by_caller(False):
        fwd = trace_body(tx, forward, f"the forward of {op}", [a.example for a in tensor_args], forward.arguments,
                         constants=True)
    out_spec = forward.out_spec(fwd.spec)
    saved_spec = fwd.spec[1][1]
    n_out = sum(1 for s in forward.item_specs if s == TENSOR)
    n_saved = sum(1 for s in saved_spec[1] if s == TENSOR)

    def backward_arguments(placeholders):
        grads, saved = iter(placeholders[:n_out]), iter(placeholders[n_out:])
        saved_vts = list(unflatten(saved_spec, saved).items)
        attrs = {name: unflatten(spec, saved) for name, spec in forward.attr_specs.items()}
        attrs.update(forward.constant_attrs)
        ctx = FunctionCtxVariable.for_backward(forward.ctx, saved_vts, attrs)
        return [ctx, *[next(grads) if s == TENSOR else ConstantVariable(None) for s in forward.item_specs]], {}

    examples = [fresh_fake(e, False) for e in fwd.examples[:n_out]] + [
        _saved_example(fwd, n_out, i, forward.non_differentiable) for i in range(n_out, len(fwd.outputs))]
    backward_fn = cls_vt.var_getattr(tx, "backward")
    with output.grad_mode_set_by_caller(False):
        bwd = trace_body(tx, backward_fn, f"the backward of {op}", examples, backward_arguments, constants=True)
    for outer, _ in bwd.lifted:
        if outer.graph is not output.graph:
            tx.unsupported(f"the backward of {op} reads a value of its forward that is not saved on ctx",
                           category="higher-order op", hint="pass it through ctx.save_for_backward")
    grads = _gradients(tx, op, bwd, args)

    extra = lifted_union((fwd, bwd))
    bwd_extra = [outer for outer, _ in bwd.lifted]
    fwd_graph = body_graph(fwd, extra)
    placeholders = [n for n in fwd_graph.nodes if n.op == "placeholder"][len(tensor_args):]
    passed = [placeholders[extra.index(outer)] for outer in bwd_extra]
    _set_output(fwd_graph, lambda outs: (tuple(outs[:n_out]), tuple(outs[n_out:]) + tuple(passed)))
    bwd_graph = body_graph(bwd, bwd_extra)
    _set_output(bwd_graph, lambda outs: tuple(None if g is None else outs[g] for g in grads) + (None,) * len(extra))

    kwargs = {"non_differentiable_idx": forward.non_differentiable, "saved_for_backward_idx": list(range(n_saved))}
    operands = tuple(a.as_fx_arg(tx) for a in tensor_args) + tuple(output.lift(n) for n in extra)
    fakes = [n.meta["example_value"] if isinstance(n, torch.fx.Node) else n for n in operands]
    examples = list(FUNCTION_APPLY_OP(output.graph_module(fwd_graph), output.graph_module(bwd_graph), *fakes,
                                      **kwargs))
    fwd_name = output.add_submodule("fwd_body", fwd_graph)
    bwd_name = output.add_submodule("bwd_body", bwd_graph)
    graph = output.graph
    node_args = (graph.get_attr(fwd_name), graph.get_attr(bwd_name), *operands)
    return emit(tx, FUNCTION_APPLY_OP, node_args, examples, out_spec, kwargs=kwargs)


def _saved_example(fwd, n_out: int, i: int, non_differentiable: list):
    """The fake value the backward sees for saved value `i` of `fwd`: as eager's
    `saved_tensors`, an output comes back requiring grad (its grad_fn is the Function's node)."""
    example = fwd.examples[i]
    is_output = any(fwd.outputs[j] is fwd.outputs[i] and j not in non_differentiable for j in range(n_out))
    if is_output and differentiable(example) and not example.requires_grad:
        return example.detach().requires_grad_()
    return example


def _gradients(tx, op: str, bwd, args: list) -> list:
    """For each tensor argument, the index among the backward's outputs of its gradient (or
    None), checked as eager checks what `backward` returns (else a break: eager raises)."""
    spec = bwd.spec
    items = (spec,) if spec == TENSOR else spec[1] if spec[0] == "tuple" else None
    if items is None or any(s != TENSOR and s != ("const", None) for s in items):
        tx.unsupported(f"the backward of {op} returns {describe_spec(spec)}, not a tensor, None or a tuple of them",
                       category="higher-order op")
    if len(items) < len(args) or any(s != ("const", None) for s in items[len(args):]):
        tx.unsupported(f"the backward of {op} returns {len(items)} gradients for {len(args)} inputs",
                       category="higher-order op")
    grads, leaf = [], 0
    for arg, s in zip(args, items):
        if s == TENSOR and not arg.is_tensor:
            tx.unsupported(f"the backward of {op} returns a gradient for an input that is not a tensor",
                           category="higher-order op")
        if arg.is_tensor:
            grads.append(leaf if s == TENSOR else None)
        leaf += s == TENSOR
    return grads


def _set_output(graph: torch.fx.Graph, arrange) -> None:
    """Replace the tuple `graph` returns by `arrange(list of its items)`."""
    node = graph.output_node()
    node.args = (arrange(list(node.args[0])),)
