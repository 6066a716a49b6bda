"""Ops whose scalar argument is a 0-dim tensor: `a.addcmul_(b, c, value=t)`,
`a.add_(b, alpha=t)`, `torch.addcdiv(a, b, c, value=t)`.

torch reads such a `value`/`alpha` with `.item()`, which a fake tensor cannot answer (its
data is unknown at trace time): the op would be a data-dependent graph break. As under
torch.compile (its `addcmul_inplace` polyfill), the op is recorded as its definition in
tensor ops instead, the scalar staying a tensor: `a.add_(b * c * t)`, `a.add_(b / c * t)`,
`a.add_(b * t)`, `a.sub_(b * t)`. Equal to eager up to rounding (the fused kernel
multiplies in another order).

The multi-tensor forms are rewritten the same way, one op per list item: a 0-dim tensor
`alpha` of `torch._foreach_add(_)`/`_foreach_sub(_)`, and the tensor `scalars` of
`torch._foreach_addcmul(_)`/`_foreach_addcdiv(_)` (0-dim, or 1-dim with one value per item:
Adam's `foreach` step, `_foreach_addcdiv_(params, exp_avgs, denom, step_size)`).

Any other multi-tensor op (`torch._foreach_*`) given a 0-dim tensor where it takes a Scalar
(`torch._foreach_pow(beta, steps)`, `_foreach_pow(xs, t)`, `_foreach_maximum(xs, t)`, ...)
is recorded with the tensor repeated in a list (`torch._foreach_pow([beta, beta], steps)`:
its tensor-list overload, the decomposition torch.compile makes of `_foreach_pow`) when a
probe says that is the same call (`_tensor_list_form`): the op, run on small real tensors
of the arguments' dtypes, reads the tensor as a Scalar (`.item()`: a call that does not,
such as `_foreach_mul(xs, t)`'s Tensor overload, is recorded as it is), and the list form
gives the same result dtypes and raises where it does, the scalar being 1, 0 and -1 in turn
(an integer `_foreach_pow(ints, t)` raises for a negative `t` only in the scalar form: not
rewritten). Otherwise the call stays data-dependent: a graph break.
"""
from __future__ import annotations

import operator

import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.utils._python_dispatch import TorchDispatchMode

from .constant import ConstantVariable
from .containers import ListVariable, TupleVariable

# op name -> (the scalar keyword, how the addend is made of the other operands)
_REWRITES = {
    "addcmul": ("value", lambda t1, t2: (operator.mul, t1, t2)),
    "addcdiv": ("value", lambda t1, t2: (operator.truediv, t1, t2)),
    "add": ("alpha", None),
    "sub": ("alpha", None),
}
_FUNCTIONS = {torch.addcmul: "addcmul", torch.addcdiv: "addcdiv", torch.add: "add", torch.sub: "sub"}
# foreach op -> (op name, in place)
_FOREACH = {getattr(torch, f"_foreach_{name}{suffix}"): (name, bool(suffix))
            for name in _REWRITES for suffix in ("", "_")}


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
        foreach = _FOREACH.get(fn)
        other_foreach = fn in _FOREACH_OPS
    except TypeError:
        return None
    if foreach is not None:
        rewritten = _rewrite_foreach(tx, *foreach, args, kwargs)
        return rewritten if rewritten is not None else _tensor_list_form(tx, fn, args, kwargs)
    if other_foreach:
        return _tensor_list_form(tx, fn, args, kwargs)
    if name is None or not args or not args[0].is_tensor or not kwargs:
        return None
    return rewrite_method(tx, name, args, kwargs)


def _rewrite_foreach(tx, name: str, inplace: bool, args: list, kwargs: dict):
    """`torch._foreach_<name>(_)(lists..., <tensor scalar>)` as one op per item, or None when
    the scalar is not a tensor (the op is recorded as it is)."""
    keyword, combine = _REWRITES[name]
    n_lists = 2 if combine is None else 3
    keywords = {keyword} if combine is None else {keyword, "scalars"}
    if len(args) + len(kwargs) != n_lists + 1 or len(args) < n_lists or not set(kwargs) <= keywords:
        return None
    scalar = args[n_lists] if len(args) > n_lists else next(iter(kwargs.values()))
    lists = [a.sequence_items() for a in args[:n_lists]]
    if not scalar.is_tensor or scalar.example.requires_grad or any(items is None for items in lists):
        return None
    n = len(lists[0])
    per_item = scalar.example.dim() == 1 and combine is not None and scalar.example.shape[0] == n
    if (scalar.example.dim() != 0 and not per_item) or any(len(items) != n for items in lists) \
            or not all(t.is_tensor for items in lists for t in items):
        return None  # eager rejects it: the op raises as recorded
    call = tx.output.call_op
    results = []
    for i in range(n):
        s = call("call_function", operator.getitem, [scalar, ConstantVariable(i)], {}) if per_item else scalar
        if combine is None:
            addend = call("call_function", operator.mul, [lists[1][i], s], {})
        else:
            op, t1, t2 = combine(lists[1][i], lists[2][i])
            addend = call("call_function", operator.mul, [call("call_function", op, [t1, t2], {}), s], {})
        combined = "sub" if name == "sub" else "add"
        results.append(call("call_method", combined + ("_" if inplace else ""), [lists[0][i], addend], {}))
    return ListVariable(results) if inplace else TupleVariable(results)


