"""Memo of fake-tensor results by (op, argument metadata).

Under static shapes an op's output metadata is a function of the op, the metadata of
its tensor arguments and its constant arguments (plus the default dtype). Running an
op through `FakeTensorMode` costs tens of microseconds; building a fake tensor from
remembered metadata costs about ten. Only the simple case is memoized: no tensor
argument or result requires grad (autograd metadata can't be rebuilt cheaply), no
argument or result is a view (aliasing must stay exact), and the result is one fresh
tensor (not an argument, as in-place ops return). Everything else dispatches for real.
"""
from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensor

_CONSTANT_TYPES = frozenset({int, float, bool, str, type(None), torch.dtype, torch.device, torch.layout,
                             torch.memory_format, type(Ellipsis)})
_memo: dict = {}
# Keys that route a call to Python modes; excluded so the meta allocation below is not
# itself intercepted by the active fake mode.
_PYTHON_KEYS = (torch._C.DispatchKeySet(torch._C.DispatchKey.Python)
                | torch._C.DispatchKeySet(torch._C.DispatchKey.PythonTLSSnapshot))


class _NotMemoizable(Exception):
    pass


def _key_of(x):
    t = type(x)
    if t is FakeTensor:
        if x.requires_grad or x._is_view():
            raise _NotMemoizable
        return (t, tuple(x.shape), x.stride(), x.dtype, x.device)
    if t in _CONSTANT_TYPES:
        return (t, x)
    if t is tuple or t is list or t is torch.Size:
        return (t, tuple(_key_of(i) for i in x))
    if t is slice:
        return (t, _key_of(x.start), _key_of(x.stop), _key_of(x.step))
    raise _NotMemoizable


def memo_key(kind: str, target, args: tuple, kwargs: dict):
    """The memo key of a call, or None when the call is not memoizable."""
    try:
        key = (kind, target, _key_of(args), tuple((k, _key_of(v)) for k, v in kwargs.items()),
               torch.get_default_dtype())
        hash(key)
    except _NotMemoizable:
        return None
    except TypeError:  # an unhashable target or constant
        return None
    return key


def lookup(fake_mode, key) -> FakeTensor | None:
    spec = _memo.get(key)
    if spec is None:
        return None
    shape, stride, dtype, device = spec
    with torch._C._ExcludeDispatchKeyGuard(_PYTHON_KEYS):
        meta = torch.empty_strided(shape, stride, dtype=dtype, device="meta")
    return FakeTensor(fake_mode, meta, device)


def remember(key, args: tuple, kwargs: dict, result) -> None:
    """Record `result`'s metadata if it is one fresh, non-view tensor not requiring grad."""
    if type(result) is not FakeTensor or result.requires_grad or result._is_view():
        return
    if any(result is a for a in (*args, *kwargs.values())):  # in-place, or `out=`
        return
    _memo[key] = (tuple(result.shape), result.stride(), result.dtype, result.device)
