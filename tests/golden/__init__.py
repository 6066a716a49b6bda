"""Golden files: the graphs, guards, break reasons and residual bytecode of small cases,
pinned as text under `expected/` (see `harness.py`, `test_golden.py`)."""
