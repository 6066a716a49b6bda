"""`LazyListVariable`: a list read from outside (it has a source) whose length and items
are guarded only when the trace reads them.

Note [Lazy containers]
A list from outside is guarded by its type when it is wrapped, and by nothing else until
the trace needs more: appends and extends of a list the trace never read are kept as a
pending tail and replayed as `src.extend([...])`, so a function (or a module hook) that
only appends to an outer log compiles once however long the log grows. Its length (`len`)
is an unpinned int read at `len(src)` (`LengthSource`, vars/lazy_int.py), plus the pending
tail: pinned (the list's length guard) only when tracing needs the value, and a graph
input once it changed between captures, so a log that grows every call and is read into
tensor arithmetic compiles twice. Its truth (`if log:`) guards whether it is empty only (and
nothing after an append in the trace: it is not empty whatever it held); anything else that reads it (an item,
iteration, `in`, `==`, a copy, an in-place change other than an append: every access
of `items`) *realizes* it: its length is guarded, its items are wrapped (and guarded)
through `src[i]`, and the pending tail is put after them; from then on it is a plain
`ListVariable` (replayed as `src[:] = [...]`). The real list is never read by the trace
after it was wrapped, and tracing never changes it, so realizing later sees the same
items as realizing at once. Realizing is state the program did not write: it passes the
barrier as `touch` (Note [Mutation barrier]), so a restored checkpoint puts the list back
unrealized, as the guards and wrapped items it added are dropped with it.
"""
from __future__ import annotations

import operator

from ..guards.guard import Guard, GuardKind
from ..guards.sources import ItemSource, LengthSource
from .base import VariableTracker
from .constant import ConstantVariable
from .containers import ListVariable
from .lazy_int import unpinned_operator, wrap_int

_LAZY_METHODS = frozenset({"append", "extend", "__iadd__"})


def _extend(lst, new) -> None:
    """Residual helper: replay of the appends to a list the trace never read."""
    lst.extend(new)


class LazyListVariable(ListVariable):
    """A list from outside, realized on first read (Note [Lazy containers])."""

    __slots__ = ("_items", "_real", "_tail", "_length_guarded", "_lazy_output", "_lazy_guard")

    def __init__(self, output, value: list, source, do_guard: bool):
        VariableTracker.__init__(self, source)
        self._items = None          # the trackers of the items, once realized
        self._real = value          # the real list until realized (never read after the wrap otherwise)
        self._tail = []             # trackers appended before realization
        self._length_guarded = False
        self._lazy_output = output  # the OutputGraph: realizing wraps through its current translator
        self._lazy_guard = do_guard

    @property
    def items(self) -> list:
        if self._items is None:
            self._realize()
        return self._items

    def _realize(self) -> None:
        output = self._lazy_output
        tx = output.current_tx
        output.side_effects.touch(self)
        self._guard_length(tx)
        source, real = self.source, self._real
        items = [tx.wrap(v, ItemSource(source, i), self._lazy_guard) for i, v in enumerate(real)]
        self._items = items + self._tail
        self._real = None
        self._tail = None

    def _guard_length(self, tx) -> None:
        if not self._length_guarded:
            self._lazy_output.side_effects.touch(self)
            self._length_guarded = True
            if self._lazy_guard:
                tx.output.add_guard(Guard(GuardKind.LEN_MATCH, self.source, len(self._real), tx.guard_location()))

    # ---- what does not realize it ----------------------------------------------------------
    def _length(self, tx) -> int:
        if self._items is not None:
            return len(self._items)
        self._guard_length(tx)
        return len(self._real) + len(self._tail)

    def len_impl(self, tx):
        if self._items is not None or self._length_guarded or not self._lazy_guard:
            return ConstantVariable(self._length(tx))
        length = wrap_int(tx, len(self._real), LengthSource(self.source), guard_type=False)
        if not self._tail:
            return length
        return unpinned_operator(tx, operator.add, [length, ConstantVariable(len(self._tail))])

    def truth(self, tx) -> bool:
        if self._items is not None or self._length_guarded:
            return self._length(tx) > 0
        if self._tail:
            return True
        if self._lazy_guard:  # installed once: the guard table keeps the first
            tx.output.add_guard_at(tx, GuardKind.NONEMPTY, self.source, bool(self._real))
        return bool(self._real)

    def children(self):
        return self._tail if self._items is None else self._items

    def call_method(self, tx, name, args, kwargs):
        if self._items is None:
            if name in _LAZY_METHODS and not kwargs and len(args) == 1:
                return self._append(tx, name, args[0])
            if name == "__len__" and not args and not kwargs:
                return self.len_impl(tx)
        return super().call_method(tx, name, args, kwargs)

    def _append(self, tx, name, arg):
        """`append`/`extend`/`+=` of a list not realized: onto the pending tail."""
        new = [arg] if name == "append" else list(arg) if isinstance(arg, list) else arg.unpack(tx)
        tx.output.side_effects.mutate(self)
        if self._items is None:
            self._tail.extend(new)
        else:  # unpacking the argument read this list (`xs.extend(xs)`)
            self._items.extend(new)
        return self if name == "__iadd__" else ConstantVariable(None)

    def replay_records(self, cg) -> list:
        if self._items is not None:
            return super().replay_records(cg)
        return [cg.helper_effect(_extend, self.source, lambda: cg.reconstruct_items(self._tail, "BUILD_LIST"))]

    def new_like(self, items) -> ListVariable:
        return ListVariable(items)
