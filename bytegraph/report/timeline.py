"""The compile timeline's geometry: one row per frame (or per entry), one bar per compile
phase of each entry (trace, backend, guards) at the time it ran, on a shared time axis.

Only numbers and labels; `templates/macros.html` draws them as inline SVG (escaped like
every other string of the report).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

PHASES = (("trace", "tracing and codegen"), ("backend", "backend"), ("guards", "guards"))
LABEL_WIDTH = 260
ROW_HEIGHT = 18
AXIS_HEIGHT = 22


@dataclass
class Bar:
    x: float
    width: float
    phase: str
    title: str


@dataclass
class Row:
    y: float
    label: str
    href: str
    bars: list = field(default_factory=list)


@dataclass
class Timeline:
    width: int
    height: int
    label_width: int
    rows: list
    ticks: list          # (x, text)
    phases: tuple = PHASES


def timeline(rows: list, width: int = 960) -> Timeline:
    """`rows`: (label, href, [(entry title, EntryRecord), ...]) each; the axis spans every entry."""
    starts = [e.started for _, _, entries in rows for _, e in entries]
    ends = [e.started + e.seconds for _, _, entries in rows for _, e in entries]
    t0 = min(starts, default=0.0)
    span = max(max(ends, default=0.0) - t0, 1e-6)
    plot = width - LABEL_WIDTH - 10
    scale = plot / span
    out = []
    for i, (label, href, entries) in enumerate(rows):
        row = Row(AXIS_HEIGHT + i * ROW_HEIGHT, label if len(label) <= 42 else label[:41] + "…", href)
        for title, entry in entries:
            x = LABEL_WIDTH + (entry.started - t0) * scale
            for phase, words in PHASES:
                seconds = getattr(entry, "guards_seconds" if phase == "guards" else phase)
                w = seconds * scale
                row.bars.append(Bar(round(x, 2), round(max(w, 1.0), 2), phase,
                                    f"{title}: {words} {format_seconds(seconds)}"))
                x += w
        out.append(row)
    return Timeline(width, AXIS_HEIGHT + len(rows) * ROW_HEIGHT + 4, LABEL_WIDTH, out, _ticks(t0, span, scale))


def _ticks(t0: float, span: float, scale: float) -> list:
    """(x, label) of 2 to 7 round times on the axis."""
    step = 10 ** math.floor(math.log10(span / 5))
    for factor in (1, 2, 5, 10):
        if span / (step * factor) <= 6:
            step *= factor
            break
    ticks, k = [], math.ceil(t0 / step)
    while k * step <= t0 + span * 1.0001:
        ticks.append((round(LABEL_WIDTH + (k * step - t0) * scale, 2), format_seconds(k * step)))
        k += 1
    return ticks


def format_seconds(seconds: float) -> str:
    """`1.23 s`, `45.6 ms`, `789 µs`."""
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.1f} ms"
    return f"{seconds * 1e6:.0f} µs"
