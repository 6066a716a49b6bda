"""Builtins, math.*, operator.* and functools.partial inside compiled functions
(eager vs compiled)."""
import functools
import math
import operator

import pytest
import torch

from helpers import check


class _Base:
    pass


class _Derived(_Base):
    attr = 3


_INSTANCE = _Derived()


BUILTINS = {
    "len": lambda x, xs: x * len(xs) + len(x) + len((1, 2)) + len({"a": 1}),
    "range": lambda x, xs: x + sum(range(1, 10, 3)) + len(range(5)) + range(10)[-2],
    "isinstance": lambda x, xs: x * isinstance(x, torch.Tensor) + isinstance(xs, (tuple, list)) + isinstance(3, bool),
    "issubclass": lambda x, xs: x + issubclass(_Derived, _Base) * 2 + issubclass(bool, int) + issubclass(int, str),
    "getattr": lambda x, xs: x * getattr(_Derived, "attr") + getattr(_Derived, "nope", -1),
    "hasattr": lambda x, xs: x + hasattr(_Derived, "attr") + hasattr(_INSTANCE, "nope") * 10 + hasattr(x, "shape"),
    "min_max_ints": lambda x, xs: x * min(3, 1, 2) + max([4, 9, 2]) + max(1, 2, key=lambda v: -v),
    "min_max_sizes": lambda x, xs: x * max(x.shape[0], 2) + min(len(xs), 7) + max(2.5, x.dim()),
    "abs": lambda x, xs: abs(x) + abs(-3) + abs(-2.5),
    "sum": lambda x, xs: sum(xs) + sum([1, 2, 3], 10) + sum(xs, x),
    "any_all": lambda x, xs: x * (any([0, 0, 1]) + all([1, 1, 0]) * 2 + any([]) * 4 + all([]) * 8),
    "int_float_bool": lambda x, xs: x * int(3.9) + float(2) + bool(0) + int("7") + float("1.5") + bool([1]),
    "tuple_list_dict": lambda x, xs: (tuple(xs), list((x, 1)), dict(a=x, b=2), dict([("k", x * 2)]), list(range(3))),
    "zip_enumerate": lambda x, xs: [(i, a * b) for i, (a, b) in enumerate(zip(xs, [1, 2, 3]))],
    "zip_unequal": lambda x, xs: (list(zip([1, 2, 3], "ab")), x + 1),
    "map": lambda x, xs: list(map(lambda t: t * 2, xs)) + list(map(operator.add, [1, 2], [10, 20])),
    "filter": lambda x, xs: x * len(list(filter(lambda v: v > 1, [0, 1, 2, 3]))),
    "sorted": lambda x, xs: (sorted([3, 1, 2]), sorted("cab", reverse=True),
                             sorted([(1, "b"), (0, "z")], key=lambda p: p[1]), x * 3),
    "reversed": lambda x, xs: (list(reversed(xs)), tuple(reversed(range(4))), x * 1),
    "round_divmod_pow": lambda x, xs: (x * round(2.567, 1), divmod(17, 5), pow(2, 10), pow(2, 3, 5), round(7.5)),
    "str_repr_format": lambda x, xs: (str(3) + repr("a") + format(3.14159, ".2f"), x + 1),
    "chr_ord_hex": lambda x, xs: (chr(65) + hex(255) + bin(5), ord("A") * x),
    "callable_type_id": lambda x, xs: (callable(len), type(3) is int, type(x) is torch.Tensor, x * 2),
    "set_frozenset": lambda x, xs: (sorted(set([3, 1, 3])), frozenset({1}) | frozenset({2}), x - 1),
    "iter_next": lambda x, xs: (next(iter(xs)) * 3, next(iter(range(2, 5)))),
    "slice_builtin": lambda x, xs: x[slice(1, None)] + 1,
    "min_max_empty_default": lambda x, xs: x + min([], default=5) + max((), default=-1),
}


@pytest.mark.parametrize("name", list(BUILTINS))
def test_builtin(name):
    xs = [torch.randn(3), torch.randn(3), torch.randn(3)]
    check(BUILTINS[name], torch.randn(3, requires_grad=True), xs, graphs=1)


