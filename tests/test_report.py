"""The compile report (`bytegraph.report`, `BYTEGRAPH_REPORT`, `python -m bytegraph.report`).

Differential where it counts: the report's numbers (the records and what index.html shows)
equal `bytegraph.explain`'s and `bytegraph.counters`' for the same run; the phases it splits
capture time into add up to the runtime's; a page rendered again from the saved records is
the page written while the program ran. The browser's view is tests/test_report_browser.py.
"""
from __future__ import annotations

import collections
import os
import pathlib
import subprocess
import sys
import time

import pytest
import torch

import bytegraph
from bytegraph.report import Session, records, source, views
from bytegraph.report.render import load_report, page_name
from bytegraph.runtime.root_frames import LISTENERS, RECOMPILE_LISTENERS
from helpers import line_of
from support.html_elements import elements, find

ROOT = pathlib.Path(__file__).resolve().parent.parent
HERE = os.path.abspath(__file__)


# =========================================================================== user code

def _cannot_resume(x):
    y = x + 1
    g = lambda: y  # noqa: E731, F821  (y is deleted below on purpose; g runs before that)
    print("break")  # REPORT-EAGER
    z = g()
    del y  # a frame that deletes a variable its closures capture is not resumed: it runs eagerly
    return z


def program(x, scales):
    for s in scales:
        x = x * s + 1
        print("step")  # REPORT-LOOP-BREAK
    return _cannot_resume(x).sum()


def scaled(x, scale):
    y = x.sin() * scale  # REPORT-GUARDS
    print("between graphs")  # REPORT-BREAK
    return y.cos() + 1


class TinyNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.fc(x).relu()
        print("tokens", x.shape[0])  # REPORT-MODULE-BREAK
        return h.sum()


