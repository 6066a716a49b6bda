"""Fake tensors made without dispatching: from metadata (the fake memo's answers, graph
inputs), and around a meta tensor a meta kernel returned.

Note [Fake tensor construction]
`FakeTensor.__new__` validates its arguments and sets twenty attributes, five of them
through memo descriptors (~15 µs of a ~20 µs fake allocation). `new_fake` makes the
same object: the subclass wrapper torch makes (`Tensor._make_subclass` with the fake
device for the backend keys, mutable data pointers refused as the mode says), with the
instance dict torch's constructor made for a fake tensor on that device copied in (the
template is made by `FakeTensor(...)` itself, once per device), and the mode set.

Note [Symbolic allocation]
A meta `empty_strided` over SymInts computes the storage size and the number of elements
through Python `SymNode` arithmetic (about 13 sympy operations for a 3-d result, ~250 µs).
A fake memo answer already knows its storage size: the expression the op's own result had.
`empty_symbolic_fake` makes the meta tensor with `Tensor._make_wrapper_subclass`, which takes
the storage size as given and sets the sizes and strides without arithmetic, on a carrier
subclass that never dispatches, and `new_fake` wraps it as `FakeTensor(...)` wraps any meta
tensor (`_make_subclass` detaches it, with the Python keys excluded): the same dispatch keys,
storage and metadata as `empty_strided` makes (tests/test_fake_alloc.py), in ~20 µs.
"""
from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorConfig, FakeTensorMode

_META = torch.device("meta")
# Keys that route a call to Python modes; excluded so that allocating a fake's meta tensor
# is not itself intercepted by the active fake mode.
_PYTHON_KEYS = (torch._C.DispatchKeySet(torch._C.DispatchKey.Python)
                | torch._C.DispatchKeySet(torch._C.DispatchKey.PythonTLSSnapshot))


def empty_fake(mode: FakeTensorMode, shape, stride, dtype: torch.dtype, device: torch.device,
               requires_grad: bool = False) -> FakeTensor:
    """A fake tensor of `mode` with this metadata, allocated without dispatching (the fake
    memo's answers, graph inputs made from metadata)."""
    with torch._C._ExcludeDispatchKeyGuard(_PYTHON_KEYS):
        meta = torch.empty_strided(shape, stride, dtype=dtype, device="meta", requires_grad=requires_grad)
    return new_fake(mode, meta, device)


class _MetaCarrier(torch.Tensor):
    """Carries a meta tensor made by `_make_wrapper_subclass` to `new_fake`, which detaches
    it with the Python keys excluded (so this never dispatches)."""

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise AssertionError(f"bytegraph: {func} dispatched to the meta carrier of a symbolic fake")


def empty_symbolic_fake(mode: FakeTensorMode, shape, stride, storage_bytes, dtype: torch.dtype,
                        device: torch.device, requires_grad: bool = False) -> FakeTensor:
    """A fake tensor of `mode` with sizes and strides over SymInts and a storage of
    `storage_bytes` (Note [Symbolic allocation])."""
    with torch._C._ExcludeDispatchKeyGuard(_PYTHON_KEYS):
        meta = _make_wrapper_subclass(_MetaCarrier, shape, stride, 0, dtype=dtype, device=_META,
                                      storage_size=storage_bytes, requires_grad=requires_grad)
        return new_fake(mode, meta, device)


_TEMPLATES: dict = {}  # device -> the instance dict FakeTensor() made for a fake on it, minus the mode
_make_subclass = torch.Tensor._make_subclass
_make_wrapper_subclass = torch.Tensor._make_wrapper_subclass
_throw_on_mutable_data_ptr = torch._C._set_throw_on_mutable_data_ptr
_warn_on_mutable_data_ptr = torch._C._set_warn_deprecated_on_mutable_data_ptr


def new_fake(mode: FakeTensorMode, elem: torch.Tensor, device: torch.device) -> FakeTensor:
    """`FakeTensor(mode, elem, device)` for a meta tensor `elem` (Note [Fake tensor construction])."""
    template = _TEMPLATES.get(device)
    if template is None or FakeTensorConfig.debug:
        fake = FakeTensor(mode, elem, device)
        if not FakeTensorConfig.debug:
            template = dict(fake.__dict__)
            del template["fake_mode"]
            _TEMPLATES[device] = template
        return fake
    fake = _make_subclass(FakeTensor, elem, elem.requires_grad, dispatch_device=True,
                          device_for_backend_keys=template["_fake_device"])
    if mode._allow_unsafe_data_ptr_access:
        _warn_on_mutable_data_ptr(fake)
    else:
        _throw_on_mutable_data_ptr(fake)
    state = fake.__dict__
    state.update(template)
    state["fake_mode"] = mode
    return fake
