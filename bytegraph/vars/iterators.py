"""Iterators. Loops are unrolled: FOR_ITER asks `next_item`.

Iterators are live like CPython's (Note [Live iterators]): an iterator holds the tracker
of what it walks and a position, never a copy of the items. `map`, `zip` and
`enumerate` stay lazy like Python's, so user calls inside them run in eager's order.

# Note [Live iterators]
- `SequenceIteratorVariable` (`iter`/`reversed` of a list, tuple, range, str, bytes)
  reads the list's items at every step, so items appended while it runs are seen; once
  it has ended it stays exhausted (CPython drops the sequence). `index` is the position
  (None: exhausted).
- `HashedIteratorVariable` (iterators of dicts, dict views and sets) keeps the keys in
  iteration order when it was made, the size then and the container's `keys_version`
  (bumped by every change of the key set). A size change makes `next` raise eager's
  `RuntimeError` (sticky); a change of keys at the same size, whose effect depends on
  CPython's table layout, breaks the graph.
- Every change of an iterator's state is made by its own `_advance`, after one call of
  the mutation hook (`_check_mutable`): a real iterator from outside (it has a source)
  is then replayed as `it.__setstate__(index)`.
- At a graph break an iterator made during tracing is rebuilt as the real kind over the
  real container (same object), at the same position: `iter(seq)` then
  `__setstate__(index)` (set after the side-effect replay when the sequence is a
  pre-existing list the graph changed, see `SideEffects.position_after_replay`), or a
  dict/set iterator made and advanced by `rebuilt_hashed_iterator`.
"""
from __future__ import annotations

import functools

from .factory import provides
from .base import REPLAY_CONTAINER, REPLAY_ITERATOR, VariableTracker
from .constant import ConstantVariable
from .containers import BaseListVariable, DictVariable, ListVariable, TupleVariable, _check_mutable
from .dict_keys import key_tracker


class IteratorVariable(VariableTracker):
    __slots__ = ()
    kept_in_block = True  # a for-loop's iterator
    replay_phase = REPLAY_ITERATOR

    def python_type(self) -> type:
        return type(iter([]))

    def next_item(self, tx) -> VariableTracker | None:
        """The next item, or None when exhausted."""
        raise NotImplementedError

    def next_or_raise(self, tx) -> VariableTracker:
        """`next(it)`: the next item, or StopIteration raised in the traced program."""
        item = self.next_item(tx)
        if item is None:
            tx.raise_user_error(StopIteration())
        return item

    def unpack(self, tx) -> list:
        items = []
        while (item := self.next_item(tx)) is not None:
            items.append(item)
        return items

    def truth(self, tx) -> bool:
        return True

    def iterate(self, tx):
        return self

    def reverse_iterate(self, tx):
        tx.raise_user_error(TypeError(f"{self.describe()} is not reversible"))



def set_iterator_state(it, state) -> None:
    """Residual helper: put the real sequence iterator `it` at `state` (None: exhausted)."""
    if state is None:
        for _ in it:
            pass
    else:
        it.__setstate__(state)


