"""The side-effect log of one capture and its replay in residual bytecode.

Owns: which *pre-existing* Python objects (trackers with a source) the traced code
mutated, the pending attribute writes per object, global writes per (globals dict,
name) and closure-cell writes; the identity map that makes one real object one tracker
however many paths reach it; and the bytecode that replays all of it after the graph.

Invariants (see Note [Side-effect replay]):
- Tracing never mutates a real object. Containers are mutated on their tracker (so every
  alias sees the change); attribute, global and cell writes are kept here (and on the
  tracker for attributes) and are visible to later reads of the same trace.
- Recording a write is O(1): a dict insert keyed by `id(tracker)` (or by the global's
  key). Nothing walks all trackers per mutation; `replay` walks the log once.
- Replay keeps identity: `old[:] = new`, `d.clear(); d.update(new)`, `s.clear();
  s.update(new)`, `setattr`/`delattr`, `STORE_GLOBAL` / `module_dict[name] = v`,
  `cell.cell_contents = v`. A pre-existing container is never rebound.

# Note [Side-effect replay]
Replay runs after the graph call in two phases: first every operand (the return value,
then each effect's target object and new value, pushed last effect first) is loaded onto
the stack, then the stores run in log order (so new attributes and globals are created in
eager's order). So every load sees the pre-call state of the world,
exactly like the values the trace read: `a.x, a.y = a.y, a.x` and `old = xs[0];
xs[0] = y; return old` come out right. A tracker made during tracing that is reached
twice (returned and stored, stored twice) is built once and kept in a temporary local
(`PyCodegen.reconstruct`), so aliasing survives.
"""
from __future__ import annotations

from ..guards.sources import ClosureSource, GlobalsDictSource
from ..vars.iterators import advance_iterator, set_iterator_state
from ..vars.objects import DELETED  # pending value of a deleted attribute or global


def _replace_dict(d, new):
    d.clear()
    d.update(new)


def _replace_set(s, new):
    s.clear()
    s.update(new)


class SideEffects:
    """Everything the traced code did to the caller's world, in O(1) per write."""

    __slots__ = ("mutated", "attr_objects", "globals", "cells", "by_id", "_keepalive", "writes", "positioned")

    def __init__(self):
        self.mutated: dict = {}        # id(container tracker) -> tracker (sourced list/dict/set/iterator)
        self.attr_objects: dict = {}   # id(object tracker) -> tracker with pending `attrs`
        self.globals: dict = {}        # (id(globals dict), name) -> [globals_source, dict, name, value]
        self.cells: dict = {}          # id(cell tracker) -> sourced CellVariable written
        self.by_id: dict = {}          # id(real mutable object) -> tracker (identity map)
        self._keepalive: list = []     # the real objects of `by_id` (ids stay unique)
        self.writes = 0                # number of recorded writes (for stats and tests)
        self.positioned: list = []     # iterators made during tracing, positioned after the replay

    # ---- recording ---------------------------------------------------------------------
    def mutate(self, vt) -> None:
        """Container `vt` (with a source) was changed in place; replay its final state."""
        self.mutated[id(vt)] = vt
        self.writes += 1

    def is_mutated(self, vt) -> bool:
        return id(vt) in self.mutated

    def position_after_replay(self, it_vt) -> None:
        """Iterator `it_vt`, made during tracing over a pre-existing list that the replay
        changes, was just rebuilt at its start; set its position after the replay."""
        self.positioned.append(it_vt)

    def note_attr_write(self, vt) -> None:
        """`vt.attrs` (its pending attribute writes) changed."""
        self.attr_objects[id(vt)] = vt
        self.writes += 1

    def store_global(self, f_globals: dict, globals_source, name: str, value) -> None:
        key = (id(f_globals), name)
        entry = self.globals.get(key)
        if entry is None:
            self.globals[key] = [globals_source, f_globals, name, value]
        else:
            entry[3] = value
        self.writes += 1

    def pending_global(self, f_globals: dict, name: str):
        """The tracker written to global `name` of `f_globals` (DELETED, or None if none)."""
        entry = self.globals.get((id(f_globals), name))
        return None if entry is None else entry[3]

    def store_cell(self, cell_vt) -> None:
        if cell_vt.source is not None:
            self.cells[id(cell_vt)] = cell_vt
        self.writes += 1

    # ---- identity ------------------------------------------------------------------------
    def tracker_for(self, value):
        return self.by_id.get(id(value))

    def remember(self, value, vt) -> None:
        self.by_id[id(value)] = vt
        self._keepalive.append(value)

    # ---- values the replay needs -----------------------------------------------------------
    def values(self) -> list:
        """Every tracker the replay writes (for collecting graph outputs)."""
        out = []
        for vt in self.mutated.values():
            out.append(vt)
        for vt in self.attr_objects.values():
            out.extend(v for v in vt.attrs.values() if v is not DELETED)
        for entry in self.globals.values():
            if entry[3] is not DELETED:
                out.append(entry[3])
        for cell in self.cells.values():
            if cell.contents is not None:
                out.append(cell.contents)
        return out

    # ---- replay ------------------------------------------------------------------------------
    def replay(self, cg) -> None:
        """Emit the replay (stack-neutral; see Note [Side-effect replay])."""
        effects = list(self._effects(cg))
        for push, _ in reversed(effects):  # pushed last-first, so the stores run in log order
            push()
        for _, store in effects:
            store()
        for vt in self.positioned:  # filled while the operands above were built
            cg.push_null()
            cg.load_const(set_iterator_state)
            cg.reconstruct(vt)
            cg.load_const(vt.index)
            cg.call_and_pop_2()
        self._guard_distinct(cg.tx.output)

    def _effects(self, cg):
        """(push operands, store) pairs, in the order the writes were first made."""
        from ..vars.containers import DictVariable, ListVariable, SetVariable
        from ..vars.iterators import HashedIteratorVariable, SequenceIteratorVariable

        iterators = []
        for vt in self.mutated.values():
            if isinstance(vt, ListVariable):
                yield _list_effect(cg, vt)
            elif isinstance(vt, DictVariable):
                yield _call_effect(cg, _replace_dict, vt, lambda vt=vt: _push_dict(cg, vt))
            elif isinstance(vt, SetVariable):
                yield _call_effect(cg, _replace_set, vt, lambda vt=vt: cg.load_const(tuple(vt.items)))
            elif isinstance(vt, (SequenceIteratorVariable, HashedIteratorVariable)):
                iterators.append(vt)  # after the containers: `__setstate__` clamps to the length
            else:  # pragma: no cover - only containers are logged here
                raise AssertionError(f"cannot replay a mutation of {vt!r}")
        for vt in iterators:
            if isinstance(vt, SequenceIteratorVariable):
                yield _call_effect(cg, set_iterator_state, vt, lambda vt=vt: cg.load_const(vt.index))
            else:
                steps = vt.replay_steps(cg)
                yield _call_effect(cg, advance_iterator, vt, lambda steps=steps: cg.load_const(steps))
        for vt in self.attr_objects.values():
            for name, value in vt.attrs.items():
                yield _attr_effect(cg, vt.source, name, value)
        for globals_source, f_globals, name, value in self.globals.values():
            yield _global_effect(cg, globals_source, name, value)
        for cell in self.cells.values():
            yield _cell_effect(cg, cell)

    def _guard_distinct(self, output) -> None:
        """Objects traced as distinct must stay distinct when anything was mutated: the
        log replays each tracker's final state on its own object."""
        from ..guards.guard import Guard, GuardKind
        from ..vars.functions import CellVariable

        if self.mutated or self.attr_objects:
            sources = tuple(vt.source for vt in self.by_id.values() if not isinstance(vt, CellVariable))
            if len(sources) > 1:
                output.add_guard(Guard(GuardKind.NO_ALIASING, sources[0], sources))
        if self.cells:  # a cell written through one closure is read through another only if shared
            cells = tuple(vt.source.cell() for vt in self.by_id.values() if isinstance(vt, CellVariable))
            if len(cells) > 1:
                output.add_guard(Guard(GuardKind.NO_ALIASING, cells[0], cells))


