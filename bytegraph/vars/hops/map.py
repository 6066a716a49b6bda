"""`torch._higher_order_ops.map.map(fn, xs, *args)` (and `bytegraph.map`, the same op).

The body is traced once (vars/hops/body.py) on one slice of the leading dimension of every
tensor of pytree `xs`, with the tensors of `args` after them (Python constants in `args`
are passed to the body as they are), into a subgraph `map_body_N`; the op becomes one
`torch.ops.higher_order.map_impl(body, xs tensors, arg tensors + lifted outer values)`
node, whose results are the body's with the leading dimension in front. Eager `map`
compiles its body with torch.compile; the operator calls the subgraph directly.
"""
from __future__ import annotations

import importlib

import torch

from ..base import CallableValueVariable
from ..containers import TupleVariable
from .body import body_graph, differentiable, emit, flatten, fresh_fake, needs_grad, speculate, trace_body, unflatten
from ... import control_flow

MAP_OP = torch.ops.higher_order.map_impl


class MapVariable(CallableValueVariable):
    """`torch._higher_order_ops.map.map` or `bytegraph.map`."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs):
        op = self.describe()
        if len(args) < 2 or kwargs:
            tx.unsupported(f"{op} called with {len(args)} positional and {sorted(kwargs)} keyword arguments",
                           category="higher-order op", hint="call map(fn, xs, *args)")
        fn, xs, rest = args[0], args[1], list(args[2:])
        xs_leaves, xs_spec = flatten(tx, xs, f"the xs of {op}")
        if not xs_leaves:
            tx.unsupported(f"{op} with no tensor to map over", category="higher-order op")
        sizes = {tuple(leaf.example.shape[:1]) for leaf in xs_leaves}
        if len(sizes) != 1 or sizes == {()} or sizes == {(0,)}:
            tx.unsupported(f"{op} over tensors whose leading dimensions are {sorted(sizes)}",
                           category="higher-order op",
                           hint="every mapped tensor needs the same non-zero leading dimension")
        arg_leaves, arg_spec = flatten(tx, TupleVariable(rest), f"the arguments of {op}", constants=True)
        return speculate(tx, op, lambda: self._capture(tx, fn, xs_leaves, xs_spec, arg_leaves, arg_spec))

    def _capture(self, tx, fn, xs_leaves, xs_spec, arg_leaves, arg_spec):
        op = self.describe()
        n = len(xs_leaves)
        batch = xs_leaves[0].example.shape[0]
        examples = [fresh_fake(leaf.example[0], leaf.example.requires_grad) for leaf in xs_leaves]
        examples += [leaf.example for leaf in arg_leaves]

        def arguments(placeholders):
            return [unflatten(xs_spec, iter(placeholders[:n])), *unflatten(arg_spec, iter(placeholders[n:])).items], {}

        body = trace_body(tx, fn, f"the body of {op} ({fn.describe()})", examples, arguments)
        extra = [outer for outer, _ in body.lifted]
        output = tx.output
        name = output.add_submodule("map_body", body_graph(body, extra))
        xs_nodes = [leaf.as_fx_arg(tx) for leaf in xs_leaves]
        pos_nodes = [leaf.as_fx_arg(tx) for leaf in arg_leaves] + [output.lift(node) for node in extra]
        grad = output.grad_enabled and any(needs_grad(node) for node in xs_nodes + pos_nodes)
        outs = [fresh_fake(e, grad and differentiable(e), batch) for e in body.examples]
        return emit(tx, MAP_OP, (output.graph.get_attr(name), xs_nodes, pos_nodes), outs, body.spec)

    def describe(self) -> str:
        return "bytegraph.map" if self.fn.__module__.startswith("bytegraph") else "torch._higher_order_ops.map.map"


def map_callables() -> tuple:
    """Every callable MapVariable stands for."""
    return (importlib.import_module("torch._higher_order_ops.map").map, control_flow.map)
