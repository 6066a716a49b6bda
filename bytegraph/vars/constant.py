"""Immutable Python constants: None, bools, numbers, strings, bytes, ranges, slices,
dtypes, devices, Ellipsis, numpy's numeric scalars (`np.float64(2.0)`, what numpy folded on
constants returns: vars/numpy_calls.py), and tuples of those folded by the tracer.

A method of these values is folded on constant arguments by running the real method at
trace time; for the builtin types the table of vars/builtin_methods.py decides first: a
method returning a live iterator goes to the iterator slot (`"ab".__iter__()`), object
machinery (`__reduce_ex__`, `__getattribute__`, ...) breaks naming it. `type.method(value,
...)` called unbound (`str.upper(s)`, `int.__add__(a, b)`) is bound to the value by the
`builtin_base_method` slot.
"""
from __future__ import annotations

import enum

import torch

from ..guards.guard import GuardKind
from ..guards.sources import ObjectSource
from . import builtin_methods, factory
from .base import MethodOfVariable, VariableTracker
from .factory import provides
from .registry import guard, register



def _numpy_scalar_types() -> tuple:
    """numpy's numeric and bool scalar types (immutable, hashable, compared by value), if
    numpy is installed."""
    try:
        import numpy  # local: optional dependency
    except ImportError:
        return ()
    return tuple(sorted({t for t in numpy.sctypeDict.values() if issubclass(t, (numpy.number, numpy.bool_))},
                        key=lambda t: t.__name__))


NUMPY_SCALAR_TYPES = _numpy_scalar_types()

CONSTANT_TYPES = (type(None), bool, int, float, complex, str, bytes, range, slice,
                  type(Ellipsis), type(NotImplemented), torch.dtype, torch.device,
                  torch.memory_format, torch.layout, *NUMPY_SCALAR_TYPES)


def is_constant_value(value) -> bool:
    if type(value) in CONSTANT_TYPES:
        return True
    if type(value) in (tuple, frozenset):
        return all(is_constant_value(v) for v in value)
    return False


class ConstantVariable(VariableTracker):
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

    def truth(self, tx) -> bool:
        return bool(self.value)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        try:
            attr = getattr(self.value, name)
        except AttributeError as e:
            tx.raise_user_error(e)
        if isinstance(attr, type):  # `x.__class__`: the class, not a method
            return tx.wrap(attr, ObjectSource(attr), guard=False)
        if callable(attr):
            return ConstantMethodVariable(self, name)
        return ConstantVariable(attr)

    def builtin_base_method(self, tx, attr):
        name = builtin_methods.bound_name(type(self.value), attr)
        return ConstantMethodVariable(self, name) if name is not None else None

    def unpack(self, tx) -> list:
        if isinstance(self.value, (str, bytes, range, tuple, frozenset)):
            return [ConstantVariable(v) for v in self.value]
        return super().unpack(tx)

    def iterate(self, tx):
        if constant_sequence(self):
            return factory.sequence_iterator(self)
        return super().iterate(tx)

    def reverse_iterate(self, tx):
        if constant_sequence(self):
            if isinstance(self.value, range):  # CPython: a range_iterator over the reversed range
                return factory.sequence_iterator(ConstantVariable(self.value[::-1]))
            return factory.sequence_iterator(self, reverse=True)
        return super().reverse_iterate(tx)

    def hasattr_impl(self, tx, name: str) -> bool:
        return hasattr(self.value, name)

    def is_none(self) -> bool:
        return self.value is None

    def reconstruct(self, cg) -> None:
        cg.load_const(self.value)

    def describe(self) -> str:
        return repr(self.value)

    def __repr__(self) -> str:
        return f"ConstantVariable({self.value!r})"


class ConstantMethodVariable(MethodOfVariable):
    """A method of a constant (`"a,b".split`), folded when called on constants."""

    __slots__ = ()

    def python_type(self) -> type:
        return type(getattr(self.obj.value, self.name))

    def call_function(self, tx, args, kwargs):
        method = builtin_methods.lookup(type(self.obj.value), self.name)
        if method is not None and not method.foldable:
            if method.returns_view and method.slot and not args and not kwargs:
                return getattr(self.obj, method.slot)(tx)  # `"ab".__iter__()`: iter("ab")
            tx.unsupported(builtin_methods.unmodelled_reason(type(self.obj.value), self.name, self.obj.describe()),
                           category="unsupported call")
        if self.name == "join" and len(args) == 1 and not args[0].is_python_constant() \
                and isinstance(self.obj.value, (str, bytes)):
            args = [factory.tuple_of(args[0].iterate(tx).unpack(tx))]  # a generator, a list, ...
        return factory.fold_call(tx, getattr(self.obj.value, self.name), args, kwargs,
                         f"{self.obj.describe()}.{self.name}")


@register(*CONSTANT_TYPES, exact=True)
def build_constant(tx, value, source, do_guard: bool) -> VariableTracker:
    if do_guard and (type(value) is int or type(value) is float) and tx.output.dynamic is not None \
            and tx.output.dynamic.dynamic_int(source, value):  # Note [Symbolic sizes] (graph/shapes.py)
        return factory.wrap_int(tx, value, source)
    guard(tx, do_guard, GuardKind.CONSTANT_MATCH, source, value)
    return ConstantVariable(value, source)


@register(enum.Enum)
def build_enum_member(tx, value, source, do_guard: bool) -> VariableTracker:
    guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
    return ConstantVariable(value, source)


_CONSTANT_SEQUENCES = (str, bytes, range, tuple)


def constant_sequence(vt) -> bool:
    """Whether `vt` is a constant that a sequence iterator walks (str, bytes, range, tuple)."""
    return isinstance(vt, ConstantVariable) and isinstance(vt.value, _CONSTANT_SEQUENCES)


provides("constant")(ConstantVariable)
