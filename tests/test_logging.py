"""Logging calls replayed after the graph (in order with the program's prints, the logger's
level decided at run time, a tensor argument or `Logger.exception` a break with its reason),
lru_cache log-once helpers (the cache decides at run time) and lru_cache wrappers on objects
hashed by identity. Differential (tests/helpers.py `check`): the handler below prints each
record, so stdout compares what was logged and in which order, interleaved with the
program's own prints."""
import contextlib
import functools
import io
import logging

import pytest
import torch

import bytegraph
from helpers import check, compile_counted, printing_logger


LOG = printing_logger("tests.logging")


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
    assert r.compiled.stdout == ("INFO:tests.logging:start run 3\nWARNING:tests.logging:middle\n"
                                 "ERROR:tests.logging:level 40\nDEBUG:tests.logging:n=4\n")


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
    assert r.compiled.stdout == ("WARNING:tests.logging:before\nWARNING:tests.logging:helper got "
                                 "k=2\nthe break\nWARNING:tests.logging:after\n")


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
    assert outs == ["INFO:tests.logging:info line\n", "", "INFO:tests.logging:info line\n"]
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
    assert printed[1] == printed[0] == ("WARNING:tests.logging:said once\n"
                                        "WARNING:tests.logging:another\n")
    assert counter.frame_count == 1


def test_lru_cache_log_once_output_equals_eager():
    def f(x):
        warn_once(LOG, "said once")
        warn_once(LOG, "said once")
        return x * 2

    r = check(f, T(3), graphs=1, fullgraph=True, setup=_fresh_cache)
    assert r.compiled.stdout == "WARNING:tests.logging:said once\n"


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
    assert r.compiled.stdout == ("WARNING:tests.logging:from the helper\nbreak\n"
                                 "WARNING:tests.logging:after the break\n")


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
    assert r.compiled.stdout == "WARNING:tests.logging:note: first\n"


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
    with pytest.raises(TypeError, match="unhashable type: 'list'"):  # the traced call raises it too
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
