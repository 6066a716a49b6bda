"""Verify mode (`bytegraph.config.verify`, `runtime/verify.py`): a top-level compiled call is
also run eagerly on deep copies and compared. Planted differences (a backend that adds 1, an
entry whose guard is skipped, a backend that mutates an input, an entry that writes a global
or raises) are reported with the function, file:line, the entry and its guards and the path of
the difference; correct programs are silent and their real state sees one execution;
uncopyable values are skipped with a note."""
from __future__ import annotations

import functools
import logging
import os
import subprocess
import sys
import threading

import pytest
import torch

import bytegraph



@pytest.fixture(autouse=True)
def _verify_on(monkeypatch):
    monkeypatch.setattr(bytegraph.config, "verify", True)
    bytegraph.counters.pop("verify", None)
    yield


def _verify_counts():
    return dict(bytegraph.counters["verify"])


def plus_one(gm, example_inputs):
    """A wrong backend: every graph output is off by one."""
    forward = gm.forward

    def run(*args):
        out = forward(*args)
        return type(out)(o + 1 for o in out)

    return run


def mutates_first_input(gm, example_inputs):
    """A wrong backend: the graph's result is right, but its first input is changed in place."""
    forward = gm.forward

    def run(*args):
        out = forward(*args)
        args[0].add_(1)
        return out

    return run


def _plant(compiled_fn, wrong):
    """Make entry 0 of `compiled_fn` run `wrong` (a miscompiled entry)."""
    state = compiled_fn.__bg_compiled__
    state.entries[0].fn = wrong
    state.namespace["__bg_f0"] = wrong


# ---- planted differences are reported -----------------------------------------------------

def nested_output(x):
    return 3, {"x": x * 2}


def test_wrong_backend_is_reported_with_function_guards_and_path():
    f = bytegraph.compile(nested_output, backend=plus_one)
    with pytest.raises(bytegraph.VerifyError) as info:
        f(torch.ones(2))
    text = str(info.value)
    code = nested_output.__code__
    assert f"nested_output ({code.co_filename}:{code.co_firstlineno})" in text
    assert "output[1]['x']: values differ, max abs difference 1" in text
    assert "cache entry 0 of 1" in text
    assert "x matches Tensor(dtype=torch.float32" in text and "test_verify_mode.py:" in text
    assert isinstance(info.value, AssertionError)
    assert _verify_counts() == {"checked": 1, "differences": 1}


SCALE = 2


def scaled(x):
    return x * SCALE


def test_entry_that_skips_a_guard_reads_a_stale_global(monkeypatch):
    """An entry whose guards always hold: the compiled code folded SCALE == 2."""
    f = bytegraph.compile(scaled)
    assert torch.equal(f(torch.ones(2)), torch.full((2,), 2.0))
    state = f.__bg_compiled__
    monkeypatch.setattr(state.entries[0].guards, "fn", lambda *values: True)
    state.namespace["__bg_g0"] = state.entries[0].guards.fn
    monkeypatch.setitem(globals(), "SCALE", 3)
    with pytest.raises(bytegraph.VerifyError, match=r"output: values differ, max abs difference 1 "
                                                    r"\(compiled tensor\(\[2., 2.\]\), eager tensor\(\[3., 3.\]\)\)"):
        f(torch.ones(2))


def add_one(x):
    return x + 1


def test_backend_that_mutates_an_input():
    f = bytegraph.compile(add_one, backend=mutates_first_input)
    x = torch.zeros(2)
    with pytest.raises(bytegraph.VerifyError, match=r"argument after the call: x: values differ"):
        f(x)
    assert torch.equal(x, torch.ones(2))  # the real argument saw the one (compiled) run


COUNT = 0


def bump(x):
    global COUNT
    COUNT += 1
    return x + 1


def bump_twice(x):
    global COUNT
    COUNT += 2
    return x + 1


