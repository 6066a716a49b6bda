"""Each golden case's text (graphs, guards, break reasons, residual bytecode) must equal
`expected/<case>.txt`; the case itself also checks compiled against eager.

`BYTEGRAPH_REGOLD=1` rewrites the expected files instead of comparing (read the diff
before committing it); without it a missing file fails.
"""
from __future__ import annotations

import difflib
import os

import pytest

from . import (cases_autocast, cases_breaks, cases_features, cases_graphs, cases_guards, cases_objects,  # noqa: F401
               cases_side_effects)
from .harness import CASES, render

EXPECTED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "expected")
REGOLD = os.environ.get("BYTEGRAPH_REGOLD", "") not in ("", "0")


def expected_path(case_id: str) -> str:
    return os.path.join(EXPECTED, f"{case_id}.txt")


def _param(case_id: str):
    reason = CASES[case_id].xfail
    if not reason:
        return case_id
    # The differential check inside render() fails (AssertionError); a golden mismatch or a
    # missing file would be a real failure once the bug is fixed.
    return pytest.param(case_id, marks=pytest.mark.xfail(strict=True, raises=AssertionError, reason=reason))


@pytest.mark.parametrize("case_id", [_param(c) for c in sorted(CASES)])
def test_golden(case_id):
    actual = render(CASES[case_id])
    path = expected_path(case_id)
    if REGOLD:
        with open(path, "w") as f:
            f.write(actual)
        return
    if not os.path.exists(path):
        pytest.fail(f"no golden file {os.path.relpath(path)}; run with BYTEGRAPH_REGOLD=1 to create it",
                    pytrace=False)
    with open(path) as f:
        expected = f.read()
    if actual != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                            f"expected/{case_id}.txt", "actual"))
        pytest.fail(f"golden text of {case_id} changed (BYTEGRAPH_REGOLD=1 to accept):\n{diff}",
                    pytrace=False)


def test_no_stale_golden_files():
    """Every file under expected/ belongs to a case (a renamed case leaves none behind)."""
    stale = sorted(f for f in os.listdir(EXPECTED) if f.endswith(".txt") and f[:-4] not in CASES)
    if REGOLD:
        for name in stale:
            os.remove(os.path.join(EXPECTED, name))
        return
    assert not stale, f"golden files without a case: {stale}"
