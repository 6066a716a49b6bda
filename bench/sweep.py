"""`make sweep`: every architecture transformers can build, and every torch.nn module, under
bytegraph and `torch.compile(backend="eager")`, side by side in one run (issue 35).

The catalogues are derived, not listed: bench.sweep_catalogue (every model type of the installed
transformers' config classes with an AutoModel class, shrunk to tiny sizes by bench.sweep_shrink)
and bench.sweep_nn (every public module class of torch.nn, built from its signature). Each entry
is built with random weights under a fixed seed (nothing is downloaded: `HF_HUB_OFFLINE=1`), run
in eval mode under no_grad eagerly, then under bytegraph (`bytegraph.explain`: graphs, breaks,
frames run eagerly, outputs compared bit for bit with eager's by bench.hf_models), under
`torch._dynamo.explain` (graphs, breaks; a frame that broke before its first graph and ran eagerly
whole, which explain reports as 0 graphs and 0 breaks, counts torch.compile's own break counters)
and once more under `torch.compile(backend="eager")` for
its outputs: both systems are held to one standard, one graph counts only with outputs equal to
eager's. A row says where an entry stops (build, eager, a timeout, a crashed worker) with the
reason, so nothing is hidden.

Entries run in worker processes (`--jobs`, one by default), each entry under a time limit
(`--timeout`): a worker that hangs is killed and its entry reported "timeout", one that dies is
"crash", and a fresh worker takes the next entry. Workers are also replaced every
`TASKS_PER_WORKER` entries, so state one model leaves behind cannot reach many others.

The markdown goes to stdout and to `--out` (docs/sweep.md): a section per transformers version
and one for torch.nn, each with a header naming the date and the Python, torch and transformers
versions, a summary (one graph bytegraph vs torch.compile, correct counts, every entry where
torch.compile keeps one graph and bytegraph does not, with bytegraph's reason), the table, and
bytegraph's break reasons ranked by how many entries hit each. Sections of other versions already
in the file are kept. `--rows FILE` also saves each row as it finishes, and `--render FILE`
writes the sections from such a file without running anything, so a run cut short still gives
its table (marked as covering only part of the catalogue).
"""
from __future__ import annotations

import argparse
import collections
import datetime
import json
import multiprocessing
import multiprocessing.connection
import os
import platform
import re
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

DEFAULT_OUT = Path(__file__).resolve().parent.parent / "docs" / "sweep.md"
TASKS_PER_WORKER = 20
NN = "torch.nn"


@dataclass
class Row:
    """One entry's outcome. `stage` is where it stopped: "ok" when both systems ran."""

    name: str
    cls: str = ""
    stage: str = "ok"  # ok | build | eager | timeout | crash
    error: str = ""
    seconds: float = 0.0
    bg_correct: bool | None = None
    bg_graphs: int | None = None
    bg_breaks: int | None = None
    bg_eager_frames: int | None = None
    bg_reasons: list = field(default_factory=list)
    bg_error: str = ""
    bg_same_as_tc: bool | None = None
    tc_graphs: int | None = None
    tc_breaks: int | None = None
    tc_reasons: list = field(default_factory=list)
    tc_error: str = ""
    tc_correct: bool | None = None

    @property
    def bg_one_graph(self) -> bool:
        return (self.bg_graphs is not None and self.bg_graphs <= 1 and self.bg_breaks == 0
                and self.bg_eager_frames == 0 and bool(self.bg_correct))

    @property
    def tc_one_graph(self) -> bool:
        """The same standard as bytegraph's: outputs equal to eager's (rows of runs made before
        torch.compile's outputs were compared have `tc_correct` None and are judged on counts)."""
        return (self.tc_graphs is not None and self.tc_graphs <= 1 and self.tc_breaks == 0
                and self.tc_correct is not False)


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"[:200]


