"""Polyfills for the C functions of `operator` that walk or concatenate sequences, and
`methodcaller`."""
import operator

from .registry import polyfill


@polyfill(operator.countOf)
def countOf(a, b, /):
    """`operator.countOf(a, b)`: items that are `b` or equal to it."""
    count = 0
    for item in a:
        if item is b or item == b:
            count += 1
    return count


@polyfill(operator.indexOf)
def indexOf(a, b, /):
    """`operator.indexOf(a, b)`: the index of the first item that is `b` or equal to it."""
    index = 0
    for item in a:
        if item is b or item == b:
            return index
        index += 1
    raise ValueError("sequence.index(x): x not in sequence")


@polyfill(operator.methodcaller)
def methodcaller(name, /, *args, **kwargs):
    """`operator.methodcaller(name, *args, **kwargs)`: calls `obj.name(*args, **kwargs)` (a
    plain function here, not an instance of the C type)."""
    if type(name) is not str:
        raise TypeError("method name must be a string")

    def caller(obj):
        return getattr(obj, name)(*args, **kwargs)
    return caller


@polyfill(operator.concat)
def concat(a, b, /):
    """`operator.concat(a, b)`: `a + b` for sequences."""
    if not hasattr(a, "__getitem__"):
        raise TypeError(f"'{type(a).__name__}' object can't be concatenated")
    return a + b


@polyfill(operator.iconcat)
def iconcat(a, b, /):
    """`operator.iconcat(a, b)`: `a += b` for sequences."""
    if not hasattr(a, "__getitem__"):
        raise TypeError(f"'{type(a).__name__}' object can't be concatenated")
    a += b
    return a
