"""Lists from the caller's world that the trace only appends to: `LazyListVariable`.

A hook that records what it saw (`calls.append(out.shape)`, `grads.append(g)`) appends
to a global, closure or attribute list every call. Building that list's tracker the
usual way guards its length and every item (`_build_sequence` in vars/builder.py), so
the entry fails its guards on the next call: one recompile per call until
`cache_size_limit` (issue 15: 6 recompiles in 8 calls of a module with such a forward
hook). A pre-existing list is therefore wrapped lazily: type-guarded at once, its items
wrapped and its length guarded only when the trace first needs them (`items`, read by
every other list operation). `append`/`extend` of a list not read yet are recorded
without reading it and replayed as `list.extend(<list>, [new items])`, so the entry
stays valid however long the list grows.

This is the part of "guard container lengths only when needed" that hooks need; a
general mechanism (lazy dicts, lengths read without the items) would subsume it.
"""
from __future__ import annotations

from ..guards.guard import Guard, GuardKind
from ..guards.sources import ItemSource
from .base import VariableTracker
from .constant import ConstantVariable
from .containers import ListVariable

_APPENDS = frozenset({"append", "extend", "__iadd__"})


class LazyListVariable(ListVariable):
    """A real list at `source` whose items are read (and guarded) on first use; until then
    (`_items` is None) `appended` holds what the trace appended to it."""

    __slots__ = ("real", "output", "do_guard", "appended", "_items")

    def __init__(self, real: list, source, output, do_guard: bool):
        self.real = real
        self.output = output
        self.do_guard = do_guard
        self.appended = []
        self._items = None
        VariableTracker.__init__(self, source)  # not ListVariable's: `items` stays unread

    @property
    def items(self) -> list:
        if self._items is None:
            self._materialize()
        return self._items

    def _materialize(self) -> None:
        """Wrap the real items (guarding the length), then the appended ones."""
        from .builder import wrap

        tx = self.output.current_tx
        self.output.side_effects.touch(self)
        if self.do_guard:
            self.output.add_guard(Guard(GuardKind.LEN_MATCH, self.source, len(self.real), tx.guard_location()))
        items = [wrap(tx, v, ItemSource(self.source, i), self.do_guard) for i, v in enumerate(self.real)]
        self._items = items + self.appended
        self.appended = []

    def _lazy(self) -> bool:
        return self._items is None

    def call_method(self, tx, name, args, kwargs):
        if self._lazy() and name in _APPENDS and len(args) == 1 and not kwargs:
            arg = args[0]
            new = [arg] if name == "append" else arg if isinstance(arg, list) else arg.unpack(tx)
            self.output.side_effects.mutate(self)
            self.appended.extend(new)
            return self if name == "__iadd__" else ConstantVariable(None)
        return super().call_method(tx, name, args, kwargs)

    def new_like(self, items) -> ListVariable:
        return ListVariable(items)

    def children(self):
        return list(self.appended) if self._lazy() else self.items

    def replayed_values(self):
        return self.children()

    def replay_records(self, cg) -> list:
        if not self._lazy():
            return super().replay_records(cg)
        return [cg.helper_effect(list.extend, self.source,
                                 lambda: cg.reconstruct_items(self.appended, "BUILD_LIST"))]
