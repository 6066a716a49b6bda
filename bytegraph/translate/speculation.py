"""Speculation: checkpoints of the translator's frames, and the speculation log that lets
a capture restart with decisions learned by an earlier attempt.

A `TranslatorCheckpoint` is the output graph's checkpoint (Note [Checkpoints] in
graph/output_graph.py: graph nodes, guards, inputs, tracked objects, the undo log, grad
mode) plus the frame state of the translator and every inlining parent (stack, locals,
cells, instruction pointer, pending keyword names, step count). Restoring it leaves the
capture exactly as if the speculated instructions never ran.

# Note [Speculation log]
One capture may need several attempts: an attempt learns something it could only know
after running further (a break deep inside inlined calls that cannot resume there, so
the capture must break at a call site further out; later, a speculation that failed),
raises `RestartCapture`, and the next attempt, with a fresh output graph, replays the
same instructions and consults the `SpeculationLog` where it must decide. Positions are
step counts: every translator counts the instructions it runs (`Translator.steps`), and
tracing is deterministic, so an attempt reaches the same position with the same steps.
A decision is keyed by (kind, steps of each frame from the root inwards); a break at a
call site (the deepest frame whose call the break can resume after, `breaks.call_depth`;
the root's at worst) by the steps of the frames from the root to that one, checked by that
frame's run loop. The log belongs to one capture (`capture()` makes it), so a decision
never leaks into another capture or into the later captures of the callees (which,
compiled on their own, learn their own). It replaces the process-global break markers of
earlier versions.
"""
from __future__ import annotations

from dataclasses import dataclass

from .lazy_arguments import set_unread_arguments, unread_arguments

# An attempt that restarts more often than this is a tracer bug (decisions must converge).
MAX_RESTARTS = 8


class RestartCapture(Exception):
    """Raised inside a capture attempt after a decision was added to the speculation log:
    the capture starts again from the first instruction with that decision known. Not
    `counted` against MAX_RESTARTS when the attempt changed the real world so that the
    next one reads it anew (a lazy module initialized its parameters): each such restart
    makes progress by itself."""

    def __init__(self, why: str, counted: bool = True):
        super().__init__(why)
        self.counted = counted


class SpeculationLog:
    """The decisions earlier attempts of one capture learned (Note [Speculation log])."""

    __slots__ = ("call_breaks", "decisions", "restarts")

    def __init__(self):
        # steps of a frame's callers from the root inwards -> {the frame's step -> (reason,
        # category, hint, location, user_stack)}: the calls where the frame breaks
        self.call_breaks: dict = {}
        self.decisions: dict = {}    # (kind, steps from the root inwards) -> value
        self.restarts = 0

    def break_at_call(self, brk) -> bool:
        """Remember that frame `brk.call_depth` of nested break `brk` (0: the root) must break
        at the call it was in (the break is reported where it really happens). False if that
        was known already."""
        steps = brk.steps[:brk.call_depth + 1]
        breaks = self.call_breaks.setdefault(steps[:-1], {})
        if steps[-1] in breaks:
            return False
        breaks[steps[-1]] = (brk.reason, brk.category, brk.hint, brk.location, brk.user_stack)
        return True

    def decide(self, kind: str, position: tuple, value) -> None:
        self.decisions[(kind, position)] = value

    def decision(self, kind: str, position: tuple):
        return self.decisions.get((kind, position))

    def restart(self) -> bool:
        """Count one more attempt; False when the limit is reached."""
        self.restarts += 1
        return self.restarts <= MAX_RESTARTS


@dataclass(frozen=True)
class TranslatorCheckpoint:
    graph: object   # the OutputGraph's GraphCheckpoint
    frames: tuple   # (translator, frame state), innermost first
    open_generators: tuple  # the output's open generators (Note [Traced generators])


def frame_state(tx) -> tuple:
    """A copy of the state of one translator frame (`set_frame_state` puts it back); the root
    frame's unread arguments too (Note [Arguments wrapped when read])."""
    return (list(tx.stack), dict(tx.locals), dict(tx.cells), tx.ip, tx.inst, tx.kw_names, tx.return_value,
            tx.yielded, list(tx.snapshot_stack), tx.snapshot_kw_names, tx.steps, tx.handled,
            unread_arguments(tx.locals))


def set_frame_state(tx, state: tuple) -> None:
    stack, local_vars, cells, tx.ip, tx.inst, tx.kw_names, tx.return_value, tx.yielded, snapshot, \
        tx.snapshot_kw_names, tx.steps, tx.handled, unread = state
    tx.stack[:] = stack
    tx.locals.clear()
    tx.locals.update(local_vars)
    set_unread_arguments(tx.locals, unread)
    tx.cells.clear()
    tx.cells.update(cells)
    tx.snapshot_stack = list(snapshot)


def checkpoint(tx) -> TranslatorCheckpoint:
    return TranslatorCheckpoint(tx.output.checkpoint(), tuple((t, frame_state(t)) for t in tx._outward()),
                                tuple(tx.output.open_generators))


def restore(tx, cp: TranslatorCheckpoint) -> None:
    tx.output.restore(cp.graph)
    tx.output.open_generators[:] = cp.open_generators
    for t, state in cp.frames:
        set_frame_state(t, state)
