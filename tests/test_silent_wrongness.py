"""Places where graph-capture JITs are known to be silently wrong: guards on the absence of
an attribute, key or global; side effects before a raise; iterators and generators partly
consumed; the identity of arguments across calls; hooks; float/int arithmetic on sizes;
view-ness and storage sharing. Each test is differential; the stateful ones call the same
objects repeatedly (helpers.check_calls) so that state carried between calls must steer
later calls."""
import math

import pytest
import torch

import bytegraph
from helpers import CompileCounter, assert_same, check, check_calls, check_sequence
from support import other_module

G_LOG = []
G_SOURCE = torch.ones(2)


class Obj:
    pass


# ------------------------------------------------------------------ guards on absence


def test_getattr_default_then_attribute_created():
    def f(obj, x):
        n = getattr(obj, "n", 0) + 1
        obj.n = n
        return x * n

    check_calls(f, Obj(), torch.randn(2), calls=4)


def test_hasattr_then_attribute_created():
    def f(obj, x):
        if hasattr(obj, "cache"):
            return x + obj.cache
        obj.cache = x * 2
        return x

    check_calls(f, Obj(), torch.randn(2), calls=3)


def test_dict_key_absent_then_inserted():
    def f(d, x):
        if "k" in d:
            d["k"] = d["k"] + 1
        else:
            d["k"] = 0
        return x * d["k"]

    check_calls(f, {}, torch.randn(2), calls=3)


def test_global_absent_then_created():
    def f(x):
        g = globals()
        v = g.get("_TRAPS_LAZY_GLOBAL", 1)
        g["_TRAPS_LAZY_GLOBAL"] = v + 1
        return x * v

    def series(fn):
        globals().pop("_TRAPS_LAZY_GLOBAL", None)
        x = torch.ones(2)
        outs = [fn(x) for _ in range(3)]
        return outs, globals().pop("_TRAPS_LAZY_GLOBAL", None)

    eager = series(f)
    compiled = series(bytegraph.compile(f))
    assert_same(eager, compiled, "outputs and final global")


def test_module_global_created_by_other_function_between_calls():
    def f(x):
        return x * getattr(other_module, "LATE", 1)

    cf = bytegraph.compile(f)
    x = torch.ones(2)
    try:
        assert_same(f(x), cf(x), "before LATE exists")
        other_module.LATE = 5
        assert_same(f(x), cf(x), "after LATE was created")
    finally:
        other_module.__dict__.pop("LATE", None)


def test_list_grows_between_calls():
    def f(xs, x):
        xs.append(len(xs))
        return x * sum(xs)

    check_calls(f, [], torch.randn(2), calls=4)


# ------------------------------------------------------------------ raising after side effects


def test_side_effects_before_raise_happen():
    def f(x, log, d):
        log.append("a")
        d["seen"] = x.shape[0]
        x.add_(1)
        print("about to fail")
        raise RuntimeError("user failure")

    check(f, torch.zeros(2), [], {})


def test_side_effects_in_inlined_callee_before_raise():
    def helper(log, x):
        log.append(x.shape)
        G_LOG.append(1)
        return x[10]  # IndexError

    def f(x, log):
        y = x * 2
        return helper(log, y)

    check(f, torch.zeros(3), [], setup=G_LOG.clear, state=lambda: list(G_LOG))


def test_raise_inside_except_block():
    def f(x):
        try:
            {}["missing"]
        except KeyError as e:
            raise ValueError(f"converted {x.shape[0]}") from e

    check(f, torch.randn(4))


def test_bare_reraise_in_except():
    def f(x, log):
        try:
            return x[5]
        except IndexError:
            log.append("handler ran")
            raise

    check(f, torch.randn(2), [])


def test_exception_caught_by_user_continues():
    def f(x):
        try:
            y = x @ torch.ones(5, 5)
        except RuntimeError:
            y = x * 2
        return y

    check(f, torch.randn(3, 2))


