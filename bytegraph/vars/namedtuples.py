"""The C and class-making parts of named tuples (the instances are `NamedTupleVariable`s,
vars/containers.py): `tuple.__new__(cls, iterable)`, which `cls._make` and a generated
`__new__` call, makes one from an iterable; `collections.namedtuple(...)` itself, which
makes a new class each call, is a graph break with its reason."""
from __future__ import annotations

import collections

from .registry import handles
from .containers import NamedTupleVariable, TupleVariable
from .iterators import iterator_of


@handles(tuple.__new__)
def _tuple_new(tx, fn, args, kwargs):
    """`tuple.__new__(cls, iterable=())` for `tuple` or a named tuple class."""
    if kwargs or not 1 <= len(args) <= 2 or not args[0].is_python_constant():
        tx.unsupported("tuple.__new__() with these arguments", category="unsupported call")
    cls = args[0].as_python_constant()
    items = iterator_of(tx, args[1]).unpack(tx) if len(args) > 1 else []
    if cls is tuple:
        return TupleVariable(items)
    if not (isinstance(cls, type) and issubclass(cls, tuple) and hasattr(cls, "_fields")):
        tx.unsupported(f"tuple.__new__() of {cls!r}", category="unsupported call")
    return NamedTupleVariable(items, cls)


@handles(collections.namedtuple)
def _namedtuple(tx, fn, args, kwargs):
    tx.unsupported("collections.namedtuple() makes a new class each call", category="unsupported call",
                   hint="define the named tuple class at module level")
