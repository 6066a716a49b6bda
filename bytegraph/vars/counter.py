"""`collections.Counter`: a dict tracker whose missing keys count as zero.

A counter made during tracing or read from outside is a `CounterVariable`: the dict
methods it inherits from `dict` are `DictVariable`'s; the methods CPython writes with C
helpers or `super()` (`update`, `subtract`, `most_common`, `elements`, `total`, `copy`)
inline the bodies of `vars/polyfills/collections.py` with the tracker as `self`; every
other method of the class (`_keep_positive`, the operators `+ - | &`, unary `+ -` and
their in-place forms, through `python_dunders`) inlines Counter's own Python code.
From outside it is guarded and replayed as a dict (`Counter.update` of an empty counter
stores the counts as they are).
"""
from __future__ import annotations

import collections
import itertools
import types

from .registry import handles
from .class_lookup import class_lookup
from .constant import ConstantVariable
from .containers import DictVariable
from .polyfills.trackers import PolyfillBodyVariable, PolyfilledIteratorVariable
from .method_table import dispatch, one_arg, row
from .polyfills.collections import COUNTER_METHODS
from .registry import register
from . import factory

_OPERATORS = frozenset({"__add__", "__sub__", "__or__", "__and__", "__pos__", "__neg__",
                        "__iadd__", "__isub__", "__ior__", "__iand__"})


def _polyfilled(tx, c, name, args, kwargs):
    """A method whose CPython code uses C helpers or `super()`: its polyfill body, inlined."""
    return tx.inline_call(PolyfillBodyVariable(COUNTER_METHODS[name]), [c, *args], kwargs)


def _from_one_iterable(tx, c, name, args, kwargs):
    """`update`/`subtract`: their signature's TypeError, then the polyfill body."""
    if len(args) > 1:
        tx.raise_user_error(TypeError(f"{name}() takes from 1 to 2 positional arguments but "
                                      f"{len(args) + 1} were given"))
    return _polyfilled(tx, c, name, args, kwargs)


def _delitem(tx, c, name, args, kwargs):
    """`del c[key]`: no KeyError for a missing element."""
    if args[0].key_impl(tx) not in c.items:
        return ConstantVariable(None)
    return DictVariable.call_method(c, tx, name, args, kwargs)


# a Counter's own methods, before the Python methods of its class and the dict's (METHODS)
_COUNTER_ROWS = {
    **dict.fromkeys(COUNTER_METHODS, row(_polyfilled)),
    "update": row(_from_one_iterable),
    "subtract": row(_from_one_iterable),
    "elements": row(lambda tx, c, name, args, kwargs: PolyfilledIteratorVariable(
        _polyfilled(tx, c, name, args, kwargs), itertools.chain)),
    "__delitem__": row(_delitem),
    "__missing__": row(lambda tx, c, name, args, kwargs: ConstantVariable(0), when=one_arg),
}


class CounterVariable(DictVariable):
    """A `collections.Counter` (`items`: element -> count tracker)."""

    __slots__ = ()
    python_dunders = _OPERATORS
    inplace_methods = frozenset()  # `c |= d` is Counter.__ior__ (python_dunders), not dict's
    plain_equality = False

    def __init__(self, items: dict, source=None):
        super().__init__(items, source, collections.Counter)

    def as_python_constant(self):
        return collections.Counter({k: v.as_python_constant() for k, v in self.items.items()})

    def getitem_impl(self, tx, key_vt):
        """`c[key]`: a missing key counts zero (and is not inserted)."""
        return self.items.get(key_vt.key_impl(tx), ConstantVariable(0))

    def call_method(self, tx, name, args, kwargs):
        result = dispatch(tx, self, _COUNTER_ROWS, name, args, kwargs)
        if result is not None:
            return result
        owner, fn = class_lookup(collections.Counter, name)
        if owner is collections.Counter and isinstance(fn, types.FunctionType):
            return tx.wrap(fn, None).call_function(tx, [self, *args], kwargs)
        return super().call_method(tx, name, args, kwargs)

    def describe(self) -> str:
        return "a Counter"


@handles(collections.Counter)
def _counter_ctor(tx, fn, args, kwargs):
    """`Counter(iterable=None, /, **kwds)`: an empty counter, then `update`."""
    if len(args) > 1:
        tx.raise_user_error(TypeError(f"expected at most 1 argument, got {len(args)}"))
    result = CounterVariable({})
    result.call_method(tx, "update", args, kwargs)
    return result


@register(collections.Counter, exact=True)
def build_counter(tx, value, source, do_guard: bool):
    """A counter from outside: guarded (type, keys) and built like a dict."""
    return CounterVariable(factory.build_dict(tx, value, source, do_guard).items, source)
