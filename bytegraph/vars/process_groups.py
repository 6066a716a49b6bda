"""`torch.distributed` process groups read from outside the trace (`ProcessGroupVariable`), and
its reduce ops (`dist.ReduceOp.SUM`, ...: constants).

A process group stands for a fixed set of ranks over one backend: its rank in the group,
its size, its name and description never change for the object's life. The tracker is
therefore the group itself, guarded by identity where the trace reads it, and those
queries fold to constants (`PURE_PROPERTIES`, `PURE_METHODS`): the functional collectives
(`torch.distributed._functional_collectives`) pass a group to their ops by its name, which
the graph then holds as a constant, as torch.compile's does. Every other method of a group
(its own collectives, `barrier`, `abort`, ...) acts on the real group and is a graph break
with its reason; the in-place `torch.distributed` collectives are traced as their
functional forms instead (`vars/polyfills/distributed.py`). A `ReduceOp.RedOpType` member is
an immutable enum value of torch's C++ side: a constant, guarded by value where it is read.
"""
from __future__ import annotations

import torch.distributed as dist

from ..guards.guard import GuardKind
from .base import MethodOfVariable, VariableTracker
from .constant import ConstantVariable
from .registry import guard, register

PURE_PROPERTIES = frozenset({"group_name", "group_desc", "bound_device_id"})
PURE_METHODS = frozenset({"rank", "size", "name", "_get_backend_name"})


class ProcessGroupVariable(VariableTracker):
    """A real `torch.distributed.ProcessGroup` with a source (identity-guarded)."""

    __slots__ = ("value",)

    def __init__(self, value, source=None):
        super().__init__(source)
        self.value = value

    def python_type(self) -> type:
        return type(self.value)

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self):
        return self.value

    def var_getattr(self, tx, name):
        if name in PURE_PROPERTIES:
            return ConstantVariable(getattr(self.value, name))
        if name in PURE_METHODS:
            return MethodOfVariable(self, name)
        tx.unsupported(f"attribute {name!r} of {self.describe()}: only a group's rank, size and names are "
                       "traced (its own collectives act on the real group)", category="unsupported attribute",
                       hint="call the functional collectives (torch.distributed._functional_collectives) or the "
                            "torch.distributed ones with this group")

    def call_method(self, tx, name, args, kwargs):
        if name in PURE_METHODS and not args and not kwargs:
            return ConstantVariable(getattr(self.value, name)())
        return super().call_method(tx, name, args, kwargs)

    def describe(self) -> str:
        return f"process group {self.value.group_name!r}"


if dist.is_available():
    @register(dist.ReduceOp.RedOpType, exact=True)
    def build_reduce_op(tx, value, source, do_guard: bool) -> ConstantVariable:
        guard(tx, do_guard, GuardKind.CONSTANT_MATCH, source, value)
        return ConstantVariable(value, source)

    @register(dist.ProcessGroup)
    def build_process_group(tx, value, source, do_guard: bool) -> ProcessGroupVariable:
        if source is None:
            tx.unsupported("a process group without a source", category="unsupported value")
        guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
        return ProcessGroupVariable(value, source)
