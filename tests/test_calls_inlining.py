"""Calls of user functions from compiled code: argument binding, inlining, functions in
other modules, methods, recursion (eager vs compiled)."""
import functools

import pytest
import torch

import bytegraph

from helpers import check
from support import other_module


def _helper_all_kinds(a, b=2, *args, c, d=4, **kwargs):
    out = a * b + c * d
    for v in args:
        out = out + v
    for k in sorted(kwargs):
        out = out - kwargs[k]
    return out


CALLS = {
    "positional": lambda x: _helper_all_kinds(x, 3, c=1),
    "keyword_for_positional": lambda x: _helper_all_kinds(a=x, b=5, c=2),
    "default_used": lambda x: _helper_all_kinds(x, c=2),
    "kwonly_override_default": lambda x: _helper_all_kinds(x, c=2, d=7),
    "extra_positional_to_star_args": lambda x: _helper_all_kinds(x, 1, x, x * 2, c=1),
    "extra_keywords_to_star_kwargs": lambda x: _helper_all_kinds(x, c=1, z=x, y=3),
    "splat_args": lambda x: _helper_all_kinds(*[x, 2, x], c=3),
    "splat_kwargs": lambda x: _helper_all_kinds(x, **{"c": 2, "q": x}),
    "splat_both": lambda x: _helper_all_kinds(*(x,), **{"c": 1, "d": 0}),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_call_binding(name):
    check(CALLS[name], torch.randn(3, requires_grad=True), graphs=1)


def test_missing_required_argument_raises_type_error():
    def f(x):
        y = x + 1
        return _helper_all_kinds(y, 2)  # c is missing

    check(f, torch.randn(2))


def test_unexpected_keyword_raises_type_error():
    def g(a):
        return a

    def f(x):
        return g(x + 1, b=2)

    check(f, torch.randn(2))


def test_compiled_fn_called_with_keywords_and_defaults():
    def f(x, y=None, *, scale=2.0):
        if y is not None:
            x = x + y
        return x * scale

    check(f, torch.randn(2), graphs=1)
    check(f, torch.randn(2), y=torch.randn(2), scale=3.0, graphs=1)
    check(f, x=torch.randn(2), graphs=1)


def test_compiled_fn_with_star_args_and_kwargs():
    def f(*args, **kwargs):
        out = args[0]
        for a in args[1:]:
            out = out + a
        for k, v in kwargs.items():
            out = out * v
        return out, len(args), sorted(kwargs)

    check(f, torch.randn(2), torch.randn(2), torch.randn(2), alpha=2, beta=3, graphs=1)


def test_forwarding_args_kwargs_wrapper():
    def inner(x, scale, *, shift):
        return x * scale + shift

    def wrapper(*args, **kwargs):
        return inner(*args, **kwargs)

    def f(x):
        return wrapper(x, 2, shift=1) + wrapper(x, scale=3, shift=0)

    check(f, torch.randn(3, requires_grad=True), graphs=1)


def test_other_module_functions():
    def f(x):
        a, b = other_module.pair(x)
        return other_module.affine(a, 3, bias=b) + other_module.variadic(x, x, k=x)

    check(f, torch.randn(3, requires_grad=True), graphs=1)


def test_other_module_class_and_methods():
    def f(x):
        p = other_module.Point(x, x + 1)
        return p.scaled(2).norm2()

    check(f, torch.randn(3, requires_grad=True), graphs=1)


def test_other_module_closure_factory():
    def f(x):
        add3 = other_module.make_adder(3)
        return add3(x) * 2

    check(f, torch.randn(3), graphs=1)


def test_recursion_in_same_module():
    def fact(n):
        return 1 if n <= 1 else n * fact(n - 1)

    def f(x):
        return x * fact(5)

    check(f, torch.randn(3), graphs=1)


@pytest.mark.parametrize("depth", [1, 4, 8])
def test_recursion_over_tensor(depth):
    def f(x):
        return other_module.recursive_sum(x, depth)

    check(f, torch.randn(3, requires_grad=True), graphs=1)


def test_mutual_recursion():
    def is_even(n, x):
        return x if n == 0 else is_odd(n - 1, x * 2)

    def is_odd(n, x):
        return x if n == 0 else is_even(n - 1, x + 1)

    def f(x):
        return is_even(5, x)

    check(f, torch.randn(3), graphs=1)


def test_deep_recursion_limit_matches_eager():
    """A runaway recursion raises eager's RecursionError. Its message names where CPython found
    the stack full ("... while calling a Python object" when a C call hit the limit, nothing more
    when a Python frame did), which depends on the frames each run has, so the message is compared
    up to that suffix; nothing else may differ."""
    def down(n, x):
        return down(n - 1, x + 1)  # no base case: RecursionError eagerly

    def f(x):
        return down(10, x)

    raised = []
    for fn in (f, bytegraph.compile(f)):
        with pytest.raises(RecursionError) as info:
            fn(torch.randn(2))
        raised.append(str(info.value))
    assert [m.removesuffix(" while calling a Python object") for m in raised] == \
        ["maximum recursion depth exceeded"] * 2, raised


def test_nested_def_with_defaults_and_closure():
    def f(x, k):
        def g(t, p=k + 1, *, q=2):
            return t * p + q * k

        return g(x) + g(x, 0, q=5)

    check(f, torch.randn(3), 3, graphs=1)


def test_nested_def_defaults_evaluated_at_def_time():
    def f(x):
        fns = []
        for i in range(3):
            def g(t, i=i):
                return t * i

            fns.append(g)
        return [fn(x) for fn in fns]

    check(f, torch.randn(3), graphs=1)


def test_functools_partial_of_user_and_torch_functions():
    def f(x):
        p = functools.partial(_helper_all_kinds, c=2, d=1)
        s = functools.partial(torch.sum, dim=0)
        return p(x, 3) + s(x)

    check(f, torch.randn(3, 3), graphs=1)


def test_method_calls_on_user_objects_passed_in():
    class Layer:
        def __init__(self, w):
            self.w = w

        def __call__(self, x):
            return self.forward(x)

        def forward(self, x):
            return x @ self.w

    def f(layers, x):
        for layer in layers:
            x = layer(x).relu()
        return x

    layers = [Layer(torch.randn(4, 4, requires_grad=True)) for _ in range(3)]
    check(f, layers, torch.randn(2, 4), graphs=1)


def test_nn_module_call():
    torch.manual_seed(1)
    mod = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))

    def f(m, x):
        return m(x).sum(dim=1)

    check(f, mod, torch.randn(3, 4), graphs=1)