def fold(reason: str) -> str:
    """One text per kind of break across entries: file paths, line numbers and resume-function
    names (which differ per model) are folded away."""
    reason = re.sub(r"\S*/site-packages/", "", reason)
    reason = re.sub(r"__bg_resume_(\w+?)_at_line_\d+", r"<resume of \1>", reason)
    reason = re.sub(r"(\.py):\d+", r"\1", reason)
    return re.sub(r"<eval_with_key>\.\d+, line \d+", "<eval_with_key>", reason)


def _top(reasons: list) -> str:
    return collections.Counter(map(fold, reasons)).most_common(1)[0][0] if reasons else ""


# --- one entry, inside a worker ---------------------------------------------------------------

def _build(catalogue: str, name: str, cls: str):
    """(module, args, kwargs) of one entry."""
    if catalogue == NN:
        from bench import sweep_nn

        module, args = sweep_nn.build(name)
        return module, args, {}
    from bench import sweep_catalogue

    model, inputs = sweep_catalogue.build(name, cls)
    return model, (), inputs


def measure(catalogue: str, name: str, cls: str) -> Row:
    """Build, run eagerly, under bytegraph and under torch.compile: the entry's row."""
    import torch

    from bench.hf_models import reference_explain, reference_outputs, run_bytegraph, same_outputs, short_reason

    row = Row(name, cls)
    start = time.perf_counter()
    try:
        module, args, kwargs = _build(catalogue, name, cls)
    except Exception as exc:  # an entry that cannot be built is a row with the reason
        row.stage, row.error = "build", _error(exc)
        return row
    try:
        with torch.no_grad():
            expected = module(*args, **kwargs)
            again = module(*args, **kwargs)
    except Exception as exc:  # likewise for one that cannot run eagerly
        row.stage, row.error = "eager", _error(exc)
        return row
    if not same_outputs(expected, again):  # eager differs from itself: no output can be judged
        row.stage, row.error = "eager", "not deterministic: two eager runs differ"
        return row
    try:
        with torch.no_grad():
            out, explained, _ = run_bytegraph(module, kwargs, args)
        row.bg_graphs, row.bg_breaks = explained.graph_count, explained.graph_break_count
        row.bg_eager_frames = len(explained.eager_frames)
        row.bg_reasons = [short_reason(f"[{b.category}] {b.reason}") for b in explained.break_reasons] + [
            short_reason(f"[eager frame] {f}") for f in explained.eager_frames]
        row.bg_correct = same_outputs(expected, out)
        bg_out = out
    except Exception as exc:  # bytegraph raising where eager did not: reported in the row
        row.bg_error = _error(exc)
    try:
        from torch._dynamo.utils import counters

        counters.clear()
        with torch.no_grad():
            ref = reference_explain(module, *args, **kwargs)
        row.tc_graphs = ref.graph_count
        # explain lists no break for a frame that broke before its first graph and then ran
        # eagerly whole (0 graphs, 0 breaks): torch.compile's own counters still have the break
        reasons = [str(b.reason) for b in ref.break_reasons] or [
            reason for reason, n in counters["graph_break"].items() for _ in range(n)]
        row.tc_breaks = len(reasons)
        row.tc_reasons = [short_reason(r) for r in reasons]
        with torch.no_grad():
            tc_out = reference_outputs(module, *args, **kwargs)
        row.tc_correct = same_outputs(expected, tc_out)
        if row.bg_correct is False:
            row.bg_same_as_tc = same_outputs(tc_out, bg_out)
    except Exception as exc:  # likewise for the reference
        row.tc_error = _error(exc)
    row.seconds = time.perf_counter() - start
    return row


def _worker(conn) -> None:
    """Serve (catalogue, name, cls) requests on `conn` with Row dicts, until None."""
    import warnings

    import torch

    torch.set_num_threads(1)
    warnings.filterwarnings("ignore")
    import transformers

    transformers.logging.set_verbosity_error()
    while True:
        task = conn.recv()
        if task is None:
            return
        conn.send(asdict(measure(*task)))


# --- the driver -------------------------------------------------------------------------------