# ---- any multi-tensor op: the scalar tensor as a list -------------------------------------
_FOREACH_OPS = frozenset(getattr(torch, name) for name in dir(torch) if name.startswith("_foreach_"))


class _NoProbe(Exception):
    """An argument the probe cannot stand in for (not a CPU tensor, a list of them or a constant)."""


class _ScalarReads(TorchDispatchMode):
    """Records whether an op reads a tensor's value into a Scalar (`aten._local_scalar_dense`)."""

    def __init__(self):
        super().__init__()
        self.read = False

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            self.read = True
        return func(*args, **(kwargs or {}))


def _tensor_list_form(tx, fn, args: list, kwargs: dict):
    """`fn(..., t, ...)` recorded as `fn(..., [t] * n, ...)` for the one 0-dim tensor `t` among
    the arguments (`n`: the length of the tensor lists), or None (the call is recorded as it
    is) unless the probe finds `fn` reads `t` as a Scalar and the list form is the same call
    (see the module docstring)."""
    slots = [*enumerate(args), *kwargs.items()]
    scalars = [key for key, vt in slots if vt.is_tensor and vt.example.dim() == 0]
    lists = [vt.sequence_items() for _, vt in slots if vt.sequence_items() is not None]
    if len(scalars) != 1 or not lists:
        return None
    (key,) = scalars
    n = len(lists[0])

    def put(values, value):
        out_args, out_kwargs = list(values[0]), dict(values[1])
        if type(key) is int:
            out_args[key] = value
        else:
            out_kwargs[key] = value
        return out_args, out_kwargs

    vt = args[key] if type(key) is int else kwargs[key]
    try:
        with unset_fake_temporarily(), torch.no_grad():
            probes = [_probe(a) for a in args], {k: _probe(v) for k, v in kwargs.items()}
            for value in _PROBE_VALUES[_kind(vt.example.dtype)]:
                scalar = torch.full((), value, dtype=vt.example.dtype).requires_grad_(vt.example.requires_grad)
                reads = _ScalarReads()
                with reads:
                    as_scalar = _outcome(fn, *put(probes, scalar))
                if not reads.read:
                    return None
                if as_scalar != _outcome(fn, *put(probes, [scalar] * n)):
                    return None
    except _NoProbe:
        return None
    if type(as_scalar) is type:  # it raises (eager's error): recorded as it is
        return None
    return tx.output.call_op("call_function", fn, *put((args, kwargs), ListVariable([vt] * n)))


# The values the scalar tensor takes in the probe, per kind of dtype: the two forms must agree
# on each, errors included (`_foreach_pow(ints, t)` raises for a negative integer `t`, the list
# form does not).
_PROBE_VALUES = {"bool": (True, False), "unsigned": (1, 0), "signed": (1, 0, -1)}


def _kind(dtype) -> str:
    if dtype is torch.bool:
        return "bool"
    if not dtype.is_floating_point and not dtype.is_complex and not dtype.is_signed:
        return "unsigned"
    return "signed"


def _outcome(fn, args, kwargs):
    """What must agree between the two forms of a call: its results' dtypes, or the type of
    the error it raises."""
    try:
        return _result_types(fn(*args, **kwargs))
    except (RuntimeError, TypeError, ValueError) as e:
        return type(e)


def _probe(vt):
    """A small real stand-in of argument `vt` for the probe: a CPU tensor of its dtype, rank
    and requires_grad (ones), a list of those, or the constant itself."""
    if vt.is_tensor:
        example = vt.example
        if example.device.type != "cpu":
            raise _NoProbe
        return torch.ones((1,) * example.dim(), dtype=example.dtype).requires_grad_(example.requires_grad)
    items = vt.sequence_items()
    if items is not None:
        return [_probe(item) for item in items]
    if vt.is_python_constant():
        return vt.as_python_constant()
    raise _NoProbe


def _result_types(result):
    """The dtypes of a call's results."""
    if isinstance(result, (list, tuple)):
        return tuple(_result_types(r) for r in result)
    return result.dtype if isinstance(result, torch.Tensor) else type(result)
