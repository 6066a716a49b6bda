"""torch context managers that are no-ops in a graph: `torch.autograd.profiler.record_function`
(also `torch.profiler.record_function`).

torch.compile drops profiler ranges from what it captures; bytegraph does the same: entering
and exiting such a block records nothing. A graph break inside the block hands the resume
function a `NullExit`, so the residual code's `with` cleanup also does nothing.
"""
from __future__ import annotations

from ..guards.guard import GuardKind
from .base import VariableTracker
from .constant import ConstantVariable
from .registry import guard, register


class NullContextVariable(VariableTracker):
    """A context manager whose enter and exit have no effect on the graph."""

    __slots__ = ("cls",)

    def __init__(self, cls, source=None):
        super().__init__(source)
        self.cls = cls

    def python_type(self) -> type:
        return self.cls

    def enter_with(self, tx) -> tuple:
        return NullExitVariable(self.cls), self

    def describe(self) -> str:
        return f"{self.cls.__qualname__} (a no-op in the graph)"


class NullExit:
    """The `__exit__` of a no-op context, rebuilt by residual code at a graph break."""

    __slots__ = ("cls",)

    def __init__(self, cls):
        self.cls = cls

    def __call__(self, *exc_info) -> bool:
        return False

    def __repr__(self) -> str:
        return f"<exit of no-op {self.cls.__qualname__}>"


class NullExitVariable(VariableTracker):
    """The exit callable BEFORE_WITH leaves on the stack for a no-op context."""

    __slots__ = ("cls",)
    kept_in_block = True

    def __init__(self, cls, source=None):
        super().__init__(source)
        self.cls = cls

    def python_type(self) -> type:
        return NullExit

    def call_function(self, tx, args, kwargs):
        return ConstantVariable(False)

    def reconstruct(self, cg) -> None:
        cg.load_const(NullExit(self.cls))


@register(NullExit, exact=True)
def build_null_exit(tx, value, source, do_guard: bool) -> VariableTracker:
    """A no-op block's exit handed to a resume function (Note [Breaks inside blocks])."""
    guard(tx, do_guard, GuardKind.TYPE_MATCH, source, NullExit)
    return NullExitVariable(value.cls, source)


def null_context(tx, args, kwargs, cls=None):
    """`cls(*args)` for a no-op context class: the arguments are not evaluated further."""
    return NullContextVariable(cls)
