"""`MyFunction.apply(...)` of a custom `torch.autograd.Function`.

`Function.apply` (a classmethod of `torch.autograd.Function`, Python) has a trace rule of
its own (`APPLY`, in `vars/trace_rules.py`).

Where a gradient flows (grad mode on and a positional tensor argument requires grad), the
forward and the backward are traced into one `autograd_function_apply` higher-order op
(vars/hops/function_apply.py), or the call is a graph break naming the Function.

Where none flows (grad mode off, or no tensor argument requires grad), eager runs
`forward(ctx, *args)` with grad mode off and records no autograd node: the backward can
never run, so tracing `forward` in place is exact. The call is traced as eager makes it:
grad mode switched off around `forward` (in the graph, if it was on), `forward` inlined
with a `FunctionCtxVariable` (vars/function_ctx.py: what `save_for_backward`, `mark_dirty`,
... are given is kept; attributes set on it are trace-local; `needs_input_grad` is which
tensor arguments require grad; reading `saved_tensors` in `forward` breaks), and an input
tensor returned unchanged and not marked dirty is returned as `input.view_as(input)`, a new
tensor, as the C `apply` does. A keyword tensor requiring grad breaks.

Either way, functorch transforms being active (guarded per call) and Functions that define
`setup_context` are graph breaks naming the Function.
"""
from __future__ import annotations

import torch
from torch.autograd.function import Function, _SingleLevelFunction

from .autocast.trackers import state_query
from .base import CallableValueVariable
from .function_ctx import FunctionCtxVariable, wrap_outputs
from .hops.function_apply import capture_apply


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
        if tx.output.grad_enabled and any(needs):
            return capture_apply(tx, cls_vt, list(args), kwargs, needs)
        if tx.output.grad_enabled and any(v.is_tensor and v.example.requires_grad for v in kwargs.values()):
            tx.unsupported(f"autograd.Function {name} given a keyword tensor that requires grad",
                           category="unsupported call", hint="pass its tensor arguments positionally")
        ctx = FunctionCtxVariable(cls._backward_cls, needs)
        grad_enabled = tx.output.grad_enabled
        tx.output.set_grad_enabled(False)
        try:
            out = cls_vt.var_getattr(tx, "forward").call_function(tx, [ctx, *args], kwargs)
        finally:
            tx.output.set_grad_enabled(grad_enabled)
        return wrap_outputs(tx, out, [a for a in args if a.is_tensor], ctx.dirty)

    def describe(self) -> str:
        return "torch.autograd.Function.apply"


APPLY = {Function.apply.__func__: FunctionApplyVariable}
