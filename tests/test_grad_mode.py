"""Grad-mode context managers inside compiled functions: requires_grad of the outputs and
gradients must equal eager (helpers.check compares both)."""
import pytest
import torch

import bytegraph
from helpers import CompileCounter, check


def _no_grad_block(x):
    y = x * 2
    with torch.no_grad():
        z = x * 3
    return y + z, z


def _enable_grad_inside_no_grad(x):
    with torch.no_grad():
        a = x * 2
        with torch.enable_grad():
            b = x * 3
        c = x * 4
    return a, b, c


def _set_grad_enabled_false(x):
    with torch.set_grad_enabled(False):
        a = x.sin()
    b = x.cos()
    return a, b


def _set_grad_enabled_from_flag(x, flag):
    with torch.set_grad_enabled(flag):
        a = x * 5
    return a, a.requires_grad


def _is_grad_enabled_read(x):
    with torch.no_grad():
        inside = torch.is_grad_enabled()
        y = x + 1
    return y, inside, torch.is_grad_enabled(), x * 2


def _no_grad_decorator_on_helper(x):
    @torch.no_grad()
    def helper(t):
        return t * 10

    return helper(x) + x


def _inplace_in_no_grad_on_intermediate(x):
    y = x * 2
    with torch.no_grad():
        y.add_(1)  # not recorded by autograd
    return y * x


def _detach_vs_no_grad(x):
    a = x.detach() * x
    with torch.no_grad():
        b = x.exp()
    return a + b


def _inference_of_requires_grad_inside(x):
    with torch.no_grad():
        y = x * 2
    y.requires_grad_(True)
    return y * x


def _return_inside_with(x):
    with torch.no_grad():
        return x * 2, torch.is_grad_enabled()


def _exception_inside_no_grad_restores_mode(x):
    try:
        with torch.no_grad():
            y = x * 2
            raise KeyError("inside")
    except KeyError:
        pass
    return y, x * 3, torch.is_grad_enabled()


@pytest.mark.parametrize(
    "fn",
    [
        _no_grad_block,
        _enable_grad_inside_no_grad,
        _set_grad_enabled_false,
        _is_grad_enabled_read,
        _no_grad_decorator_on_helper,
        _inplace_in_no_grad_on_intermediate,
        _detach_vs_no_grad,
        _return_inside_with,
    ],
    ids=lambda f: f.__name__,
)
def test_grad_mode_inside(fn):
    check(fn, torch.randn(3, requires_grad=True), graphs=1)


@pytest.mark.parametrize("flag", [True, False])
def test_set_grad_enabled_from_argument(flag):
    check(_set_grad_enabled_from_flag, torch.randn(3, requires_grad=True), flag, graphs=1)


def test_requires_grad_set_on_no_grad_result():
    check(_inference_of_requires_grad_inside, torch.randn(3, requires_grad=True))


def test_exception_inside_no_grad_restores_mode():
    check(_exception_inside_no_grad_restores_mode, torch.randn(3, requires_grad=True))


def test_called_under_outer_no_grad():
    def f(x):
        return x * 2, torch.is_grad_enabled()

    with torch.no_grad():
        check(f, torch.randn(3, requires_grad=True), graphs=1)


def test_enable_grad_inside_when_called_under_no_grad():
    def f(x):
        with torch.enable_grad():
            y = x * 2
        return y, y.requires_grad, x + 1

    with torch.no_grad():
        check(f, torch.randn(3, requires_grad=True), graphs=1)


def test_grad_mode_is_restored_after_compiled_call():
    def f(x):
        torch.set_grad_enabled(False)
        y = x * 2
        torch.set_grad_enabled(True)
        return y

    check(f, torch.randn(3, requires_grad=True), state=torch.is_grad_enabled)


def test_backward_through_captured_graph_with_several_inputs():
    def f(x, w, b):
        h = torch.tanh(x @ w + b)
        return (h ** 2).mean(), h

    check(
        f,
        torch.randn(4, 3),
        torch.randn(3, 5, requires_grad=True),
        torch.randn(5, requires_grad=True),
        graphs=1,
    )


