"""Code objects (`fn.__code__`): their data attributes are constants of the trace.

A code object is immutable, so once the trace knows which code object it holds, every
`co_*` data attribute (`co_varnames`, `co_argcount`, `co_flags`, `co_name`,
`co_filename`, `co_kwonlyargcount`, ...) is folded to a constant. The builder guards the
code object's identity at its source (`fn.__code__ is <code>`); a code object of a
function made during tracing is a constant of the traced bytecode and needs no guard.
Its methods (`replace`, `co_lines`, ...) are not modeled: a graph break.
"""
from __future__ import annotations

import types

from ..guards.guard import GuardKind
from .base import VariableTracker
from .constant import ConstantVariable
from .registry import guard, register


class CodeVariable(VariableTracker):
    __slots__ = ("code",)

    def __init__(self, code: types.CodeType, source=None):
        super().__init__(source)
        self.code = code

    def python_type(self) -> type:
        return types.CodeType

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self):
        return self.code

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if not name.startswith("co_") or not hasattr(self.code, name):
            return super().var_getattr(tx, name)
        value = getattr(self.code, name)
        if callable(value):  # co_lines, co_positions
            return super().var_getattr(tx, name)
        return ConstantVariable(value)

    def hasattr_impl(self, tx, name: str) -> bool:
        return hasattr(self.code, name)

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
        else:
            cg.load_const(self.code)

    def describe(self) -> str:
        return f"code object {self.code.co_qualname}"


@register(types.CodeType, exact=True)
def build_code(tx, value, source, do_guard: bool) -> VariableTracker:
    guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
    return CodeVariable(value, source)
