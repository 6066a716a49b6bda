"""The differential fuzzer (`python -m tests.fuzzing`, `make fuzz`): generated programs with graph
breaks, run eagerly and compiled. Every program is captured afresh: the persistent capture cache is
off here (as in the test suite, tests/conftest.py)."""
import os

os.environ["BYTEGRAPH_CACHE_DIR"] = ""
