"""CI differential fuzzing with graph breaks: 2,000 generated programs (seeds 0..1999, the
`ci` profile, 4 top-level statements each, 2 calls) and 500 full-size ones (below), each run
eagerly and compiled by bytegraph and compared in full by `runner.run_source`. Every verdict
must be `ok`: no silent mismatch, no program raising only compiled (or only eager, or
differently), no hang.

The `ci` profile is every generator feature except `profiles.CI_EXCLUDED`, the features with
open bugs (listed and explained in `profiles.py`, each with a strict-xfail program in
`test_known_failures.py`; none is excluded today, so it is the full profile). `make fuzz`
runs the full profile.

A failing chunk names its seeds; reproduce, shrink and save one with
`python -m tests.fuzzing --profile ci --size 4 --calls 2 --seed SEED -n 1 -j 1 -v`.
Time: about 16 programs per CPU-second, so ~2 min of one core for the 2,000 programs (3.1 min
of CPU measured on a machine loaded ~6x); 20 chunks, spread over the xdist workers.

`test_fuzzed_programs_full_size` is the 500-program full-size slice: seeds 0..499 exactly as
`make fuzz` writes them (8 statements, 3 calls), `ci` profile. About 3 programs per CPU-second:
500 took 162 s of CPU (297 s wall with 2 processes on a machine loaded ~6x; ~80 s wall on 2 idle
cores); 10 chunks. Reproduce a seed with
`python -m tests.fuzzing --profile ci --seed SEED -n 1 -j 1 -v`.
"""
import pytest

from .generator import generate
from .profiles import PROFILES
from .runner import run_source

N_PROGRAMS = 2000
CHUNK = 100
SIZE, CALLS = 4, 2


@pytest.mark.parametrize("first", range(0, N_PROGRAMS, CHUNK))
def test_fuzzed_programs_with_breaks(first):
    bad, breaks, graphs = [], 0, 0
    for seed in range(first, first + CHUNK):
        v = run_source(generate(seed, PROFILES["ci"], SIZE), seed, CALLS)
        breaks, graphs = breaks + v.stats.breaks, graphs + v.stats.graphs
        if v.kind != "ok":
            bad.append(f"seed {seed}: {v.kind} at call #{v.call + 1}: {v.detail[:300]}")
    assert not bad, "\n".join(bad)
    # the fuzzer must keep breaking graphs: about 5 breaks per program today
    assert breaks >= 2 * CHUNK and graphs >= 2 * CHUNK, (breaks, graphs)


# The full-size slice: 500 programs as `make fuzz` writes them (8 top-level statements, 3
# calls), every feature of the full profile but the CI exclusions (`profiles.CI_EXCLUDED`).
N_FULL, FULL_CHUNK = 500, 50


@pytest.mark.parametrize("first", range(0, N_FULL, FULL_CHUNK))
def test_fuzzed_programs_full_size(first):
    bad, breaks = [], 0
    for seed in range(first, first + FULL_CHUNK):
        v = run_source(generate(seed, PROFILES["ci"]), seed)
        breaks += v.stats.breaks
        if v.kind != "ok":
            bad.append(f"seed {seed}: {v.kind} at call #{v.call + 1}: {v.detail[:300]}")
    assert not bad, "\n".join(bad)
    assert breaks >= 2 * FULL_CHUNK, breaks
