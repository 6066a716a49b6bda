"""`make bench`: bytegraph against `torch.compile(backend="eager")`, side by side, in one run.

For every workload in `bench.workloads` and each system:
- capture time: wall time of the first call of a freshly compiled function, after resetting that
  system; the median of several fresh captures, the two systems interleaved. Both systems are
  warmed up first on an unrelated function, so one-time import and initialisation is excluded.
- per-call overhead: steady-state time per call of the compiled function minus that of eager.
  Eager and both compiled functions are timed in rounds of many calls each (gc off inside a
  round); within a round they take turns in chunks of about 2 ms (a single call for a model;
  the order rotated each chunk), so drift on this noisy machine, which moves one 50 ms window
  against the next by up to ±25%, hits all of them alike. Each variant's time per call is the
  median over its rounds, and its overhead is the median over rounds of (its time in the round
  - eager's time in the same round): paired differences, so a slow stretch of the machine
  cancels out instead of landing on one side. Where a workload's per-call target is 1
  (bytegraph's call no slower than torch.compile's: the models), the verdict pairs the two
  systems directly: the median over rounds of (bytegraph's µs per call - torch.compile's in
  the same round) must be ≤ 0 (the table's "bg-tc µs").

Each workload has its own targets for the two ratios (bench.workloads: 0.25 and 0.5; the
transformers models of bench.model_workloads: 0.1 and 1, with 9 fresh captures instead of 5
and 21 timing rounds instead of 7, as their ratios sit near the targets on a noisy machine);
the table has one section per pair of targets. `--models` runs only the models, `--no-models`
leaves them out.

The first output of every capture is compared with eager's; a mismatch counts as a failure.
A system that fails on a workload gets the error in its row and the run goes on. Results go to
stdout as a table and to `bench/results/latest.json`. `--profile WORKLOAD` instead runs one
bytegraph capture of WORKLOAD under cProfile and prints where the time goes.
"""

import argparse
import cProfile
import gc
import json
import os
import platform
import pstats
import statistics
import sys
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import torch

import bytegraph
from bench.case import CAPTURE_RATIO_TARGET, OVERHEAD_RATIO_TARGET, Case, Workload
from bench.workloads import WORKLOADS, model_workloads  # the models' module through the registry: registered last

ROUND_SECONDS = 0.05
CHUNK_SECONDS = 0.002  # within a round the variants take turns this long each (one call at least)
SAME_SPEED = 1.0  # a per-call target meaning "no slower than torch.compile": judged by pairing rounds
DEFAULT_CAPTURES = 5
RESULTS_PATH = Path(__file__).resolve().parent / "results" / "latest.json"


@dataclass(frozen=True)
class System:
    """`graphs()`: how many graphs the system compiled so far (its own counters)."""

    name: str
    compile: Callable[[Callable[..., Any]], Callable[..., Any]]
    reset: Callable[[], None]
    graphs: Callable[[], int]


def _torch_reset() -> None:
    import torch._dynamo

    torch._dynamo.reset()


def _torch_graphs() -> int:
    from torch._dynamo.utils import counters

    return counters["stats"]["unique_graphs"]


SYSTEMS = (
    System("bytegraph", lambda fn: bytegraph.compile(fn, backend="eager"), lambda: bytegraph.reset(),
           lambda: bytegraph.counters["stats"]["unique_graphs"]),
    System("torch.compile", lambda fn: torch.compile(fn, backend="eager"), _torch_reset, _torch_graphs),
)


@dataclass
class Measurement:
    """One system on one workload; once `error` is set its numbers read as missing (None)."""

    capture_ms_samples: list[float] = field(default_factory=list)
    per_call_us_rounds: list[float] = field(default_factory=list)
    error: str | None = None
    traceback: str | None = None
    compiled: Callable[..., Any] | None = None
    graphs: int | None = None  # graphs the last capture compiled (0: it ran eagerly)
    case: Case | None = None  # what `compiled` was captured on, reused for per-call timing

    @property
    def capture_ms(self) -> float | None:
        ok = self.capture_ms_samples and self.error is None
        return statistics.median(self.capture_ms_samples) if ok else None

    @property
    def per_call_us(self) -> float | None:
        ok = self.per_call_us_rounds and self.error is None
        return statistics.median(self.per_call_us_rounds) if ok else None

    def fail(self, exc: BaseException) -> None:
        self.error = f"{type(exc).__name__}: {exc}".splitlines()[0][:200]
        self.traceback = traceback.format_exc()
        self.compiled = self.case = None


