"""Benchmarks and the demo: bytegraph against torch.compile on shared workloads.

`bench.case` defines a workload and the registry, `bench.workloads` fills it (its own
workloads, then those of the `*_workloads` modules), `bench.run` owns the measurement and
report (`make bench`), `bench.demo` the guided tour (`make demo`).
"""
import os

# The measurements time captures: the persistent capture cache (Note [Capture cache]) would serve
# them from disk. It is off here unless BYTEGRAPH_CACHE_DIR is set (bench/warm_start.py, which
# measures the cache, gives its processes a directory of their own).
os.environ.setdefault("BYTEGRAPH_CACHE_DIR", "")
