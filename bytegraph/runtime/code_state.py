"""What bytegraph keeps per code object (and backend) across every compiled wrapper of it, as
torch.compile keeps its cache on the code object: the live wrappers (whose entries a sibling
may reuse), the number of entries compiled for it (what `config.recompile_limit` caps), whether
the limit was hit, and the sizes and ints its captures saw (automatic dynamic shapes, graph/shapes.py).

Note [Recompile limit]
torch.compile caches compiled entries on the code object, so `torch.compile(f)` called twice (in a
loop, in a helper) reuses the first wrapper's entries, and its recompile limit counts every entry
compiled for `f`. bytegraph's entries belong to a wrapper (`CompiledFunction`: the entries live
as long as the wrapper the user keeps, Note [Residual constants]); what is per code object is
this `CodeState`, keyed by the code the user compiled (a module's: its class's `forward`, not the
shared root frame `forward_call`) and the backend (an entry only serves its own backend, as
torch's BACKEND_MATCH guard says, and `explain` compiles with a backend of its own):
- a miss first tries the entries of the other live wrappers of the same function (same code,
  globals and closure cells), backend, `fullgraph` and `dynamic`: one that holds is installed in
  this wrapper too, without compiling (`CompiledFunction.miss`);
- `entry_count` counts the entries compiled for the code; a miss with `recompile_limit` of them
  (or `accumulated_recompile_limit`) compiles nothing: under `fullgraph=True` or
  `config.fail_on_recompile_limit_hit` it raises `FailOnRecompileLimitHit`, otherwise the frame
  runs eagerly with one `RecompileLimitWarning` per code object, and the entries already
  compiled keep serving their calls (torch's RUN_ONLY);
- `memory` is automatic dynamic's record of sizes and ints (`ShapeMemory`), so a new wrapper's
  first capture knows what the earlier ones saw, as torch's frame state is per code object.
`bytegraph.reset()` forgets every CodeState.
"""
from __future__ import annotations

import functools
import weakref

from ..graph.shapes import ShapeMemory


class CodeState:
    __slots__ = ("wrappers", "entry_count", "limit_hit", "memory")

    def __init__(self):
        self.wrappers: "weakref.WeakSet" = weakref.WeakSet()  # the live CompiledFunctions of the code
        self.entry_count = 0     # entries compiled for the code (a shared entry counts once)
        self.limit_hit = False   # the recompile limit was hit: warned once, run-only from then on
        self.memory = ShapeMemory()


# (id(code key), id(backend)) -> (weak references to both, their CodeState)
_states: dict = {}


def state_for(key, backend) -> CodeState:
    """The CodeState of the code object (or class) `key` compiled with `backend`; dropped with either."""
    ident = (id(key), id(backend))
    found = _states.get(ident)
    if found is not None and found[0][0]() is key and found[0][1]() is backend:
        return found[1]
    state = CodeState()
    forget = functools.partial(_forget, ident, state)
    refs = (weakref.ref(key, forget), _weak(backend, forget))
    _states[ident] = (refs, state)
    return state


def _weak(obj, callback):
    try:
        return weakref.ref(obj, callback)
    except TypeError:  # a backend that cannot be weakly referenced: kept (as its wrappers keep it)
        return lambda: obj


def _forget(ident, state, _ref) -> None:
    found = _states.get(ident)
    if found is not None and found[1] is state:
        del _states[ident]


def forget_all() -> None:
    """`bytegraph.reset()`: every code object starts afresh."""
    _states.clear()