class _Worker:
    def __init__(self, ctx):
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child,), daemon=True)
        self.proc.start()
        child.close()
        self.done = 0
        self.task = None
        self.started = 0.0

    def submit(self, task) -> None:
        self.task, self.started = task, time.monotonic()
        self.conn.send(task)

    def stop(self, kill: bool = False) -> None:
        if kill:
            self.proc.kill()
        else:
            try:
                self.conn.send(None)
            except (BrokenPipeError, OSError):
                pass
        self.proc.join(5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


def run(tasks: list[tuple[str, str, str]], jobs: int, timeout: float, report) -> list[Row]:
    """Every task through `jobs` workers under the time limit; `report(row)` as each finishes."""
    ctx = multiprocessing.get_context("spawn")
    pending = collections.deque(tasks)
    workers: list[_Worker] = []
    rows: dict[tuple, Row] = {}
    while pending or any(w.task for w in workers):
        while pending and len([w for w in workers if w.task]) < jobs:
            idle = next((w for w in workers if not w.task), None)
            if idle is None:
                idle = _Worker(ctx)
                workers.append(idle)
            idle.submit(pending.popleft())
        busy = [w for w in workers if w.task]
        now = time.monotonic()
        wait = max(0.0, min(w.started + timeout - now for w in busy))
        ready = multiprocessing.connection.wait([w.conn for w in busy], timeout=wait)
        for w in busy:
            row = None
            if w.conn in ready:
                try:
                    row = Row(**w.conn.recv())
                except (EOFError, OSError):
                    row = Row(w.task[1], w.task[2], stage="crash",
                              error=f"worker died (exit code {w.proc.exitcode})")
            elif time.monotonic() - w.started >= timeout:
                row = Row(w.task[1], w.task[2], stage="timeout", error=f"over {timeout:.0f} s")
            if row is None:
                continue
            if row.stage in ("ok", "build", "eager"):
                row.seconds = row.seconds or time.monotonic() - w.started
            rows[w.task] = row
            report(row)
            w.task = None
            w.done += 1
            if row.stage in ("timeout", "crash") or w.done >= TASKS_PER_WORKER:
                w.stop(kill=row.stage in ("timeout", "crash"))
                workers.remove(w)
    for w in workers:
        w.stop()
    return [rows[t] for t in tasks]


# --- markdown ---------------------------------------------------------------------------------

def _cell(text: str, width: int = 90) -> str:
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= width else text[:width - 1] + "…"


def _count(value) -> str:
    return "-" if value is None else str(value)


def row_markdown(r: Row) -> str:
    if r.stage != "ok":
        return f"| {r.name} | {r.cls} | {r.stage}: {_cell(r.error)} | | | | | | | | |"
    if r.bg_error:
        bg = ("error", "-", "-", _cell(r.bg_error, 70))
    else:
        bg = (_verdict(r.bg_correct, r.bg_same_as_tc), _count(r.bg_graphs), _count(r.bg_breaks),
              _cell(_top(r.bg_reasons), 70))
    tc = ("-", "-", "-", _cell(r.tc_error, 60)) if r.tc_error else (
        _verdict(r.tc_correct), _count(r.tc_graphs), _count(r.tc_breaks), _cell(_top(r.tc_reasons), 60))
    return f"| {r.name} | {r.cls} | ok | {' | '.join(bg)} | {' | '.join(tc)} |"


def _verdict(correct: bool | None, same_as_tc: bool | None = None) -> str:
    """"yes", "**NO**", "as tc" (differs from eager, equal to torch.compile's outputs bit for bit)
    or "-" (not compared)."""
    if correct is None:
        return "-"
    return "yes" if correct else "as tc" if same_as_tc else "**NO**"


TABLE_HEAD = ("| entry | class | eager | bg correct | bg graphs | bg breaks | bg top reason | tc correct | tc graphs "
              "| tc breaks | tc top reason |\n|---|---|---|---|---|---|---|---|---|---|---|")


def versions() -> str:
    import torch
    import transformers

    return (f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC, Python {platform.python_version()}, "
            f"torch {torch.__version__}, transformers {transformers.__version__}")


def section(title: str, rows: list[Row], note: str = "", reasons: int = 25, measured: str = "") -> str:
    ran = [r for r in rows if r.stage == "ok"]
    stages = collections.Counter(r.stage for r in rows)
    bg_one, tc_one = sum(r.bg_one_graph for r in ran), sum(r.tc_one_graph for r in ran)
    lines = [f"## {title}", "", f"Measured {measured or versions()}; {len(rows)} entries.", ""]
    if note:
        lines += [note, ""]
    lines.append(
        f"**Summary:** of {len(ran)} entries that build and run eagerly, one graph: bytegraph **{bg_one}**, "
        f"torch.compile **{tc_one}**; correct bytegraph {sum(r.bg_correct is True for r in ran)}/{len(ran)}"
        f" (differing from eager {sum(r.bg_correct is False for r in ran)}, of which equal to torch.compile's "
        f"outputs {sum(bool(r.bg_same_as_tc) for r in ran)}; errors {sum(bool(r.bg_error) for r in ran)}), "
        f"torch.compile {sum(r.tc_correct is True for r in ran)}/{len(ran)} (differing "
        f"{sum(r.tc_correct is False for r in ran)}, errors {sum(bool(r.tc_error) for r in ran)}); breaks: bytegraph "
        f"{sum(r.bg_breaks or 0 for r in ran)}, torch.compile {sum(r.tc_breaks or 0 for r in ran)}. Not run: "
        + (", ".join(f"{stages[s]} at {s}" for s in ("build", "eager", "timeout", "crash") if stages[s]) or "none")
        + ".")
    worse = [r for r in ran if r.tc_one_graph and not r.bg_one_graph]
    better = [r for r in ran if r.bg_one_graph and not r.tc_one_graph]
    lines += ["", f"In torch.compile's favour ({len(worse)}: it keeps one graph, bytegraph does not):", ""]
    lines += [f"- {r.name}: " + _cell(r.bg_error
                                      or (_top(r.bg_reasons) if r.bg_correct else "outputs differ from eager")
                                      or f"{r.bg_graphs} graphs", 160) for r in worse] or ["- none"]
    lines += ["", f"In bytegraph's favour ({len(better)}): " + (", ".join(r.name for r in better) or "none"), ""]
    ranked = collections.Counter(reason for r in ran for reason in set(map(fold, r.bg_reasons)))
    hits = collections.Counter(fold(reason) for r in ran for reason in r.bg_reasons)
    lines += [f"bytegraph break reasons, by entries hitting each (breaks in all, in brackets), top {reasons}:", ""]
    lines += [f"{i + 1}. {n} ({hits[reason]}) {_cell(reason, 160)}" for i, (reason, n) in
              enumerate(ranked.most_common(reasons))] or ["none"]
    ranked_tc = collections.Counter(reason for r in ran for reason in set(r.tc_reasons))
    lines += ["", "torch.compile break reasons, by entries hitting each, top 10:", ""]
    lines += [f"{i + 1}. {n} {_cell(reason, 160)}"
              for i, (reason, n) in enumerate(ranked_tc.most_common(10))] or ["none"]
    lines += ["", TABLE_HEAD] + [row_markdown(r) for r in rows]
    return "\n".join(lines) + "\n"


DOC_HEAD = """# The sweep: every transformers architecture and torch.nn module (`make sweep`)

Generated by `python -m bench.sweep` (bench/sweep.py says how). Each section is one run; "bg" is
bytegraph, "tc" is `torch.compile(backend="eager")` through `torch._dynamo.explain`. One graph
means at most one graph (none for a module with no tensor work, such as dropout in eval mode), no
break and (bytegraph) no frame run eagerly, with outputs equal to eager's bit for bit, for both
systems ("as tc": bytegraph's outputs differ from eager's and equal torch.compile's, as where a
library takes another path under `torch.compiler.is_compiling()`; sections measured before
torch.compile's outputs were compared judge it on counts alone).
"""


def merge(existing: str, new_sections: dict[str, str]) -> str:
    """The document with `new_sections` ({title: text}) replacing the sections of the same
    title in `existing` and the others kept: transformers versions newest first, then torch.nn."""
    kept = {}
    for chunk in re.split(r"(?m)^(?=## )", existing):
        if chunk.startswith("## "):
            kept[chunk.splitlines()[0][3:].strip()] = chunk.rstrip() + "\n"
    kept.update(new_sections)
    def order(title: str):
        version = re.findall(r"\d+", title) if title.startswith("transformers ") else []
        return (not version, [-int(v) for v in version], title)

    return DOC_HEAD + "\n" + "\n".join(kept[t] for t in sorted(kept, key=order))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", metavar="NAME", help="only these entries (model types or nn classes)")
    parser.add_argument("--limit", type=int, help="at most N entries of each catalogue")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per entry (default 120)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"markdown file (default {DEFAULT_OUT})")
    parser.add_argument("--catalogue", choices=["transformers", "nn", "all"], default="all")
    parser.add_argument("--rows", type=Path, help="also append each row to this JSON-lines file as it finishes")
    parser.add_argument("--render", type=Path, metavar="ROWS",
                        help="run nothing: write the sections of a --rows file (a run cut short included)")
    args = parser.parse_args(argv)
    if args.render:
        return _render(args.render, args.out)

    import transformers

    from bench import sweep_catalogue, sweep_nn

    catalogues = {}
    if args.catalogue in ("transformers", "all"):
        catalogues[f"transformers {transformers.__version__}"] = (
            "transformers", list(sweep_catalogue.architectures().items()))
    if args.catalogue in ("nn", "all"):
        catalogues[NN] = (NN, [(n, f"nn.{n}") for n in sweep_nn.modules()])
    sections = {}
    for title, (kind, entries) in catalogues.items():
        if args.only:
            entries = [e for e in entries if e[0] in args.only]
        if args.limit:
            entries = entries[:args.limit]
        print(f"# {title}: {len(entries)} entries", flush=True)

        measured = versions()

        def report(r: Row, title=title, measured=measured) -> None:
            print(row_markdown(r), f"({r.seconds:.0f} s)", flush=True)
            if args.rows:
                with args.rows.open("a") as f:
                    f.write(json.dumps({"title": title, "measured": measured, "row": asdict(r)}) + "\n")

        rows = run([(kind, name, cls) for name, cls in entries], args.jobs, args.timeout, report)
        sections[title] = section(title, rows, _note(kind, len(entries)), measured=measured)
        print("\n" + sections[title], flush=True)
    _write(args.out, sections)
    return 0


