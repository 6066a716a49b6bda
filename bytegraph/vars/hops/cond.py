"""`torch.cond(pred, true_fn, false_fn, operands)` (and `bytegraph.cond`, the same op).

A Python-constant `pred` inlines the chosen branch, as eager `cond` calls it. A tensor
`pred`, or a symbolic bool of dynamic sizes (`x.size(0) > 2`, left unspecialized), makes
one `torch.ops.higher_order.cond` node: both branches are traced under one
checkpoint (vars/hops/body.py), each into its own subgraph (`cond_true_N`, `cond_false_N`)
taking the operands' tensors, then the outer values either branch reads (the union, so
both have one signature); the guards both install are kept (their union). The branches
must return the same pytree of tensors with equal dtype, shape, device and requires_grad,
else the graph breaks (`Unsupported` under `fullgraph=True`) naming the op, the branch and
the mismatch. The node calls the operator itself, never `torch.cond`: eager `torch.cond`
compiles its branches with torch.compile, the operator calls the subgraphs directly (in
eager and under autograd, `CondAutogradOp`), and aot_autograd and inductor trace it.
"""
from __future__ import annotations

import importlib

import torch

from ... import control_flow
from ..base import CallableValueVariable
from .body import (aliased_outputs, body_graph, describe_spec, differentiable, emit, flatten, fresh_fake, needs_grad,
                   lifted_union, speculate, trace_body, unflatten)

COND_OP = torch.ops.higher_order.cond
_PARAMS = ("pred", "true_fn", "false_fn", "operands")


class CondVariable(CallableValueVariable):
    """`torch.cond`, `bytegraph.cond` or the `torch.ops.higher_order.cond` operator."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs):
        bound = _bind(tx, self.describe(), args, kwargs)
        pred, true_fn, false_fn = bound["pred"], bound["true_fn"], bound["false_fn"]
        operands = bound.get("operands")
        symbolic = pred.is_symbolic() and pred.python_type() is bool  # `x.size(0) > 2` of a dynamic size
        if not pred.is_tensor and not symbolic:  # eager `cond` calls the chosen branch, whatever the operands are
            if not pred.is_python_constant():
                tx.unsupported(f"{self.describe()} with predicate {pred.describe()}", category="higher-order op",
                               hint="pass a bool or a one-element tensor")
            items = [] if operands is None else operands.sequence_items()
            if items is None:
                tx.unsupported(f"{self.describe()} with operands {operands.describe()}", category="higher-order op")
            branch = true_fn if pred.as_python_constant() else false_fn
            return branch.call_function(tx, list(items), {})
        if operands is None:
            leaves, spec = [], ("tuple", ())
        else:
            leaves, spec = flatten(tx, operands, f"the operands of {self.describe()}")
        if spec[0] not in ("tuple", "list"):
            tx.unsupported(f"{self.describe()} with operands that are not a tuple or list", category="higher-order op")
        if not symbolic and pred.example.numel() != 1:
            tx.unsupported(f"{self.describe()} with a predicate of {pred.example.numel()} elements",
                           category="higher-order op", hint="the predicate must be a one-element tensor")
        return speculate(tx, self.describe(), lambda: self._capture(tx, pred, true_fn, false_fn, leaves, spec))

    def _capture(self, tx, pred, true_fn, false_fn, leaves, spec):
        op = self.describe()
        examples = [leaf.example for leaf in leaves]

        def arguments(placeholders):
            return [unflatten(s, it) for s, it in _item_specs(spec, placeholders)], {}

        true_body = trace_body(tx, true_fn, f"the true branch of {op} ({true_fn.describe()})", examples, arguments)
        false_body = trace_body(tx, false_fn, f"the false branch of {op} ({false_fn.describe()})", examples, arguments)
        _check_same_outputs(tx, op, true_body, false_body)
        copies = [self._copies(tx, body) for body in (true_body, false_body)]
        extra = lifted_union((true_body, false_body))
        output = tx.output
        true_name = output.add_submodule("cond_true", body_graph(true_body, extra, copies[0]))
        false_name = output.add_submodule("cond_false", body_graph(false_body, extra, copies[1]))
        graph = output.graph
        operands = tuple(leaf.as_fx_arg(tx) for leaf in leaves) + tuple(output.lift(n) for n in extra)
        grad = output.grad_enabled and any(needs_grad(a) for a in operands)
        outs = [fresh_fake(e, grad and differentiable(e)) for e in true_body.examples]
        args = (pred.as_fx_arg(tx), graph.get_attr(true_name), graph.get_attr(false_name), operands)
        return emit(tx, COND_OP, args, outs, true_body.spec)

    def _copies(self, tx, body) -> list:
        """The outputs of `body` that alias an input or another output: torch refuses them
        (eager `torch.cond` raises, so the graph breaks and it does); `bytegraph.cond`
        returns copies of them, as its eager implementation does."""
        aliased = aliased_outputs(body)
        if aliased and self.fn is not control_flow.cond:
            i, what = aliased[0]
            tx.unsupported(f"{self.describe()}: {body.name} returns output {i}, which aliases {what}",
                           category="higher-order op", hint="return a copy (`.clone()`) of it")
        return [i for i, _ in aliased]

    def describe(self) -> str:
        if self.fn is COND_OP:
            return "torch.ops.higher_order.cond"
        return "bytegraph.cond" if self.fn.__module__.startswith("bytegraph") else "torch.cond"


def _item_specs(spec, leaves):
    """(spec, leaf iterator) of each item of the operands' tuple/list spec, sharing one iterator."""
    it = iter(leaves)
    return [(s, it) for s in spec[1]]


def _bind(tx, op: str, args, kwargs) -> dict:
    if len(args) > len(_PARAMS) or set(kwargs) - set(_PARAMS[len(args):]):
        tx.unsupported(f"{op} called with arguments {len(args)} positional, {sorted(kwargs)} keyword",
                       category="higher-order op")
    bound = dict(zip(_PARAMS, args))
    bound.update(kwargs)
    missing = [p for p in _PARAMS[:3] if p not in bound]
    if missing:
        tx.unsupported(f"{op} called without {', '.join(missing)}", category="higher-order op")
    return bound


def _check_same_outputs(tx, op: str, true_body, false_body) -> None:
    """Both branches return the same pytree of alike tensors, else a break naming the mismatch."""
    if true_body.spec != false_body.spec:
        _mismatch(tx, op, false_body, f"returns {describe_spec(false_body.spec)} where the true branch returns "
                                      f"{describe_spec(true_body.spec)}")
    for i, (a, b) in enumerate(zip(true_body.examples, false_body.examples)):
        for what, x, y in (("dtype", a.dtype, b.dtype), ("shape", tuple(a.shape), tuple(b.shape)),
                           ("device", a.device, b.device), ("requires_grad", a.requires_grad, b.requires_grad)):
            if x != y:
                _mismatch(tx, op, false_body, f"returns output {i} with {what} {y} where the true branch's has "
                                              f"{what} {x}")


def _mismatch(tx, op: str, body, what: str) -> None:
    tx.unsupported(f"{op}: {body.name} {what}", category="higher-order op",
                   hint="both branches must return the same structure of tensors with equal dtype, shape, "
                        "device and requires_grad")


def cond_callables() -> tuple:
    """Every callable CondVariable stands for."""
    return (importlib.import_module("torch._higher_order_ops.cond").cond, COND_OP, control_flow.cond)
