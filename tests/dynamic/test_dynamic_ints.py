"""Ints as symbolic values, and no recompile storms on counters. An int argument
(or a global, a closure cell, an attribute, a default) that changes between calls and
reaches tensor arithmetic becomes a SymInt graph input after its first change; a use
that needs its value in Python (an index, `range`, a dict key) specializes exactly that."""
import pytest
import torch

from dynamic_support import check_calls

VALUES = (2, 3, 5, 4, 7)


def scale(x, n):
    return x * n


def shift(x, n):
    return x + n - 1


def slice_stop(x, n):
    return x[:n] * 2


def slice_start(x, n):
    return x[n:] + 1


def slice_columns(x, n):
    return x[:, : n + 1].sum(1)


def reshape_rows(x, n):
    return x[: n * 2].reshape(n, -1)


def arange_n(x, n):
    return x[:n] + torch.arange(n, dtype=x.dtype).unsqueeze(1)


def ones_n(x, n):
    return torch.ones(n, x.shape[1]) * x[0]


def narrow_n(x, n):
    return x.narrow(0, 0, n).cumsum(0)


def repeat_n(x, n):
    return x[:2].repeat(n, 1)


def float_of_n(x, n):
    return x / (n * 0.5)


def int_arithmetic(x, n):
    m = (n + 1) * 2 - n // 2
    return x * m


INT_FUNCTIONS = [scale, shift, slice_stop, slice_start, slice_columns, reshape_rows, arange_n, ones_n, narrow_n,
                 repeat_n, float_of_n, int_arithmetic]


@pytest.mark.parametrize("fn", INT_FUNCTIONS, ids=lambda f: f.__name__)
def test_int_argument_becomes_symbolic_after_one_change(fn):
    calls = [(torch.randn(16, 16), n) for n in VALUES]
    check_calls(fn, calls, graphs=2)


@pytest.mark.parametrize("fn", INT_FUNCTIONS, ids=lambda f: f.__name__)
def test_int_argument_under_dynamic_true_compiles_once(fn):
    calls = [(torch.randn(16, 16), n) for n in VALUES]
    check_calls(fn, calls, graphs=1, dynamic=True)


@pytest.mark.parametrize("fn", [scale, slice_stop, arange_n], ids=lambda f: f.__name__)
def test_int_argument_under_dynamic_false_compiles_per_value(fn):
    calls = [(torch.randn(16, 4), n) for n in VALUES]
    check_calls(fn, calls, graphs=len(VALUES), dynamic=False)


def test_int_and_size_both_dynamic():
    def f(x, n):
        return x[:, :n] * x.shape[0]

    calls = [(torch.randn(b, 9), n) for b, n in [(2, 3), (3, 3), (4, 5), (5, 6), (2, 7)]]
    check_calls(f, calls, max_graphs=3)


def test_python_use_specializes_each_value():
    def f(x, n):
        for _ in range(n):
            x = x * 2
        return x

    check_calls(f, [(torch.randn(3), n) for n in (1, 2, 3, 2, 1)], graphs=3)


def test_list_index_specializes():
    table = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]

    def f(x, n):
        return x * table[n] * n

    check_calls(f, [(torch.randn(3), n) for n in (2, 3, 4, 3)], graphs=3)


def test_comparison_guards_the_outcome_not_the_value():
    def f(x, n):
        if n > 3:
            return x * n
        return x - n

    counter, _ = check_calls(f, [(torch.randn(3), n) for n in (1, 2, 3, 5, 6, 7, 2, 9)], graphs=3)


def test_modulo_condition_on_a_counter():
    def f(x, step):
        if step % 4 == 0:
            return x * 0
        return x + step

    check_calls(f, [(torch.randn(3), s) for s in range(1, 12)], max_graphs=4)


def test_int_returned_is_recomputed():
    def f(x, n):
        return x * n, n + 1, n * 2

    check_calls(f, [(torch.randn(3), n) for n in VALUES], graphs=2)


def test_float_argument_becomes_symbolic():
    def f(x, lr):
        return x - lr * x.grad_like if False else x * lr

    check_calls(f, [(torch.randn(3), lr) for lr in (0.1, 0.05, 0.025, 0.0125)], graphs=2)


def test_float_used_in_python_is_pinned():
    def f(x, p):
        return x * round(p, 1)

    check_calls(f, [(torch.randn(3), p) for p in (0.11, 0.22, 0.33)], graphs=3)


def test_bool_argument_stays_specialized():
    def f(x, flag):
        return x * 2 if flag else x * 3

    check_calls(f, [(torch.randn(3), b) for b in (True, False, True, False)], graphs=2)


def test_int_that_becomes_a_zero_and_a_one():
    calls = [(torch.randn(8, 2), n) for n in (3, 4, 0, 1, 5, 6, 0, 1)]
    check_calls(slice_stop, calls, max_graphs=4)  # slicing guards 0 <= n and n >= 1 as torch's does


def test_negative_ints():
    calls = [(torch.randn(8, 2), n) for n in (3, -2, -4, 5)]
    check_calls(scale, calls, graphs=2)


STEP = 0


def cancelling_counter(x):
    """`step - step` over a dynamic counter simplifies to the number 0 (fuzz seed 26: the
    tracer took the folded number for a symbol and the frame ran eagerly)."""
    global STEP
    STEP += 1
    return x * ((STEP - STEP) % 7 - 3) + STEP


def _reset_step():
    global STEP
    STEP = 0


def test_expression_over_a_dynamic_int_that_folds_to_a_number():
    calls = [(torch.randn(3),) for _ in range(5)]
    check_calls(cancelling_counter, calls, graphs=2, reset=_reset_step, state=lambda: STEP)


# ---- arithmetic that may raise on a dynamic int: decided and guarded like a branch ---------

_LOG = []


def _divide_or_record(x, n):
    try:
        y = 1.0 / (n % 2)
        _LOG.append(y)
    except ZeroDivisionError as e:
        _LOG.append(str(e))
    return x + len(_LOG)


def _floor_divide(x, n):
    return x * (10 // (n - 3))


def _modulo(x, n):
    return x + 7 % (n - 4)


@pytest.mark.parametrize("fn", [_divide_or_record, _floor_divide, _modulo], ids=lambda f: f.__name__.strip("_"))
def test_division_by_a_dynamic_int_raises_as_eager(fn):
    """`n` goes dynamic after its first change; the calls where the divisor is zero raise (and
    are caught, or escape) exactly where eager's do, each with eager's message."""
    check_calls(fn, [(torch.ones(2), n) for n in (1, 3, 5, 2, 4, 7, 6, 9)],
                reset=_LOG.clear, state=lambda: list(_LOG), grads=False)
