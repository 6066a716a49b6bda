"""The compile report's listener: turns what the runtime tells of each new cache entry
(`LISTENERS`) and each recompile (`RECOMPILE_LISTENERS`) into records (`records.py`).

Everything is copied out as text and numbers when the event happens (the graph's code, the
guards as `explain` words them, the source lines the report points at), so the report keeps
no graph, guard or function alive; compiled functions are known by a weak map. Breaks are
worded by `explain.BreakReason` and ops named by `explain.op_name`, so the report says what
`explain` says. `changed` is called after each event (the session's cue to write).
"""
from __future__ import annotations

import itertools
import re
import time
import weakref

from ..explain import BreakReason, op_name, subgraphs
from ..runtime import recompiles
from ..runtime.root_frames import LISTENERS, RECOMPILE_LISTENERS
from ..translate.continuation import first_call
from ..translate.resume import is_resume_code, origin
from . import source
from .records import (BreakRecord, EntryRecord, FailureRecord, FrameRecord, GraphRecord, GuardRecord,
                      RecompileRecord)

_CALL_OPS = frozenset({"call_function", "call_method", "call_module"})
_RESUMED_AT = re.compile(r"_at_line_(\d+)$")


class Recorder:
    """Records every cache entry and recompile made while it is attached (`attach`/`detach`)."""

    def __init__(self, changed=None):
        self.t0 = time.perf_counter()
        self.frames: dict[int, FrameRecord] = {}  # by id, in the order they were first seen
        self.dirty: set[int] = set()              # ids of frames changed since the last `take_dirty`
        self._ids = itertools.count(1)
        self._known: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # CompiledFunction -> id
        self.changed = changed or (lambda: None)

    def attach(self) -> None:
        LISTENERS.append(self.on_entry)
        RECOMPILE_LISTENERS.append(self.on_recompile)

    def detach(self) -> None:
        LISTENERS.remove(self.on_entry)
        RECOMPILE_LISTENERS.remove(self.on_recompile)

    def take_dirty(self) -> set:
        dirty, self.dirty = self.dirty, set()
        return dirty

    # ---- the events ------------------------------------------------------------------------
    def on_entry(self, compiled, entry, graph_break) -> None:
        frame = self._frame(compiled)
        frame.entries.append(self._entry(compiled, entry, graph_break))
        self.dirty.add(frame.id)
        self.changed()

    def on_recompile(self, compiled, found: list, values) -> None:
        frame = self._frame(compiled)
        code = compiled.code
        message = recompiles.recompile_message(code.co_qualname, f"{code.co_filename}:{code.co_firstlineno}", found,
                                               compiled.recompile_notes(found, values))
        failures = [FailureRecord(f.entry_number, f.guard.describe() if f.guard is not None else "",
                                  f.value_text(), _location(f.guard), source.line_text(_location(f.guard)), f.text())
                    for f in found]
        frame.recompiles.append(RecompileRecord(len(compiled.entries) + 1, message, failures))
        self.dirty.add(frame.id)
        self.changed()

    # ---- records ---------------------------------------------------------------------------
    def _frame(self, compiled) -> FrameRecord:
        known = self._known.get(compiled)
        if known is not None:
            return self.frames[known]
        code = compiled.code
        caller = compiled.caller() if compiled.caller is not None else None
        caller_id = self._known.get(caller) if caller is not None else None
        user_code = code
        if compiled.shown_as is not None:
            kind, name, user_code = "module", compiled.shown_as[0], compiled.shown_as[1]
        elif is_resume_code(code):
            user_code = origin(code, 0)[0]
            kind, name = "resume function", f"{user_code.co_qualname} (resumed at line {_resumed_at(code)})"
        elif first_call(code) is not None:  # the rest of the frames a break inside inlined calls left
            resumed = first_call(code).__code__
            user_code = origin(resumed, 0)[0]
            kind, name = "continuation", f"{user_code.co_qualname} (continued at line {_resumed_at(resumed)})"
        else:
            kind, name = ("callee" if caller is not None else "function"), code.co_qualname
        first, lines = source.function_lines(user_code)
        frame = FrameRecord(next(self._ids), name, kind, code.co_qualname,
                            user_code.co_filename if user_code is not None else "",
                            user_code.co_firstlineno if user_code is not None else 0,
                            caller_id, first, lines)
        self.frames[frame.id] = frame
        self._known[compiled] = frame.id
        return frame

    def _entry(self, compiled, entry, graph_break) -> EntryRecord:
        gm = entry.graph_module
        graph = None
        if gm is not None:
            graph = GraphRecord(entry.graph_name or "", gm.code.strip(),
                                [op_name(n) for n in gm.graph.nodes if n.op in _CALL_OPS],
                                [[name, sub.code.strip()] for name, sub in subgraphs(gm)])
        reason = entry.reason if entry.kind == "eager" or graph_break is not None else ""
        guards = [GuardRecord(g.describe(), g.user_location, source.line_text(g.user_location))
                  for g in entry.guards.guards]
        return EntryRecord(len(compiled.entries), entry.kind, reason, entry.started - self.t0 if entry.started else 0.0,
                           entry.trace_seconds, entry.backend_seconds, entry.guard_seconds, graph,
                           _break(graph_break) if graph_break is not None else None, guards,
                           list(entry.side_effects))


def _break(brk) -> BreakRecord:
    first, context = source.around(brk.location)
    text = str(BreakReason(brk.category, brk.reason, brk.location, brk.user_stack, brk.hint))
    return BreakRecord(brk.category, brk.reason, brk.location, list(brk.user_stack), brk.hint, text,
                       source.enclosing_function(brk.location), first, context)


def _resumed_at(code) -> str:
    """The line a resume function resumes at, from its name (`__bg_resume_f_at_line_12`)."""
    at = _RESUMED_AT.search(code.co_name)
    return at.group(1) if at else "?"


def _location(guard) -> str:
    return guard.user_location if guard is not None else ""
