"""The capture's fake tensor mode: torch's `FakeTensorMode`, with pure view ops answered
directly by their meta kernels, and a cheaper constructor of fake tensors.

Note [Direct views]
A model's forward is full of views (`view`, `transpose`, slicing, `unsqueeze`, `expand`,
`split`): about a third of its ops, and, through `FakeTensorMode.dispatch`, the dearest
ones (~250 µs each: the dispatch cache's key and entry checks, then a Python reference
decomposition that dispatches twice more, plus one `prim.device` query per result).
They are not in the fake memo (`fake_memo.py`: a view shares its argument's storage, so
its result cannot be rebuilt from metadata alone).

For a pure view op (the `_DIRECT_VIEWS` overloads: no `inplace_view`, no data) whose one
tensor argument is a static-shaped, strided, non-quantized, non-constant fake tensor of
this mode and whose other arguments are plain ints and bools (no SymInt), the mode runs
the op's C++ meta kernel on the fake tensor itself (`in_kernel_invocation_manager`, as
`FakeTensorMode` does for the ops it does not decompose) and wraps the result, which
shares the argument's storage, as a fake tensor on the argument's device. This happens
below autograd, so autograd's own view tracking (`_base`, the version counter, the
no-grad creation mark) is made above it as for any fake view. The C++ kernel is the one
eager runs, so sizes and strides are eager's (tests/test_direct_views.py compares them
with eager's and with torch's fake path for each op). Anything else goes through
`FakeTensorMode.dispatch`. `prim.device` is answered as torch's `_device_handler`
answers it, without the dispatch preamble.

The mode stays a `FakeTensorMode` instance of exactly that type (higher-order ops find
their fake implementations by the mode's exact type); the direct path is the instance's
own `__torch_dispatch__` (a bound method, which the dispatcher looks up on the mode
object). It calls `FakeTensorMode.dispatch` for everything else, without the class
method's wrappers: a call counter, and `torch._disable_dynamo`, which keeps TorchDynamo
from tracing into the mode and costs four eval-frame switches per op (TorchDynamo does
not run inside a bytegraph capture: a capture run under `torch.compile` would be traced by
it throughout, with this wrapper or without).

Note [Fake tensor construction]
`FakeTensor.__new__` validates its arguments and sets twenty attributes, five of them
through memo descriptors (~15 µs of a ~20 µs fake allocation). `new_fake` makes the
same object: the subclass wrapper torch makes (`Tensor._make_subclass` with the fake
device for the backend keys, mutable data pointers refused as the mode says), with the
instance dict torch's constructor made for a fake tensor on that device copied in (the
template is made by `FakeTensor(...)` itself, once per device), and the mode set.
"""
from __future__ import annotations

from types import MethodType

import torch
from torch._subclasses.fake_tensor import (FakeTensor, FakeTensorConfig, FakeTensorMode,
                                           in_kernel_invocation_manager)

aten = torch.ops.aten
_DEVICE = torch.ops.prim.device.default
_META = torch.device("meta")
_STRIDED = torch.strided

_DIRECT_VIEWS = frozenset({
    aten.view.default, aten._reshape_alias.default, aten.alias.default, aten.as_strided.default,
    aten.transpose.int, aten.permute.default, aten.t.default,
    aten.slice.Tensor, aten.select.int,
    aten.unsqueeze.default, aten.squeeze.default, aten.squeeze.dim, aten.squeeze.dims,
    aten.expand.default, aten.unfold.default, aten.diagonal.default,
    aten.split.Tensor, aten.split_with_sizes.default, aten.unbind.int,
})
_LIST_RESULTS = frozenset({aten.split.Tensor, aten.split_with_sizes.default, aten.unbind.int})


def make_fake_mode() -> FakeTensorMode:
    """A new fake mode for one capture, with the direct view path (Note [Direct views])."""
    mode = FakeTensorMode()
    mode.__torch_dispatch__ = MethodType(_torch_dispatch, mode)
    return mode


def _plain_ints(args) -> bool:
    for a in args:
        t = type(a)
        if t is int or t is bool or a is None:
            continue
        if t is list or t is tuple:
            if all(type(i) is int for i in a):
                continue
        return False
    return True


def _torch_dispatch(mode: FakeTensorMode, func, types, args=(), kwargs=None):
    """The mode's `__torch_dispatch__`: pure views directly, everything else through
    `FakeTensorMode.dispatch`."""
    if func is _DEVICE and len(args) == 1 and type(args[0]) is FakeTensor:
        return _META if args[0].fake_mode.in_kernel_invocation else args[0].fake_device
    if func in _DIRECT_VIEWS and not kwargs and args:
        base = args[0]
        if (type(base) is FakeTensor and base.fake_mode is mode and base.constant is None
                and not base._has_symbolic_sizes_strides and base.layout is _STRIDED
                and not base.is_quantized and _plain_ints(args[1:])):
            with in_kernel_invocation_manager(mode):
                out = func(*args)
            device = base.fake_device
            if func in _LIST_RESULTS:
                return [new_fake(mode, t, device) for t in out]
            return new_fake(mode, out, device)
    return FakeTensorMode.dispatch(mode, func, types, args, kwargs or {})


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


_TEMPLATES: dict = {}  # device -> the instance dict FakeTensor() made for a fake on it, minus the mode
_make_subclass = torch.Tensor._make_subclass
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
