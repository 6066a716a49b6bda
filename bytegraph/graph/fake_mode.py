"""The capture's fake tensor mode: torch's `FakeTensorMode`, with pure view ops answered
directly by their meta kernels.

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
`FakeTensorMode.dispatch`, except views of symbolic fakes (or with SymInt arguments), which
are memoized by `fake_memo.symbolic_view` (Note [Symbolic views]). `prim.device` is answered
as torch's `_device_handler` answers it, without the dispatch preamble.

The mode stays a `FakeTensorMode` instance of exactly that type (higher-order ops find
their fake implementations by the mode's exact type); the direct path is the instance's
own `__torch_dispatch__` (a bound method, which the dispatcher looks up on the mode
object). It calls `FakeTensorMode.dispatch` for everything else, without the class
method's wrappers: a call counter, and `torch._disable_dynamo`, which keeps TorchDynamo
from tracing into the mode and costs four eval-frame switches per op (TorchDynamo does
not run inside a bytegraph capture: a capture run under `torch.compile` would be traced by
it throughout, with this wrapper or without).
"""
from __future__ import annotations

from types import MethodType

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode, in_kernel_invocation_manager

from . import fake_memo
from .fake_alloc import new_fake

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
    mode.bg_shapes = None  # the capture's `Shapes` (graph/shapes.py) once it has symbolic sizes
    mode.bg_view_known = False  # an `as_strided` answering a view memo entry (Note [Views of arguments])
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
                and base.layout is _STRIDED and not base.is_quantized):
            if not base._has_symbolic_sizes_strides and _plain_ints(args[1:]):
                with in_kernel_invocation_manager(mode):
                    out = func(*args)
                device = base.fake_device
                if func in _LIST_RESULTS:
                    return [new_fake(mode, t, device) for t in out]
                return new_fake(mode, out, device)
            if mode.bg_shapes is not None:  # Note [Symbolic views] (graph/fake_memo.py)
                return fake_memo.symbolic_view(mode, mode.bg_shapes, func, types, args)
    return FakeTensorMode.dispatch(mode, func, types, args, kwargs or {})
