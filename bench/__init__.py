"""Benchmarks and the demo: bytegraph against torch.compile on shared workloads.

`bench.workloads` owns the workload registry, `bench.run` the measurement and report
(`make bench`), `bench.demo` the guided tour (`make demo`).
"""