def test_user_decorator_wrapping_inner_function():
    def twice(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs) * 2

        return wrapper

    @twice
    def inner(x, y=1):
        return x + y

    def f(x):
        return inner(x, y=3)

    check(f, torch.randn(3), graphs=1)


def test_generator_function_consumed_inside():
    def gen(x, n):
        for i in range(n):
            yield x * i

    def f(x):
        return sum(gen(x, 4)), list(gen(x, 2))

    check(f, torch.randn(3))


def test_super_call_in_method():
    class Base:
        def scale(self, x):
            return x * 2

    class Child(Base):
        def scale(self, x):
            return super().scale(x) + 1

    def f(obj, x):
        return obj.scale(x)

    check(f, Child(), torch.randn(3), graphs=1)


def test_call_returning_multiple_values_and_none():
    def nothing(x):
        x.add_(1)

    def f(x):
        r = nothing(x)
        return r, x * 2

    check(f, torch.randn(3), graphs=1)


def test_calling_builtin_method_of_tensor_via_unbound_attribute():
    def f(x):
        return torch.Tensor.add(x, 1), torch.Tensor.sum(x, dim=0)

    check(f, torch.randn(2, 2), graphs=1)


def test_compiled_function_calls_another_compiled_function():
    import bytegraph

    def inner(x):
        return x.sin() * 2

    inner_c = bytegraph.compile(inner)

    def outer_e(x):
        return inner(x) + 1

    def outer_c(x):
        return inner_c(x) + 1

    cf = bytegraph.compile(outer_c)
    x = torch.randn(3, requires_grad=True)
    from helpers import assert_same

    assert_same(outer_e(x), cf(x), "outer(inner(x))")
    assert_same(outer_e(x), cf(x), "second call")


def test_compiled_function_recursing_into_itself():
    import bytegraph

    def f(x, n):
        if n == 0:
            return x
        return cf(x * 2, n - 1) + 1

    cf = bytegraph.compile(f)

    def f_e(x, n):
        return x if n == 0 else f_e(x * 2, n - 1) + 1

    from helpers import assert_same

    x = torch.randn(2)
    assert_same(f_e(x, 3), cf(x, 3), "recursion through the compiled wrapper")
