"""Fake tensors for graph inputs.

`FakeTensorMode.from_tensor` describes a real tensor in full (a view and its base,
storage shared with other tensors, autograd history, subclasses, `.grad`) and costs
about 150 µs; a model sends every parameter through it. A plain tensor or parameter
that is a leaf, not a view, strided, at storage offset 0, and the only tensor on its
storage has none of that to describe: its fake is allocated from its shape, strides,
dtype, device and requires_grad (~15 µs). Everything else goes through `from_tensor`,
which also makes fakes of tensors that share a storage share one.

Under symbolic sizes the same holds: a plain tensor's symbolic fake is allocated over the
ShapeEnv's sizes and strides for it (`ShapeEnv.create_symbolic_sizes_strides_storage_offset`,
what `from_tensor` asks it too) and the storage size they span, with no SymInt arithmetic
(Note [Symbolic allocation] in graph/fake_alloc.py): ~0.7 ms of which the symbols are most,
where `from_tensor` takes ~1.7.
"""
from __future__ import annotations

import sympy
import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.fx.experimental.sym_node import SymNode

from .fake_alloc import empty_fake, empty_symbolic_fake
_PLAIN_TYPES = (torch.Tensor, torch.nn.Parameter)


def _storage_users(t: torch.Tensor) -> int:
    return torch._C._storage_Use_Count(t.untyped_storage()._cdata)


# What a storage that one tensor alone uses reports (its Python storage object counts too).
_ONE_USER = _storage_users(torch.empty(1))


def _is_plain(t: torch.Tensor) -> bool:
    return (type(t) in _PLAIN_TYPES and t.layout is torch.strided and t.grad_fn is None and t._base is None
            and t.storage_offset() == 0 and t.device.type != "meta" and not t.is_quantized
            and not t.is_nested and not t.is_conj() and not t.is_neg() and not t.is_inference()
            and _storage_users(t) == _ONE_USER)


def fake_input(fake_mode, real: torch.Tensor) -> FakeTensor:
    """The fake tensor standing for graph input `real` (static shapes)."""
    if not _is_plain(real):
        return fake_mode.from_tensor(real, static_shapes=True)
    fake = empty_fake(fake_mode, real.shape, real.stride(), real.dtype, real.device, real.requires_grad)
    if type(real) is torch.nn.Parameter:
        fake._is_param = True  # as from_tensor marks it: isinstance(fake, Parameter) holds
    return fake


def symbolic_fake_input(fake_mode, real: torch.Tensor, source, context) -> FakeTensor:
    """The fake tensor with symbolic sizes standing for graph input `real` read at `source`
    (a torch `Source`), its dimensions dynamic as symbolic `context` says."""
    env = fake_mode.shape_env
    if not _is_plain(real) or 0 in real.shape:
        return fake_mode.from_tensor(real, source=source, symbolic_context=context)
    sizes, strides, _ = env.create_symbolic_sizes_strides_storage_offset(real, source, symbolic_context=context)
    itemsize = real.element_size()
    extent = 1 + sympy.Add(*[(size_expr(n) - 1) * size_expr(s) for n, s in zip(sizes, strides)])
    hint = 1 + sum((n - 1) * s for n, s in zip(real.shape, real.stride()))
    storage = torch.SymInt(SymNode(sympy.sympify(itemsize * extent), env, int, itemsize * hint))
    fake = empty_symbolic_fake(fake_mode, sizes, strides, storage, real.dtype, real.device, real.requires_grad)
    if type(real) is torch.nn.Parameter:
        fake._is_param = True
    return fake


def size_expr(size):
    """The sympy expression of a size, stride or offset (a SymInt or an int)."""
    return size.node.expr if type(size) is torch.SymInt else sympy.Integer(size)