class SequenceIteratorVariable(IteratorVariable):
    """`iter(seq)` or `reversed(seq)` over a list, a tuple or a constant str/bytes/range/tuple
    (`seq` its tracker); see Note [Live iterators]."""

    __slots__ = ("seq", "index", "reverse", "_const_items")
    identity_tracked = True
    rebuilt_as_new_object = True

    def __init__(self, seq: VariableTracker, reverse: bool = False, index: int | None = None, source=None):
        super().__init__(source)
        self.seq = seq
        self.reverse = reverse
        self._const_items = None if isinstance(seq, BaseListVariable) else seq.unpack(None)
        if index is None:
            index = len(self._items()) - 1 if reverse else 0
        self.index = index

    @classmethod
    def over_items(cls, items: list) -> "SequenceIteratorVariable":
        """An iterator over items computed at trace time (a tuple made during tracing)."""
        return cls(TupleVariable(items))

    def children(self):
        return (self.seq,)  # rebuilt over the whole sequence

    def replay_records(self, cg) -> list:
        return [cg.helper_effect(set_iterator_state, self.source, lambda: cg.load_const(self.index))]

    def _items(self) -> list:
        return self.seq.items if self._const_items is None else self._const_items

    def python_type(self) -> type:
        if isinstance(self.seq, ListVariable):
            return type(reversed([])) if self.reverse else type(iter([]))
        if isinstance(self.seq, BaseListVariable):
            return type(reversed(())) if self.reverse else type(iter(()))
        value = self.seq.as_python_constant()
        return type(reversed(value) if self.reverse else iter(value))

    def next_item(self, tx):
        i = self.index
        if i is None:
            return None
        items = self._items()
        if 0 <= i < len(items):
            self._advance(tx, i - 1 if self.reverse else i + 1)
            return items[i]
        self._advance(tx, None)
        return None

    def _advance(self, tx, index) -> None:
        _check_mutable(tx, self, "__next__")
        self.index = index

    def owner_stepped(self, tx) -> None:
        """A real enumerate over this real iterator stepped it; its replay (an absolute
        position, after the enumerate's) needs no change."""

    def walked_container(self) -> VariableTracker:
        return self.seq

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        cg.push_callable_const(reversed if self.reverse else iter)
        cg.reconstruct(self.seq)
        cg.call(1)
        if self.index == (len(self._items()) - 1 if self.reverse else 0):
            return
        side_effects = cg.tx.output.side_effects
        if self.seq.source is not None and side_effects.is_mutated(self.seq):
            side_effects.position_after_replay(self)  # `__setstate__` clamps to the old length
        else:
            cg.push_callable_const(set_iterator_state)
            cg.copy(3)
            cg.load_const(self.index)
            cg.call_and_pop_2()


def advance_iterator(it, steps) -> None:
    """Residual helper: advance the real iterator `it` `steps` times (None: to its end)."""
    if steps is None:
        for _ in it:
            pass
    else:
        for _ in range(steps):
            next(it)


def rebuilt_hashed_iterator(container, kind, reverse: bool, index):
    """Residual helper: a real dict/view/set iterator over `container`, advanced `index`
    times (None: exhausted)."""
    view = container if kind is None else getattr(container, kind)()
    it = reversed(view) if reverse else iter(view)
    advance_iterator(it, index)
    return it


