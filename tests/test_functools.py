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


# ---- cmp_to_key, sort/min/max over objects with `<` -----------------------------------------

def _by_value(a, b):
    return (a > b) - (a < b)


@pytest.mark.parametrize("reverse", [False, True])
def test_cmp_to_key_sorted_runs_comparisons_in_eager_order(reverse):
    def f(x):
        log = []

        def cmp(a, b):
            log.append((a, b))
            return _by_value(a, b)

        out = sorted([5, 1, 4, 1, 3, 9, 2, 6, 5], key=functools.cmp_to_key(cmp), reverse=reverse)
        return out, log, x * out[0]

    _one(f)


def test_cmp_to_key_sorts_tensors_by_a_python_key():
    def f(x):
        pairs = [(2, x), (0, x * 2), (1, x * 3)]
        ordered = sorted(pairs, key=functools.cmp_to_key(lambda a, b: a[0] - b[0]))
        return [t for _, t in ordered]

    _one(f)


def test_cmp_to_key_list_sort_of_an_outside_list(  ):
    def f(x, xs):
        xs.sort(key=functools.cmp_to_key(lambda a, b: b - a))
        return x + xs[0]

    check(f, T(2), [3, 7, 1, 7], graphs=1, fullgraph=True)


def test_cmp_to_key_min_max():
    def f(x):
        key = functools.cmp_to_key(lambda a, b: len(a) - len(b))
        words = ["ccc", "a", "bb", "dd"]
        return min(words, key=key), max(words, key=key), x + len(max(words, key=key))

    _one(f)


def test_cmp_to_key_wrapper_compares_and_keeps_obj():
    def f(x):
        key = functools.cmp_to_key(_by_value)
        a, b = key(3), key(4)
        return a.obj, a < b, a > b, a <= b, a >= b, a == key(3), x + 1

    _one(f)


def test_cmp_to_key_comparison_error_propagates_as_eager():
    def f(x):
        def cmp(a, b):
            if a == 0 or b == 0:
                raise ZeroDivisionError("cannot compare 0")
            return a - b
        try:
            sorted([3, 0, 1], key=functools.cmp_to_key(cmp))
        except ZeroDivisionError as e:
            return x + len(str(e))
        return x

    _one(f)


def test_sort_of_user_objects_with_lt_inside_helper():
    class Item:
        def __init__(self, rank, t):
            self.rank, self.t = rank, t

        def __lt__(self, other):
            return self.rank < other.rank

    def helper(x):
        items = [Item(3, x), Item(1, x * 2), Item(2, x * 3)]
        items.sort()
        return [i.t for i in items], min(items).rank, max(items).rank

    _one(lambda x: helper(x))


def test_cmp_to_key_across_a_graph_break():
    def f(x):
        key = functools.cmp_to_key(_by_value)
        y = x * 2
        bytegraph.graph_break()
        return sorted([x.shape[0], 3, 1], key=key), y + 1

    check(f, T(2), graphs=2)


# ---- operator.methodcaller, partial ---------------------------------------------------------

def test_methodcaller():
    def f(x):
        up = operator.methodcaller("upper")
        total = operator.methodcaller("sum", dim=0)
        return list(map(up, ["a", "b"])), total(x), operator.methodcaller("add", 1, alpha=2)(x)

    _one(f, T(2, 3))


def test_methodcaller_bad_name_raises_as_eager():
    check(lambda x: operator.methodcaller(1)(x), T(2))


def test_partial_kwargs_nested_and_of_methods():
    class Scale:
        def __init__(self, k):
            self.k = k

        def apply(self, x, bias=0):
            return x * self.k + bias

    def f(x):
        p = functools.partial(torch.add, alpha=2)
        q = functools.partial(functools.partial(lambda a, b, c=0: a * b + c, x), 3)
        m = functools.partial(Scale(2).apply, bias=1)
        override = functools.partial(lambda a, c=1: a + c, c=5)
        return p(x, x), q(c=1), q(), m(x), override(x, c=2), p.keywords["alpha"], len(q.args)

    _one(f)


