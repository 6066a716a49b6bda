"""`types.MappingProxyType(mapping)` made in the trace, and a dict view's `view.mapping`: a
read-only live view of a mapping.

The proxy holds the tracker of its mapping and answers every read through it, so a write to
the dict after the proxy was made is seen through the proxy, as in eager: `len`, `in`,
`[]`, iteration, `get`, `keys`/`values`/`items` (the mapping's own live views) and `copy`
(a copy of the mapping, of its type). Writes raise eager's TypeError. Residual code
rebuilds it once as `types.MappingProxyType(<the mapping>)`, so it keeps its identity
within one call. A proxy from outside the compiled function stays a graph break: its
mapping cannot be reached through an attribute, so its aliasing with a dict the function
also changes could not be guarded.

This module is the worked example of "Adding a kind" in docs/architecture.md: one tracker,
its METHODS table, the handler row of the constructor, and a line in the manifest.
"""
from __future__ import annotations

import collections.abc
import types

from .base import MethodOfVariable, VariableTracker
from .method_table import dispatch, row
from .registry import handles


def _delegate(tx, proxy, name, args, kwargs) -> VariableTracker:
    """`proxy.<name>(...)`: the mapping's own method (CPython's `mappingproxy` does the same)."""
    return proxy.mapping.call_method(tx, name, args, kwargs)


def _read_only(message: str):
    def run(tx, proxy, name, args, kwargs):
        tx.raise_user_error(TypeError(message))
    return run


class MappingProxyVariable(VariableTracker):
    """A `types.MappingProxyType` over the tracker `mapping`."""

    __slots__ = ("mapping",)
    rebuilt_as_new_object = True

    METHODS = {
        **{name: row(_delegate) for name in ("get", "keys", "values", "items", "copy", "__getitem__",
                                             "__contains__", "__len__", "__iter__", "__reversed__")},
        "__setitem__": row(_read_only("'mappingproxy' object does not support item assignment")),
        "__delitem__": row(_read_only("'mappingproxy' object does not support item deletion")),
    }

    def __init__(self, mapping: VariableTracker, source=None):
        super().__init__(source)
        self.mapping = mapping

    def python_type(self) -> type:
        return types.MappingProxyType

    def unpack(self, tx) -> list:
        return self.mapping.unpack(tx)

    def iterate(self, tx):
        return self.mapping.iterate(tx)

    def reverse_iterate(self, tx):
        return self.mapping.reverse_iterate(tx)

    def truth(self, tx) -> bool:
        return self.mapping.truth(tx)

    def len_impl(self, tx) -> VariableTracker:
        return self.mapping.len_impl(tx)

    def contains_impl(self, tx, item) -> VariableTracker:
        return self.mapping.contains_impl(tx, item)

    def getitem_impl(self, tx, key) -> VariableTracker:
        return self.mapping.getitem_impl(tx, key)

    def hasattr_impl(self, tx, name: str) -> bool:
        return hasattr(types.MappingProxyType, name)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in self.METHODS:
            return MethodOfVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        result = dispatch(tx, self, self.METHODS, name, args, kwargs)
        if result is None:
            tx.unsupported(f"{name}() of {self.describe()}", category="unsupported call")
        return result

    def children(self):
        return (self.mapping,)

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(types.MappingProxyType)
        cg.reconstruct(self.mapping)
        cg.call(1)

    def describe(self) -> str:
        return f"a mappingproxy of {self.mapping.describe()}"


@handles(types.MappingProxyType)
def _mapping_proxy(tx, fn, args, kwargs):
    """`types.MappingProxyType(mapping)`: CPython accepts any mapping but a list or tuple."""
    if kwargs or len(args) != 1:
        tx.raise_user_error(TypeError("mappingproxy() takes exactly one positional argument"))
    kind = args[0].python_type()
    if issubclass(kind, (list, tuple)):
        tx.raise_user_error(TypeError(f"mappingproxy() argument must be a mapping, not {kind.__name__}"))
    if not issubclass(kind, collections.abc.Mapping):
        tx.unsupported(f"types.MappingProxyType() of {args[0].describe()}", category="unsupported call")
    return MappingProxyVariable(args[0])
