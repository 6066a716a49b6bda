"""Mutation-tracking cost: capture time of a function doing N Python side effects.

`python -m bench.mutation_cost` traces, for N = 500, 1000, 2000, a generated function
that performs N writes to pre-existing state (list items, dict items, object attributes,
a third each) and one tensor op, and prints the best-of-k capture time per N and the
ratio time(2000)/time(1000). Recording a write is O(1) in the side-effect log, so the
ratio stays near 2 (the target is <= 2.3). The same programs are registered as the
`mutate_*` workloads of `bench.workloads` for `bench.run`.
"""
from __future__ import annotations

import argparse
import time

import torch

SIZES = (500, 1000, 2000)
_SLOTS = 50


class MutState:
    """Plain Python state the generated function writes to."""

    def __init__(self):
        for j in range(_SLOTS):
            setattr(self, f"a{j}", 0)
        self.count = 0


def make_mutating_fn(n: int):
    """`f(xs, d, o, x)` doing `n` writes to pre-existing state, then `x + 1`."""
    lines = ["def mutate_state(xs, d, o, x):"]
    for i in range(n):
        j = i % _SLOTS
        lines.append((f"    xs[{j}] = {i}", f"    d['k{j}'] = {i}", f"    o.a{j} = {i}")[i % 3])
    lines += ["    o.count += 1", "    return x + 1"]
    namespace = {"__name__": __name__}
    exec(compile("\n".join(lines), f"<mutate_{n}>", "exec"), namespace)
    return namespace["mutate_state"]


def make_args():
    return ([0] * _SLOTS, {f"k{j}": 0 for j in range(_SLOTS)}, MutState(), torch.ones(4))


def capture_seconds(n: int, repeats: int = 5) -> float:
    """Best-of-`repeats` time of the first (capturing) call of a fresh compile."""
    import bytegraph

    fn = make_mutating_fn(n)
    best = float("inf")
    for _ in range(repeats):
        bytegraph.reset()
        compiled = bytegraph.compile(fn)
        args = make_args()
        start = time.perf_counter()
        compiled(*args)
        best = min(best, time.perf_counter() - start)
    return best


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(prog="python -m bench.mutation_cost", description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    capture_seconds(SIZES[0], 1)  # warm up
    times = {n: capture_seconds(n, args.repeats) for n in SIZES}
    for n, t in times.items():
        print(f"N={n:5d}: capture {t * 1e3:8.2f} ms  ({t / n * 1e6:.2f} us per write)")
    ratio = times[2000] / times[1000]
    print(f"time(2000)/time(1000) = {ratio:.2f} (target <= 2.3)")
    return {"times": times, "ratio": ratio}


if __name__ == "__main__":
    main()
