"""Python stand-ins for the parts of `collections` that CPython writes in C or through
`super()`: `_count_elements`, and the `Counter` methods that `vars/counter.py` inlines with
the counter's tracker as `self` (`COUNTER_METHODS`). Each body does what CPython's does,
in the same order (so user `__eq__`/`__hash__` and tensor additions happen as in eager):
`update` from an empty counter stores a mapping's counts as they are, `most_common(n)`
is `sorted(...)[:n]` (what `heapq.nlargest` is documented to equal)."""
import collections
import collections.abc

from .registry import polyfill


@polyfill(collections._count_elements)
def count_elements(mapping, iterable, /):
    """`collections._count_elements(mapping, iterable)`: one more for each element."""
    for elem in iterable:
        mapping[elem] = mapping.get(elem, 0) + 1


def counter_update(self, iterable=None, _mapping=collections.abc.Mapping, /, **kwds):
    """`Counter.update(iterable=None, /, **kwds)`: add counts (or count the elements)."""
    def add(counts):
        if self:
            for elem, count in counts.items():
                self[elem] = count + self.get(elem, 0)
        else:
            for elem, count in counts.items():
                self[elem] = count

    if iterable is not None:
        if isinstance(iterable, _mapping):
            add(iterable)
        else:
            for elem in iterable:
                self[elem] = self.get(elem, 0) + 1
    if kwds:
        add(kwds)


def counter_subtract(self, iterable=None, _mapping=collections.abc.Mapping, /, **kwds):
    """`Counter.subtract(iterable=None, /, **kwds)`: counts may become zero or negative."""
    if iterable is not None:
        if isinstance(iterable, _mapping):
            for elem, count in iterable.items():
                self[elem] = self.get(elem, 0) - count
        else:
            for elem in iterable:
                self[elem] = self.get(elem, 0) - 1
    for elem, count in kwds.items():
        self[elem] = self.get(elem, 0) - count


def counter_most_common(self, n=None):
    """`Counter.most_common(n=None)`: (element, count) pairs, largest first, ties in insertion order."""
    ordered = sorted(self.items(), key=lambda pair: pair[1], reverse=True)
    return ordered if n is None else ordered[:n]


def counter_elements(self):
    """`Counter.elements()`: each element as many times as its count (an itertools.chain)."""
    def run():
        for elem, count in self.items():
            for _ in range(count):
                yield elem
    return run()


def counter_total(self):
    """`Counter.total()`: the sum of the counts."""
    return sum(self.values())


def counter_copy(self, _counter=collections.Counter):
    """`Counter.copy()`: a new counter with the same counts (the `self.__class__(self)` of CPython)."""
    result = _counter()
    for elem, count in self.items():
        result[elem] = count
    return result


COUNTER_METHODS = {"update": counter_update, "subtract": counter_subtract, "most_common": counter_most_common,
                   "elements": counter_elements, "total": counter_total, "copy": counter_copy}
