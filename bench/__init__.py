"""Benchmarks and the demo: bytegraph against torch.compile on shared workloads.

`bench.case` defines a workload and the registry, `bench.workloads` fills it (its own
workloads, then those of the `*_workloads` modules), `bench.run` owns the measurement and
report (`make bench`), `bench.demo` the guided tour (`make demo`).
"""
