"""Polyfills for the C functions of `functools`."""
import functools

from . import polyfill


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
