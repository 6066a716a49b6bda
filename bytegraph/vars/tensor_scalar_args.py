"""Ops whose scalar argument is a 0-dim tensor: `a.addcmul_(b, c, value=t)`,
`a.add_(b, alpha=t)`, `torch.addcdiv(a, b, c, value=t)`.

torch reads such a `value`/`alpha` with `.item()`, which a fake tensor cannot answer (its
data is unknown at trace time): the op would be a data-dependent graph break. As under
torch.compile (its `addcmul_inplace` polyfill), the op is recorded as its definition in
tensor ops instead, the scalar staying a tensor: `a.add_(b * c * t)`, `a.add_(b / c * t)`,
`a.add_(b * t)`, `a.sub_(b * t)`. Equal to eager up to rounding (the fused kernel
multiplies in another order).
"""
from __future__ import annotations

import operator

import torch

# op name -> (the scalar keyword, how the addend is made of the other operands)
_REWRITES = {
    "addcmul": ("value", lambda t1, t2: (operator.mul, t1, t2)),
    "addcdiv": ("value", lambda t1, t2: (operator.truediv, t1, t2)),
    "add": ("alpha", None),
    "sub": ("alpha", None),
}
_FUNCTIONS = {torch.addcmul: "addcmul", torch.addcdiv: "addcdiv", torch.add: "add", torch.sub: "sub"}


def rewrite_method(tx, name: str, args: list, kwargs: dict):
    """`self.name(*args[1:], **kwargs)` (args[0] is self) in tensor ops, or None when no
    scalar argument is a 0-dim tensor."""
    inplace = name.endswith("_") and not name.startswith("__")
    base = name[:-1] if inplace else name
    if base not in _REWRITES or not kwargs:
        return None
    keyword, combine = _REWRITES[base]
    scalar = kwargs.get(keyword)
    if scalar is None or not scalar.is_tensor or set(kwargs) != {keyword}:
        return None
    if scalar.example.dim() != 0 or scalar.example.requires_grad:  # eager rejects it: the op raises
        return None
    if combine is None:
        if len(args) != 2:
            return None
        addend = tx.output.call_op("call_function", operator.mul, [args[1], scalar], {})
    else:
        if len(args) != 3:
            return None
        op, t1, t2 = combine(args[1], args[2])
        product = tx.output.call_op("call_function", op, [t1, t2], {})
        addend = tx.output.call_op("call_function", operator.mul, [product, scalar], {})
    combined = "sub" if base == "sub" else "add"
    return tx.output.call_op("call_method", combined + ("_" if inplace else ""), [args[0], addend], {})


def rewrite_function(tx, fn, args: list, kwargs: dict):
    """`torch.addcmul(a, b, c, value=t)` and friends; None if `fn` is not one of them or
    no scalar argument is a 0-dim tensor."""
    try:
        name = _FUNCTIONS.get(fn)
    except TypeError:
        return None
    if name is None or not args or not args[0].is_tensor:
        return None
    return rewrite_method(tx, name, args, kwargs)
