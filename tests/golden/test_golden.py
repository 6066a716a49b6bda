"""Each golden case's text (graphs, guards, break reasons, residual bytecode) must equal
`expected/<case>.txt`; the case itself also checks compiled against eager.

`BYTEGRAPH_REGOLD=1` rewrites the expected files instead of comparing (read the diff
before committing it); without it a missing file fails.

Per Python version: the residual and resume bytecode (`-- residual bytecode`, `-- generated
code of ...`) is the interpreter's own, so a version whose text differs has its own file,
`expected/3.12/<case>.txt` or `expected/3.13/<case>.txt`; everything else (graphs, guards, break
reasons) must be the text of the 3.11 file on every version
(`test_graphs_and_guards_are_the_same_text_on_every_version`).
"""
from __future__ import annotations

import difflib
import os
import sys

import pytest

from . import (cases_autocast, cases_breaks, cases_features, cases_graphs, cases_guards, cases_objects,  # noqa: F401
               cases_side_effects)
from .harness import CASES, render

EXPECTED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "expected")
REGOLD = os.environ.get("BYTEGRAPH_REGOLD", "") not in ("", "0")
BASE_VERSION = (3, 11)
VERSION = sys.version_info[:2]
VERSION_DIR = os.path.join(EXPECTED, f"{VERSION[0]}.{VERSION[1]}")
_BYTECODE_SECTIONS = ("-- residual bytecode", "-- generated code of ")


def base_path(case_id: str) -> str:
    return os.path.join(EXPECTED, f"{case_id}.txt")


def expected_path(case_id: str) -> str:
    """This version's file if it has one, else the 3.11 file."""
    own = os.path.join(VERSION_DIR, f"{case_id}.txt")
    return own if VERSION != BASE_VERSION and os.path.exists(own) else base_path(case_id)


def without_bytecode(text: str) -> str:
    """`text` without its bytecode sections (the version-specific part)."""
    kept, skipping = [], False
    for line in text.splitlines(True):
        if line.startswith(("-- ", "== ")):
            skipping = line.startswith(_BYTECODE_SECTIONS)
        if not skipping:
            kept.append(line)
    return "".join(kept)


def _regold(case_id: str, actual: str) -> None:
    """Write the 3.11 file on 3.11; elsewhere this version's file, only where it differs."""
    if VERSION == BASE_VERSION:
        with open(base_path(case_id), "w") as f:
            f.write(actual)
        return
    own = os.path.join(VERSION_DIR, f"{case_id}.txt")
    with open(base_path(case_id)) as f:
        same = f.read() == actual
    if same:
        if os.path.exists(own):
            os.remove(own)
        return
    os.makedirs(VERSION_DIR, exist_ok=True)
    with open(own, "w") as f:
        f.write(actual)


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
        _regold(case_id, actual)
        return
    if not os.path.exists(path):
        pytest.fail(f"no golden file {os.path.relpath(path)}; run with BYTEGRAPH_REGOLD=1 to create it",
                    pytrace=False)
    with open(path) as f:
        expected = f.read()
    if actual != expected:
        diff = "".join(difflib.unified_diff(expected.splitlines(True), actual.splitlines(True),
                                            os.path.relpath(path, EXPECTED), "actual"))
        pytest.fail(f"golden text of {case_id} changed (BYTEGRAPH_REGOLD=1 to accept):\n{diff}",
                    pytrace=False)


_RANGE_ITERATOR = ("from 3.12 the range iterator reduces to (iter, (range(next, stop),), None): its position guard "
                   "reads the remaining range")
_INLINED_COMPREHENSION = ("PEP 709: the comprehension runs in the frame, which reads its free variables in the loop "
                          "rather than when a comprehension function is made: guards in another order, at other lines, "
                          "and no function in the stack slots of a break inside it")

# Cases whose graphs, guards or break reasons differ from 3.11's because the interpreter's
# objects or frames do, with why; the check below fails on any other difference, and on a
# listed case that no longer differs.
_SINCE_312 = {
    "breaks.break_in_range_loop": _RANGE_ITERATOR,
    "breaks.loop_break_statement_after_print": _RANGE_ITERATOR,
    "breaks.nested_break_in_loop": _RANGE_ITERATOR,
    "graphs.dict_argument_items": _INLINED_COMPREHENSION,
    "graphs.list_comprehension": _INLINED_COMPREHENSION,
    "guards.recompile_on_dict_keys": _INLINED_COMPREHENSION,
}
VERSION_SPECIFIC = {(3, 12): _SINCE_312, (3, 13): _SINCE_312}  # 3.13's text is 3.12's in all six


def test_graphs_and_guards_are_the_same_text_on_every_version():
    """Only the bytecode may differ between versions: the rest of each of this version's own
    files is its 3.11 file's text, except in the cases `VERSION_SPECIFIC` explains."""
    if VERSION == BASE_VERSION:  # 3.11's files are the base, in expected/ itself
        assert not os.path.isdir(VERSION_DIR), f"{VERSION_DIR}: 3.11's golden files live in {EXPECTED}"
        return
    own = sorted(os.listdir(VERSION_DIR)) if os.path.isdir(VERSION_DIR) else []
    differ = []
    for name in own:
        with open(os.path.join(VERSION_DIR, name)) as f, open(os.path.join(EXPECTED, name)) as g:
            if without_bytecode(f.read()) != without_bytecode(g.read()):
                differ.append(name.removesuffix(".txt"))
    explained = sorted(VERSION_SPECIFIC.get(VERSION, {}))
    assert differ == explained, f"graphs, guards or break reasons differ from 3.11 in {differ}; explained: {explained}"


def test_no_stale_golden_files():
    """Every file under expected/ belongs to a case (a renamed case leaves none behind)."""
    stale = sorted(f for f in os.listdir(EXPECTED) if f.endswith(".txt") and f[:-4] not in CASES)
    if REGOLD:
        for name in stale:
            os.remove(os.path.join(EXPECTED, name))
        return
    assert not stale, f"golden files without a case: {stale}"