class HashedIteratorVariable(IteratorVariable):
    """An iterator over a dict (`kind` "keys"/"values"/"items", or None for `iter(d)`), or
    over a set (`kind` None); see Note [Live iterators]."""

    __slots__ = ("container", "kind", "reverse", "keys", "size", "version", "index", "start")
    identity_tracked = True
    rebuilt_as_new_object = True

    def __init__(self, container, kind: str | None = None, reverse: bool = False, index: int = 0, source=None):
        super().__init__(source)
        self.container = container
        self.kind = kind
        self.reverse = reverse
        keys = container.ordered_keys()
        self.keys = keys[::-1] if reverse else keys
        self.size = len(keys)
        self.version = container.keys_version
        self.index = index
        self.start = index  # a real iterator from outside is replayed by advancing it from here

    def children(self):
        return (self.container,)

    def python_type(self) -> type:
        kind = self.kind or "keys"
        if not isinstance(self.container, DictVariable):
            return type(iter(set()))
        example = self.container.dict_type()
        view = getattr(example, kind)()
        return type(reversed(view) if self.reverse else iter(view))

    def next_item(self, tx):
        if self.index is None:
            return None
        container = self.container
        if self.size != len(container.items) or self.version != container.keys_version:
            self._changed(tx)
        if self.index >= len(self.keys):
            self._advance(tx, None)
            return None
        key = self.keys[self.index]
        self._advance(tx, self.index + 1)
        if self.kind == "values":
            return container.items[key]
        if self.kind == "items":
            return TupleVariable([key_tracker(key), container.items[key]])
        return key_tracker(key)

    def _changed(self, tx) -> None:
        container = self.container
        if isinstance(container, DictVariable) and container.dict_type is not dict:
            self._advance(tx, None)  # CPython's OrderedDict iterator ends at the error
            tx.raise_user_error(RuntimeError("OrderedDict mutated during iteration"))
        if self.size != len(container.items):
            self._advance_size(tx, -1)  # sticky, as in CPython
            what = "dictionary" if isinstance(container, DictVariable) else "Set"
            tx.raise_user_error(RuntimeError(f"{what} changed size during iteration"))
        tx.unsupported(f"next() on an iterator of {container.describe()} whose keys changed during the iteration",
                       category="unsupported iteration")

    def _advance(self, tx, index) -> None:
        _check_mutable(tx, self, "__next__")
        self.index = index

    def _advance_size(self, tx, size) -> None:
        _check_mutable(tx, self, "__next__")
        self.size = size

    def owner_stepped(self, tx) -> None:
        """A real enumerate over this real iterator stepped it, and its replay makes that
        step: this one's replay (steps from `start`) leaves it out."""
        _check_mutable(tx, self, "__next__")
        self.start += 1

    def walked_container(self) -> VariableTracker:
        return self.container

    def walks(self, remaining: list) -> bool:
        """Whether the real items `remaining` (from the real iterator's `__reduce__`) are the
        ones this tracker yields next (checked on keys; values by count)."""
        keys = self.keys[self.index:]
        if self.kind == "items":
            return [k for k, _ in remaining] == keys
        return len(remaining) == len(keys) if self.kind == "values" else list(remaining) == keys

    def replay_records(self, cg) -> list:
        """Advance the real iterator as far as the trace did (None: to its end)."""
        if self.container.source is not None and cg.tx.output.side_effects.is_mutated(self.container):
            cg.tx.unsupported(f"advancing a real iterator of {self.container.describe()} that this graph "
                              "also changed", category="side effect")
        steps = None if self.index is None else self.index - self.start
        return [cg.helper_effect(advance_iterator, self.source, lambda: cg.load_const(steps))]

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        container = self.container
        cg.push_callable_const(rebuilt_hashed_iterator)
        if self.index is None:
            cg.push_callable_const(container.python_type())
            cg.call(0)
        else:
            if self.size != len(container.items) or self.version != container.keys_version:
                cg.tx.unsupported(f"an iterator of {container.describe()} changed during the iteration "
                                  "cannot be rebuilt", category="unsupported output")
            if container.source is not None and cg.tx.output.side_effects.is_mutated(container):
                cg.tx.unsupported(f"an iterator of {container.describe()} that this graph changed cannot be "
                                  "rebuilt before the change is replayed", category="unsupported output")
            cg.reconstruct(container)
        cg.load_const(self.kind)
        cg.load_const(self.reverse)
        cg.load_const(self.index)
        cg.call(4)


class MapIteratorVariable(IteratorVariable):
    """`map(fn, *iterators)`; rebuilt at a break as `map(fn, *the iterators rebuilt)`: a
    map keeps no state of its own, so that is the same iterator at the same position."""

    __slots__ = ("fn", "iterators")
    rebuilt_as_new_object = True

    def __init__(self, fn, iterators: list):
        super().__init__(None)
        self.fn = fn
        self.iterators = iterators

    def python_type(self) -> type:
        return map

    def next_item(self, tx):
        args = []
        for it in self.iterators:
            item = it.next_item(tx)
            if item is None:
                return None
            args.append(item)
        return self.fn.call_function(tx, args, {})

    def children(self):
        return (self.fn, *self.iterators)

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(map)
        cg.reconstruct(self.fn)
        for it in self.iterators:
            cg.reconstruct(it)
        cg.call(1 + len(self.iterators))


