"""The compile report's data: plain records of what bytegraph compiled, as JSON.

Owns the shape of the report's data and nothing else. A `FrameRecord` is one compiled
function (a `CompiledFunction`: what the user compiled, a module's compiled call, a
graph-broken callee, a resume function, a continuation) with its cache entries
(`EntryRecord`: the graph, the break, the guards, the side effects replayed, the time per
phase) and its recompiles (`RecompileRecord`: the guard that failed per entry tried and
what failed it). Records hold strings and numbers only, never a live object, so keeping
them keeps nothing of the program alive, and they are the report's whole input: the live
report renders them as it goes, `python -m bytegraph.report DIR` renders them again from
the JSON files they are saved as (`dump`, `load`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field


@dataclass
class GraphRecord:
    name: str                       # the global the residual code calls (`__bg_graph_3`)
    code: str                       # the FX GraphModule's Python code
    ops: list = field(default_factory=list)        # op names, as `explain` names them, in graph order
    subgraphs: list = field(default_factory=list)  # [qualified name, code] of each higher-order op's body


@dataclass
class BreakRecord:
    category: str
    reason: str
    location: str                   # file:line of the break
    user_stack: list                # "file:line in name", innermost first (as explain's)
    hint: str
    text: str                       # the break exactly as `explain` prints it (str(BreakReason))
    function: str                   # qualified name of the function whose line broke
    context_first: int = 0          # first line number of `context`
    context: list = field(default_factory=list)  # the source lines around the break

    @property
    def line(self) -> int:
        number = self.location.rpartition(":")[2]
        return int(number) if number.isdigit() else 0

    @property
    def line_text(self) -> str:
        """The source of the line that broke ("" when unknown)."""
        i = self.line - self.context_first
        return self.context[i].strip() if self.context and 0 <= i < len(self.context) else ""


@dataclass
class GuardRecord:
    text: str                       # Guard.describe(), as `explain` lists it
    location: str = ""              # the user's line that read the guarded value
    line_text: str = ""             # that line's source


@dataclass
class FailureRecord:
    entry_number: int               # the entry the wrapper tried (1-based)
    guard: str                      # the first of its guards that failed ("" : every guard held)
    value: str                      # what failed it: the value now, or the tensor properties that differ
    location: str = ""
    line_text: str = ""
    text: str = ""                  # the whole sentence, as the `recompiles` log says it


@dataclass
class RecompileRecord:
    entry_number: int               # the entry this recompile makes (none if its capture raised)
    message: str                    # the `recompiles` log line (BYTEGRAPH_LOGS=recompiles)
    failures: list = field(default_factory=list)  # FailureRecord per entry tried


@dataclass
class EntryRecord:
    number: int                     # its place in the wrapper (1-based)
    kind: str                       # "compiled" or "eager"
    reason: str                     # why it ends at a break or runs eagerly ("" for one whole graph)
    started: float                  # seconds since the report started
    trace: float                    # seconds tracing and generating code
    backend: float                  # seconds in the backend
    guards_seconds: float           # seconds making and compiling the guards
    graph: GraphRecord | None = None
    brk: BreakRecord | None = None
    guards: list = field(default_factory=list)        # GuardRecord
    side_effects: list = field(default_factory=list)  # what the residual code replays, in words

    @property
    def seconds(self) -> float:
        return self.trace + self.backend + self.guards_seconds


@dataclass
class FrameRecord:
    id: int
    name: str                       # what the user knows it by: a function's qualified name, a module's class
    kind: str                       # "function", "module", "callee", "resume function" or "continuation"
    code_name: str                  # the compiled code's qualified name (`forward_call`, `__bg_resume_...`)
    file: str
    line: int
    caller: int | None = None       # the frame whose residual code called it first
    source_first: int = 0           # first line number of `source`
    source: list = field(default_factory=list)        # the user's source lines of the function
    entries: list = field(default_factory=list)       # EntryRecord, in the order they were made
    recompiles: list = field(default_factory=list)    # RecompileRecord

    @property
    def location(self) -> str:
        return f"{self.file}:{self.line}" if self.file else ""


@dataclass
class RunRecord:
    """The run the report is about."""

    title: str                      # the command line, or what `report(dir, title=...)` was given
    started: str                    # wall-clock time, ISO 8601
    cwd: str = ""                   # the working directory (paths under it are shown relative to it)
    error: str = ""                 # the exception the program (or the `with` block) ended with
    finished: bool = False          # False while the program runs


# ---- JSON --------------------------------------------------------------------------------------

def dump(record) -> dict:
    """A record (and the records inside it) as JSON-ready dicts and lists."""
    return dataclasses.asdict(record)


def load_frame(data: dict) -> FrameRecord:
    entries = [_load_entry(e) for e in data.pop("entries")]
    recompiles = [RecompileRecord(failures=[FailureRecord(**f) for f in r.pop("failures")], **r)
                  for r in data.pop("recompiles")]
    return FrameRecord(entries=entries, recompiles=recompiles, **data)


def load_run(data: dict) -> RunRecord:
    return RunRecord(**data)


def _load_entry(data: dict) -> EntryRecord:
    graph, brk = data.pop("graph"), data.pop("brk")
    guards = [GuardRecord(**g) for g in data.pop("guards")]
    return EntryRecord(graph=GraphRecord(**graph) if graph is not None else None,
                       brk=BreakRecord(**brk) if brk is not None else None, guards=guards, **data)
