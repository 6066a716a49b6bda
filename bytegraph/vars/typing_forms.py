"""Type-annotation objects (`typing` forms) and the pure queries of them.

A typing form (`Union`, `Literal`, `Optional[int]`, `list[int]`, `int | None`, a `TypeVar`)
is immutable and compared by identity or by its parts: read from outside it is a
`ConstantVariable` guarded by identity (`ID_MATCH`), so runtime validators that walk a
field's annotation (strict dataclasses) trace on constants. Not by equality: unions compare
as sets (`Union[int, str] == Union[str, int]`) while `get_args` keeps their order.
Annotations are evaluated once, with their class, so identity is stable in practice (a form
written in a loop body, `list[int]`, is a new object each time: one entry per object).
`typing.ForwardRef` is left out: it caches its evaluation on itself.

`FOLDS` is a trace-rules table (`vars/trace_rules.py`): `typing.get_origin`,
`typing.get_args`, ... are Python functions of `typing`, which the rules do not inline;
on constant arguments (classes, forms, None) they are run at trace time and their result
wrapped (`builder.wrap_constant`: classes as classes, forms as constants); on anything
else the call breaks the graph naming the argument.
"""
from __future__ import annotations

import types
import typing

from ..guards.guard import GuardKind
from .base import CallableValueVariable, VariableTracker
from .constant import ConstantVariable
from .registry import guard, register
from . import factory

TYPING_FORMS = (typing._SpecialForm, typing._BaseGenericAlias, typing.TypeVar, typing.ParamSpec,
                typing.TypeVarTuple, typing.ParamSpecArgs, typing.ParamSpecKwargs, types.GenericAlias,
                types.UnionType)


@register(*TYPING_FORMS)
def build_typing_form(tx, value, source, do_guard: bool) -> VariableTracker:
    guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
    return ConstantVariable(value, source)


class TypingFoldVariable(CallableValueVariable):
    """A pure `typing` query (`FOLDS`): folded on constant arguments."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs):
        return factory.fold_call(tx, self.fn, args, kwargs, f"typing.{self.fn.__name__}")

    def describe(self) -> str:
        return f"typing.{self.fn.__name__}"


FOLDS = {fn: TypingFoldVariable for fn in (typing.get_origin, typing.get_args, typing.is_typeddict)}