def test_partial_from_outside_and_across_a_break():
    add3 = functools.partial(torch.add, other=3)

    def f(x):
        a = add3(x)
        bytegraph.graph_break()
        return functools.partial(operator.mul, a)(2)

    check(f, T(2), graphs=2)


def test_reduce_in_helper_with_initial():
    def helper(xs):
        return functools.reduce(lambda a, b: a * 2 + b, xs, 1)

    _one(lambda x: (helper([x, x + 1]), functools.reduce(operator.add, [1, 2, 3])))


def test_reduce_empty_error_as_eager():
    check(lambda x: functools.reduce(operator.add, [], ) + x, T(2))


# ---- wraps / update_wrapper in traced code -----------------------------------------------------

def test_decorator_defined_in_the_compiled_function():
    def f(x):
        def deco(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                return fn(*args, **kwargs) + 1
            return wrapper

        @deco
        def double(y):
            """doubles"""
            return y * 2

        return double(x), double.__name__, double.__doc__, double.__wrapped__(x)

    _one(f)


def test_update_wrapper_in_a_helper():
    def helper(fn):
        def wrapper(y):
            return fn(y) - 1
        return functools.update_wrapper(wrapper, fn)

    def square(y):
        return y * y

    def f(x):
        w = helper(square)
        return w(x), w.__qualname__, w.__wrapped__ is square

    _one(f)


def test_lru_cache_deep_recursion_is_traced_once_per_argument():
    @functools.lru_cache(maxsize=None)
    def steps(n):
        return 0 if n == 0 else 1 + steps(n - 1) + steps(n - 1) * 0

    _one(lambda x: x * steps(12) + fib(24))


def test_lru_cache_fold_inside_a_rolled_back_body_is_forgotten():
    @functools.lru_cache(maxsize=None)
    def inner(n):
        return n * SCALE

    @functools.lru_cache(maxsize=None)
    def outer(n):
        return [inner(n)]  # a mutable result: outer breaks, and its body is rolled back

    def f(x):
        return outer(2), x * inner(2)

    global SCALE
    check(f, T(2))
    cf = bytegraph.compile(f)
    x = torch.ones(2)
    assert torch.equal(cf(x)[1], x * 6)
    SCALE = 5
    try:
        inner.cache_clear()
        outer.cache_clear()
        assert torch.equal(cf(x)[1], x * 10)  # the guard on SCALE outlived the rolled-back fold
    finally:
        SCALE = 3


# ---- singledispatch: a reasoned break (its dispatch cache is a WeakKeyDictionary) ------------------

@functools.singledispatch
def describe(value):
    return "object"


@describe.register
def _(value: int):
    return "int"


def test_singledispatch_runs_as_eager_with_a_reason():
    _breaks_with(lambda x: (describe(1), describe("s"), x + 1), T(2), match=r"weakref")


FACTOR = 2


@functools.lru_cache(maxsize=None)
def by_factor(n):
    return n * FACTOR


def test_lru_cache_returns_the_cached_value_even_when_stale_as_eager():
    """A stale cache entry (cached under another FACTOR) is what eager returns: the fold
    compares the real cache's answer with the traced body's and breaks when they differ."""
    global FACTOR

    def f(x):
        return x * by_factor(3)

    by_factor.cache_clear()
    try:
        x = torch.ones(2)
        assert by_factor(3) == 6  # cached under FACTOR == 2
        FACTOR = 10
        expected = f(x)  # eager: the stale cached 6
        assert torch.equal(bytegraph.compile(f)(x), expected)
        reasons = [r.reason for r in bytegraph.explain(f, x).break_reasons]
        assert any("whose cache holds a result the body does not compute now" in r for r in reasons), reasons
        by_factor.cache_clear()
        assert torch.equal(bytegraph.compile(f)(x), f(x))  # recomputed: 30 in both
        cf = bytegraph.compile(f)
        assert torch.equal(cf(x), f(x))
        by_factor.cache_clear()
        assert torch.equal(cf(x), f(x))  # the folded 30 still is what the body computes
    finally:
        FACTOR = 2
        by_factor.cache_clear()