def _bound(method, arg):
    return lambda: method(arg)


def _list_effect(cg, vt):
    def push():  # src[:] = [items...]
        cg.reconstruct_items(vt.items, "BUILD_LIST")
        vt.source.reconstruct(cg)
        cg.load_const(slice(None))
    return push, cg.store_subscr


def _push_dict(cg, vt):
    for k, v in vt.items.items():
        cg.load_const(k)
        cg.reconstruct(v)
    cg.build("BUILD_MAP", len(vt.items))


def _call_effect(cg, helper, vt, push_new):
    def push():  # helper(src, new)
        cg.push_null()
        cg.load_const(helper)
        vt.source.reconstruct(cg)
        push_new()
    return push, cg.call_and_pop_2


def _attr_effect(cg, source, name, value):
    if isinstance(name, tuple):  # (DELETE_FIRST, name): a delete before re-adding `name`
        name = name[1]
    if value is DELETED:
        return (lambda: source.reconstruct(cg)), _bound(cg.delete_attr, name)

    def push():
        cg.reconstruct(value)
        source.reconstruct(cg)
    return push, _bound(cg.store_attr, name)


def _global_effect(cg, globals_source, name, value):
    root = isinstance(globals_source, GlobalsDictSource)
    if root:
        if value is DELETED:
            return (lambda: None), _bound(cg.delete_global, name)
        return (lambda: cg.reconstruct(value)), _bound(cg.store_global, name)

    def push():  # module_dict[name] = value / del module_dict[name]
        if value is not DELETED:
            cg.reconstruct(value)
        globals_source.reconstruct(cg)
        cg.load_const(name)
    return push, (cg.delete_subscr if value is DELETED else cg.store_subscr)


def _cell_effect(cg, cell):
    """Operands and store of writing `cell` (a sourced CellVariable: the root frame's free
    variable, or a cell reached through a function or held in a local)."""
    src = cell.source
    deleted = cell.contents is None
    if isinstance(src, ClosureSource):  # the root frame's own free variable
        push = (lambda: None) if deleted else (lambda: cg.reconstruct(cell.contents))
        return push, _bound(cg.delete_deref if deleted else cg.store_deref, src.var_name)

    def push():
        if not deleted:
            cg.reconstruct(cell.contents)
        src.cell().reconstruct(cg)
    return push, _bound(cg.delete_attr if deleted else cg.store_attr, "cell_contents")
