"""Warm starts with the persistent capture cache (Note [Capture cache]): `python -m bench.warm_start
[--backends eager,inductor] [--repeat N] [NAME ...]` (default gpt2, bert and distilbert of
`bench.hf_models.MODELS`; llama's entry is not written: a guard names a class made in a function).

For each model and backend, two fresh processes share a new temporary cache directory (and, for
`inductor`, a new torch inductor cache directory, so the first process compiles everything). Each
process first compiles one trivial function (paying bytegraph's and the backend's start-up costs),
then times eager calls of the model (the median of three) and the compiled model's first call, and
checks that the outputs agree; all under `torch.no_grad()` (inference: a graph with no backward, which torch's AOT
autograd cache keeps at once, where a training graph's entry waits for its backward). Printed:
capture = first compiled call - eager call, for the cold (first) and warm (second) process and
their ratio (target <= 0.1 with `eager`); for `inductor`, the warm first call
over the cold one (target <= 0.1). With `eager`, the pair of median ratio of `--repeat` pairs (5) is
shown; `inductor` runs one pair. torch.compile's rows beside them (`--no-reference` leaves them out)
are the same two processes compiling with it: it keeps nothing of a trace across processes, only
inductor's FX graph and AOT autograd caches. On a shared machine: rough figures.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time

DEFAULT_MODELS = ("gpt2", "bert", "distilbert")


def _trivial(x):
    return x * 2 + 1


def _compiler(system: str):
    """`compile(fn, backend=...)` of bytegraph or, as the reference, torch.compile."""
    import torch

    import bytegraph

    return bytegraph.compile if system == "bytegraph" else torch.compile


def child(name: str, backend: str, system: str = "bytegraph") -> dict:
    import torch

    import bytegraph
    from bench.hf_models import MODELS

    compile_ = _compiler(system)

    torch.manual_seed(0)
    torch.set_grad_enabled(False)  # inference: a graph AOT autograd caches at once (no backward to wait for)
    model, inputs = MODELS[name].build()
    compile_(_trivial, backend=backend)(torch.randn(4))
    eager_calls = []
    for _ in range(3):  # the median of three: the model's own first-call costs are not capture
        started = time.perf_counter()
        expected = model(**inputs)
        eager_calls.append(time.perf_counter() - started)
    eager = sorted(eager_calls)[1]
    compiled = compile_(model, backend=backend)
    started = time.perf_counter()
    got = compiled(**inputs)
    first = time.perf_counter() - started
    same = all(torch.allclose(a, b, atol=1e-5, rtol=1e-4) for a, b in zip(_tensors(expected), _tensors(got)))
    return {"eager": eager, "first": first, "same": same, "cache": dict(bytegraph.counters["capture_cache"]),
            "graphs": bytegraph.counters["stats"]["unique_graphs"]}


def _tensors(output) -> list:
    import torch

    values = output.values() if hasattr(output, "values") else output
    return [v for v in values if isinstance(v, torch.Tensor)]


def _run(name: str, backend: str, system: str, env: dict) -> dict:
    out = subprocess.run([sys.executable, "-m", "bench.warm_start", "--child", name, backend, system], env=env,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def measure(name: str, backend: str, system: str = "bytegraph") -> tuple[dict, dict]:
    with tempfile.TemporaryDirectory() as cache, tempfile.TemporaryDirectory() as inductor:
        env = dict(os.environ, BYTEGRAPH_CACHE_DIR=cache, TORCHINDUCTOR_CACHE_DIR=inductor)
        return _run(name, backend, system, env), _run(name, backend, system, env)


def _median_pair(name: str, backend: str, repeat: int, system: str = "bytegraph") -> tuple[dict, dict]:
    """The (cold, warm) pair of median ratio among `repeat` pairs of fresh processes."""
    pairs = [measure(name, backend, system) for _ in range(repeat)]
    pairs.sort(key=lambda pair: _ratio(backend, *pair))
    return pairs[len(pairs) // 2]


def _ratio(backend: str, cold: dict, warm: dict) -> float:
    if backend == "inductor":
        return warm["first"] / cold["first"]
    return (warm["first"] - warm["eager"]) / (cold["first"] - cold["eager"])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*")
    parser.add_argument("--backends", default="eager,inductor")
    parser.add_argument("--repeat", type=int, default=5, help="pairs of processes per model (eager backend)")
    parser.add_argument("--no-reference", action="store_true", help="leave out torch.compile's rows")
    parser.add_argument("--child", nargs=3, metavar=("NAME", "BACKEND", "SYSTEM"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return
    systems = ("bytegraph",) if args.no_reference else ("bytegraph", "torch.compile")
    print(f"{'model':<10} {'system':<13} {'backend':<9} {'eager c/w ms':>13} {'cold 1st':>9} {'warm 1st':>9} "
          f"{'cold cap':>9} {'warm cap':>9} {'ratio':>6}  warm cache counters")
    for name in args.names or DEFAULT_MODELS:
        for backend, system in itertools.product(args.backends.split(","), systems):
            cold, warm = _median_pair(name, backend, 1 if backend == "inductor" else args.repeat, system)
            ratio = _ratio(backend, cold, warm)
            ok = "" if cold["same"] and warm["same"] else "  OUTPUTS DIFFER"
            eager = f"{cold['eager'] * 1e3:.1f}/{warm['eager'] * 1e3:.1f}"
            cache = warm["cache"] if system == "bytegraph" else ""
            print(f"{name:<10} {system:<13} {backend:<9} {eager:>13} {cold['first'] * 1e3:9.1f} "
                  f"{warm['first'] * 1e3:9.1f} {(cold['first'] - cold['eager']) * 1e3:9.1f} "
                  f"{(warm['first'] - warm['eager']) * 1e3:9.1f} {ratio:6.3f}  {cache}{ok}", flush=True)


if __name__ == "__main__":
    main()