def _note(kind: str, count: int) -> str:
    if kind != "transformers":
        return ""
    from bench import sweep_catalogue

    skipped = sweep_catalogue.config_only()
    total = len(sweep_catalogue.architectures())
    cut = f"This run covers {count} of the {total} architectures (cut short or filtered). " if count < total else ""
    return (cut + f"{len(skipped)} config types have no class in any AutoModel mapping (sub-configs of other "
            f"models) and are not entries: " + ", ".join(skipped))


def _render(path: Path, out: Path | None) -> int:
    """The sections of a --rows file, as `main` would have written them."""
    rows: dict[str, list[Row]] = {}
    measured = {}
    for line in path.read_text().splitlines():
        item = json.loads(line)
        rows.setdefault(item["title"], []).append(Row(**item["row"]))
        measured[item["title"]] = item["measured"]
    sections = {t: section(t, r, _note("transformers" if t != NN else NN, len(r)), measured=measured[t])
                for t, r in rows.items()}
    for text in sections.values():
        print(text)
    _write(out, sections)
    return 0


def _write(out: Path | None, sections: dict[str, str]) -> None:
    if out:
        existing = out.read_text() if out.exists() else ""
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(merge(existing, sections))
        print(f"written to {out}")


if __name__ == "__main__":
    sys.exit(main())