# ------------------------------------------------------------------ iterators and stateful objects


def test_iterator_partly_consumed_is_left_like_eager():
    def f(it, x):
        a = next(it)
        b = next(it)
        return x * a + b

    it_e = iter([1, 2, 3, 4, 5])
    it_c = iter([1, 2, 3, 4, 5])
    cnt = CompileCounter()
    cf = bytegraph.compile(f, backend=cnt)
    x = torch.randn(2)
    assert_same(f(it_e, x), cf(it_c, x), "first call")
    assert_same(f(it_e, x), cf(it_c, x), "second call")
    assert_same(list(it_e), list(it_c), "rest of the iterator")


def test_iterator_consumed_around_unsupported_print():
    def f(it, x):
        a = next(it)
        print("between", a)
        b = next(it)
        return x * a + b

    it_e = iter([1, 2, 3, 4, 5, 6])
    it_c = iter([1, 2, 3, 4, 5, 6])
    cf = bytegraph.compile(f)
    x = torch.randn(2)
    import contextlib
    import io

    for i in range(2):
        be, bc = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(be):
            e = f(it_e, x)
        with contextlib.redirect_stdout(bc):
            c = cf(it_c, x)
        assert_same(e, c, f"call {i}")
        assert be.getvalue() == bc.getvalue()
    assert_same(list(it_e), list(it_c), "rest of the iterator")


def test_generator_partly_consumed():
    def gen():
        for i in range(6):
            yield i

    def f(g, x):
        return x * next(g) + next(g)

    g_e, g_c = gen(), gen()
    cf = bytegraph.compile(f)
    x = torch.randn(2)
    assert_same(f(g_e, x), cf(g_c, x), "first call")
    assert_same(f(g_e, x), cf(g_c, x), "second call")
    assert_same(list(g_e), list(g_c), "rest of the generator")


def test_zip_over_input_iterator_stops_like_eager():
    def f(it, x):
        out = x
        for a, b in zip(it, range(2)):
            out = out + a * b
        return out

    it_e, it_c = iter([1, 2, 3, 4]), iter([1, 2, 3, 4])
    cf = bytegraph.compile(f)
    x = torch.randn(2)
    assert_same(f(it_e, x), cf(it_c, x), "output")
    # zip pulled a third element from `it` before noticing range(2) was exhausted
    assert_same(list(it_e), list(it_c), "rest of the iterator")


# ------------------------------------------------------------------ identity of arguments across calls


def _broken_helper(t):
    print("break in callee")
    return t + 1


def test_callee_after_break_does_not_bake_in_argument_identity():
    def f(x, use_global):
        t = G_SOURCE if use_global else x
        return _broken_helper(t) * 2

    check_sequence(f, [(torch.randn(2), True), (torch.randn(2), False), (torch.randn(2), True)])


def test_same_object_passed_twice_vs_two_objects():
    def f(a, b):
        a.add_(1)
        return b * 2

    cnt = CompileCounter()
    cf = bytegraph.compile(f, backend=cnt)
    x_e, x_c = torch.zeros(2), torch.zeros(2)
    assert_same(f(x_e, x_e), cf(x_c, x_c), "aliased arguments")
    y_e, z_e = torch.zeros(2), torch.zeros(2)
    y_c, z_c = torch.zeros(2), torch.zeros(2)
    assert_same(f(y_e, z_e), cf(y_c, z_c), "distinct arguments")
    assert_same(x_e, x_c, "mutated aliased argument")
    x_e2, x_c2 = torch.zeros(2), torch.zeros(2)
    assert_same(f(x_e2, x_e2), cf(x_c2, x_c2), "aliased arguments again")


def test_input_views_aliasing():
    def f(a, b):
        a.mul_(2)
        return b + 1

    base_e = torch.arange(6.0)
    base_c = torch.arange(6.0)
    cf = bytegraph.compile(f)
    assert_same(f(base_e[:4], base_e[2:]), cf(base_c[:4], base_c[2:]), "overlapping views")
    assert_same(base_e, base_c, "base after mutation through a view")


