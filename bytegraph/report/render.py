"""Writing the compile report into its directory: `index.html`, one page per frame under
`frames/`, the stylesheet and the sorting script, and the records as JSON under `data/`
(what `python -m bytegraph.report DIR` reads to render the pages again).

Templates are Jinja2 with autoescaping on: every user string (names, reasons, guards,
source lines, graph code) is HTML-escaped, and no template marks anything safe. Files are
written whole and then renamed, so a browser reading while the program runs never sees
half a page. All links are relative: the directory can be zipped and opened anywhere.
"""
from __future__ import annotations

import json
import os
import pathlib
import re

import jinja2

from . import records, views
from .timeline import format_seconds, timeline

TEMPLATES = pathlib.Path(__file__).resolve().parent / "templates"
STATIC = ("style.css", "report.js")

_env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                          undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
_env.filters["seconds"] = format_seconds


def page_name(frame: records.FrameRecord) -> str:
    """The frame page's file name inside `frames/` (unique by the frame's id)."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "_", frame.name).strip("_")[:60]
    return f"{frame.id}-{slug or 'frame'}.html"


def write_report(directory, run: records.RunRecord, frames: list, dirty=None) -> pathlib.Path:
    """Write the report of `frames` into `directory`; with `dirty` (frame ids), only the
    pages of those frames and of the frames that called them (their pages count them) are
    written again, and the index. Returns the index's path."""
    directory = pathlib.Path(directory)
    (directory / "frames").mkdir(parents=True, exist_ok=True)
    (directory / "data").mkdir(exist_ok=True)
    for name in STATIC:
        _write(directory / name, (TEMPLATES / name).read_text())
    forest = views.Forest(frames)
    if dirty is None:
        pages = frames
    else:
        ids = set()
        for frame_id in dirty:
            frame = forest.by_id.get(frame_id)
            while frame is not None and frame.id not in ids:
                ids.add(frame.id)
                frame = forest.by_id.get(frame.caller)
        pages = [f for f in frames if f.id in ids]
    for frame in pages:
        _write(directory / "data" / f"frame-{frame.id}.json", json.dumps(records.dump(frame)))
        _write(directory / "frames" / page_name(frame), _frame_page(frame, forest, run))
    _write(directory / "data" / "run.json", json.dumps(records.dump(run)))
    index = directory / "index.html"
    _write(index, _index_page(run, forest))
    return index


def load_report(directory) -> tuple:
    """(RunRecord, [FrameRecord]) saved in `directory` by `write_report`."""
    data = pathlib.Path(directory) / "data"
    run = records.load_run(json.loads((data / "run.json").read_text()))
    frames = [records.load_frame(json.loads(path.read_text())) for path in data.glob("frame-*.json")]
    return run, sorted(frames, key=lambda f: f.id)


def _index_page(run, forest: views.Forest) -> str:
    rows = [(f.name, f"frames/{page_name(f)}", [(f"{f.name} entry {e.number}", e) for e in f.entries])
            for f in forest.frames]
    return _env.get_template("index.html").render(
        run=run, forest=forest, roots=[(r, views.totals(forest.tree(r))) for r in forest.roots],
        frames=[(f, views.totals([f]), forest.root_of(f)) for f in forest.frames],
        all=views.totals(forest.frames), timeline=timeline(rows), sites=views.break_map(forest.frames, forest),
        page=lambda f: f"frames/{page_name(f)}", name_of=lambda i: forest.by_id[i].name,
        href_of=lambda i: f"frames/{page_name(forest.by_id[i])}", base="", marks=views.MARKS,
        short=lambda location: views.short_path(location, run.cwd))


def _frame_page(frame, forest: views.Forest, run) -> str:
    tree = forest.tree(frame)
    same = forest.same_source(frame)
    lines, snippets = views.source_view(frame, same)
    rows = [(f"{f.name} entry {e.number}", page_name(f), [(f"{f.name} entry {e.number}", e)])
            for f in tree for e in f.entries]
    sites = views.break_map(tree)
    chain, up = [], forest.by_id.get(frame.caller)
    while up is not None:
        chain.insert(0, up)
        up = forest.by_id.get(up.caller)
    return _env.get_template("frame.html").render(
        run=run, frame=frame, own=views.totals([frame]), whole=views.totals(tree), tree=tree[1:], chain=chain,
        children=forest.children[frame.id], lines=lines, snippets=snippets, timeline=timeline(rows),
        sites=sites, functions=views.break_functions(sites), op_counts=views.op_counts,
        anchor=lambda location: views.line_anchor(frame, location), page=page_name, base="../",
        name_of=lambda i: forest.by_id[i].name, href_of=lambda i: page_name(forest.by_id[i]),
        marks=views.MARKS, short=lambda location: views.short_path(location, run.cwd))


def _write(path: pathlib.Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
