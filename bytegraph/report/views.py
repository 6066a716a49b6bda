"""What the report's pages show, computed from the records: the totals of a frame and of
the frames its residual code called (a tree: what one call of the user's function or
module compiled, as `explain` counts it), the red/amber/green mark, op counts, the source
listing with its break lines, and the graph-break map (which functions and lines broke,
how often). Pure functions of the records; no HTML here (templates/ does that).
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field

from .records import FrameRecord

# (CSS class, words) of the mark: one graph everywhere, a graph break, a frame run eagerly
MARKS = {"green": "one graph", "amber": "breaks", "red": "eager frame"}
_SAME_SOURCE = ("resume function", "continuation")  # kinds that run the rest of their caller's function


@dataclass
class Totals:
    frames: int = 0
    entries: int = 0
    recompiles: int = 0
    graphs: int = 0
    breaks: int = 0
    ops: int = 0
    eager: int = 0              # entries that run their frame eagerly
    trace: float = 0.0
    backend: float = 0.0
    guards: float = 0.0

    @property
    def seconds(self) -> float:
        return self.trace + self.backend + self.guards

    @property
    def mark(self) -> str:
        return "red" if self.eager else "amber" if self.breaks else "green"

    @property
    def mark_words(self) -> str:
        return MARKS[self.mark]

    def add(self, frame: FrameRecord) -> "Totals":
        self.frames += 1
        self.recompiles += len(frame.recompiles)
        for entry in frame.entries:
            self.entries += 1
            self.graphs += entry.graph is not None
            self.ops += len(entry.graph.ops) if entry.graph is not None else 0
            self.breaks += entry.brk is not None
            self.eager += entry.kind == "eager"
            self.trace += entry.trace
            self.backend += entry.backend
            self.guards += entry.guards_seconds
        return self


def totals(frames) -> Totals:
    out = Totals()
    for frame in frames:
        out.add(frame)
    return out


class Forest:
    """The frames as trees: each frame under the one whose residual code first called it."""

    def __init__(self, frames: list):
        self.frames = frames
        self.by_id = {f.id: f for f in frames}
        self.children: dict = collections.defaultdict(list)
        for f in frames:
            if f.caller in self.by_id:
                self.children[f.caller].append(f)
        self.roots = [f for f in frames if f.caller not in self.by_id]

    def root_of(self, frame: FrameRecord) -> FrameRecord:
        while frame.caller in self.by_id:
            frame = self.by_id[frame.caller]
        return frame

    def tree(self, frame: FrameRecord, kinds=None) -> list:
        """`frame` and the frames below it (only through frames of `kinds`, if given), depth first."""
        out, stack = [], [frame]
        while stack:
            f = stack.pop()
            out.append(f)
            stack.extend(reversed([c for c in self.children[f.id] if kinds is None or c.kind in kinds]))
        return out

    def same_source(self, frame: FrameRecord) -> list:
        """`frame` and its resume functions and continuations (the rest of the same function)."""
        return self.tree(frame, _SAME_SOURCE)


def op_counts(ops: list) -> list:
    """(op, count), most used first (ties in graph order)."""
    return collections.Counter(ops).most_common()


@dataclass
class SourceLine:
    number: int
    text: str
    breaks: list = field(default_factory=list)   # BreakRecord at this line
    guards: int = 0                               # guards read at this line


@dataclass
class Snippet:
    """Lines of another file (an inlined callee's) around a break."""

    location: str
    first: int
    lines: list
    brk: object


def source_view(frame: FrameRecord, frames: list) -> tuple:
    """(the frame's source lines with their breaks and guard reads, snippets of the breaks
    elsewhere): the breaks of `frames` (the frame and its resume functions), deduplicated."""
    lines = [SourceLine(frame.source_first + i, text) for i, text in enumerate(frame.source)]
    by_number = {line.number: line for line in lines}
    own_file = frame.file
    snippets, seen = [], set()
    for f in frames:
        for entry in f.entries:
            brk = entry.brk
            if brk is not None and (brk.location, brk.reason) not in seen:
                seen.add((brk.location, brk.reason))
                path, _, number = brk.location.rpartition(":")
                line = by_number.get(int(number)) if path == own_file and number.isdigit() else None
                if line is not None:
                    line.breaks.append(brk)
                else:
                    snippets.append(Snippet(brk.location, brk.context_first, brk.context, brk))
    for entry in frame.entries:
        for guard in entry.guards:
            path, _, number = guard.location.rpartition(":")
            if path == own_file and number.isdigit() and int(number) in by_number:
                by_number[int(number)].guards += 1
    return lines, snippets


def line_anchor(frame: FrameRecord, location: str) -> str:
    """`#L12` when `location` is a line of the frame's listed source, else ""."""
    path, _, number = location.rpartition(":")
    if path == frame.file and number.isdigit() and frame.source_first <= int(number) < \
            frame.source_first + len(frame.source):
        return f"#L{number}"
    return ""


def short_path(location: str, cwd: str) -> str:
    """`location` as the pages show it: relative to `cwd` when under it, from the package
    when installed (`transformers/models/...`), else whole."""
    if cwd and location.startswith(cwd.rstrip("/") + "/"):
        return location[len(cwd.rstrip("/")) + 1:]
    _, installed, rest = location.rpartition("-packages/")
    return rest if installed else location


@dataclass
class BreakSite:
    """One line that broke graphs, and how often."""

    location: str
    function: str
    line_text: str
    count: int = 0
    reasons: list = field(default_factory=list)   # distinct reasons, first seen first
    frames: list = field(default_factory=list)    # ids of the frames (or roots) that broke there


def break_map(frames: list, forest: Forest | None = None) -> list:
    """The lines that broke in `frames`, most breaks first; with `forest`, each site names
    the roots (models, functions) that broke there instead of the frames."""
    sites: dict = {}
    for f in frames:
        owner = forest.root_of(f).id if forest is not None else f.id
        for entry in f.entries:
            brk = entry.brk
            if brk is None:
                continue
            site = sites.get(brk.location)
            if site is None:
                site = sites[brk.location] = BreakSite(brk.location, brk.function, brk.line_text)
            site.count += 1
            if brk.reason not in site.reasons:
                site.reasons.append(brk.reason)
            if owner not in site.frames:
                site.frames.append(owner)
    return sorted(sites.values(), key=lambda s: -s.count)


def break_functions(sites: list) -> list:
    """(function, breaks) over the sites, most first: which functions (modules' forwards) broke."""
    counts = collections.Counter()
    for site in sites:
        counts[site.function or "<module level>"] += site.count
    return counts.most_common()