# ------------------------------------------------------------------ hooks


def test_register_hook_on_input():
    def f(x):
        x.register_hook(lambda g: g * 3)
        return (x * x).sum()

    check(f, torch.randn(3, requires_grad=True))


def test_hook_handle_removed_before_backward():
    def f(x):
        h = x.register_hook(lambda g: g * 100)
        y = (x * 2).sum()
        h.remove()
        return y

    check(f, torch.randn(3, requires_grad=True))


def test_hook_on_intermediate():
    def f(x):
        y = x * 2
        y.register_hook(lambda g: g + 1)
        return y.sum()

    check(f, torch.randn(3, requires_grad=True))


# ------------------------------------------------------------------ float/int arithmetic on sizes

SIZE_ARITH = {
    "truediv_is_float": lambda x: (x.shape[0] / 2, type(x.shape[0] / 2).__name__, x.sum()),
    "floordiv_mod": lambda x: (x.shape[0] // 4, x.shape[0] % 4, -x.shape[0] // 4, x * 1),
    "pow_negative": lambda x: (x.shape[0] ** -1, x.shape[0] ** 2, x.shape[1] ** 0.5, x + 1),
    "int_of_float": lambda x: (int(x.shape[0] / 3), round(x.shape[0] / 4), math.floor(x.shape[0] * 0.7), x - 1),
    "shift_and_bitops": lambda x: (1 << x.shape[0], x.shape[0] & 3, x.shape[0] | 8, x.cos()),
    "float_size_in_tensor_op": lambda x: x * (x.shape[0] / 3) + x.shape[1] ** 0.5,
    "compare_with_float": lambda x: (x.shape[0] > 2.5, x.shape[0] == 5.0, x.numel() / x.shape[1], x * 2),
}


@pytest.mark.parametrize("name", list(SIZE_ARITH))
def test_size_arithmetic(name):
    check(SIZE_ARITH[name], torch.randn(5, 3), graphs=1)


@pytest.mark.parametrize(
    "fn",
    [
        lambda x: x * (x.shape[0] // (x.shape[1] - 3)),  # ZeroDivisionError
        lambda x: x * (x.shape[0] % 0),  # ZeroDivisionError
        lambda x: x * math.sqrt(-x.shape[0]),  # ValueError: math domain error
        lambda x: x * (1 << -x.shape[0]),  # ValueError: negative shift count
        lambda x: x.view(x.shape[0] / 1),  # TypeError: float size
    ],
    ids=["floordiv_zero", "mod_zero", "math_domain", "negative_shift", "float_view_size"],
)
def test_size_arithmetic_errors_match_eager(fn):
    check(fn, torch.randn(5, 3))


def test_python_side_effects_happen_once_per_call():
    def f(x, log):
        log.append(len(log))
        for i in range(2):
            log.append(i)
        return x + len(log)

    check_calls(f, torch.randn(2), [], calls=3)


# ------------------------------------------------------------------ view-ness and storage sharing


@pytest.mark.parametrize("read", [lambda x, y: x._is_view(), lambda x, y: torch.Tensor._is_view(x),
                                  lambda x, y: x.is_set_to(y)], ids=["_is_view", "Tensor._is_view", "is_set_to"])
def test_view_and_storage_reads_are_not_folded(read):
    # tensor guards pin shape and strides, not whether an input is a view or shares storage
    def f(x, y):
        return read(x, y), x + 1

    cf = bytegraph.compile(f, backend="eager")
    plain, base = torch.randn(3, 4), torch.randn(3, 4)
    for x, y in ((plain, base), (base[:3], base), (base, base[:3].view(3, 4))):
        assert_same(f(x, y), cf(x, y), "a read of view-ness or storage sharing")