def _warmup_fn(x):
    return (x * 2).sum() - 1


def warm_up() -> None:
    """Pay each system's one-time costs (imports, lazy initialisation) before any timing."""
    x = torch.ones(4)
    for system in SYSTEMS:
        try:
            system.reset()
            compiled = system.compile(_warmup_fn)
            compiled(x)
            compiled(x)
        except Exception as exc:  # reported again, per workload, where it matters
            print(f"warning: {system.name} warm-up failed: {type(exc).__name__}: {exc}", file=sys.stderr)


def _capture_once(system: System, work: Workload, expected: Any, m: Measurement) -> None:
    case = work.build()
    gc.collect()
    system.reset()
    compiled = system.compile(case.fn)
    graphs = system.graphs()
    with torch.set_grad_enabled(case.grad):
        start = time.perf_counter()
        out = compiled(*case.args, **case.kwargs)
        m.capture_ms_samples.append((time.perf_counter() - start) * 1e3)
    m.graphs = system.graphs() - graphs
    try:
        torch.testing.assert_close(case.comparable(out), expected)
    except AssertionError as exc:
        raise AssertionError(f"output differs from eager: {exc}") from None
    m.compiled, m.case = compiled, case


def measure_captures(work: Workload, captures: int) -> dict[str, Measurement]:
    case = work.build()
    expected = case.comparable(case())
    results = {system.name: Measurement() for system in SYSTEMS}
    for _ in range(captures):
        for system in SYSTEMS:
            m = results[system.name]
            if m.error is None:
                try:
                    _capture_once(system, work, expected, m)
                except Exception as exc:
                    m.fail(exc)
    return results


def _time_calls(fn: Callable[..., Any], case: Case, calls: int) -> float:
    """Seconds per call over `calls` calls of `fn` on `case` (gc as the caller has it)."""
    args, kwargs = case.args, case.kwargs
    with torch.set_grad_enabled(case.grad):
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args, **kwargs)
        return (time.perf_counter() - start) / calls


def _time_round(variants: dict[str, tuple[Callable[..., Any], Case]], names: list[str], calls: int,
                chunk: int, results: dict[str, Measurement]) -> dict[str, float]:
    """One timing round: µs per call of each variant in `names` over `calls` calls, made in
    chunks of `chunk` calls that the variants take in turns (the order rotated each chunk), with
    gc off. A variant that raises is failed in `results` and dropped from `names`."""
    spent = dict.fromkeys(names, 0.0)
    gc.collect()
    gc.disable()
    try:
        for i, done in enumerate(range(0, calls, chunk)):
            n = min(chunk, calls - done)
            for name in names[i % len(names):] + names[: i % len(names)]:
                try:
                    spent[name] += _time_calls(*variants[name], n) * n
                except Exception as exc:
                    results[name].fail(exc)
                    names.remove(name)
                    del spent[name]
    finally:
        gc.enable()
    return {name: seconds / calls * 1e6 for name, seconds in spent.items()}


def measure_per_call(
    eager: Case, results: dict[str, Measurement], rounds: int, max_calls: int
) -> list[float]:
    """Time eager and every compiled function that captured; return eager's rounds (µs)."""
    variants: dict[str, tuple[Callable[..., Any], Case]] = {"eager": (eager.fn, eager)}
    for name, m in results.items():
        if m.compiled is not None:
            try:
                m.case(m.compiled)  # one warm call past the capture
                variants[name] = (m.compiled, m.case)
            except Exception as exc:
                m.fail(exc)
    slowest = max(_time_calls(fn, case, 3) for fn, case in variants.values())
    calls = max(10, min(max_calls, int(ROUND_SECONDS / max(slowest, 1e-9))))
    chunk = max(1, min(calls, int(CHUNK_SECONDS / max(slowest, 1e-9))))
    names = list(variants)
    rounds_us: dict[str, list[float]] = {name: [] for name in names}
    for _ in range(rounds):
        for name, us in _time_round(variants, names, calls, chunk, results).items():
            rounds_us[name].append(us)
    for name, m in results.items():
        if m.error is None:
            m.per_call_us_rounds = rounds_us[name]
    return rounds_us["eager"]


