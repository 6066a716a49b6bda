"""A function that reaches `config.cache_size_limit` says so once (a
`RecompileLimitWarning` naming the guard that kept failing, the user's line that read the
value, and what to do), and the `recompiles` log topic explains every recompile: the first
failing guard of each cache entry the wrapper tried, what the value is now, in user terms.

Every call is also compared with eager; lines that read a guarded value end in a marker
comment so the tests can find their numbers. The functions compile with `dynamic=False`, so
each new value or size is a recompile (automatic dynamic, tests/dynamic, would make a
changing int or size one symbolic input after its first change)."""
import os
import subprocess
import sys
import warnings

import pytest
import torch

import bytegraph
from bytegraph._bytecode.versions import PY
from bytegraph.runtime import recompiles
from bytegraph.runtime.compiled_function import RecompileLimitWarning
from helpers import CompileCounter, assert_same, check, line_of

HERE = __file__
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def T(*shape):
    return torch.randn(*shape)


def at(marker: str) -> str:
    return f"{HERE}:{line_of(marker, HERE)}"


def run_calls(fn, arg_tuples, counter=None):
    """Call `fn` eagerly and compiled (one compiled function, no reset) with each tuple in
    turn, comparing every call; returns (compiled function, counter, warnings caught)."""
    counter = counter or CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter, dynamic=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i, args in enumerate(arg_tuples):
            assert_same(fn(*args), compiled(*args), f"call #{i + 1}")
    limit = [w for w in caught if issubclass(w.category, RecompileLimitWarning)]
    return compiled, counter, limit


@pytest.fixture
def limit3(monkeypatch):
    monkeypatch.setattr(bytegraph.config, "cache_size_limit", 3)


# ---------------------------------------------------------------- cache_size_limit

def scale(x, k):
    return x * k  # RD-SCALE


def test_limit_warns_once_naming_the_int_guard_line_and_fix(limit3):
    x = T(3)
    _, counter, limit = run_calls(scale, [(x, k) for k in range(8)])
    assert counter.frame_count == 3
    assert len(limit) == 1, [str(w.message) for w in limit]
    text = str(limit[0].message)
    assert "scale" in text and "hit config.cache_size_limit=3" in text
    assert "The guard that kept failing is on k: it failed for 3 of 3 entries" in text
    assert "(values seen: 0, 1, 2, 3)" in text
    assert "k == 2, but it is 3" in text
    assert f"(guard from {at('# RD-SCALE')}: return x * k  # RD-SCALE)" in text
    assert "pass it as a tensor" in text and "dynamic=True" in text
    assert "raise bytegraph.config.cache_size_limit (now 3)" in text
    assert limit[0].filename == HERE  # points at the user's call


def test_limit_past_it_runs_eagerly_and_stays_correct(limit3):
    x = T(3)
    compiled, counter, limit = run_calls(scale, [(x, k) for k in (1, 2, 3, 4, 5, 1, 2, 3, 6)])
    assert counter.frame_count == 3 and len(limit) == 1
    assert len(compiled.__bg_compiled__.entries) == 3  # the old entries still serve their values


def test_limit_warns_again_after_reset(limit3):
    x = T(3)
    compiled, _, first = run_calls(scale, [(x, k) for k in range(5)])
    bytegraph.reset()
    with pytest.warns(RecompileLimitWarning, match="kept failing is on k"):
        for k in range(5):
            assert_same(scale(x, k), compiled(x, k), f"after reset, k={k}")
    assert len(first) == 1


def total(x):
    return x.sum()  # RD-SHAPE


def test_limit_on_changing_shape_names_the_dimension(limit3):
    _, counter, limit = run_calls(total, [(T(n, 4),) for n in range(1, 6)])
    assert counter.frame_count == 3 and len(limit) == 1
    text = str(limit[0].message)
    assert "kept failing is on x" in text
    assert "tensor x has shape (4, 4) (expected (3, 4))" in text
    assert "bytegraph.mark_dynamic(x, 0)" in text
    assert at("# RD-SHAPE") in text


HISTORY = []


def uses_history_length(x):
    HISTORY.append(1)
    return x * len(HISTORY)  # RD-LEN