def test_entry_that_writes_a_wrong_global(monkeypatch):
    monkeypatch.setitem(globals(), "COUNT", 0)
    f = bytegraph.compile(bump)
    f(torch.ones(1))
    _plant(f, bump_twice)
    with pytest.raises(bytegraph.VerifyError, match=r"global COUNT: compiled 3, eager 2"):
        f(torch.ones(1))
    assert COUNT == 3  # one compiled run per call


def raises_value_error(x):
    raise ValueError("planted")


def test_exception_in_one_run_only():
    f = bytegraph.compile(add_one)
    f(torch.ones(1))
    _plant(f, raises_value_error)
    with pytest.raises(bytegraph.VerifyError, match=r"exception: compiled raised ValueError\('planted'\), "
                                                    r"eager returned tensor\(\[2.\]\)") as info:
        f(torch.ones(1))
    assert isinstance(info.value.__cause__, ValueError)


def test_warn_mode_logs_counts_and_returns_the_compiled_result(monkeypatch, caplog):
    monkeypatch.setattr(bytegraph.config, "verify", "warn")
    f = bytegraph.compile(nested_output, backend=plus_one)
    logging.getLogger("bytegraph").propagate = True
    try:
        with caplog.at_level(logging.ERROR, logger="bytegraph.verify"):
            out = f(torch.ones(2))
    finally:
        logging.getLogger("bytegraph").propagate = False
    assert torch.equal(out[1]["x"], torch.full((2,), 3.0))
    assert "output[1]['x']" in caplog.text
    assert _verify_counts() == {"checked": 1, "differences": 1}


# ---- correct programs are silent ----------------------------------------------------------

LOG: list = []
FLAG = None


def mutates_everything(x, items, d):
    global FLAG
    LOG.append(len(LOG))
    FLAG = ("set", len(items))
    items.append(x.sum())
    d["y"] = x.cos()
    x.mul_(2)
    return [x.sin(), {"n": len(items), "t": torch.randn(2)}]


def test_correct_program_is_silent_and_real_state_sees_one_run(monkeypatch):
    monkeypatch.setitem(globals(), "LOG", [])
    monkeypatch.setitem(globals(), "FLAG", None)
    f = bytegraph.compile(mutates_everything)
    x, items, d = torch.ones(3), [], {}
    for i in range(3):
        f(x, items, d)
    assert LOG == [0, 1, 2] and FLAG == ("set", 2) and len(items) == 3
    assert torch.equal(x, torch.full((3,), 8.0))
    assert _verify_counts() == {"checked": 3}


def make_counter():
    n = 0

    def f(x):
        nonlocal n
        n += 1
        return x * n

    return f


def test_closure_cells_are_copied_and_compared():
    g = make_counter()
    f = bytegraph.compile(g)
    assert [f(torch.ones(1)).item() for _ in range(3)] == [1.0, 2.0, 3.0]
    assert _verify_counts() == {"checked": 3}


def raises_key_error(x, d):
    d["seen"] = True
    return x + d["missing"]


def test_same_exception_in_both_runs_is_the_users():
    f = bytegraph.compile(raises_key_error)
    d = {}
    with pytest.raises(KeyError, match="missing"):
        f(torch.ones(1), d)
    assert d == {"seen": True}
    assert _verify_counts().get("differences", 0) == 0


def test_module_with_buffers_and_print(capsys):
    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.BatchNorm1d(3), torch.nn.Dropout(0.5))
    f = bytegraph.compile(m)
    for _ in range(2):
        f(torch.randn(4, 3))
    assert int(m[1].num_batches_tracked) == 2  # the real module ran once per call
    assert _verify_counts() == {"checked": 2}


def breaks(x):
    y = x + 1
    print("between")
    return y * 2


def test_graph_break_verified_once_at_the_top_level_call(capsys):
    f = bytegraph.compile(breaks)
    f(torch.ones(1))
    f(torch.ones(1))
    assert capsys.readouterr().out == "between\n" * 2  # the eager rerun's print is not shown
    assert _verify_counts() == {"checked": 2}  # not the resume function's calls