class FilterIteratorVariable(IteratorVariable):
    """`filter(pred, it)`, lazy: the predicate runs on each item as it is asked for."""

    __slots__ = ("pred", "iterator")

    def __init__(self, pred, iterator):
        super().__init__(None)
        self.pred = pred  # None: the items' own truth
        self.iterator = iterator

    def python_type(self) -> type:
        return filter

    def children(self):
        return (self.iterator,) if self.pred is None else (self.pred, self.iterator)

    def next_item(self, tx):
        while (item := self.iterator.next_item(tx)) is not None:
            if (item if self.pred is None else self.pred.call_function(tx, [item], {})).truth(tx):
                return item
        return None


class ZipIteratorVariable(IteratorVariable):
    """`zip(*iterators, strict=...)`; rebuilt at a break over the iterators rebuilt (a zip
    keeps no state of its own)."""

    __slots__ = ("iterators", "strict")
    rebuilt_as_new_object = True

    def __init__(self, iterators: list, strict: bool = False):
        super().__init__(None)
        self.iterators = iterators
        self.strict = strict

    def python_type(self) -> type:
        return zip

    def next_item(self, tx):
        items = []
        for i, it in enumerate(self.iterators):
            item = it.next_item(tx)
            if item is None:
                if self.strict and (i > 0 or any(o.next_item(tx) is not None for o in self.iterators[1:])):
                    tx.raise_user_error(ValueError("zip() arguments have different lengths"))
                return None
            items.append(item)
        return TupleVariable(items)

    def children(self):
        return tuple(self.iterators)

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(functools.partial(zip, strict=self.strict))
        for it in self.iterators:
            cg.reconstruct(it)
        cg.call(len(self.iterators))


class EnumerateIteratorVariable(IteratorVariable):
    """`enumerate(iterator, start)`; rebuilt at a break as `enumerate(<the iterator rebuilt>,
    <the next count>)`: the same iterator at the same position.

    A real enumerate from outside (a for-loop's, handed to a resume function) has a source:
    its iterator is read through `__reduce__` (a sequence or dict/set iterator, replayed on
    its own) and its count guarded. Its count cannot be set, so the replay advances the
    real enumerate as many steps as the trace did, with the containers (before any
    iterator: a sequence iterator's own record, its absolute position, comes after) and the
    steps it makes are not replayed again by its iterator (`owner_stepped`)."""

    __slots__ = ("iterator", "count", "start")
    identity_tracked = True
    rebuilt_as_new_object = True
    replay_phase = REPLAY_CONTAINER

    def __init__(self, iterator, start: int = 0, source=None):
        super().__init__(source)
        self.iterator = iterator
        self.count = start
        self.start = start

    def python_type(self) -> type:
        return enumerate

    def next_item(self, tx):
        item = self.iterator.next_item(tx)
        if item is None:
            return None
        pair = TupleVariable([ConstantVariable(self.count), item])
        self._count(tx, self.count + 1)
        if self.source is not None:
            self.iterator.owner_stepped(tx)
        return pair

    def _count(self, tx, count: int) -> None:
        _check_mutable(tx, self, "__next__")
        self.count = count

    def children(self):
        return (self.iterator,)

    def replay_records(self, cg) -> list:
        """Advance the real enumerate as far as the trace did."""
        walked = self.iterator.walked_container()
        if walked.source is not None and cg.tx.output.side_effects.is_mutated(walked):
            cg.tx.unsupported(f"advancing a real enumerate over {walked.describe()} that this graph also "
                              "changed", category="side effect")
        steps = self.count - self.start
        return [cg.helper_effect(advance_iterator, self.source, lambda: cg.load_const(steps))]

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        cg.push_callable_const(enumerate)
        cg.reconstruct(self.iterator)
        cg.load_const(self.count)
        cg.call(2)


def iterator_of(tx, vt) -> IteratorVariable:
    """`iter(vt)` at trace time."""
    return vt.iterate(tx)


provides("iterator_over")(SequenceIteratorVariable.over_items)
provides("sequence_iterator")(SequenceIteratorVariable)
provides("hashed_iterator")(HashedIteratorVariable)
