"""Polyfills for the C functions of `math` that take iterables (the others fold on constants)."""
import math

from .registry import polyfill


@polyfill(math.prod)
def prod(iterable, /, *, start=1):
    """`math.prod(iterable, *, start=1)`: `start * x0 * x1 ...`, so tensors multiply in the graph."""
    result = start
    for element in iterable:
        result = result * element
    return result
