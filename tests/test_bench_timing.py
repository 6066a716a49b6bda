"""`make bench`'s per-call timing (bench/run.py): within a round the variants take turns in
chunks, the order rotated each chunk, every variant making the round's number of calls, and a
variant that raises is failed and dropped while the others go on."""
import gc

from bench import run
from bench.case import Case


def _variants(log, raising=()):
    def make(name):
        def fn(x):
            log.append(name)
            if name in raising and log.count(name) == 2:
                raise ValueError(f"{name} broke")
            return x

        return fn, Case(fn, (1,), grad=False)

    return {name: make(name) for name in ("eager", "bytegraph", "torch.compile")}


def test_a_round_interleaves_the_variants_in_rotated_chunks():
    log = []
    variants = _variants(log)
    names = list(variants)
    enabled = gc.isenabled()
    times = run._time_round(variants, names, calls=5, chunk=2, results={})
    assert gc.isenabled() == enabled
    assert log == (["eager"] * 2 + ["bytegraph"] * 2 + ["torch.compile"] * 2
                   + ["bytegraph"] * 2 + ["torch.compile"] * 2 + ["eager"] * 2
                   + ["torch.compile", "eager", "bytegraph"])
    assert sorted(times) == sorted(names) and all(us > 0 for us in times.values())


def test_a_variant_that_raises_is_dropped_and_the_round_goes_on():
    log = []
    variants = _variants(log, raising=("bytegraph",))
    names = list(variants)
    results = {"bytegraph": run.Measurement(), "torch.compile": run.Measurement()}
    times = run._time_round(variants, names, calls=3, chunk=1, results=results)
    assert "bytegraph broke" in results["bytegraph"].error and results["torch.compile"].error is None
    assert names == ["eager", "torch.compile"] and sorted(times) == ["eager", "torch.compile"]
    assert log.count("eager") == log.count("torch.compile") == 3 and log.count("bytegraph") == 2
