"""The side-effect log of one capture and its replay in residual bytecode.

Owns: the mutation barrier every in-place change of a tracker passes, with its scope
check and undo log (Note [Mutation barrier]); which *pre-existing* Python objects
(trackers with a source) the traced code mutated: containers, objects (their pending
attribute writes), closure cells, and global writes per (globals dict, name); the
identity map that makes one real object one tracker however many paths reach it; and
the replay of all of it after the graph, from the records each written tracker's kind
provides (`replay_records`, Note [Replay records] in vars/base.py) and its own records of
the global writes; and the calls replayed after the graph (Note [Replayed calls]).

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

# Note [Mutation barrier]
# Every in-place change of a tracker's state (container contents, object attributes,
# cell contents, iterator positions, a tensor's metadata changed by an in-place op) is
# preceded by one call, `SideEffects.mutate(vt)`; state the program did not write (a
# cell's contents read lazily, a value guard installed) by `touch(vt)`; global writes by
# `store_global`. The barrier (1) refuses the write inside a speculation scope the
# tracker does not belong to (Note [Speculation scopes] in vars/base.py), (2) while a
# checkpoint is active, saves the tracker's state (`vt._save_state()`, a shallow copy)
# the first time it is written after the latest checkpoint or restore: later writes in
# that epoch save nothing, so a write stays O(1) amortized, and with no checkpoint
# nothing is saved at all; (3) records a tracker with a source for replay.
# `restore(cp)` pops the undo log back to `cp` (newest first, so the oldest saved state
# wins) and truncates the insertion-ordered logs and the identity map to their lengths
# at `cp`. No code writes tracker state without the barrier (`tests/test_speculation.py`
# scans the source for it).

# Note [Replayed calls]
# A call whose only effect is outside the program's own state (a logging call: it writes to
# the logger's handlers) is not run while tracing: `record_call(fn, args, kwargs)` logs it and
# the replay makes it, after every store, in the order the trace made the calls, with the real
# `fn` loaded as a constant and its arguments rebuilt (constants, values with a source). It is
# called from the residual code itself (no helper frame), so what the callee decides at run time
# (a logger's level and handlers, an lru_cache hit) is decided as eagerly. Inside a speculation
# scope a call is refused unless the scope allows them (`scope(name, calls=True)`: a body whose
# recorded calls the caller drops or replays itself).
"""
from __future__ import annotations

import contextlib

from ..guards.sources import GlobalsDictSource
from ..vars.base import (REPLAY_CELL, REPLAY_CONTAINER, REPLAY_GLOBAL, REPLAY_ITERATOR, REPLAY_OBJECT,
                         set_current_scope)
from ..vars.iterators import set_iterator_state
from ..vars.objects import DELETED  # pending value of a deleted attribute or global
from ..guards.guard import Guard, GuardKind


def _restore_global(arg) -> None:
    entry, state = arg
    entry[3:] = state


def _truncate(d: dict, n: int) -> None:
    """Drop the entries added to insertion-ordered `d` after it had `n` (newest first)."""
    while len(d) > n:
        d.popitem()


class Watch:
    """What changed since `SideEffects.watch()`: trackers made before it that were written
    (id -> (tracker, its state before the first write)), and the first other change."""

    __slots__ = ("epoch", "escaped", "written", "other")

    def __init__(self, epoch: int, escaped: set):
        self.epoch = epoch
        self.escaped = escaped     # ids of the trackers made in the trace that pending writes hold
        self.written: dict = {}
        self.other = None


def _reachable(roots: list) -> set:
    """The ids of the trackers made in the trace (no source) reachable from `roots`."""
    seen: set = set()
    stack = list(roots)
    while stack:
        vt = stack.pop()
        if id(vt) in seen or not hasattr(vt, "children"):
            continue
        seen.add(id(vt))
        stack.extend(vt.children())
    return seen


