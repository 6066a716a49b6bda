"""Polyfills for `copy.copy` and `copy.deepcopy` of plain data: constants, lists, dicts,
sets, tuples, named tuples and instances of plain Python classes (state in `__dict__`,
the default pickling protocol), nested and aliased.

The bodies follow `copy.py`: atomic values are returned as is; a deep copy memoizes every
copied container (by identity, in a list of pairs: `id()` is not modelled), so aliasing
and cycles are copied like eager; a tuple whose items all copy to themselves is itself; a
plain instance is remade by `cls.__new__(cls)` and its `__dict__` copied into it
(`copy._reconstruct` after `object.__reduce_ex__(4)`); `copy.copy` calls a class's
`__copy__`. Everything else is a graph break naming the value's class: tensors and
modules (deepcopy clones a tensor with its autograd state, which the trace does not
model), classes with their own `__deepcopy__`, `__reduce__`, `__getstate__`/`__setstate__`
or slots, and an explicit `memo` argument.
"""
import copy
import copyreg
import types
import weakref

from ..construction import plain_instance_reason
from .registry import polyfill, trace_time, unsupported

_ATOMIC = frozenset({type(None), type(Ellipsis), type(NotImplemented), int, float, bool, complex, bytes, str,
                     types.CodeType, range, types.BuiltinFunctionType, types.FunctionType, weakref.ref, property})
_OWN_PROTOCOL = ("__setstate__", "__getnewargs__", "__getnewargs_ex__")
_OBJECT_PROTOCOL = ("__reduce_ex__", "__reduce__", "__getstate__")


@trace_time
def _kind(cls: type, deep: bool) -> str:
    """How `copy.copy` (or `deepcopy`, if `deep`) copies an instance of `cls`: a kind the
    bodies handle, else the reason of the graph break."""
    what = f"of {cls.__qualname__}"  # the break reason is prefixed by the polyfilled call
    if cls in _ATOMIC or issubclass(cls, type):
        return "atomic"
    if cls in (list, dict, set):
        return cls.__name__
    if cls in (tuple, frozenset):
        return cls.__name__ if deep else "atomic"
    if issubclass(cls, tuple) and hasattr(cls, "_fields") and cls.__reduce_ex__ is object.__reduce_ex__:
        return "namedtuple"
    if cls.__module__.split(".")[0] == "torch":
        return f"{what}: copying torch values (a deep copy clones a tensor with its autograd state) is not traced"
    if not deep and getattr(cls, "__copy__", None) is not None:
        return "copy_method"
    if deep and getattr(cls, "__deepcopy__", None) is not None:
        return f"{what}, whose class defines __deepcopy__"
    if cls in copyreg.dispatch_table or any(getattr(cls, name, None) is not None for name in _OWN_PROTOCOL) \
            or any(getattr(cls, name) is not getattr(object, name) for name in _OBJECT_PROTOCOL):
        return f"{what}, whose class defines its own pickling protocol"
    why_not = plain_instance_reason(cls)
    if why_not is not None:
        return f"{what} ({why_not})"
    return "object"


@polyfill(copy.copy)
def copy_(x, *, _kind=_kind, _unsupported=unsupported):
    """`copy.copy(x)`."""
    cls = type(x)
    kind = _kind(cls, False)
    if kind == "atomic":
        return x
    if kind == "list":
        return list(x)
    if kind == "dict":
        return dict(x)
    if kind == "set":
        return set(x)
    if kind == "namedtuple":
        return cls(*x)
    if kind == "copy_method":
        return cls.__copy__(x)
    if kind == "object":
        y = cls.__new__(cls)
        for name, value in x.__dict__.items():
            object.__setattr__(y, name, value)
        return y
    _unsupported(kind)


@polyfill(copy.deepcopy)
def deepcopy(x, memo=None, _nil=None, *, _kind=_kind, _unsupported=unsupported):
    """`copy.deepcopy(x)` (without a `memo`)."""
    if memo is not None:
        _unsupported("with a memo dict (keyed by id(), which the trace does not model)")
    seen = []  # (original, copy), compared by identity

    def copied(v):
        for original, made in seen:
            if original is v:
                return made
        return seen

    def rec(v):
        cls = type(v)
        kind = _kind(cls, True)
        if kind == "atomic":  # never in `seen`: asked first (and before calling `rec` on an item: most
            return v          # values of plain data are atomic, and each call is an inlined frame)
        y = copied(v)
        if y is not seen:
            return y
        if kind == "list":
            y = []
            seen.append((v, y))
            for item in v:
                y.append(item if _kind(type(item), True) == "atomic" else rec(item))
            return y
        if kind == "dict":
            y = {}
            seen.append((v, y))
            for key, item in v.items():
                y[rec(key)] = item if _kind(type(item), True) == "atomic" else rec(item)
            return y
        if kind == "tuple":
            items = [rec(item) for item in v]
            y = copied(v)  # reached again while copying its items
            if y is not seen:
                return y
            for item, made in zip(v, items):
                if item is not made:
                    y = tuple(items)
                    seen.append((v, y))
                    return y
            return v
        if kind in ("set", "frozenset", "namedtuple"):
            items = [rec(item) for item in v]
            y = set(items) if kind == "set" else frozenset(items) if kind == "frozenset" else cls(*items)
            seen.append((v, y))
            return y
        if kind == "object":
            y = cls.__new__(cls)
            seen.append((v, y))
            for name, value in v.__dict__.items():
                object.__setattr__(y, name, value if _kind(type(value), True) == "atomic" else rec(value))
            return y
        _unsupported(kind)

    return rec(x)
