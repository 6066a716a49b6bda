"""Cells and free variables: closures over locals, tensors and functions; nonlocal writes
(eager vs compiled)."""
import torch

from helpers import check
from support import other_module


def _make_scaler(k):
    def scale(x):
        return x * k

    return scale


def _make_counter():
    count = 0

    def inc(x):
        nonlocal count
        count += 1
        return x + count

    return inc


def test_closure_over_int_created_outside():
    check(_make_scaler(3), torch.randn(3), graphs=1)


def test_closure_over_tensor_created_outside():
    w = torch.randn(3, requires_grad=True)

    def f(x):
        return x * w

    r = check(f, torch.randn(3, requires_grad=True), graphs=1)
    assert r.counter.frame_count == 1


def test_closure_nonlocal_counter_outside_state_is_shared():
    # the compiled function mutates a cell that lives outside it
    inc_e = _make_counter()
    inc_c = _make_counter()
    import bytegraph
    from helpers import CompileCounter, assert_same

    cnt = CompileCounter()
    compiled = bytegraph.compile(inc_c, backend=cnt)
    x = torch.randn(2)
    for _ in range(3):
        assert_same(inc_e(x), compiled(x), "inc(x)")
    assert_same(inc_e.__closure__[0].cell_contents, inc_c.__closure__[0].cell_contents, "cell")


def test_inner_closure_defined_and_called_inside():
    def f(x, k):
        def g(t):
            return t * k + x

        return g(x) + g(1)

    check(f, torch.randn(3), 2, graphs=1)


def test_nonlocal_write_inside_compiled_function():
    def f(x):
        acc = x * 0

        def add(t):
            nonlocal acc
            acc = acc + t

        add(x)
        add(x * 2)
        return acc

    check(f, torch.randn(3, requires_grad=True), graphs=1)


def test_closure_cell_rebound_after_inner_def():
    def f(x):
        k = 1

        def g():
            return x * k

        a = g()
        k = 5
        return a, g()

    check(f, torch.randn(3), graphs=1)


def test_closure_over_loop_variable_late_binding():
    def f(x):
        fns = [lambda t: t * i for i in range(3)]
        return [fn(x) for fn in fns]

    check(f, torch.randn(2), graphs=1)


def test_nested_closure_three_levels():
    def f(x):
        a = 2

        def outer(y):
            b = 3

            def inner(z):
                return z * a + y * b

            return inner(y + 1)

        return outer(x)

    check(f, torch.randn(3, requires_grad=True), graphs=1)


def test_closure_from_other_module_factory():
    add5 = other_module.make_adder(5)

    def f(x):
        return add5(x) * 2

    check(f, torch.randn(3), graphs=1)


def test_closure_over_module_and_function():
    lin = torch.nn.Linear(3, 2)
    act = torch.relu

    def f(x):
        return act(lin(x))

    check(f, torch.randn(4, 3), graphs=1)


def test_closure_over_list_mutated_inside():
    log = []

    def f(x):
        log.append(x.shape[0])
        return x * len(log)

    check(f, torch.randn(3), setup=log.clear, state=lambda: list(log))


def test_cell_variable_in_comprehension_and_lambda():
    def f(x, n):
        scale = n * 2
        g = lambda t: t * scale  # noqa: E731
        return [g(x) + j for j in range(n)]

    check(f, torch.randn(2), 3, graphs=1)


def test_returned_closure_is_callable_and_correct():
    def f(x):
        y = x * 2

        def g(z):
            return z + y

        return g

    x = torch.randn(3)
    import bytegraph
    from helpers import assert_same

    g_eager = f(x.clone())
    g_comp = bytegraph.compile(f)(x.clone())
    z = torch.randn(3)
    assert_same(g_eager(z), g_comp(z), "returned closure applied")
