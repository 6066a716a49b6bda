"""Polyfills for the C types and functions of `itertools`."""
import itertools

from . import polyfill


@polyfill(itertools.chain, returns=itertools.chain)
def chain(*iterables):
    """`itertools.chain(*iterables)`: each iterable is iterated only when reached."""
    for iterable in iterables:
        for element in iterable:
            yield element


@polyfill(itertools.chain.from_iterable, returns=itertools.chain)
def chain_from_iterable(iterables, /):
    """`itertools.chain.from_iterable(iterables)`: lazy in the outer iterable too."""
    for iterable in iterables:
        for element in iterable:
            yield element