def T(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


def tree_entries(frames, root):
    return [e for f in views.Forest(frames).tree(root) for e in f.entries]


# =========================================================================== the numbers

def test_report_numbers_equal_explain_and_counters(tmp_path, capsys):
    """One run of a program with a break in a loop (its resume function recompiles), a
    graph-broken callee that runs eagerly and a resumed tail: the records and the pages say
    what explain and counters say."""
    bytegraph.counters.clear()
    with bytegraph.report(tmp_path):
        explained = bytegraph.explain(program)(T(3), [1.0, 2.0, 3.0])
    run, frames = load_report(tmp_path)
    assert run.finished and not run.error
    forest = views.Forest(frames)
    (root,) = forest.roots
    entries = tree_entries(frames, root)
    whole = views.totals(forest.tree(root))
    assert explained.graph_count == whole.graphs == 4
    assert explained.graph_break_count == whole.breaks == 5
    assert len(explained.eager_frames) == whole.eager == 1
    assert sum(len(ops) for ops in explained.ops_per_graph) == whole.ops
    assert sorted(e.graph.ops for e in entries if e.graph) == sorted(explained.ops_per_graph)
    assert sorted(e.graph.code for e in entries if e.graph) == sorted(gm.code.strip() for gm in explained.graphs)
    assert sorted(e.brk.text for e in entries if e.brk) == sorted(str(b) for b in explained.break_reasons)
    assert sorted(g.text + (f"  # {g.location}" if g.location else "") for e in entries for g in e.guards) == \
        sorted(explained.guards)
    assert whole.recompiles == 2  # the resume function in the loop, for the 2nd and 3rd step

    stats, broke = bytegraph.counters["stats"], bytegraph.counters["graph_break"]
    assert whole.graphs == stats["unique_graphs"] and whole.ops == stats["calls_captured"]
    assert collections.Counter(e.brk.reason for e in entries if e.brk) == broke

    # what index.html shows
    index = tmp_path / "index.html"
    ((row, text),) = [(a, t) for a, t in find(index, "tr", **{"data-frame": str(root.id)}) if "data-graphs" in a]
    assert (int(row["data-graphs"]), int(row["data-breaks"]), int(row["data-ops"])) == \
        (explained.graph_count, explained.graph_break_count, whole.ops)
    shown = {a["data-total"]: int(text) for a, text in find(index, "b") if "data-total" in a}
    assert shown == {"roots": 1, "frames": 4, "graphs": stats["unique_graphs"], "breaks": sum(broke.values()),
                     "ops": stats["calls_captured"], "eager": 1, "recompiles": 2}
    assert "eager frame" in text  # red: a frame of its tree runs eagerly
    capsys.readouterr()


def test_capture_phases_add_up_and_the_backend_is_timed(tmp_path):
    """trace + guards + backend is the entry's capture time, and a backend that takes 200 ms
    shows up as backend time (not as trace)."""
    def slow_backend(gm, example_inputs):
        time.sleep(0.2)
        return gm.forward

    seen = []
    LISTENERS.append(lambda compiled, entry, brk: seen.append(entry))
    try:
        with bytegraph.report(tmp_path) as session:
            bytegraph.compile(lambda x: x.sin() + 1, backend=slow_backend)(T(3))
    finally:
        LISTENERS.pop()
    (frame,) = session.recorder.frames.values()
    (entry,) = frame.entries
    (runtime_entry,) = seen
    assert entry.backend >= 0.2 and entry.trace < entry.backend
    assert entry.seconds == pytest.approx(runtime_entry.capture_seconds)
    assert (entry.trace, entry.backend, entry.guards_seconds) == \
        (runtime_entry.trace_seconds, runtime_entry.backend_seconds, runtime_entry.guard_seconds)
    assert entry.guards_seconds > 0


# =========================================================================== a frame's page

def test_frame_page_shows_break_line_guards_graph_and_recompile(tmp_path, capsys):
    break_line = line_of("# REPORT-BREAK", HERE)
    guard_line = line_of("# REPORT-GUARDS", HERE)
    with bytegraph.report(tmp_path) as session:
        f = bytegraph.compile(scaled)
        f(T(3), 2)
        f(T(4), 2)  # a new shape: recompiles
    root = next(fr for fr in session.recorder.frames.values() if fr.kind == "function")
    page = tmp_path / "frames" / page_name(root)
    # the source, the break's line highlighted with explain's reason and hint
    ((row, text),) = find(page, "tr", id=f"L{break_line}")
    assert row.get("class") == "brk" and "print() writes to stdout" in text and "hint: " in text
    assert 'print("between graphs")' in text
    # guards as lines pointing at the user's line
    guards = [text for a, text in find(page, "li") if "x matches Tensor(" in text]
    assert guards and all(f"test_report.py:{guard_line}" in g for g in guards)
    assert any("y = x.sin() * scale" in g for g in guards)
    links = [a["href"] for a, _ in find(page, "a", **{"class": "loc"})]
    assert f"#L{guard_line}" in links
    # each graph's code and op counts
    codes = [text for a, text in find(page, "pre", **{"class": "fx-code"})]
    assert any("def forward(self, L_x_" in c and "sin" in c for c in codes)
    ops = {text for a, text in find(page, "code") if text in ("Tensor.sin", "sin", "mul")}
    assert ops
    # the recompile: the guard that failed and the value that failed it
    ((_, failure),) = [(a, t) for a, t in find(page, "table", **{"class": "failures"})]
    assert "x matches Tensor(" in failure and "shape (4,) (expected (3,))" in failure
    assert f"test_report.py:{guard_line}" in failure
    # the resume function, linked
    children = [a["href"] for a, text in find(page, "a") if "resumed at line" in text]
    assert children and (tmp_path / "frames" / children[0]).is_file()
    capsys.readouterr()


def test_side_effects_replayed_are_listed(tmp_path):
    def mutate(x, items, box):
        items.append(x.sum())
        box.value = 3
        return x * 2

    box = type("Box", (), {})()
    with bytegraph.report(tmp_path) as session:
        bytegraph.compile(mutate)(T(2), [], box)
    (frame,) = session.recorder.frames.values()
    assert frame.entries[0].side_effects == ["contents of items", "attributes of box"]
    texts = [t for a, t in find(tmp_path / "frames" / page_name(frame), "ul", **{"class": "side-effects"})]
    assert texts and "contents of items" in texts[0] and "attributes of box" in texts[0]


def test_module_is_reported_by_its_class_and_forward(tmp_path, capsys):
    with bytegraph.report(tmp_path) as session:
        model = bytegraph.compile(TinyNet())
        model(T(2, 4))
    root = next(iter(session.recorder.frames.values()))
    assert (root.name, root.kind, root.code_name) == ("TinyNet", "module", "forward_call")
    assert (root.file, root.line) == (HERE, line_of("def forward(self, x):", HERE))
    assert root.source[0].strip() == "def forward(self, x):"
    brk = root.entries[0].brk
    assert brk.location == f"{HERE}:{line_of('# REPORT-MODULE-BREAK', HERE)}"
    assert brk.function == "TinyNet.forward"
    capsys.readouterr()


# =========================================================================== escaping and failures

def test_user_strings_are_escaped(tmp_path):
    def make():
        def f(d, x):
            return x * d["<script>alert(1)</script>"]
        return f

    with bytegraph.report(tmp_path) as session:
        bytegraph.compile(make())({"<script>alert(1)</script>": 2}, T(2))
    (frame,) = session.recorder.frames.values()
    assert frame.name == "test_user_strings_are_escaped.<locals>.make.<locals>.f"
    page = tmp_path / "frames" / page_name(frame)
    text = page.read_text()
    assert "<script>alert" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "make.&lt;locals&gt;.f" in text
    scripts = [a for t, a, _ in elements(page) if t == "script"]
    assert scripts == [{"src": "../report.js", "defer": None}]  # the user's string is text, not an element
    assert any("<script>alert(1)</script>" in t for a, t in find(page, "code"))


def test_a_with_block_that_raises_still_writes_the_report(tmp_path):
    before = (list(LISTENERS), list(RECOMPILE_LISTENERS))
    with pytest.raises(ValueError):
        with bytegraph.report(tmp_path):
            bytegraph.compile(lambda x: x + 1)(T(2))
            raise ValueError("boom <here>")
    run, frames = load_report(tmp_path)
    assert run.error == "ValueError: boom <here>" and run.finished and len(frames) == 1
    assert "ValueError: boom &lt;here&gt;" in (tmp_path / "index.html").read_text()
    assert (list(LISTENERS), list(RECOMPILE_LISTENERS)) == before  # detached


def _run(code_or_path, env_dir, *args):
    env = dict(os.environ, BYTEGRAPH_REPORT=str(env_dir), PYTHONPATH=str(ROOT))
    cmd = [sys.executable, *((code_or_path,) if str(code_or_path).endswith(".py") else ("-c", code_or_path)), *args]
    return subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


def test_env_report_of_a_program_that_raised(tmp_path):
    done = _run("import torch, bytegraph\n"
                "def step(x):\n"
                "    return x.relu() * 2\n"
                "bytegraph.compile(step)(torch.ones(3))\n"
                "raise RuntimeError('failed after compiling')\n", tmp_path)
    assert done.returncode == 1 and "RuntimeError: failed after compiling" in done.stderr
    run, frames = load_report(tmp_path)
    assert run.error == "RuntimeError: failed after compiling" and run.finished
    assert [f.name for f in frames] == ["step"] and frames[0].entries[0].graph.ops == ["Tensor.relu", "mul"]
    index = (tmp_path / "index.html").read_text()
    assert "RuntimeError: failed after compiling" in index and f"frames/{page_name(frames[0])}" in index


def test_example_writes_the_index(tmp_path):
    """`BYTEGRAPH_REPORT=out python examples/report_demo.py` (a break and a recompile)."""
    done = _run(str(ROOT / "examples" / "report_demo.py"), tmp_path / "out")
    assert done.returncode == 0, done.stderr
    out = tmp_path / "out"
    run, frames = load_report(out)
    names = [f.name for f in views.Forest(frames).roots]
    assert names == ["TinyModel", "loss_fn"]
    model = frames[0]
    assert any(e.brk is not None and "print() writes to stdout" in e.brk.reason for e in model.entries)
    assert model.recompiles and any("shape (2, 12) (expected (2, 8))" in f.value
                                    for r in model.recompiles for f in r.failures)
    index = (out / "index.html").read_text()
    assert "TinyModel" in index and "loss_fn" in index and "one graph" in index and "breaks" in index


# =========================================================================== rendering again

def test_report_is_written_while_the_program_runs(tmp_path):
    with Session(tmp_path, interval=None):  # no throttling: every new entry writes
        bytegraph.compile(lambda x: x.tan())(T(2))
        running = (tmp_path / "index.html").read_text()
        assert "<lambda>" not in running and "&lt;lambda&gt;" in running and "running (this page" in running
    assert "finished" in (tmp_path / "index.html").read_text()


def test_cli_renders_the_same_pages_again(tmp_path, capsys):
    with Session(tmp_path, interval=None):  # pages written while running, then again at the end
        bytegraph.explain(program)(T(3), [1.0, 2.0])
    capsys.readouterr()
    written = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*.html")}
    assert len(written) >= 4
    for path in tmp_path.rglob("*.html"):
        path.unlink()
    done = subprocess.run([sys.executable, "-m", "bytegraph.report", str(tmp_path), "--no-open"], cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str((tmp_path / "index.html").resolve())
    again = {p.relative_to(tmp_path): p.read_bytes() for p in tmp_path.rglob("*.html")}
    assert again == written


def test_cli_refuses_a_directory_without_a_report(tmp_path):
    done = subprocess.run([sys.executable, "-m", "bytegraph.report", str(tmp_path), "--no-open"], cwd=ROOT,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and "holds no bytegraph report" in done.stderr


def test_records_round_trip_through_json(tmp_path, capsys):
    with bytegraph.report(tmp_path) as session:
        bytegraph.explain(program)(T(3), [1.0, 2.0])
    capsys.readouterr()
    _, frames = load_report(tmp_path)
    assert frames == list(session.recorder.frames.values())
    assert all(isinstance(e, records.EntryRecord) for f in frames for e in f.entries)


# =========================================================================== report off

def test_no_listener_and_the_same_wrapper_when_the_report_is_off(tmp_path):
    """The report only listens while open; a compiled function's per-call path (its wrapper's
    code) is the same with the report on or off."""
    before = (list(LISTENERS), list(RECOMPILE_LISTENERS))

    def f(x):
        return x.cos() * 2

    plain = bytegraph.compile(f)
    plain(T(2))
    with bytegraph.report(tmp_path):
        assert len(LISTENERS) == len(before[0]) + 1 and len(RECOMPILE_LISTENERS) == len(before[1]) + 1
        reported = bytegraph.compile(f)
        reported(T(2))
    assert (list(LISTENERS), list(RECOMPILE_LISTENERS)) == before
    assert reported.__code__.co_code == plain.__code__.co_code
    assert reported.__code__.co_names == plain.__code__.co_names


# =========================================================================== the pieces

def test_enclosing_function_is_the_innermost_def():
    location = f"{HERE}:{line_of('# REPORT-MODULE-BREAK', HERE)}"
    assert source.enclosing_function(location) == "TinyNet.forward"
    assert source.enclosing_function(f"{HERE}:{line_of('# REPORT-EAGER', HERE)}") == "_cannot_resume"
    assert source.enclosing_function(f"{HERE}:1") == ""
    assert source.enclosing_function("<string>:3") == ""


def test_marks():
    frame = records.FrameRecord(1, "f", "function", "f", "x.py", 1)
    entry = dict(started=0.0, trace=0.1, backend=0.0, guards_seconds=0.0)
    assert views.totals([frame]).mark == "green"
    frame.entries.append(records.EntryRecord(1, "compiled", "", graph=records.GraphRecord("g", "", ["add"]), **entry))
    assert views.totals([frame]).mark == "green"
    brk = records.BreakRecord("c", "r", "x.py:2", [], "", "text", "f")
    frame.entries.append(records.EntryRecord(2, "compiled", "break", brk=brk, **entry))
    assert views.totals([frame]).mark == "amber"
    frame.entries.append(records.EntryRecord(3, "eager", "runs eagerly", **entry))
    assert (views.totals([frame]).mark, views.totals([frame]).mark_words) == ("red", "eager frame")
