"""Aliasing and mutation semantics: views of inputs, outputs that alias inputs or each
other, in-place ops through views, mutable defaults (eager vs compiled)."""
import pytest
import torch

import bytegraph
from helpers import assert_same, check, check_calls


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_returned_view_of_input_still_aliases_input(backend):
    def f(x):
        return x[0], x.view(-1), x.t()

    x_e, x_c = torch.randn(2, 3), torch.randn(2, 3)
    x_c.copy_(x_e)
    cf = bytegraph.compile(f, backend=backend)
    out_e, out_c = f(x_e), cf(x_c)
    assert_same(out_e, out_c, "views")
    x_e.add_(100)
    x_c.add_(100)
    assert_same(out_e, out_c, "views after the input was mutated")


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_view_taken_before_input_mutation_sees_it(backend):
    def f(x):
        y = x[1:]
        x.mul_(2)
        return y + 0, y

    check(f, torch.randn(4), backend=backend)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_mutation_through_view_of_input(backend):
    def f(x):
        v = x.view(2, 2)
        v[0, 0] = 42.0
        v.t()[1].zero_()
        return x.sum()

    check(f, torch.randn(4), backend=backend)


def test_returned_same_list_twice_is_one_object():
    def f(x):
        l = [x * 2]
        d = {"a": x + 1}
        return l, l, d, d

    check(f, torch.randn(2), graphs=1)


def test_returned_same_tensor_twice_is_one_object():
    def f(x):
        y = x * 2
        return y, y, [y]

    check(f, torch.randn(2), graphs=1)


def test_returned_input_inside_new_container():
    def f(x, y):
        return [x, y * 2, x], {"x": x}

    check(f, torch.randn(2), torch.randn(2), graphs=1)


def test_mutable_default_argument_accumulates():
    def f(x, acc=[]):  # noqa: B006  (the trap itself)
        acc.append(x.shape[0])
        return x * len(acc)

    e_default, c_default = [], []
    f_e = _with_default(f, e_default)
    f_c = _with_default(f, c_default)
    cf = bytegraph.compile(f_c)
    x = torch.ones(2)
    for i in range(3):
        assert_same(f_e(x), cf(x), f"call {i}")
    assert_same(e_default, c_default, "the default list after the calls")


def _with_default(fn, default):
    import types

    return types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, (default,), fn.__closure__)


def test_inplace_on_leaf_requiring_grad_raises_like_eager():
    def f(x):
        x.add_(1)
        return x

    check(f, torch.randn(3, requires_grad=True))


def test_inplace_on_input_under_no_grad_with_requires_grad():
    def f(x):
        with torch.no_grad():
            x.mul_(2)
        return x * 3

    check(f, torch.randn(3, requires_grad=True))


def test_input_requires_grad_toggled_inside():
    def f(x):
        x.requires_grad_(True)
        return (x * 2).sum()

    check(f, torch.randn(3))


def test_tensor_attribute_set_on_input():
    def f(x):
        x.tag = "seen"
        return x + 1

    check(f, torch.randn(2))


def test_global_tensor_mutated_in_place():
    def f(x):
        _GLOBAL_BUF.add_(x)
        return _GLOBAL_BUF * 2

    def setup():
        _GLOBAL_BUF.zero_()

    check(f, torch.ones(3), setup=setup, state=lambda: _GLOBAL_BUF.clone(), graphs=1)


_GLOBAL_BUF = torch.zeros(3)


def test_data_attribute_mutation():
    def f(x):
        x.data.mul_(2)
        return x * 1

    check(f, torch.randn(3, requires_grad=True))


def test_read_grad_attribute_of_input():
    def f(x):
        g = x.grad
        if g is None:
            return x * 2
        return x * g

    x = torch.randn(3, requires_grad=True)
    check(f, x)
    x.grad = torch.full((3,), 3.0)
    check(f, x)


def test_list_default_not_mutated_stays_shared():
    def f(x, opts=("a", "b")):
        return x * len(opts)

    check_calls(f, torch.randn(2), calls=2, graphs=1)


def test_set_and_read_python_attribute_on_intermediate_tensor():
    def f(x):
        y = x * 2
        y.note = 3
        return y + y.note

    check(f, torch.randn(2))


def test_out_argument_is_returned_as_itself():
    def f(a, b, c):
        y = torch.add(a, b, out=c)
        z = torch.add(c, b, out=c)  # the same op on the same metadata: not answered from the fake memo
        return y is c, z is c, y

    check(f, torch.randn(3), torch.randn(3), torch.zeros(3), graphs=1)


def test_out_tuple_results_are_the_out_tensors():
    def f(x, v, i):
        r = torch.max(x, 0, out=(v, i))
        return r, r[0] is v, r[1] is i, r.values is v

    check(f, torch.randn(3, 4), torch.empty(4), torch.empty(4, dtype=torch.long), graphs=1, fullgraph=True)
