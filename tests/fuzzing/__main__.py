"""`python -m tests.fuzzing`: run fuzz programs, shrink and save the failures, print a summary.

    python -m tests.fuzzing -n 500 --seed 0            # seeds 0..499, full profile, 2 processes
    python -m tests.fuzzing -n 2000 --profile ci       # what the CI test runs
    python -m tests.fuzzing --show 123                 # print program 123
    python -m tests.fuzzing --seed 123 -n 1 -v         # run one seed, print its verdict
    python -m tests.fuzzing --replay tests/fuzzing/failures/123.py
"""
from __future__ import annotations

import argparse
import collections
import multiprocessing
import sys
import time

from .generator import FEATURES, generate
from .profiles import PROFILES
from .runner import CLASSES, FAILURES, run_source
from .shrink import save, seed_of_file, shrink


def _one(job):
    seed, profile, exclude, size, calls, do_shrink = job
    src = generate(seed, PROFILES[profile] - exclude, size)
    verdict = run_source(src, seed, calls)
    saved = None
    if verdict.kind in FAILURES and verdict.kind != "invalid" and do_shrink:
        label = profile + "".join(f" -{f}" for f in sorted(exclude))
        saved = save(shrink(src, seed, verdict, calls), seed, verdict, label)
    return seed, verdict, saved


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.fuzzing", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("-n", type=int, default=200, help="number of programs")
    p.add_argument("--seed", type=int, default=0, help="first seed")
    p.add_argument("--profile", choices=sorted(PROFILES), default="full")
    p.add_argument("--exclude", default="", help="comma-separated features to leave out of the profile")
    p.add_argument("--size", type=int, default=8, help="top-level statements per program")
    p.add_argument("--calls", type=int, default=3, help="calls per program")
    p.add_argument("-j", "--jobs", type=int, default=2, help="worker processes")
    p.add_argument("--no-shrink", action="store_true", help="do not shrink/save failures")
    p.add_argument("--show", type=int, metavar="SEED", help="print the program of SEED and exit")
    p.add_argument("--replay", metavar="FILE", help="run a saved program and print its verdict")
    p.add_argument("-v", "--verbose", action="store_true", help="print every non-ok verdict")
    a = p.parse_args(argv)

    if a.show is not None:
        print(generate(a.show, PROFILES[a.profile], a.size), end="")
        return 0
    if a.replay:
        src = open(a.replay).read()
        v = run_source(src, seed_of_file(src), a.calls)
        print(f"{v.kind} at call #{v.call + 1}: {v.detail}")
        return 0 if v.kind == "ok" else 1

    exclude = frozenset(f for f in a.exclude.split(",") if f)
    unknown = exclude - FEATURES.keys()
    if unknown:
        p.error(f"unknown features {sorted(unknown)}; known: {', '.join(FEATURES)}")
    jobs = [(s, a.profile, exclude, a.size, a.calls, not a.no_shrink) for s in range(a.seed, a.seed + a.n)]
    counts = collections.Counter()
    graphs = breaks = internal = 0
    failures = []
    t0 = time.perf_counter()
    with multiprocessing.get_context("fork").Pool(a.jobs) as pool:
        for seed, v, saved in pool.imap_unordered(_one, jobs, chunksize=4):
            counts[v.kind] += 1
            graphs, breaks, internal = (graphs + v.stats.graphs, breaks + v.stats.breaks,
                                        internal + v.stats.internal_errors)
            if a.verbose and v.stats.internal_errors:
                print(f"seed {seed}: bytegraph internal error(s), run eagerly: {v.stats.reasons}", flush=True)
            if v.kind != "ok":
                failures.append((seed, v, saved))
                if a.verbose:
                    print(f"seed {seed}: {v.kind} at call #{v.call + 1}: {v.detail[:300]}"
                          + (f" -> {saved}" if saved else ""), flush=True)
    dt = time.perf_counter() - t0
    label = a.profile + "".join(f" -{f}" for f in sorted(exclude))
    print(f"\nseeds {a.seed}..{a.seed + a.n - 1}, profile {label}, size {a.size}, {a.calls} calls: "
          f"{a.n} programs in {dt:.1f} s "
          f"({a.n / dt:.1f} programs/s, {a.jobs} processes); {graphs} graphs, {breaks} graph breaks, "
          f"{internal} bytegraph internal errors (run eagerly)")
    for kind in CLASSES:
        print(f"  {kind:16} {counts[kind]}")
    by_signature = collections.defaultdict(list)
    for seed, v, saved in sorted(failures, key=lambda f: f[0]):
        by_signature[v.signature].append(saved or str(seed))
    for sig, where in sorted(by_signature.items()):
        print(f"  {sig}: {len(where)} ({', '.join(where[:5])}{', ...' if len(where) > 5 else ''})")
    return 1 if any(counts[k] for k in FAILURES) else 0


if __name__ == "__main__":
    sys.exit(main())