def _paired_overhead(rounds_us: list[float] | None, eager_rounds: list[float]) -> float | None:
    """Median over rounds of (variant's µs per call - eager's µs per call in the same round)."""
    if not rounds_us:
        return None
    return statistics.median(ours - eager for ours, eager in zip(rounds_us, eager_rounds))


def _paired_difference(ours: list[float] | None, theirs: list[float] | None) -> float | None:
    """Median over rounds of (our µs per call - theirs in the same round). For the verdict
    "our call is no slower than theirs" this is the direct estimate: the difference of the two
    overheads' medians adds the noise of two medians, and on this VM a model's rounds vary
    by more than the two systems differ (hf_resnet, docs/performance.md "Session 15")."""
    if not ours or not theirs:
        return None
    return statistics.median(a - b for a, b in zip(ours, theirs))


def _ratio(ours: float | None, theirs: float | None) -> float | None:
    if ours is None or theirs is None or ours <= 0 or theirs <= 0:
        return None
    return ours / theirs


def _verdict(ours: float | None, theirs: float | None, target: float) -> str:
    """PASS/FAIL against `target`; a non-positive number compares directly (ours ≤ theirs)."""
    if ours is None or theirs is None:
        return "FAIL"
    ratio = _ratio(ours, theirs)
    ok = ours <= theirs if ratio is None else ratio <= target
    return "PASS" if ok else "FAIL"


def run_workload(work: Workload, captures: int | None, rounds: int, max_calls: int) -> dict[str, Any]:
    """`captures`: fresh captures per system; None takes the workload's own count, else 5.
    `rounds`: timing rounds, at least the workload's own."""
    captures = captures or work.captures or DEFAULT_CAPTURES
    rounds = max(rounds, work.rounds or 0)
    results = measure_captures(work, captures)
    timed = dict(results)
    if work.timed_with:
        timed[_companion(work.timed_with)] = companion = Measurement()
        other = WORKLOADS[work.timed_with]
        try:
            eager = other.build()
            _capture_once(SYSTEMS[0], other, eager.comparable(eager()), companion)
        except Exception as exc:
            companion.fail(exc)
    eager_rounds = measure_per_call(work.build(), timed, rounds, max_calls)
    eager_us = statistics.median(eager_rounds)
    row: dict[str, Any] = {"name": work.name, "description": work.description, "eager_us": eager_us,
                           "eager_us_rounds": eager_rounds, "systems": {}, "captures": captures,
                           "targets": {"capture_ms": work.capture_target, "overhead_us": work.overhead_target}}
    for name, m in results.items():
        row["systems"][name] = {
            "capture_ms": m.capture_ms,
            "capture_ms_samples": m.capture_ms_samples,
            "per_call_us": m.per_call_us,
            "per_call_us_rounds": m.per_call_us_rounds,
            "overhead_us": _paired_overhead(m.per_call_us_rounds, eager_rounds),
            "graphs": m.graphs,
            "error": m.error,
            "traceback": m.traceback,
        }
    if work.timed_with:
        m = timed[_companion(work.timed_with)]
        row["companion"] = {"name": work.timed_with, "error": m.error,
                            "overhead_us": _paired_overhead(m.per_call_us_rounds, eager_rounds)}
    judge(row)
    return row


def judge(row: dict[str, Any]) -> None:
    """Set `row`'s ratios, its paired per-call difference and its two verdicts."""
    ours, theirs = row["systems"]["bytegraph"], row["systems"]["torch.compile"]
    difference = _paired_difference(ours["per_call_us_rounds"], theirs["per_call_us_rounds"])
    row["per_call_difference_us"] = difference
    for metric, target in row["targets"].items():
        row[f"{metric}_ratio"] = _ratio(ours[metric], theirs[metric])
        if metric == "overhead_us" and target == SAME_SPEED:
            row[f"{metric}_verdict"] = "PASS" if difference is not None and difference <= 0 else "FAIL"
        else:
            row[f"{metric}_verdict"] = _verdict(ours[metric], theirs[metric], target)


def _companion(name: str) -> str:
    return f"bytegraph on {name}"


