"""functools in traced code: lru_cache/cache wrappers (vars/lru_cache.py), partial,
cmp_to_key, wraps/update_wrapper, reduce, singledispatch. Differential: outputs, grads,
stdout and outer state as eager; most in one graph."""
import functools
import operator
import re

import pytest
import torch

import bytegraph
from helpers import check

T = lambda *shape: torch.randn(*shape, requires_grad=True)  # noqa: E731


def _one(fn, *args, **kwargs):
    """One graph, no break; `fn(x)` of one tensor unless `args` are given."""
    return check(fn, *(args or (T(2),)), graphs=1, fullgraph=True, **kwargs)


def _breaks_with(fn, *args, match, **kwargs):
    """Differential, and the break reason names the construct."""
    check(fn, *args, **kwargs)
    reasons = [r.reason for r in bytegraph.explain(fn, *args).break_reasons]
    assert any(re.search(match, r) for r in reasons), reasons


# ---- lru_cache / cache -------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


@functools.cache
def table(n, scale=1):
    return tuple(i * scale for i in range(n))


SCALE = 3


@functools.lru_cache(maxsize=8)
def scaled(n):
    return n * SCALE


@functools.lru_cache
def noisy(n):
    print("computing", n)
    return n * 2


@functools.lru_cache(maxsize=None)
def tensor_body(n):
    return torch.ones(n) * 2


@functools.lru_cache(maxsize=None)
def as_list(n):
    return [n, n]


LOG = []


@functools.lru_cache(maxsize=None)
def logs(n):
    LOG.append(n)
    return n


@functools.lru_cache(maxsize=None)
def cached_tensor_arg(t):
    return t * 2


@functools.lru_cache(maxsize=None)
def checked(n):
    if n < 0:
        raise ValueError(f"negative {n}")
    return n


def test_lru_cache_recursive_folds_to_a_constant():
    _one(lambda x: x * fib(10))


def test_cache_with_kwargs_and_tuple_result():
    _one(lambda x: [x * v for v in table(3, scale=2)] + [x + len(table(4))])


def test_lru_cache_reads_a_global_and_guards_it():
    global SCALE

    def f(x):
        return x * scaled(2)

    cf = bytegraph.compile(f)
    x = torch.ones(2)
    assert torch.equal(cf(x), x * 6)
    SCALE = 5
    try:
        scaled.cache_clear()
        assert torch.equal(cf(x), x * 10)  # the guard on SCALE failed: re-traced
    finally:
        SCALE = 3
        scaled.cache_clear()


def test_lru_cache_inside_an_inlined_helper():
    def helper(x, n):
        return x * fib(n) + table(2)[1]

    _one(lambda x: helper(x, 6) + helper(x, 7))


def test_lru_cache_across_a_graph_break():
    def f(x):
        a = x * fib(5)
        bytegraph.graph_break()
        return a + fib(6)

    check(f, T(2), graphs=2)


def test_lru_cache_body_that_prints_breaks_and_runs_the_real_wrapper():
    _breaks_with(lambda x: x * noisy(4) + noisy(4), T(2), setup=noisy.cache_clear,
                 match=r"calling noisy, a functools.lru_cache wrapper, whose body "
                       r"breaks the graph \(print\(\) writes to stdout\)")
    assert noisy.cache_info().hits > 0  # the real cache served the second call


def test_lru_cache_body_with_tensor_ops_breaks():
    _breaks_with(lambda x: x * tensor_body(2), T(2), match="whose body records tensor operations")


def test_lru_cache_mutable_result_breaks():
    _breaks_with(lambda x: (as_list(2), x + 1), T(2), match=r"whose result .* is not an immutable constant")


def test_lru_cache_body_writing_outer_state_breaks():
    def setup():
        LOG.clear()
        logs.cache_clear()

    _breaks_with(lambda x: x * logs(3) + logs(3), T(2), match="whose body breaks the graph", setup=setup,
                 state=lambda: list(LOG))
    assert LOG == [3]  # the body ran once, the real cache served the second call


def test_lru_cache_tensor_argument_breaks():
    _breaks_with(lambda x: cached_tensor_arg(x) + 1, T(2), match="with arguments that are not hashable constants")


def test_lru_cache_body_raises_like_eager():
    def f(x):
        try:
            return x * checked(-2)
        except ValueError as e:
            return x + len(str(e))

    _one(f, T(2))


def test_lru_cache_uncaught_error_message_as_eager():
    check(lambda x: x * checked(-1), T(2))


def test_lru_cache_fullgraph_names_the_wrapper():
    with pytest.raises(bytegraph.Unsupported, match="calling tensor_body, a functools.lru_cache wrapper"):
        bytegraph.compile(lambda x: x * tensor_body(3), fullgraph=True)(torch.ones(3))


def test_lru_cache_wrapped_attribute():
    _one(lambda x: x * fib.__wrapped__(5))
