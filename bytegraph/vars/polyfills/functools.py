"""Polyfills for the C functions of `functools`."""
import functools

from .registry import polyfill


@polyfill(functools.reduce)
def reduce(function, iterable, /, *initial):
    """`functools.reduce(function, iterable[, initial])`: left fold, callbacks in eager's order."""
    if initial[1:]:
        raise TypeError(f"reduce expected at most 3 arguments, got {2 + len(initial)}")
    empty = not initial
    value = initial[0] if initial else None
    for element in iterable:
        if empty:
            value, empty = element, False
        else:
            value = function(value, element)
    if empty:
        raise TypeError("reduce() of empty iterable with no initial value")
    return value


class _CmpKey:
    """What `functools.cmp_to_key(mycmp)(obj)` makes (CPython's `KeyWrapper`): compares
    by `mycmp(self.obj, other.obj)` against 0; unhashable."""

    def __init__(self, cmp, obj):
        self.cmp = cmp
        self.obj = obj

    def _other(self, other):
        if type(other) is not type(self):
            raise TypeError("other argument must be K instance")
        return other.obj

    def __lt__(self, other):
        return self.cmp(self.obj, self._other(other)) < 0

    def __gt__(self, other):
        return self.cmp(self.obj, self._other(other)) > 0

    def __le__(self, other):
        return self.cmp(self.obj, self._other(other)) <= 0

    def __ge__(self, other):
        return self.cmp(self.obj, self._other(other)) >= 0

    def __eq__(self, other):
        return self.cmp(self.obj, self._other(other)) == 0

    __hash__ = None


@polyfill(functools.cmp_to_key)
def cmp_to_key(mycmp, *, _key=_CmpKey):
    """`functools.cmp_to_key(mycmp)`: a key function making comparable wrappers (a plain
    function here, not CPython's `KeyWrapper` type)."""
    def key(obj):
        return _key(mycmp, obj)
    return key