def _headers(capture_target: float, overhead_target: float) -> tuple[str, ...]:
    return ("workload", "eager µs",
            "bg capt ms", "tc capt ms", "ratio", f"≤{capture_target}",
            "bg ovh µs", "tc ovh µs", "ratio", "bg-tc µs", f"≤{overhead_target}", "graphs bg/tc")


def _cell(value: float | None, fmt: str) -> str:
    return "ERROR" if value is None else format(value, fmt)


def _count_cell(count: int | None) -> str:
    return "-" if count is None else str(count)


def _difference_cell(difference: float | None) -> str:
    return "n/a" if difference is None else f"{difference:+.1f}"


def _ratio_cell(ratio: float | None) -> str:
    return "n/a" if ratio is None else f"{ratio:.3f}"


def format_table(rows: list[dict[str, Any]]) -> str:
    """One table per pair of targets (the micro workloads, then the models), then the notes."""
    groups: dict[tuple[float, float], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["targets"]["capture_ms"], row["targets"]["overhead_us"]), []).append(row)
    out: list[str] = []
    errors: list[str] = []
    for (capture_target, overhead_target), group in groups.items():
        if out:
            out.append("")
        out += _format_group(group, _headers(capture_target, overhead_target), errors)
        per_call = ("per call no slower than tc's: bg-tc, the median over rounds of bg's µs per call "
                    "minus tc's in the same round, ≤ 0" if overhead_target == SAME_SPEED else
                    f"per-call overhead ratio ≤ {overhead_target} (an overhead ≤ 0 passes when bg's ≤ tc's)")
        out.append(f"bg = bytegraph, tc = torch.compile(backend='eager'); targets: capture ratio bg/tc "
                   f"≤ {capture_target}, {per_call}")
    out += _ratio_checks(rows)
    if errors:
        out += ["", "errors (full tracebacks in the JSON):", *errors]
    return "\n".join(out)


def _format_group(rows: list[dict[str, Any]], headers: tuple[str, ...], errors: list[str]) -> list[str]:
    table = [list(headers)]
    for row in rows:
        bg, tc = row["systems"]["bytegraph"], row["systems"]["torch.compile"]
        table.append([
            row["name"], f"{row['eager_us']:.1f}",
            _cell(bg["capture_ms"], ".2f"), _cell(tc["capture_ms"], ".2f"),
            _ratio_cell(row["capture_ms_ratio"]), row["capture_ms_verdict"],
            _cell(bg["overhead_us"], ".1f"), _cell(tc["overhead_us"], ".1f"),
            _ratio_cell(row["overhead_us_ratio"]), _difference_cell(row.get("per_call_difference_us")),
            row["overhead_us_verdict"],
            f"{_count_cell(bg.get('graphs'))}/{_count_cell(tc.get('graphs'))}",
        ])
        errors += [f"  {row['name']} / {name}: {s['error']}" for name, s in row["systems"].items() if s["error"]]
    widths = [max(len(cells[i]) for cells in table) for i in range(len(headers))]
    return ["  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(cells, widths)))
            for cells in table]


def _ratio_checks(rows: list[dict[str, Any]]) -> list[str]:
    """bytegraph-only targets relating two workloads' numbers (e.g. break cost, dynamic shapes):
    (metric, numerator workload, denominator workload, target, label)."""
    from bench import break_workloads, dynamic_workloads

    by_name = {row["name"]: row["systems"]["bytegraph"] for row in rows}
    companions = {(row["name"], row["companion"]["name"]): row["companion"] for row in rows if "companion" in row}
    lines = []
    for metric, numerator, denominator, target, label in break_workloads.RATIO_CHECKS + dynamic_workloads.RATIO_CHECKS:
        a, b = (by_name.get(numerator) or {}).get(metric), (by_name.get(denominator) or {}).get(metric)
        paired = companions.get((numerator, denominator)) if metric == "overhead_us" else None
        if paired is not None and paired["overhead_us"] is not None:
            b = paired["overhead_us"]  # timed in the numerator's own rounds
            label = f"{label} (timed in the same rounds)"
        if a is None or b is None:
            continue
        unit = "ms" if metric == "capture_ms" else "µs"
        if b <= 0:
            lines.append(f"{label}: {a:.2f} / {b:.2f} {unit}: not measurable (the denominator is within noise)")
            continue
        ratio = a / b
        lines.append(f"{label}: {a:.2f} / {b:.2f} {unit} = {ratio:.2f} (target ≤ {target}) "
                     f"{'PASS' if ratio <= target else 'FAIL'}")
    return ["", *lines] if lines else []