def test_inference_mode_block():
    def f(x):
        with torch.inference_mode():
            y = x * 2
        return y, y.requires_grad, x.sin()

    r = check(f, torch.randn(3, requires_grad=True))
    assert r.eager.out[0].is_inference() == r.compiled.out[0].is_inference()


def test_called_under_inference_mode():
    def f(x):
        return x.exp() + 1

    with torch.inference_mode():
        r = check(f, torch.randn(3))
        assert r.eager.out.is_inference() == r.compiled.out.is_inference()


def test_no_grad_as_decorator_on_compiled_function():
    @torch.no_grad()
    def f(x):
        return x * 2, torch.is_grad_enabled()

    check(f, torch.randn(3, requires_grad=True))


def test_grad_of_grad_via_autograd_grad_outside():
    def f(x):
        return (x ** 3).sum()

    import bytegraph

    x_e = torch.randn(3, requires_grad=True)
    x_c = x_e.detach().clone().requires_grad_()
    cf = bytegraph.compile(f)
    (g_e,) = torch.autograd.grad(f(x_e), x_e, create_graph=True)
    (g_c,) = torch.autograd.grad(cf(x_c), x_c, create_graph=True)
    from helpers import assert_same

    assert_same(g_e, g_c, "first derivative")
    (gg_e,) = torch.autograd.grad(g_e.sum(), x_e)
    (gg_c,) = torch.autograd.grad(g_c.sum(), x_c)
    assert_same(gg_e, gg_c, "second derivative")


def _grad_context_made_before_a_break(x):
    ctx = torch.no_grad()
    made_in_a_tuple = (torch.enable_grad(), bytegraph.graph_break())[0]
    y = x * 2
    bytegraph.graph_break()
    with ctx:
        z = y * 3
        with made_in_a_tuple:
            w = y * 4
    return z, w


def test_grad_context_made_before_a_break_is_rebuilt_for_the_resumed_code():
    """A `no_grad()`/`enable_grad()` object never entered before a break is made anew by the
    residual code (it holds no state until entered): one of the frames is not run eagerly."""
    result = check(_grad_context_made_before_a_break, torch.randn(3, requires_grad=True), graphs=2)
    assert result.counter.op_count == 5  # x*2; then y*3 and y*4 with their three switches


def _empty_grad_blocks(x):
    y = x * 2
    with torch.no_grad():
        with torch.enable_grad():
            pass
    with torch.no_grad():
        pass
    return y + 1


def test_grad_switches_with_nothing_between_are_dropped():
    """As torch.compile's: a block that records no op leaves no switch in the graph."""
    counter = CompileCounter()
    check(_empty_grad_blocks, torch.randn(3, requires_grad=True), backend=counter, graphs=1)
    assert [str(t) for t in counter.ops()] == ["<built-in function mul>", "<built-in function add>"]


def _switches_around_an_op(x):
    with torch.no_grad():
        y = x * 2
    with torch.no_grad():
        pass
    return y + x


def test_grad_switches_around_an_op_stay():
    counter = CompileCounter()
    check(_switches_around_an_op, torch.randn(3, requires_grad=True), backend=counter, graphs=1)
    assert counter.ops().count(torch._C._set_grad_enabled) == 2


def _raw_grad_switches(x):
    torch._C._set_grad_enabled(False)
    y = x * 2
    torch._C._set_grad_enabled(True)
    return y + x, y.requires_grad


def test_raw_grad_switch_is_traced():
    """`torch._C._set_grad_enabled`, as a real grad-mode object's `__enter__` calls it."""
    check(_raw_grad_switches, torch.randn(3, requires_grad=True), graphs=1)


def _real_no_grad_object(x, ctx):
    with ctx:
        y = x * 2
    return y + x, ctx.prev


def test_real_no_grad_object_is_entered_in_the_trace():
    check(_real_no_grad_object, torch.randn(3, requires_grad=True), torch.no_grad(), graphs=1)