class SideEffects:
    """Everything the traced code did to the caller's world, in O(1) per write, and the
    mutation barrier every in-place change of a tracker passes (Note [Mutation barrier])."""

    __slots__ = ("output", "mutated", "globals", "by_id", "_keepalive", "writes", "current_scope",
                 "_scope_names", "_undo", "_saved", "_checkpoints", "positioned", "calls", "_calls_allowed",
                 "hooks", "watches", "distinct")

    def __init__(self, output=None):
        self.output = output           # the OutputGraph (for the translator at a refused write)
        self.mutated: dict = {}        # id(tracker) -> sourced tracker written (containers, objects, cells)
        # (id(globals dict), name) -> [globals_source, dict, name, value, stamp, reinserted]
        # (Note [Order of the globals written])
        self.globals: dict = {}
        self.by_id: dict = {}          # id(real mutable object) -> tracker (identity map)
        self._keepalive: list = []     # the real objects of `by_id` (ids stay unique)
        self.writes = 0                # number of recorded writes (for stats and tests)
        self.current_scope = 0         # Note [Speculation scopes] in vars/base.py
        self._scope_names: dict = {0: "the top level"}
        self._undo: list = []          # (restore function, argument), oldest first
        self._saved: set = set()       # id(tracker) saved in `_undo` since the latest checkpoint/restore
        self._checkpoints = 0          # checkpoints taken and not released
        self.positioned: list = []     # iterators made during tracing, positioned after the replay
        self.calls: list = []          # (fn, args, kwargs) replayed after the stores (Note [Replayed calls])
        self._calls_allowed: set = set()  # scopes whose recorded calls are the caller's business
        self.hooks: list = []          # tensor hook registrations and removals (vars/hooks/tensor.py)
        self.watches: list = []        # open `Watch`es (vars/repeated_blocks.py)
        # sources of objects a replayed block read (vars/repeated_blocks.py): kept distinct like
        # `by_id`'s, as the trackers a fresh trace of the block would have made
        self.distinct: list = []
        set_current_scope(0)

    # ---- the barrier -------------------------------------------------------------------
    def mutate(self, vt, replay: bool = True) -> None:
        """THE barrier: `vt`'s state is about to change in place. Refuses the write inside
        a speculation scope `vt` was not created in, saves `vt`'s state for `restore`
        (once per checkpoint epoch), and records a sourced `vt` for replay (unless
        `replay=False`: a tensor changed by an in-place op, which the graph replays)."""
        if self.current_scope and vt.scope != self.current_scope:
            self._refuse(vt.source.name() if vt.source is not None else self._name_of(vt))
        if self._checkpoints and id(vt) not in self._saved:
            self._saved.add(id(vt))
            self._undo.append((vt._restore_state, vt._save_state()))
        if replay and vt.source is not None:
            self.mutated[id(vt)] = vt
        for watch in self.watches:
            if vt.scope < watch.epoch and (vt.source is not None or id(vt) in watch.escaped) \
                    and id(vt) not in watch.written:
                watch.written[id(vt)] = (vt, vt._save_state())
        self.writes += 1

    def touch(self, vt) -> None:
        """`vt` is about to change state that no program write made (a cell read lazily, a
        value guard installed, an attribute dict made on first use): saved for `restore`
        like a write, with no scope check and nothing replayed."""
        if self._checkpoints and id(vt) not in self._saved:
            self._saved.add(id(vt))
            self._undo.append((vt._restore_state, vt._save_state()))

    def _refuse(self, what: str) -> None:
        tx = self.output.current_tx
        name = self._scope_names[self.current_scope]
        tx.unsupported(f"{name} writes {what} at {tx.location()}, which was created outside it; the body "
                       "of a higher-order op must not mutate outside state",
                       category="side effect in higher-order op",
                       hint="return the new value from the body instead of mutating it")

    def _name_of(self, vt) -> str:
        """How a refused write names tracker `vt` made during tracing: the variable of the
        innermost frame holding it (a local, a free variable, or the cell of a `nonlocal`)."""
        tx = self.output.current_tx
        while tx is not None:
            for name, value in tx.locals.items():
                if value is vt:
                    return f"'{name}' ({vt.describe()})"
            for name, cell in tx.cells.items():
                if cell is vt:
                    return f"nonlocal '{name}'"
                if cell.known_contents() is vt:
                    return f"'{name}' ({vt.describe()})"
            tx = tx.parent
        return vt.describe()

    @contextlib.contextmanager
    def scope(self, name: str, calls: bool = False):
        """The body of a higher-order op being speculated (Note [Speculation scopes]): new
        trackers belong to a fresh scope, writes to others and to globals are refused, and
        so are replayed calls unless `calls` (Note [Replayed calls])."""
        new = len(self._scope_names)
        self._scope_names[new] = name
        if calls:
            self._calls_allowed.add(new)
        outer, self.current_scope = self.current_scope, new
        previous = set_current_scope(new)
        try:
            yield new
        finally:
            self.current_scope = outer
            set_current_scope(previous)

    def scope_name(self) -> str:
        """The name of the current speculation scope ("the top level" outside any)."""
        return self._scope_names[self.current_scope]

    # ---- recording ---------------------------------------------------------------------
    def pending(self) -> bool:
        """Whether any write, call or hook registration waits for the replay after the graph."""
        return bool(self.mutated or self.globals or self.calls or self.hooks)

    def is_mutated(self, vt) -> bool:
        return id(vt) in self.mutated

    def position_after_replay(self, it_vt) -> None:
        """Iterator `it_vt`, made during tracing over a pre-existing list that the replay
        changes, was just rebuilt at its start (while residual code is generated); set its
        position after the replay."""
        self.positioned.append(it_vt)
        self._seen("an iterator positioned after the replay")

    def store_global(self, f_globals: dict, globals_source, name: str, value) -> None:
        """Global `name` of `f_globals` (or a module attribute) is written: the barrier for
        globals (refused inside a speculation scope), undoable, replayed."""
        if self.current_scope:
            self._refuse(f"global {name!r}")
        key = (id(f_globals), name)
        entry = self.globals.get(key)
        if entry is None:
            self.globals[key] = [globals_source, f_globals, name, value, self.writes, False]
        else:
            if self._checkpoints:
                self._undo.append((_restore_global, (entry, entry[3:])))
            if entry[3] is DELETED and value is not DELETED:  # made again: at the dict's end
                entry[4:] = [self.writes, True]
            entry[3] = value
        self.writes += 1
        self._seen("a global write")

    def record_call(self, fn, args: list, kwargs: dict) -> None:
        """`fn(*args, **kwargs)` runs after the graph instead of now (Note [Replayed calls])."""
        if self.current_scope and self.current_scope not in self._calls_allowed:
            tx = self.output.current_tx
            tx.unsupported(f"{self._scope_names[self.current_scope]} calls {getattr(fn, '__qualname__', fn)} "
                           f"at {tx.location()}, an effect replayed after the graph; the body of a "
                           "higher-order op must not have effects outside it",
                           category="side effect in higher-order op",
                           hint="make the call outside the body")
        self.calls.append((fn, list(args), dict(kwargs)))
        self._seen("a replayed call")

    def drop_calls(self, n: int) -> list:
        """Forget the calls recorded after the first `n`; returns them."""
        dropped = self.calls[n:]
        del self.calls[n:]
        return dropped

    def record_hook(self, record) -> None:
        """A tensor hook registered or removed (a `HookRecord`): refused inside a speculation
        scope, undoable, replayed first (Note [Hook replay] in vars/hooks/tensor.py)."""
        if self.current_scope:
            self._refuse("a tensor hook")
        self.hooks.append(record)
        self._seen("a hook registration")
        self.writes += 1

    def emit_hooks(self, cg) -> None:
        """The hook records' residual code, in log order, once per residual code."""
        if not cg.hooks_emitted:
            cg.hooks_emitted = True
            for record in self.hooks:
                record.emit(cg)

    def pending_global(self, f_globals: dict, name: str):
        """The tracker written to global `name` of `f_globals` (DELETED, or None if none)."""
        entry = self.globals.get((id(f_globals), name))
        return None if entry is None else entry[3]

    def record_undo(self, restore, arg) -> None:
        """While a checkpoint is active, `restore(arg)` runs when it is restored (for state
        kept outside trackers, e.g. a guard's user location)."""
        if self._checkpoints:
            self._undo.append((restore, arg))

    # ---- identity ------------------------------------------------------------------------
    def tracker_for(self, value):
        return self.by_id.get(id(value))

    def remember(self, value, vt) -> None:
        self.by_id[id(value)] = vt
        self._keepalive.append(value)

    def remembered(self) -> int:
        """How many objects have a tracker in the identity map (a position for `remembered_since`)."""
        return len(self._keepalive)

    def remembered_since(self, position: int) -> list:
        """The trackers given to objects since `remembered()` was `position`, in order."""
        return [self.by_id[id(value)] for value in self._keepalive[position:]]

    def keep_distinct(self, sources) -> None:
        """Objects read at `sources` by a replayed block: guarded distinct from every tracked
        object when anything is written, as their trackers would be (`_guard_distinct`)."""
        self.distinct.extend(sources)

    # ---- watching what existed before a point (vars/repeated_blocks.py) -----------------------
    def watch(self) -> "Watch":
        """From now on, note the first write to each tracker that exists now and that code
        could reach from outside the frames (one with a source, or one made in the trace
        that the log's pending writes hold: `escaped`), with its state before that write,
        and every other change of the log, until `unwatch`. A tracker made later cannot
        be reached so without a write to one of those. Trackers made at the top level
        from now on get a fresh scope id, which tells them apart (outside a speculation
        scope it refuses nothing: only a body's `current_scope` does)."""
        epoch = len(self._scope_names)
        self._scope_names[epoch] = self._scope_names[self.current_scope]
        if not self.current_scope:
            set_current_scope(epoch)
        held = [child for vt in self.mutated.values() for child in vt.children()]
        held += [entry[3] for entry in self.globals.values() if entry[3] is not DELETED]
        watch = Watch(epoch, _reachable(held))
        self.watches.append(watch)
        return watch

    def unwatch(self, watch: "Watch") -> None:
        if watch in self.watches:
            self.watches.remove(watch)

    def _seen(self, what: str) -> None:
        for watch in self.watches:
            watch.other = watch.other or what

    # ---- checkpoints (Note [Mutation barrier]) ---------------------------------------------
    def checkpoint(self) -> tuple:
        self._checkpoints += 1
        self._saved = set()
        return (len(self._undo), len(self.mutated), len(self.globals), len(self._keepalive), self.writes,
                len(self.calls), len(self.hooks), len(self.distinct))

    def restore(self, cp: tuple) -> None:
        """Undo every change since `cp` (which stays active: it can be restored again)."""
        undo_len, mutated_len, globals_len, keepalive_len, writes, calls_len, hooks_len, distinct_len = cp
        del self.distinct[distinct_len:]
        del self.hooks[hooks_len:]
        undo = self._undo
        while len(undo) > undo_len:
            restore, arg = undo.pop()
            restore(arg)
        _truncate(self.mutated, mutated_len)
        _truncate(self.globals, globals_len)
        for value in self._keepalive[keepalive_len:]:
            del self.by_id[id(value)]
        del self._keepalive[keepalive_len:]
        self.writes = writes
        del self.calls[calls_len:]
        self._saved = set()

    def release(self, cp: tuple) -> None:
        """Keep every change since `cp` (the speculation succeeded)."""
        self._checkpoints -= 1
        if not self._checkpoints:
            self._undo.clear()
            self._saved = set()

    # ---- values the replay needs -----------------------------------------------------------
    def _by_phase(self) -> list:
        """The written trackers per replay phase (Note [Replay records]), in write order."""
        phases = [[] for _ in range(REPLAY_CELL + 1)]
        for vt in self.mutated.values():
            phases[vt.replay_phase].append(vt)
        return phases

    def values(self) -> list:
        """Every tracker the replay writes (for collecting graph outputs)."""
        out = [vt for record in self.hooks for vt in record.replayed_values()]
        for phase, written in enumerate(self._by_phase()):
            if phase == REPLAY_GLOBAL:
                out.extend(entry[3] for entry in self.globals.values() if entry[3] is not DELETED)
            for vt in written:
                out.extend(vt.replayed_values())
        return out

    def summary(self) -> tuple:
        """What the replay does, in words, in replay order (for tooling: the compile report);
        () at once when the trace wrote nothing outside itself."""
        if not (self.mutated or self.globals or self.calls or self.hooks):
            return ()
        out = [_hook_words(record) for record in self.hooks]
        for phase, written in enumerate(self._by_phase()):
            if phase == REPLAY_GLOBAL:
                for globals_source, _, name, value, _, _ in sorted(self.globals.values(), key=lambda e: e[4]):
                    target = f"global {name}" if isinstance(globals_source, GlobalsDictSource) else \
                        f"{globals_source.describe()}[{name!r}]"
                    out.append(f"del {target}" if value is DELETED else f"{target} = {_short(value.describe())}")
            out.extend(f"{_PHASE_WORDS[phase]} {vt.source.describe()}" for vt in written)
        out.extend(f"call {getattr(fn, '__qualname__', type(fn).__name__)}({len(args) + len(kwargs)} argument"
                   f"{'' if len(args) + len(kwargs) == 1 else 's'})" for fn, args, kwargs in self.calls)
        return tuple(out)

    # ---- replay ------------------------------------------------------------------------------
    def replay(self, cg) -> None:
        """Emit the replay (stack-neutral; see Note [Side-effect replay])."""
        self.emit_hooks(cg)
        records = self._records(cg)
        for push, _ in reversed(records):  # pushed last-first, so the stores run in log order
            push()
        for _, store in records:
            store()
        for vt in self.positioned:  # filled while the operands above were built
            cg.push_callable_const(set_iterator_state)
            cg.reconstruct(vt)
            cg.load_const(vt.index)
            cg.call_and_pop_2()
        self._guard_distinct(cg.tx.output)

    def _records(self, cg) -> list:
        """(push operands, store) pairs: each written tracker's own (`replay_records`) and
        the global writes, phase by phase, in the order the writes were first made."""
        records = []
        for phase, written in enumerate(self._by_phase()):
            if phase == REPLAY_GLOBAL:  # Note [Order of the globals written]
                for globals_source, _, name, value, _, reinserted in sorted(self.globals.values(),
                                                                           key=lambda entry: entry[4]):
                    if reinserted and value is not DELETED:
                        records.append(_global_record(cg, globals_source, name, DELETED))
                    records.append(_global_record(cg, globals_source, name, value))
            for vt in written:
                records.extend(vt.replay_records(cg))
        records.extend(_call_record(cg, fn, args, kwargs) for fn, args, kwargs in self.calls)
        return records

    def _guard_distinct(self, output) -> None:
        """Objects traced as distinct must stay distinct when anything was mutated: the
        log replays each tracker's final state on its own object."""
        written = self._by_phase()
        if any(written[:REPLAY_CELL]):
            sources = tuple(vt.source for vt in self.by_id.values() if vt.replay_phase != REPLAY_CELL)
            sources += tuple(self.distinct)
            if len(sources) > 1:
                output.add_guard(Guard(GuardKind.NO_ALIASING, sources[0], sources))
        if written[REPLAY_CELL]:  # a cell written through one closure is read through another only if shared
            cells = tuple(vt.source.cell() for vt in self.by_id.values() if vt.replay_phase == REPLAY_CELL)
            if len(cells) > 1:
                output.add_guard(Guard(GuardKind.NO_ALIASING, cells[0], cells))