def test_limit_on_a_growing_list_whose_length_is_read(limit3):
    HISTORY.clear()
    eager_history = []
    counter = CompileCounter()
    compiled = bytegraph.compile(uses_history_length, backend=counter, dynamic=False)
    x = T(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(6):
            eager_history.append(1)
            expected = x * len(eager_history)
            assert_same(expected, compiled(x), f"call #{i + 1}")
            assert HISTORY == eager_history
    limit = [w for w in caught if issubclass(w.category, RecompileLimitWarning)]
    assert counter.frame_count == 3 and len(limit) == 1
    text = str(limit[0].message)
    assert "kept failing is on global HISTORY" in text
    assert "len(global HISTORY) == 2, but it is 3" in text
    assert "the length of global HISTORY changes between calls" in text
    assert at("# RD-LEN") in text


def test_limit_names_the_most_frequent_guard_not_just_the_newest(limit3):
    x, xd = T(3), T(3).double()
    # entries (float, 1), (float, 2), (double, 2); the miss (double, 3) fails the first two
    # on x's dtype and the newest on k
    _, counter, limit = run_calls(scale, [(x, 1), (x, 2), (xd, 2), (xd, 3)])
    assert counter.frame_count == 3 and len(limit) == 1
    text = str(limit[0].message)
    assert "kept failing is on x: it failed for 2 of 3 entries;" in text, text
    assert "in the newest entry: k == 2, but it is 3" in text, text


def test_limit_warning_not_emitted_below_the_limit():
    x = T(3)
    _, counter, limit = run_calls(scale, [(x, k) for k in range(4)])
    assert counter.frame_count == 4 and limit == []


# ---------------------------------------------------------------- the recompiles log

def test_log_lists_the_failing_guard_of_every_entry(recompile_log):
    x = T(3)
    run_calls(scale, [(x, 1), (x, 2), (x, 3)])
    assert len(recompile_log.lines) == 2
    first, second = recompile_log.lines
    where = f"(guard from {at('# RD-SCALE')}: return x * k  # RD-SCALE)"
    header = f"recompiling scale ({HERE}:{scale.__code__.co_firstlineno}), triggered by the following guard failure(s):"
    assert first == f"{header}\n    - entry 1: k == 1, but it is 2 {where}"
    assert second == (f"{header}\n    - entry 1: k == 1, but it is 3 {where}"
                      f"\n    - entry 2: k == 2, but it is 3 {where}")


def offset(t):
    return t + BIAS  # RD-HELPER


BIAS = 1.0


def calls_helper(x):
    return offset(x) * 2


def test_log_names_the_line_of_the_inlined_helper(recompile_log, monkeypatch):
    x = T(3)
    compiled = bytegraph.compile(calls_helper, backend=CompileCounter(), dynamic=False)
    assert_same(calls_helper(x), compiled(x), "first call")
    monkeypatch.setitem(globals(), "BIAS", 2.5)
    assert_same(calls_helper(x), compiled(x), "after BIAS = 2.5")
    (line,) = recompile_log.lines
    assert "entry 1: global BIAS == 1.0, but it is 2.5" in line, line
    assert f"(guard from {at('# RD-HELPER')}: return t + BIAS  # RD-HELPER)" in line, line


def test_log_explains_tensor_metadata_changes(recompile_log):
    def f(x):
        return x.cos()  # RD-TENSOR

    run_calls(f, [(T(2, 3),), (T(2, 3).double(),), (T(2, 3).t(),)])
    first, second = recompile_log.lines
    assert "entry 1: tensor x has dtype torch.float64 (expected torch.float32)" in first
    assert f"(guard from {at('# RD-TENSOR')}" in first
    assert "entry 1: tensor x has shape (3, 2) (expected (2, 3)), stride (1, 3) (expected (3, 1))" in second
    assert "entry 2: tensor x has dtype torch.float32 (expected torch.float64), shape (3, 2) (expected (2, 3))" \
        in second


def test_log_shows_a_tensor_by_shape_never_by_its_values(recompile_log):
    def f(x, bias):
        if bias is None:
            return x
        return x + bias

    run_calls(f, [(T(3), None), (T(3), torch.full((3,), 7.25))])
    (line,) = recompile_log.lines
    assert "bias == None, but it is a Tensor of shape (3,)" in line
    assert "7.25" not in line


def test_log_covers_eager_entries_too(recompile_log):
    def f(x, n):
        if n > 1:
            raise ValueError(f"n={n}")
        return x * n

    compiled = bytegraph.compile(f, backend=CompileCounter(), dynamic=False)
    x = T(3)
    for n in (2, 3):
        with pytest.raises(ValueError, match=f"n={n}"):
            compiled(x, n)
    (line,) = recompile_log.lines
    assert "entry 1: n == 2, but it is 3" in line


def test_log_names_the_default_a_parameter_was_filled_from(recompile_log):
    def f(x, k=2):
        return x * k

    compiled = bytegraph.compile(f, backend=CompileCounter(), dynamic=False)
    x = T(3)
    assert_same(f(x, 5), compiled(x, 5), "explicit k")
    assert_same(f(x), compiled(x), "default k")
    (line,) = recompile_log.lines
    assert "k == 5, but it is 2" in line
    assert "k is the default value from the defaults of" in line


def test_log_across_a_graph_break_explains_the_resume_function(recompile_log):
    def f(x, k):
        y = x + 1
        print("break")
        return y * k  # RD-AFTER-BREAK

    check(f, T(3), 2, graphs=2)  # fresh compile: one graph before the break, one after
    recompile_log.lines.clear()
    run_calls(f, [(T(3), 2), (T(3), 3)])
    resumed = [line for line in recompile_log.lines if line.startswith("recompiling __bg_resume_")]
    assert len(resumed) == 1, recompile_log.lines
    assert "triggered by the following guard failure(s)" in resumed[0]
    assert f"entry 1: k == 2, but it is 3 (guard from {at('# RD-AFTER-BREAK')}" in resumed[0]


def test_no_explanation_is_computed_when_the_log_is_off(monkeypatch):
    def explode(*args):
        raise AssertionError("a miss explained itself with the recompiles log off")

    monkeypatch.setattr(recompiles, "failures", explode)
    x = T(3)
    _, counter, _ = run_calls(scale, [(x, 1), (x, 2), (x, 3)])
    assert counter.frame_count == 3


def test_environment_variable_turns_on_the_recompiles_log():
    program = (
        "import torch, bytegraph\n"
        "def f(x, k):\n"
        "    return x * k\n"
        "c = bytegraph.compile(f)\n"
        "for k in (1, 2):\n"
        "    c(torch.ones(2), k)\n"
    )
    env = dict(os.environ, BYTEGRAPH_LOGS="recompiles", PYTHONPATH=ROOT)
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "[bytegraph.recompiles] recompiling f (<string>:2), triggered by the following guard failure(s):" \
        in done.stderr, done.stderr
    # 3.13 keeps the source of `python -c` for linecache (tracebacks show it), so the line's text follows
    text = {(3, 11): "", (3, 12): "", (3, 13): ": return x * k"}[PY]
    assert f"    - entry 1: k == 1, but it is 2 (guard from <string>:3{text})\n" in done.stderr, done.stderr
