"""Shared pytest setup for the bytegraph differential test-suite.

Every test starts and ends with a clean bytegraph (``bytegraph.reset()``) and a
seeded torch RNG, so tests are independent of order and of xdist scheduling.
"""
from __future__ import annotations

import logging
import os
import sys

import pytest

os.environ["BYTEGRAPH_CACHE_DIR"] = ""  # the suite never reads or writes the user's capture cache
_TESTS = os.path.dirname(os.path.abspath(__file__))
_ROOT = os.path.dirname(_TESTS)
if _TESTS not in sys.path:  # `helpers` and `support` are imported as top-level modules
    sys.path.insert(0, _TESTS)
try:  # make `import bytegraph` work from any working directory
    import bytegraph  # noqa: F401
except ImportError:
    sys.path.insert(0, _ROOT)

import torch  # noqa: E402

import bytegraph  # noqa: E402


def pytest_addoption(parser):
    parser.addoption("--bytegraph-verify", action="store_true",
                     help="run with bytegraph.config.verify = True (as BYTEGRAPH_VERIFY=1 does): every top-level "
                          "compiled call is compared with an eager run on copies (tests/test_verify_suite.py)")


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: slow test (e.g. the inductor backend); still run by default")
    if config.getoption("--bytegraph-verify"):
        bytegraph.config.verify = True


def pytest_terminal_summary(terminalreporter):
    """Under verify mode, one line with what it did (`tests/test_verify_suite.py` reads it)."""
    if bytegraph.config.verify:
        counts = bytegraph.counters["verify"]
        terminalreporter.write_line(f"bytegraph verify: {counts['checked']} calls checked, "
                                    f"{counts['differences']} differences, {counts['skipped']} skipped")


@pytest.fixture(autouse=True)
def _fresh_bytegraph():
    bytegraph.reset()
    torch.manual_seed(0)
    grad_enabled = torch.is_grad_enabled()
    yield
    torch.set_grad_enabled(grad_enabled)
    bytegraph.reset()


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())

    def text(self) -> str:
        return "\n".join(self.lines)


@pytest.fixture
def recompile_log():
    """The `recompiles` log topic turned on and captured (`.text()`: every line so far)."""
    handler = _Lines()
    lg = logging.getLogger("bytegraph.recompiles")
    lg.addHandler(handler)
    bytegraph.set_logs("recompiles")
    yield handler
    lg.removeHandler(handler)
    bytegraph.set_logs()