def write_json(rows: list[dict[str, Any]], settings: dict[str, Any]) -> None:
    RESULTS_PATH.parent.mkdir(parents=True, exist_ok=True)
    report = {
        "python": platform.python_version(), "torch": torch.__version__, "machine": platform.platform(),
        "settings": settings,
        "targets": {"capture_ratio": CAPTURE_RATIO_TARGET, "overhead_ratio": OVERHEAD_RATIO_TARGET,
                    "models": {"capture_ratio": model_workloads.CAPTURE_RATIO_TARGET,
                               "overhead_ratio": model_workloads.OVERHEAD_RATIO_TARGET}},
        "workloads": rows,
    }
    RESULTS_PATH.write_text(json.dumps(report, indent=2) + "\n")


def profile_capture(work: Workload, top: int = 30, warm: bool = False) -> None:
    """Profile one fresh bytegraph capture of `work` (first call only), sorted by cumulative time;
    with `warm`, after one unprofiled capture of it (what the bench's median sees: the fake-tensor
    memo and torch's caches already hold this workload's ops)."""
    warm_up()
    if warm:
        bytegraph.reset()
        work.build()(bytegraph.compile(work.build().fn, backend="eager"))
    case = work.build()
    gc.collect()  # as before each timed capture: a full collection inside would be charged to what allocated
    bytegraph.reset()
    compiled = bytegraph.compile(case.fn, backend="eager")
    profiler = cProfile.Profile()
    profiler.runcall(case, compiled)
    print(f"bytegraph {'warm ' if warm else ''}capture of {work.name!r} under cProfile:")
    pstats.Stats(profiler).sort_stats("cumulative").print_stats(top)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.run", description=__doc__.splitlines()[0])
    parser.add_argument("workloads", nargs="*", metavar="WORKLOAD",
                        help=f"workloads to run (default: all of {', '.join(WORKLOADS)})")
    parser.add_argument("--captures", type=int, help=f"fresh captures per system (median; default: the "
                        f"workload's own, else {DEFAULT_CAPTURES})")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved timing rounds (median kept)")
    parser.add_argument("--calls", type=int, default=2000, help="most calls per round")
    parser.add_argument("--no-models", action="store_true", help="leave out the transformers models")
    parser.add_argument("--models", action="store_true", help="only the transformers models")
    parser.add_argument("--profile", metavar="WORKLOAD", choices=list(WORKLOADS),
                        help="profile one bytegraph capture of WORKLOAD and exit")
    parser.add_argument("--warm", action="store_true", help="with --profile: profile a second capture")
    parser.add_argument("--top", type=int, default=30, help="with --profile: how many functions to list")
    args = parser.parse_args(argv)
    if args.profile:
        profile_capture(WORKLOADS[args.profile], args.top, args.warm)
        return
    unknown = [name for name in args.workloads if name not in WORKLOADS]
    if unknown:
        parser.error(f"unknown workload(s) {', '.join(unknown)}; known: {', '.join(WORKLOADS)}")
    selected = [WORKLOADS[name] for name in args.workloads or WORKLOADS]
    if args.models or args.no_models:
        selected = [w for w in selected if w.name.startswith(model_workloads.PREFIX) == args.models]
    if model_workloads.SKIPPED and not args.no_models:
        print(model_workloads.SKIPPED, file=sys.stderr)
    warm_up()
    rows = []
    for work in selected:
        print(f"running {work.name} ...", file=sys.stderr, flush=True)
        rows.append(run_workload(work, args.captures, args.rounds, args.calls))
    print(format_table(rows))
    if model_workloads.SKIPPED and not args.no_models:
        print(f"\n{model_workloads.SKIPPED}")
    write_json(rows, {"captures": args.captures or "per workload", "rounds": args.rounds, "max_calls": args.calls,
                      "round_seconds": ROUND_SECONDS, "chunk_seconds": CHUNK_SECONDS})
    print(f"\nresults written to {os.path.relpath(RESULTS_PATH)}")


if __name__ == "__main__":
    main()
