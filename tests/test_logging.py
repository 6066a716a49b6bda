"""Logging calls replayed after the graph, lru_cache log-once helpers (the cache decides at run
time), lru_cache wrappers on objects hashed by identity, relative imports, and threading locks
as context managers (a clean break whose block runs holding the real lock). Differential
(tests/helpers.py `check`): the handler below prints each record, so stdout compares what was
logged and in which order, interleaved with the program's own prints."""
import contextlib
import functools
import io
import logging
import threading

import pytest
import torch

import bytegraph
from tests.helpers import check, compile_counted


class _PrintHandler(logging.Handler):
    """Prints each record to the current sys.stdout (which `check` captures)."""

    def emit(self, record):
        print(f"{record.levelname}:{record.name}:{record.getMessage()}")


LOG = logging.getLogger("tests.logging_and_locks")
LOG.addHandler(_PrintHandler())
LOG.propagate = False
LOG.setLevel(logging.DEBUG)


@pytest.fixture(autouse=True)
def _debug_level():
    LOG.setLevel(logging.DEBUG)
    yield
    LOG.setLevel(logging.DEBUG)


def T(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


# ------------------------------------------------------------------ logging calls replayed

def test_logger_calls_replayed_in_one_graph():
    def f(x):
        LOG.info("start %s %d", "run", 3)
        y = x * 2
        LOG.warning("middle")
        LOG.log(logging.ERROR, "level %s", logging.ERROR)
        LOG.debug("n=%(n)s", {"n": 4})
        return y + 1

    r = check(f, T(3), graphs=1, fullgraph=True)
    assert r.compiled.stdout == ("INFO:tests.logging_and_locks:start run 3\nWARNING:tests.logging_and_locks:middle\n"
                                 "ERROR:tests.logging_and_locks:level 40\nDEBUG:tests.logging_and_locks:n=4\n")


def test_module_level_logging_function_replayed():
    def f(x):
        logging.debug("not shown: the root logger is at WARNING")
        return x + 1

    check(f, T(3), graphs=1, fullgraph=True)


def _helper_logs(x, k):
    LOG.warning("helper got k=%d", k)
    return x * k


def test_logging_in_an_inlined_helper():
    def f(x):
        y = _helper_logs(x, 2)
        LOG.info("after the helper")
        return _helper_logs(y, 3)

    r = check(f, T(3), graphs=1, fullgraph=True)
    assert r.compiled.stdout.count("helper got") == 2


def test_logging_order_across_a_graph_break():
    def f(x):
        LOG.warning("before")
        y = _helper_logs(x, 2)
        print("the break")
        LOG.warning("after")
        return y + 1

    r = check(f, T(3), graphs=2)
    assert r.compiled.stdout == ("WARNING:tests.logging_and_locks:before\nWARNING:tests.logging_and_locks:helper got "
                                 "k=2\nthe break\nWARNING:tests.logging_and_locks:after\n")


def test_logger_level_decided_at_run_time_without_recompiling():
    def f(x):
        LOG.info("info line")
        return x + 1

    cf, counter = compile_counted(f)
    outs = []
    for level in (logging.DEBUG, logging.WARNING, logging.INFO):
        LOG.setLevel(level)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            cf(T(2))
        outs.append(buf.getvalue())
    assert outs == ["INFO:tests.logging_and_locks:info line\n", "", "INFO:tests.logging_and_locks:info line\n"]
    assert counter.frame_count == 1


def test_logging_a_tensor_breaks_with_its_reason():
    def f(x):
        LOG.warning("x is %s", x)
        return x + 1

    check(f, T(3), graphs=1)
    out = bytegraph.explain(f, T(3))
    assert out.graph_break_count == 1
    assert "logging call Logger.warning() with argument" in out.break_reasons[0].reason


def test_logger_exception_breaks():
    def f(x):
        try:
            raise ValueError("boom")
        except ValueError:
            LOG.exception("caught")
        return x + 1

    out = bytegraph.explain(f, T(3))
    assert any("Logger.exception()" in r.reason for r in out.break_reasons), out.break_reasons
    check(f, T(3))


def test_logging_with_a_traced_exception_escaping():
    def f(x):
        LOG.warning("about to fail")
        raise KeyError("k")

    check(f, T(3))


# ------------------------------------------------------------------ lru_cache log-once

@functools.lru_cache(None)
def warn_once(logger, msg):
    logger.warning(msg)


def _fresh_cache():
    warn_once.cache_clear()


def test_lru_cache_log_once_logs_once_over_calls():
    def f(x):
        warn_once(LOG, "said once")
        y = x + 1
        warn_once(LOG, "said once")
        warn_once(LOG, "another")
        return y

    cf, counter = compile_counted(f)
    printed = []
    for run in (f, cf):  # each with a fresh cache, three calls: the lines of the first call only
        _fresh_cache()
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            results = [run(T(3)) for _ in range(3)]
        printed.append(buf.getvalue())
        torch.testing.assert_close(results[-1], f(T(3)))
    assert printed[1] == printed[0] == ("WARNING:tests.logging_and_locks:said once\n"
                                        "WARNING:tests.logging_and_locks:another\n")
    assert counter.frame_count == 1


def test_lru_cache_log_once_output_equals_eager():
    def f(x):
        warn_once(LOG, "said once")
        warn_once(LOG, "said once")
        return x * 2

    r = check(f, T(3), graphs=1, fullgraph=True, setup=_fresh_cache)
    assert r.compiled.stdout == "WARNING:tests.logging_and_locks:said once\n"


def test_lru_cache_log_once_across_a_break_and_in_a_helper():
    def helper(x):
        warn_once(LOG, "from the helper")
        return x + 1

    def f(x):
        y = helper(x)
        print("break")
        warn_once(LOG, "from the helper")
        warn_once(LOG, "after the break")
        return helper(y)

    r = check(f, T(3), graphs=2, setup=_fresh_cache)
    assert r.compiled.stdout == ("WARNING:tests.logging_and_locks:from the helper\nbreak\n"
                                 "WARNING:tests.logging_and_locks:after the break\n")


class _Reporter:
    """An lru_cache wrapper as a method: the cache key holds `self` (hashed by identity)."""

    @functools.lru_cache(None)
    def note(self, msg):
        LOG.warning("note: %s", msg)


REPORTER = _Reporter()


def test_lru_cache_method_on_an_object_hashed_by_identity():
    def f(x):
        REPORTER.note("first")
        REPORTER.note("first")
        return x - 1

    setup = _Reporter.note.cache_clear
    r = check(f, T(3), graphs=1, fullgraph=True, setup=setup)
    assert r.compiled.stdout == "WARNING:tests.logging_and_locks:note: first\n"


@functools.lru_cache(None)
def _cached_value(logger, n):
    logger.info("computing %d", n)
    return n * 2


def test_lru_cache_returning_a_value_on_an_object_breaks_with_its_reason():
    def f(x):
        return x + _cached_value(LOG, 3)

    out = bytegraph.explain(f, T(3))
    assert out.graph_break_count == 1
    assert "lru_cache wrapper" in out.break_reasons[0].reason
    assert "may return a value" in out.break_reasons[0].reason
    check(f, T(3), setup=_cached_value.cache_clear)


def test_lru_cache_with_an_unhashable_argument_raises_as_eagerly():
    def f(x):
        warn_once(LOG, ["not", "hashable"])
        return x + 1

    check(f, T(3), setup=_fresh_cache)  # eager's TypeError: unhashable type: 'list'
    with pytest.raises(bytegraph.Unsupported, match="neither a hashable constant nor a value from outside"):
        bytegraph.compile(f, fullgraph=True)(T(3))


@functools.lru_cache(None)
def _maybe_value(logger, flag):
    logger.warning("maybe")
    return flag or None  # RETURN_VALUE is a jump target: not "returns None on every path"


def test_lru_cache_returning_through_a_jump_is_not_replayed():
    def f(x):
        _maybe_value(LOG, 0)
        return x + 1

    check(f, T(3), setup=_maybe_value.cache_clear)
    with pytest.raises(bytegraph.Unsupported, match="may return a value"):
        bytegraph.compile(f, fullgraph=True)(T(3))


SEEN = []


@functools.lru_cache(None)
def _impure_once(msg):
    SEEN.append(msg)


def test_lru_cache_with_an_outside_write_is_not_replayed():
    def f(x):
        _impure_once("x")
        return x + 1

    def setup():
        _impure_once.cache_clear()
        SEEN.clear()

    out = bytegraph.explain(f, T(3))
    assert out.graph_break_count == 1 and "lru_cache wrapper" in out.break_reasons[0].reason
    check(f, T(3), setup=setup, state=lambda: list(SEEN))


# ------------------------------------------------------------------ locks

LOCK = threading.Lock()
RLOCK = threading.RLock()
EVENTS = []


def _held(lock) -> bool:
    if isinstance(lock, type(RLOCK)):
        return lock._is_owned()
    return lock.locked()


def test_lock_as_context_manager_breaks_cleanly_and_resumes():
    def f(x):
        y = x + 1
        with LOCK:
            EVENTS.append("in the block")
            z = y * 2
        EVENTS.append("after")
        return z - 1

    check(f, T(3), setup=EVENTS.clear, state=lambda: list(EVENTS))
    assert not LOCK.locked()
    out = bytegraph.explain(f, T(3))
    assert any("a threading lock" in b.reason for b in out.break_reasons), out.break_reasons
    assert out.graph_count >= 2 and not out.eager_frames, out


def _locked_helper(x, lock):
    with lock:
        EVENTS.append("in")
        return x * 3


def test_rlock_in_an_inlined_helper():
    def f(x):
        y = _locked_helper(x + 1, RLOCK)
        EVENTS.append("out")
        return y + 1

    check(f, T(3), setup=EVENTS.clear, state=lambda: list(EVENTS))
    out = bytegraph.explain(f, T(3))
    assert any("a threading lock" in b.reason for b in out.break_reasons)
    assert not out.eager_frames, out.eager_frames
    assert not _held(RLOCK)


def test_lock_block_with_a_break_inside_in_a_helper():
    def helper(x):
        with LOCK:
            EVENTS.append("in")
            print("inside the block")  # a second break, inside the block's resume function
            EVENTS.append("still in")
            y = x * 2
        return y

    def f(x):
        LOG.warning("before the lock")
        y = helper(x + 1)
        LOG.warning("after the lock")
        return y - 1

    r = check(f, T(3), setup=EVENTS.clear, state=lambda: list(EVENTS))
    assert r.compiled.stdout == ("WARNING:tests.logging_and_locks:before the lock\ninside the block\n"
                                 "WARNING:tests.logging_and_locks:after the lock\n")
    assert not LOCK.locked()


def test_lock_released_when_the_block_raises():
    def f(x):
        try:
            with LOCK:
                raise ValueError("inside")
        except ValueError:
            pass
        return x + 1, LOCK.locked()

    check(f, T(3))
    assert not LOCK.locked()


def test_lock_under_fullgraph_raises_unsupported_naming_it():
    def f(x):
        with LOCK:
            return x + 1

    with pytest.raises(bytegraph.Unsupported, match="a threading lock"):
        bytegraph.compile(f, fullgraph=True)(T(3))
    assert not LOCK.locked()


# ------------------------------------------------------------------ relative imports

def test_relative_import_of_a_loaded_module_is_traced():
    from tests import _relative_import_user

    check(_relative_import_user.uses_relative_import, T(3), graphs=1, fullgraph=True)


def test_relative_import_of_a_missing_name_breaks():
    from tests import _relative_import_user

    check(_relative_import_user.imports_a_missing_name, T(3))  # eager's ImportError
    with pytest.raises(bytegraph.Unsupported, match="`from . import _no_such_module_here`, which is not imported yet"):
        bytegraph.compile(_relative_import_user.imports_a_missing_name, fullgraph=True)(T(3))