_PHASE_WORDS = {REPLAY_CONTAINER: "contents of", REPLAY_ITERATOR: "position of iterator",
                REPLAY_OBJECT: "attributes of", REPLAY_CELL: "contents of cell"}


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def _hook_words(record) -> str:
    if record.method is None:
        return f"{record.handle.describe()}.remove()"
    return f"{record.tensor.describe()}.{record.method}({_short(record.fn.describe())})"


def _bound(method, arg):
    return lambda: method(arg)


def _call_record(cg, fn, args, kwargs):
    """`fn(*args, **kwargs)` called from the residual code, its result dropped."""
    def push():
        cg.push_callable_const(fn)
        for vt in (*args, *kwargs.values()):
            cg.reconstruct(vt)

    def call():
        cg.call_and_pop(len(args) + len(kwargs), tuple(kwargs))
    return push, call


# Note [Order of the globals written]
# A module's globals are a dict, and its key order is visible (`list(globals())`, `vars(m)`):
# a global made during the call goes to the end, and so does one deleted and made again. The
# log keeps per global the write counter of its last insertion (its first write, or the first
# store after a delete) and whether it was deleted and made again; the replay writes the
# globals in the order of those insertions, popping a re-made one first, so the real dict
# ends in eager's order.


def _global_record(cg, globals_source, name, value):
    if value is DELETED:
        # `dict.pop(module_dict, name, None)`: a global the trace made and deleted again may
        # be absent from the real dict, where eager's `del` found it (made during the call)
        def push_pop():
            cg.push_callable_const(dict.pop)
            globals_source.reconstruct(cg)
            cg.load_const(name)
            cg.load_const(None)
        return push_pop, _bound(cg.call_and_pop, 3)
    if isinstance(globals_source, GlobalsDictSource):
        return (lambda: cg.reconstruct(value)), _bound(cg.store_global, name)

    def push():  # module_dict[name] = value
        cg.reconstruct(value)
        globals_source.reconstruct(cg)
        cg.load_const(name)
    return push, cg.store_subscr
