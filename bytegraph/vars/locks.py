"""Threading locks (`threading.Lock()`, `threading.RLock()`: `_thread.lock`, `_thread.RLock`)
read from outside the trace.

A lock orders the *run time* of a critical section against other threads; a trace runs at
compile time and its effects are replayed after the graph, so a critical section cannot be
folded into a graph (eliding the lock would let two threads replay the same "first time"
block, the race it exists to prevent). `with lock:` is therefore a graph break with its own
reason, at BEFORE_WITH: the residual code enters the real lock, and the block resumes in a
resume function that runs, and is compiled, while the real lock is held (its effects are
replayed inside the block, before the real `__exit__`). Every other use (`acquire`,
`release`, `locked`) is a call of a C method nothing models, also a graph break. Locks
written in Python (`threading.Condition`, `Semaphore`) are user objects whose methods reach
these.
"""
from __future__ import annotations

import _thread

from ..guards.guard import GuardKind
from .objects import UserObjectVariable
from .registry import guard, register

LOCK_TYPES = (_thread.LockType, _thread.RLock)


class LockVariable(UserObjectVariable):
    """A real threading lock with a source (guarded by type)."""

    __slots__ = ()

    def enter_with(self, tx) -> tuple:
        tx.unsupported(f"entering {self.describe()} ({type(self.value).__qualname__}, a threading lock): a "
                       "critical section is not traced into a graph, its block runs holding the real lock",
                       category="unsupported context manager",
                       hint="take the lock outside the compiled function, or let the block run at the break")


@register(*LOCK_TYPES)
def build_lock(tx, value, source, do_guard: bool) -> LockVariable:
    if source is None:
        tx.unsupported(f"a threading lock ({type(value).__qualname__}) without a source", category="unsupported value")
    guard(tx, do_guard, GuardKind.TYPE_MATCH, source, type(value))
    return LockVariable(value, source)
