"""Custom `torch.autograd.Function`s applied where no gradient flows (grad mode off, or no
tensor argument requires grad): `forward` is traced in place with a trace-time ctx
(`vars/autograd_function.py`), under grad mode off as eager runs it; an input returned
unchanged is a new view of it, a dirty one is itself. Where a gradient flows, forward and
backward are captured as one op (tests/test_autograd_function_training.py)."""
import pytest
import torch

import bytegraph
from helpers import check


def gelu_forward(x):  # an inlined helper, as transformers' BLOOM writes it
    return x * 0.5 * (1.0 + torch.tanh(0.79788456 * x * (1 + 0.044715 * x * x)))


class GeLU(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return gelu_forward(x)

    @staticmethod
    def backward(ctx, grad):
        (x,) = ctx.saved_tensors
        return grad * 3 * x  # not gelu's gradient: shows whose backward ran


class Scaled(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, scale, shift=1.0):
        ctx.scale = scale
        ctx.mark_non_differentiable()
        ctx.set_materialize_grads(False)
        ctx.save_for_backward(x)
        bonus = 10.0 if ctx.needs_input_grad[0] else 0.0
        return x * ctx.scale + shift + bonus, scale * 2

    @staticmethod
    def backward(ctx, grad, _):
        return grad * ctx.scale, None, None


class Same(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        return x, y + 1

    @staticmethod
    def backward(ctx, gx, gy):
        return gx, gy


class Dirty(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        x.add_(1)
        ctx.mark_dirty(x)
        return x

    @staticmethod
    def backward(ctx, g):
        return g


def test_under_no_grad_in_one_graph():
    def fn(x):
        with torch.no_grad():
            return GeLU.apply(x) + Scaled.apply(x, 3.0)[0]

    check(fn, torch.randn(4, requires_grad=True), graphs=1, fullgraph=True)


def test_inputs_without_grad_under_grad_mode_in_one_graph():
    def fn(x):
        y, doubled = Scaled.apply(x * 2, 1.5, shift=2.0)
        return GeLU.apply(y) * doubled, torch.is_grad_enabled()

    check(fn, torch.randn(4), graphs=1, fullgraph=True)


def test_needs_input_grad_under_no_grad_is_eagers():
    def fn(x, y):
        with torch.no_grad():
            return Scaled.apply(x, 2.0)[0] + Scaled.apply(y, 2.0)[0]

    check(fn, torch.randn(3, requires_grad=True), torch.randn(3), graphs=1, fullgraph=True)


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        return GeLU.apply(self.lin(x))


def test_inside_a_module_under_no_grad():
    model = Block()
    x = torch.randn(2, 4)
    with torch.no_grad():
        expected = model(x)
        bytegraph.reset()
        got = bytegraph.compile(model, fullgraph=True)(x)
    torch.testing.assert_close(got, expected, rtol=0, atol=0)
    assert not got.requires_grad


def test_across_a_graph_break():
    def fn(x):
        with torch.no_grad():
            y = GeLU.apply(x)
            bytegraph.graph_break()
            return GeLU.apply(y) + 1

    check(fn, torch.randn(4), graphs=2)


def test_an_input_returned_unchanged_is_a_new_view():
    def fn(x, y):
        with torch.no_grad():
            a, b = Same.apply(x, y)
        return a, b, a is x

    check(fn, torch.randn(3), torch.randn(3), graphs=1, fullgraph=True)


def test_a_dirty_input_is_returned_itself():
    def fn(x):
        with torch.no_grad():
            out = Dirty.apply(x)
        return out, out is x

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_where_a_gradient_flows_the_users_backward_runs_in_one_graph():
    def fn(x):
        return GeLU.apply(x * 2) + 1

    # grads: GeLU.backward's 3 * x, not gelu's (tests/test_autograd_function_training.py)
    check(fn, torch.randn(4, requires_grad=True), graphs=1, fullgraph=True)


class WithSetup(torch.autograd.Function):
    @staticmethod
    def forward(x):
        return x * 2

    @staticmethod
    def setup_context(ctx, inputs, output):
        pass

    @staticmethod
    def backward(ctx, g):
        return g * 2


def test_setup_context_breaks_with_the_reason():
    def fn(x):
        with torch.no_grad():
            return WithSetup.apply(x) + 1

    check(fn, torch.randn(3))
    out = bytegraph.explain(fn, torch.randn(3))
    assert any("WithSetup with a setup_context" in b.reason for b in out.break_reasons)


class Raises(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        raise ValueError("bad input")

    @staticmethod
    def backward(ctx, g):
        return g


def test_an_exception_in_forward_restores_grad_mode():
    def fn(x):
        try:
            Raises.apply(x)
        except ValueError as e:
            return x + 1, str(e), torch.is_grad_enabled()

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_ctx_escaping_breaks():
    class Leak(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, ctx

        @staticmethod
        def backward(ctx, g, _):
            return g

    def fn(x):
        with torch.no_grad():
            out, ctx = Leak.apply(x)
        return out, type(ctx).__name__, ctx

    with pytest.raises(bytegraph.Unsupported, match="ctx of a custom autograd.Function"):
        bytegraph.compile(fn, fullgraph=True)(torch.randn(3))
    out, name, ctx = bytegraph.compile(fn)(torch.randn(3))
    assert name == "LeakBackward" and type(ctx).__name__ == "LeakBackward"


class ReadsSaved(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * len(ctx.saved_tensors)  # empty until forward returns

    @staticmethod
    def backward(ctx, g):
        return g


def test_saved_tensors_read_in_forward_breaks_and_matches_eager():
    def fn(x):
        with torch.no_grad():
            return ReadsSaved.apply(x) + 1

    check(fn, torch.randn(3))
    out = bytegraph.explain(fn, torch.randn(3))
    assert any("saved_tensors" in b.reason for b in out.break_reasons), [b.reason for b in out.break_reasons]
