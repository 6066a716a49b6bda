"""Iterators made during tracing. Loops are unrolled: FOR_ITER asks `next_item`.

`map`, `zip` and `enumerate` stay lazy like Python's, so user calls inside them run
in eager's order; list iterators walk a snapshot of the items.
"""
from __future__ import annotations

from .base import VariableTracker
from .constant import ConstantVariable


class IteratorVariable(VariableTracker):
    __slots__ = ()

    def python_type(self) -> type:
        return type(iter([]))

    def next_item(self, tx) -> VariableTracker | None:
        """The next item, or None when exhausted."""
        raise NotImplementedError

    def unpack(self, tx) -> list:
        items = []
        while (item := self.next_item(tx)) is not None:
            items.append(item)
        return items

    def truth(self, tx) -> bool:
        return True

    def iterate(self, tx):
        return self


class ListIteratorVariable(IteratorVariable):
    """An iterator over known items: a real tuple iterator (with a source: advancing it is
    a side effect, replayed as `it.__setstate__(index)`), or one made during tracing,
    rebuilt once per residual code as `iter((remaining...))`."""

    __slots__ = ("items", "index")

    def __init__(self, items: list, source=None):
        super().__init__(source)
        self.items = items
        self.index = 0

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        cg.push_null()
        cg.load_const(iter)
        for item in self.items[self.index:]:
            cg.reconstruct(item)
        cg.build("BUILD_TUPLE", len(self.items) - self.index)
        cg.call(1)

    def next_item(self, tx):
        if self.index >= len(self.items):
            return None
        tx.output.side_effects.mutate(self)
        item = self.items[self.index]
        self.index += 1
        return item


class MapIteratorVariable(IteratorVariable):
    __slots__ = ("fn", "iterators")

    def __init__(self, fn, iterators: list):
        super().__init__(None)
        self.fn = fn
        self.iterators = iterators

    def next_item(self, tx):
        args = []
        for it in self.iterators:
            item = it.next_item(tx)
            if item is None:
                return None
            args.append(item)
        return self.fn.call_function(tx, args, {})


class ZipIteratorVariable(IteratorVariable):
    __slots__ = ("iterators", "strict")

    def __init__(self, iterators: list, strict: bool = False):
        super().__init__(None)
        self.iterators = iterators
        self.strict = strict

    def next_item(self, tx):
        from .containers import TupleVariable

        items = []
        for i, it in enumerate(self.iterators):
            item = it.next_item(tx)
            if item is None:
                if self.strict and (i > 0 or any(o.next_item(tx) is not None for o in self.iterators[1:])):
                    tx.raise_user_error(ValueError("zip() arguments have different lengths"))
                return None
            items.append(item)
        return TupleVariable(items)


class EnumerateIteratorVariable(IteratorVariable):
    __slots__ = ("iterator", "count")

    def __init__(self, iterator, start: int = 0):
        super().__init__(None)
        self.iterator = iterator
        self.count = start

    def next_item(self, tx):
        from .containers import TupleVariable

        item = self.iterator.next_item(tx)
        if item is None:
            return None
        pair = TupleVariable([ConstantVariable(self.count), item])
        tx.output.side_effects.mutate(self)
        self.count += 1
        return pair


def iterator_of(tx, vt) -> IteratorVariable:
    """`iter(vt)` at trace time."""
    return vt.iterate(tx)
