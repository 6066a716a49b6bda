"""`MyFunction.apply(...)` of a custom `torch.autograd.Function` where no gradient flows.

`Function.apply` (a classmethod of `torch.autograd.Function`, Python) has a trace rule of
its own (`APPLY`, in `vars/trace_rules.py`). When the traced grad mode is off, or no tensor
argument requires grad, eager runs `forward(ctx, *args)` with grad mode off and records no
autograd node: the backward can never run, so tracing `forward` in place is exact. The
call is traced as eager makes it: grad mode switched off around `forward` (in the graph,
if it was on), `forward` inlined with a `FunctionCtxVariable` (`save_for_backward`,
`mark_dirty`, `mark_non_differentiable`, `set_materialize_grads` are no-ops that keep what
they are given; attributes set on it are trace-local; `needs_input_grad` is which tensor
arguments require grad; reading `saved_tensors` in `forward` breaks), and an input tensor returned unchanged and not marked dirty is
returned as `input.view_as(input)`, a new tensor, as the C `apply` does.

Where a gradient would flow (an argument requires grad under grad mode), the backward
would have to be traced as well (torch.compile does so, as a higher-order op): the call
is a graph break naming the Function; so are functorch transforms being active (guarded
per call) and Functions that define `setup_context`.
"""
from __future__ import annotations

import torch
from torch.autograd.function import Function, _SingleLevelFunction

from .autocast import state_query
from .base import CallableValueVariable, MethodOfVariable, VariableTracker
from .constant import ConstantVariable


class FunctionCtxVariable(VariableTracker):
    """The `ctx` a traced `Function.forward` receives (made in the trace, never rebuilt)."""

    __slots__ = ("ctx_type", "needs_input_grad", "attrs", "saved", "dirty")

    _NO_OPS = frozenset({"mark_non_differentiable", "set_materialize_grads", "save_for_forward"})
    _METHODS = _NO_OPS | {"save_for_backward", "mark_dirty"}

    def __init__(self, ctx_type: type, needs_input_grad: tuple):
        super().__init__()
        self.ctx_type = ctx_type  # the Function's `_backward_cls`, as in eager
        self.needs_input_grad = needs_input_grad
        self.attrs: dict = {}
        self.saved: list = []
        self.dirty: list = []

    def python_type(self) -> type:
        return self.ctx_type

    def children(self):
        return [*self.attrs.values(), *self.saved, *self.dirty]

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in self.attrs:
            return self.attrs[name]
        if name == "needs_input_grad":
            return ConstantVariable(self.needs_input_grad)
        if name in self._METHODS:
            return MethodOfVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name: str, args: list, kwargs: dict) -> VariableTracker:
        if name in self.attrs:
            return self.attrs[name].call_function(tx, args, kwargs)
        if name in ("save_for_backward", "mark_dirty") and not kwargs:
            tx.output.side_effects.mutate(self)  # Note [Mutation barrier]
            if name == "save_for_backward":
                self.saved = list(args)
            else:
                self.dirty.extend(args)
            return ConstantVariable(None)
        if name in self._NO_OPS:
            return ConstantVariable(None)
        return super().call_method(tx, name, args, kwargs)

    def store_attr(self, tx, name: str, value: VariableTracker) -> None:
        if hasattr(self.python_type(), name):
            tx.unsupported(f"setting attribute '{name}' of an autograd.Function ctx", category="side effect")
        tx.output.side_effects.mutate(self)  # Note [Mutation barrier]
        self.attrs[name] = value

    def describe(self) -> str:
        return "the ctx of a custom autograd.Function"


class FunctionApplyVariable(CallableValueVariable):
    """`torch.autograd.Function.apply`, called bound to the Function's class."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs):
        cls_vt, args = args[0], args[1:]
        cls = cls_vt.as_python_constant()
        name = cls.__qualname__
        if cls.setup_context is not _SingleLevelFunction.setup_context:
            tx.unsupported(f"autograd.Function {name} with a setup_context", category="unsupported call")
        if state_query(tx, torch._C._are_functorch_transforms_active, []).as_python_constant():
            tx.unsupported(f"autograd.Function {name} under functorch transforms", category="unsupported call")
        needs = tuple(bool(a.is_tensor and a.example.requires_grad) for a in args)
        if tx.output.grad_enabled and (any(needs) or any(v.is_tensor and v.example.requires_grad
                                                         for v in kwargs.values())):
            tx.unsupported(f"autograd.Function {name} applied to tensors that require grad (its backward "
                           "is not traced)", category="unsupported call",
                           hint="call it under torch.no_grad(), or outside the compiled function")
        ctx = FunctionCtxVariable(cls._backward_cls, needs)
        grad_enabled = tx.output.grad_enabled
        tx.output.set_grad_enabled(False)
        try:
            out = cls_vt.var_getattr(tx, "forward").call_function(tx, [ctx, *args], kwargs)
        finally:
            tx.output.set_grad_enabled(grad_enabled)
        return _wrap_outputs(tx, out, [a for a in args if a.is_tensor], ctx.dirty)

    def describe(self) -> str:
        return "torch.autograd.Function.apply"


def _wrap_outputs(tx, out, inputs: list, dirty: list) -> VariableTracker:
    """The C `apply`'s output processing: an input returned unchanged becomes a view of itself."""
    from .containers import TupleVariable

    def wrap(vt):
        if vt.is_tensor and any(vt is i for i in inputs) and not any(vt is d for d in dirty):
            return tx.output.call_op("call_method", "view_as", [vt, vt], {})
        return vt

    items = out.sequence_items()
    if items is not None and out.python_type() is tuple:
        return TupleVariable([wrap(v) for v in items])
    return wrap(out)


APPLY = {Function.apply.__func__: FunctionApplyVariable}
