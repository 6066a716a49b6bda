"""Legacy tensor types: `torch.FloatTensor`, `torch.HalfTensor`, `torch.cuda.LongTensor`,
`torch.sparse.DoubleTensor`, ... (the classes `torch._tensor_classes` holds, instances of
torch's metaclass `tensortype`), in traced code:
- calling one (`torch.FloatTensor([1.0, 2.0])`, `torch.HalfTensor(2, 3)`, `torch.FloatTensor(x)`)
  is a graph op whose node calls the type, as eager does (fake tensors run its constructor:
  a CUDA type on a build without CUDA raises eager's TypeError); on a list holding tensors
  (whose values it reads) it breaks; its class attributes (`dtype`, `is_cuda`,
  `is_sparse`) are read from the class (`LegacyTensorTypeVariable`, a trace rule);
- `x.type(torch.HalfTensor)` records the type by its name, `x.type("torch.HalfTensor")`,
  which `Tensor.type` reads the same way (`spelled_by_name`, the argument rule of the
  `type` row of `TENSOR_METHODS`), as torch.compile does: FX code cannot spell a class (a
  graph holding the class itself was invalid code). Any other op given a class breaks
  (`object_protocol.generic_fx_arg`);
- `isinstance(x, torch.FloatTensor)` is the metaclass's own check, the tensor's dtype and
  backend, not its Python type (`torch.Tensor` is no subclass of a legacy type): answered
  by the tensor's example, which the tensor guard pins (`legacy_isinstance`).
"""
from __future__ import annotations

import types

import torch

from .base import CallableValueVariable
from .classes import ClassVariable
from .constant import ConstantVariable

LEGACY_TYPES = frozenset(torch._tensor_classes)


def type_name(cls: type) -> str:
    """The name torch spells a legacy type by (`torch.HalfTensor`, `torch.cuda.LongTensor`)."""
    return f"{cls.__module__}.{cls.__name__}"


class LegacyTensorTypeVariable(CallableValueVariable):
    """A legacy tensor type (identity-guarded): a call is a graph op; attributes are the class's."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs):
        if any(_holds_tensors(a) for a in (*args, *kwargs.values())):
            tx.unsupported(f"{type_name(self.fn)}() called on a sequence holding tensors (their values are read "
                           "into the new tensor, which fake tensors cannot do)", category="data-dependent",
                           hint="build it with torch.stack or torch.tensor outside the compiled function")
        return tx.output.call_op("call_function", self.fn, args, kwargs)

    def var_getattr(self, tx, name):
        return ClassVariable(self.fn, self.source).var_getattr(tx, name)

    def describe(self) -> str:
        return f"legacy tensor type {type_name(self.fn)}"


def _holds_tensors(vt) -> bool:
    items = vt.sequence_items()
    return items is not None and any(i.is_tensor or _holds_tensors(i) for i in items)


# The trace rule of each legacy type (vars/trace_rules.py): classes, so rules are asked first.
RULES = dict.fromkeys(LEGACY_TYPES, LegacyTensorTypeVariable)


def _legacy(vt) -> bool:
    if not vt.is_python_constant():
        return False
    value = vt.as_python_constant()
    return isinstance(value, type) and value in LEGACY_TYPES


def spelled_by_name(args: list, kwargs: dict) -> tuple:
    """The arguments of a `Tensor.type(...)` node, a legacy type spelled by its name."""
    def spell(vt):
        return ConstantVariable(type_name(vt.as_python_constant())) if _legacy(vt) else vt
    return [spell(a) for a in args], {k: spell(v) for k, v in kwargs.items()}


def _flat_classes(classes) -> list | None:
    """The classes of `isinstance`'s second argument (nested tuples and `A | B` unions), or None
    for anything else."""
    if isinstance(classes, type):
        return [classes]
    if isinstance(classes, (tuple, types.UnionType)):
        parts = classes if isinstance(classes, tuple) else classes.__args__
        flat = [_flat_classes(c) for c in parts]
        return None if any(f is None for f in flat) else [c for f in flat for c in f]
    return None


def legacy_isinstance(vt, classes) -> bool | None:
    """`isinstance(value, classes)` for tracker `vt` when `classes` names a legacy tensor
    type, else None (the generic answer holds): a tensor is an instance of a legacy type by
    its example's dtype and backend (the metaclass's check), other values never are; the
    other classes answer by `vt`'s Python type."""
    flat = _flat_classes(classes)
    if flat is None or not any(c in LEGACY_TYPES for c in flat):
        return None
    for cls in flat:
        if cls in LEGACY_TYPES:
            if vt.is_tensor and isinstance(vt.example, cls):
                return True
        elif issubclass(vt.python_type(), cls):
            return True
    return False
