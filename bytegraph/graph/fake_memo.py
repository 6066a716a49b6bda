"""Memo of fake-tensor results by (op, argument metadata).

Under static shapes an op's output metadata is a function of the op, the metadata of
its tensor arguments (shape, stride, storage offset, dtype, device, requires_grad) and
its constant arguments, plus the default dtype and the grad mode. Running an op through
`FakeTensorMode` costs tens of microseconds, and an op on tensors that require grad
(parameters) hundreds, more for composite ops such as `matmul` or `linear` that
decompose into several; building a fake tensor from remembered metadata costs about ten.

Only a result that is one tensor sharing no storage with any argument is memoized (so
not an in-place or `out=` result, nor a view of an argument), at storage offset 0, and
not a leaf that requires grad. Such a result may still be a view of a temporary the op
made (`linear` of a 3-d input returns one); as the program cannot reach that temporary
and reads of view-ness break the graph (`vars/tensor.py`), it is rebuilt as a plain
tensor, but only when made with grad mode on (a view made under no_grad refuses later
in-place ops that need grad). A result that requires grad gets autograd history from
`_FreshResult`, a node whose input is an argument that requires grad (one is enough:
fake tensors never run backward, and each input costs a device query): it is a
non-leaf like the op's real result, so `requires_grad`, `is_leaf`, `grad_fn is None`
and later in-place ops behave the same. Everything else dispatches for real.
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
        return (t, tuple(x.shape), x.stride(), x.storage_offset(), x.dtype, x.device, x.requires_grad)
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
               torch.get_default_dtype(), torch.is_grad_enabled())
        hash(key)
    except _NotMemoizable:
        return None
    except TypeError:  # an unhashable target or constant
        return None
    return key


class _FreshResult(torch.autograd.Function):
    """Gives a fake result built from remembered metadata the autograd history of a real
    op result: `apply(fake_mode, spec, an argument requiring grad)`."""

    @staticmethod
    def forward(ctx, fake_mode, spec, grad_input):
        return _allocate(fake_mode, spec)

    @staticmethod
    def backward(ctx, *grads):
        raise RuntimeError("bytegraph: a fake tensor's autograd history is not differentiable")


def _allocate(fake_mode, spec) -> FakeTensor:
    shape, stride, dtype, device, _ = spec
    with torch._C._ExcludeDispatchKeyGuard(_PYTHON_KEYS):
        meta = torch.empty_strided(shape, stride, dtype=dtype, device="meta")
    return FakeTensor(fake_mode, meta, device)


def _tensors(x, found: list) -> list:
    """The fake tensors in an argument structure (the structures `_key_of` accepts)."""
    t = type(x)
    if t is FakeTensor:
        found.append(x)
    elif t is tuple or t is list:
        for item in x:
            _tensors(item, found)
    elif t is slice:
        _tensors((x.start, x.stop, x.step), found)
    return found


def _arguments(args: tuple, kwargs: dict) -> list:
    return _tensors(tuple(kwargs.values()), _tensors(args, []))


def lookup(fake_mode, key, args: tuple, kwargs: dict) -> FakeTensor | None:
    """The remembered result of the call `key` was made from, or None (dispatch for real)."""
    spec = _memo.get(key)
    if spec is None:
        return None
    if not spec[-1]:
        return _allocate(fake_mode, spec)
    grad_input = next((a for a in _arguments(args, kwargs) if a.requires_grad), None)
    if grad_input is None:
        return None
    result = _FreshResult.apply(fake_mode, spec, grad_input)
    return result if result.requires_grad else None


def remember(key, args: tuple, kwargs: dict, result) -> None:
    """Record `result`'s metadata if it is memoizable (see the module docstring)."""
    if type(result) is not FakeTensor or result.storage_offset() != 0 or (result.requires_grad and result.is_leaf):
        return
    if result._is_view() and not torch.is_grad_enabled():
        return
    if any(torch._C._is_alias_of(result, a) for a in _arguments(args, kwargs)):
        return
    _memo[key] = (tuple(result.shape), result.stride(), result.dtype, result.device, result.requires_grad)