def test_builtin_max_raises_on_empty():
    def f(x):
        y = x + 1
        return max([]) + y

    check(f, torch.randn(2))


def test_int_of_bad_string_raises_value_error():
    def f(x, s):
        return x * int(s)

    check(f, torch.randn(2), "abc")


def test_len_of_tensor_and_size():
    def f(x):
        return len(x) * x, len(x.shape)

    check(f, torch.randn(4, 2), graphs=1)


def test_sum_of_tensor_list_with_start_tensor():
    def f(xs):
        return sum(xs[1:], xs[0] * 0)

    check(f, [torch.randn(2, 2, requires_grad=True) for _ in range(3)], graphs=1)


MATH = {
    "sqrt_pi": lambda x, n: x * math.sqrt(n) + math.pi,
    "floor_ceil": lambda x, n: x * math.floor(n / 3) + math.ceil(n / 3),
    "log_exp": lambda x, n: x * math.log(n) + math.exp(1) + math.log2(8) + math.log10(100),
    "trig": lambda x, n: x * math.cos(n) + math.sin(n) + math.atan2(1, n),
    "prod_gcd": lambda x, n: x * math.prod([n, 2, 3]) + math.gcd(n, 12) + math.comb(n, 2),
    "isclose_inf": lambda x, n: x * math.isclose(n, n + 1e-12) + (math.inf > n) + math.isfinite(n),
    "trunc_fabs_copysign": lambda x, n: x * math.trunc(-n / 2) + math.fabs(-n) + math.copysign(1, -n),
}


@pytest.mark.parametrize("name", list(MATH))
def test_math(name):
    check(MATH[name], torch.randn(3), 6, graphs=1)


def test_math_on_tensor_size():
    def f(x):
        return x / math.sqrt(x.shape[-1]), math.prod(x.shape)

    check(f, torch.randn(2, 16), graphs=1)


OPERATOR = {
    "arith": lambda x: (operator.add(x, 1), operator.sub(x, 1), operator.mul(x, 2), operator.truediv(x, 2)),
    "floordiv_mod_pow": lambda x: (operator.floordiv(x, 2), operator.mod(x, 2), operator.pow(x.abs(), 2)),
    "compare": lambda x: (operator.lt(x, 0), operator.ge(x, 0), operator.eq(x, x), operator.ne(3, 4)),
    "getitem_setitem": lambda x: (operator.getitem(x, 1), operator.getitem([x, 2], 0)),
    "itemgetter_attrgetter": lambda x: (operator.itemgetter(0, 2)(x), operator.attrgetter("shape")(x), x * 1),
    "matmul_neg": lambda x: (operator.matmul(x[None], x[:, None]), operator.neg(x), operator.not_(0)),
    "inplace": lambda x: operator.iadd(x * 1, 5),
    "contains_truth": lambda x: (operator.contains([1, 2], 2), operator.truth(3), x - 2),
}


@pytest.mark.parametrize("name", list(OPERATOR))
def test_operator(name):
    check(OPERATOR[name], torch.randn(4, requires_grad=True), graphs=1)


def test_functools_partial_positional_and_keyword():
    def scaled_add(a, b, scale=1, *, bias=0):
        return (a + b) * scale + bias

    def f(x, y):
        g = functools.partial(scaled_add, x, scale=2)
        h = functools.partial(g, bias=3)
        return g(y), h(y, scale=5)

    check(f, torch.randn(3, requires_grad=True), torch.randn(3), graphs=1)


def test_functools_partial_passed_in():
    def f(fn, x):
        return fn(x) + 1

    check(f, functools.partial(torch.clamp, min=-0.1, max=0.1), torch.randn(4), graphs=1)


def test_functools_reduce():
    def f(xs):
        return functools.reduce(lambda a, b: a * b, xs), functools.reduce(operator.add, [1, 2, 3], 10)

    check(f, [torch.randn(2) for _ in range(3)], graphs=1)