def test_off_costs_one_check_and_runs_nothing(monkeypatch):
    monkeypatch.setattr(bytegraph.config, "verify", False)
    f = bytegraph.compile(nested_output, backend=plus_one)
    f(torch.ones(2))  # wrong, but not verified
    assert _verify_counts() == {}
    state = f.__bg_compiled__
    assert "if __bg_config.verify: return __bg_verify(x)" in state._wrapper_source(state.entries)


# ---- uncopyable values ---------------------------------------------------------------------

def consumes(x, it):
    return x + next(it)


def test_uncopyable_argument_skips_the_call_with_a_note(caplog):
    f = bytegraph.compile(consumes)
    logging.getLogger("bytegraph").propagate = True
    try:
        with caplog.at_level(logging.WARNING, logger="bytegraph.verify"):
            out = f(torch.zeros(1), iter(x for x in (1, 2)))
    finally:
        logging.getLogger("bytegraph").propagate = False
    assert torch.equal(out, torch.ones(1))  # the generator was advanced once
    assert "not verifying a call of consumes" in caplog.text and "argument it (generator" in caplog.text
    assert _verify_counts().get("skipped", 0) == 1


LOCK = threading.Lock()


def locked(x):
    with LOCK:
        return x * 2


def test_uncopyable_lock_is_shared_and_named_in_the_report():
    f = bytegraph.compile(locked, backend=plus_one)
    with pytest.raises(bytegraph.VerifyError) as info:
        f(torch.ones(1))
    assert "not copied (shared with the real run, not compared):\n  - global LOCK: lock: TypeError" in str(info.value)


class LockedHook:
    def __init__(self):
        self.lock = threading.RLock()
        self.calls = 0

    def __call__(self, module, args):
        self.calls += 1


def test_module_with_a_hook_holding_a_lock_is_skipped_not_crashed():
    m = torch.nn.Linear(2, 2)
    hook = LockedHook()
    m.register_forward_pre_hook(hook)
    f = bytegraph.compile(m)
    f(torch.ones(2))
    assert hook.calls == 1
    assert _verify_counts() == {"skipped": 1}  # `self` (the module) holds the hook's lock


@functools.lru_cache
def cached_scale(n):
    print("computing", n)
    return n * 2


def uses_a_cache(x):
    return x * cached_scale(3)


def test_lru_cache_global_skips_the_call(capsys):
    """The wrapper's C cache is shared by deepcopy: an eager run would fill it and change what
    the compiled run prints, so the call is not verified."""
    cached_scale.cache_clear()
    f = bytegraph.compile(uses_a_cache)
    f(torch.ones(1))
    assert capsys.readouterr().out.count("computing 3") == 1
    assert _verify_counts() == {"skipped": 1}


def inference_flag(x):
    return x * 2, x.is_inference()


def test_inference_tensor_copied_as_one():
    with torch.inference_mode():
        x = torch.ones(2)
    bytegraph.compile(inference_flag)(x)
    assert _verify_counts() == {"checked": 1}


def test_environment_variable_turns_it_on():
    code = "import bytegraph; print(bytegraph.config.verify)"
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = [subprocess.run([sys.executable, "-c", code], env=dict(os.environ, BYTEGRAPH_VERIFY=v), cwd=root,
                          capture_output=True, text=True, check=True).stdout.strip() for v in ("1", "warn")]
    assert out == ["True", "warn"]


# ---- what verify mode found ------------------------------------------------------------------

def breaks_inside_no_grad(x):
    with torch.no_grad():
        y = x * 2
        print("in no_grad")
    return x * y


def test_a_backend_leaves_the_callers_grad_mode_alone(capsys):
    """AOT autograd traces the graph for real; a graph that ends inside `no_grad` (at a break)
    left grad mode off after the capture, so whatever ran next (verify's eager run; an eager
    fallback) ran without grad. Found by this mode in test_graph_breaks.py's aot_eager case."""
    f = bytegraph.compile(breaks_inside_no_grad, backend="aot_eager")
    x = torch.ones(2, requires_grad=True)
    f.__bg_compiled__.miss(0, x)
    assert torch.is_grad_enabled()
