"""How long building the guards of a warm model capture takes (issue 39, item 4).

`python -m bench.guard_build [NAME ...] [--captures N] [--new-text] [--profile NAME]`: for every
model of `bench.hf_models.MODELS` (or the ones named), compile it with
`bytegraph.compile(model, backend="eager")`, call it once (the cold capture, not reported), then
capture it again N times (default 5) after `bytegraph.reset()` and `gc.collect()`, as
`bench.run` does, and print per model the median over those warm captures of the guard build
(the entries' `guard_seconds`, summed over the entries one call makes) and of the whole capture
(`capture_seconds`), with the totals of the medians. The entries are those the runtime tells its
`LISTENERS` of.

`reset()` keeps the guard code cache and the rendered texts (Note [Guard code cache] in
guards/compile.py), so a warm capture neither renders nor compiles its guard text ("text
cached"); `--new-text` empties both before each capture, so each one renders and compiles its
text as a first capture of a program does ("text new"). `--profile NAME` instead runs one warm
capture of NAME under cProfile and prints where `CompiledGuards` spends its time.
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import pstats
import statistics

import torch

import bytegraph
from bench.hf_models import MODELS
from bench.run import warm_up
from bytegraph.guards import compile as guard_compile
from bytegraph.runtime.root_frames import LISTENERS


def _capture(name: str, new_text: bool) -> tuple[float, float]:
    """One capture of model `name` after a reset: (guard build, whole capture) in seconds,
    summed over the entries it installs."""
    torch.manual_seed(0)
    model, inputs = MODELS[name].build()
    entries: list = []

    def record(compiled, entry, graph_break) -> None:
        entries.append(entry)

    bytegraph.reset()
    if new_text:
        guard_compile._CODE_CACHE.clear()
        guard_compile._RENDERED.clear()
    gc.collect()
    compiled = bytegraph.compile(model, backend="eager")
    LISTENERS.append(record)
    try:
        with torch.no_grad():
            compiled(**inputs)
    finally:
        LISTENERS.remove(record)
    return sum(e.guard_seconds for e in entries), sum(e.capture_seconds for e in entries)


def measure(name: str, captures: int, new_text: bool) -> tuple[float, float]:
    """The medians over `captures` warm captures of model `name` (after one cold one), in ms."""
    _capture(name, new_text)
    samples = [_capture(name, new_text) for _ in range(captures)]
    return (statistics.median(s[0] for s in samples) * 1e3, statistics.median(s[1] for s in samples) * 1e3)


def profile(name: str, top: int) -> None:
    """One warm capture of `name` under cProfile, restricted to the guard build."""
    _capture(name, False)
    profiler = cProfile.Profile()
    original = guard_compile.CompiledGuards.__init__

    def profiled(self, *args, **kwargs):
        profiler.runcall(original, self, *args, **kwargs)

    guard_compile.CompiledGuards.__init__ = profiled
    try:
        _capture(name, False)
    finally:
        guard_compile.CompiledGuards.__init__ = original
    pstats.Stats(profiler).sort_stats("tottime").print_stats(top)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.guard_build", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help="models of bench.hf_models.MODELS (default: all)")
    parser.add_argument("--captures", type=int, default=5, help="warm captures per model (default 5)")
    parser.add_argument("--new-text", action="store_true",
                        help="empty the guard code cache and rendered texts before each capture")
    parser.add_argument("--profile", metavar="NAME", help="profile the guard build of one warm capture of NAME")
    args = parser.parse_args(argv)
    warm_up()
    if args.profile:
        profile(args.profile, 30)
        return
    names = args.names or list(MODELS)
    total_guard = total_capture = 0.0
    print(f"{'model':<22} {'guards ms':>10} {'capture ms':>11} {'share':>6}")
    for name in names:
        guard_ms, capture_ms = measure(name, args.captures, args.new_text)
        total_guard += guard_ms
        total_capture += capture_ms
        print(f"{name:<22} {guard_ms:>10.2f} {capture_ms:>11.1f} {guard_ms / capture_ms:>6.1%}", flush=True)
    print(f"{'total':<22} {total_guard:>10.2f} {total_capture:>11.1f} {total_guard / total_capture:>6.1%}")


if __name__ == "__main__":
    main()
