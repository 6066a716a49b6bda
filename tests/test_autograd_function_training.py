"""Custom `torch.autograd.Function`s where a gradient flows (grad mode on, a tensor argument
requires grad): forward and backward are traced into one
`torch.ops.higher_order.autograd_function_apply` node (vars/hops/function_apply.py), so a
custom-gradient layer stays in one graph and the gradients are the user's backward's, equal
to eager's, with the eager and the aot_eager backends. A Function whose backward (or
forward) cannot be traced, or has effects, is a graph break whose reason names it, and the
apply runs eagerly. Where no gradient flows: tests/test_autograd_function_no_grad.py."""
import copy

import pytest
import torch
import torch.nn as nn
from torch.autograd.function import once_differentiable

import bytegraph
from helpers import CompileCounter, check, check_sequence

APPLY_OP = torch.ops.higher_order.autograd_function_apply
BACKENDS = [None, "aot_eager"]  # None: check's counting backend, which runs the graph as it is


class StraightThrough(torch.autograd.Function):
    """Rounds in forward; the gradient passes through unchanged."""

    @staticmethod
    def forward(ctx, x):
        return torch.round(x)

    @staticmethod
    def backward(ctx, grad):
        return grad


class ScaleGrad(torch.autograd.Function):
    """The identity in forward (an input returned unchanged); the gradient scaled by `scale`."""

    @staticmethod
    def forward(ctx, x, scale):
        ctx.scale = scale
        return x

    @staticmethod
    def backward(ctx, grad):
        return grad * ctx.scale, None


class SavedAndAttr(torch.autograd.Function):
    """Saves an input and an intermediate, keeps a float and a tensor on ctx; its backward is
    deliberately not the true derivative, so the test sees whose backward ran."""

    @staticmethod
    def forward(ctx, x, alpha):
        y = x.sin()
        ctx.save_for_backward(x, y)
        ctx.alpha = alpha
        ctx.offset = y + 1
        ctx.shape = x.shape
        return y * alpha

    @staticmethod
    def backward(ctx, grad):
        x, y = ctx.saved_tensors
        assert ctx.shape == x.shape
        return grad * ctx.alpha * x.cos() + y * ctx.offset, None


class TwoOutputs(torch.autograd.Function):
    """A matmul with a non-differentiable argmax and a constant among its outputs; backward
    uses `needs_input_grad`."""

    @staticmethod
    def forward(ctx, x, w):
        y = x @ w
        idx = y.argmax(-1)
        ctx.mark_non_differentiable(idx)
        ctx.save_for_backward(x, w)
        return y, idx, 3

    @staticmethod
    def backward(ctx, gy, gidx, gconst):
        x, w = ctx.saved_tensors
        gx = gy @ w.t() if ctx.needs_input_grad[0] else None
        gw = x.t() @ gy if ctx.needs_input_grad[1] else None
        return gx, gw


def _ops(result):
    return [op for graph in result.counter.graphs for op in
            (n.target for n in graph.graph.nodes if n.op == "call_function")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_straight_through_estimator(backend):
    def fn(x):
        return StraightThrough.apply(x * 3).pow(2).sum()

    check(fn, torch.randn(5, requires_grad=True), backend=backend, fullgraph=True)


def test_straight_through_estimator_is_one_op_in_one_graph():
    def fn(x):
        return StraightThrough.apply(x * 3) + 1

    result = check(fn, torch.randn(5, requires_grad=True), graphs=1, fullgraph=True)
    assert _ops(result).count(APPLY_OP) == 1
    gm = result.counter.graphs[0]
    assert [n.target for n in gm.fwd_body_0.graph.nodes if n.op == "call_function"] == [torch.round]


@pytest.mark.parametrize("backend", BACKENDS)
def test_scaled_gradient_of_an_input_returned_unchanged(backend):
    def fn(x):
        y = ScaleGrad.apply(x, 0.25)
        return y * 2, y is x

    check(fn, torch.randn(4, requires_grad=True), backend=backend, fullgraph=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_saved_tensors_and_ctx_attributes(backend):
    def fn(x):
        return SavedAndAttr.apply(x + 1, 1.5).exp()

    check(fn, torch.randn(2, 3, requires_grad=True), backend=backend, fullgraph=True)


@pytest.mark.parametrize("backend", BACKENDS)
def test_two_outputs_one_non_differentiable_and_a_constant(backend):
    def fn(x, w):
        y, idx, c = TwoOutputs.apply(x, w)
        return y * c, idx, idx.requires_grad, c

    check(fn, torch.randn(2, 3, requires_grad=True), torch.randn(3, 4, requires_grad=True), backend=backend,
          fullgraph=True)


def test_needs_input_grad_follows_which_inputs_require_grad():
    def fn(x, w):
        return TwoOutputs.apply(x, w)[0].tanh()

    check(fn, torch.randn(2, 3, requires_grad=True), torch.randn(3, 4), graphs=1, fullgraph=True)
    check(fn, torch.randn(2, 3), torch.randn(3, 4, requires_grad=True), graphs=1, fullgraph=True)


def test_an_output_left_out_of_the_loss_gets_a_zero_gradient():
    class Pair(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2, x * 3

        @staticmethod
        def backward(ctx, ga, gb):
            return ga * 2 + gb * 30  # gb: zeros, as eager materializes it

    def fn(x):
        a, _ = Pair.apply(x)
        return a

    check(fn, torch.randn(3, requires_grad=True), graphs=1, fullgraph=True)


def test_the_same_tensor_twice_and_two_applies_in_one_graph():
    class Mul(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, y):
            ctx.save_for_backward(x, y)
            return x * y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y, g * x

    def fn(x):
        return Mul.apply(Mul.apply(x, x), x)

    result = check(fn, torch.randn(3, requires_grad=True), graphs=1, fullgraph=True)
    assert _ops(result).count(APPLY_OP) == 2


SCALE = torch.tensor([1.0, 2.0, 3.0])


class ReadsOuter(torch.autograd.Function):
    """Forward and backward read a global tensor (lifted; no gradient flows to it, as in eager)."""

    @staticmethod
    def forward(ctx, x):
        return x * SCALE

    @staticmethod
    def backward(ctx, g):
        return g * SCALE * 10


@pytest.mark.parametrize("backend", BACKENDS)
def test_forward_and_backward_read_an_outer_tensor(backend):
    def fn(x, w):
        return ReadsOuter.apply(x + w)

    check(fn, torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True), backend=backend,
          fullgraph=True)


def test_a_closed_over_parameter_read_in_backward():
    w = nn.Parameter(torch.randn(3))

    class UsesW(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * w  # w gets no gradient from this, in eager too

    def fn(x):
        return (UsesW.apply(x) * w).sum()

    check(fn, torch.randn(3, requires_grad=True), graphs=1, fullgraph=True)


def test_double_backward_through_a_traced_backward():
    """The backward graph runs in the grad mode of the backward pass, as eager's backward does:
    with `create_graph=True` its ops are differentiated again."""

    class Cube(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * 3 * x ** 2

    def fn(x):
        return Cube.apply(x * 1)

    def twice(f, x):
        y = f(x)
        (g,) = torch.autograd.grad(y.sum(), x, create_graph=True)
        g.sum().backward()
        return y, g, x.grad

    x = torch.randn(4, requires_grad=True)
    expected = twice(fn, x.detach().clone().requires_grad_())
    bytegraph.reset()
    counter = CompileCounter()
    got = twice(bytegraph.compile(fn, backend=counter, fullgraph=True), x.detach().clone().requires_grad_())
    for a, b in zip(got, expected):
        torch.testing.assert_close(a, b)
    assert counter.frame_count == 1


class Hardtanh(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, low, high):
        ctx.save_for_backward(x)
        ctx.low, ctx.high = low, high
        return x.clamp(low, high)

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        inside = (x > ctx.low) & (x < ctx.high)
        return g * inside, None, None


class ClampedMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 8)
        self.fc2 = nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(Hardtanh.apply(self.fc1(x), -0.5, 0.5))


def _train_step(model, opt, x, y):
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    opt.zero_grad()
    return loss


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_module_with_a_custom_gradient_in_training_steps(backend):
    torch.manual_seed(0)
    eager_model = ClampedMLP()
    compiled_model = copy.deepcopy(eager_model)
    eager_opt = torch.optim.SGD(eager_model.parameters(), lr=0.1, momentum=0.9)
    compiled_opt = torch.optim.SGD(compiled_model.parameters(), lr=0.1, momentum=0.9)
    bytegraph.reset()
    counter = CompileCounter()
    step = bytegraph.compile(_train_step, backend=counter if backend == "eager" else backend)
    gen = torch.Generator().manual_seed(1)
    for i in range(5):
        x = torch.randn(4, 6, generator=gen)
        y = torch.randint(0, 3, (4,), generator=gen)
        eager_loss = _train_step(eager_model, eager_opt, x, y)
        compiled_loss = step(compiled_model, compiled_opt, x, y)
        torch.testing.assert_close(compiled_loss, eager_loss, rtol=1e-5, atol=1e-5, msg=f"loss at step {i}")
    for (name, p_eager), p_compiled in zip(eager_model.state_dict().items(), compiled_model.state_dict().values()):
        torch.testing.assert_close(p_compiled, p_eager, rtol=1e-5, atol=1e-5, msg=f"{name} after 5 steps")
    if backend == "eager":  # the forward and the loss: one graph (backward() breaks after it)
        assert APPLY_OP in [n.target for n in counter.graphs[0].graph.nodes]
        assert "cross_entropy" in counter.graphs[0].code


def test_module_forward_and_grads_in_one_graph():
    model = ClampedMLP()

    def fn(x):
        return model(x)

    result = check(fn, torch.randn(4, 6), graphs=1, fullgraph=True)
    assert APPLY_OP in _ops(result)


# ---- falling back: a graph break naming the Function, and eager's behaviour ---------------

def _reasons(fn, *args):
    return [b.reason for b in bytegraph.explain(fn, *args).break_reasons]


class PrintsInBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        print("backward ran")
        return g * 2


class DataDependentBackward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    def backward(ctx, g):
        if g.sum() > 0:
            return g
        return -g


class OnceDifferentiable(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return x * 2

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        return g * 2


CALLS = 0


class WritesGlobalInForward(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        global CALLS
        CALLS += 1
        return x * 2

    @staticmethod
    def backward(ctx, g):
        return g * 2


class TooFewGradients(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, y):
        return x * y

    @staticmethod
    def backward(ctx, g):
        return g


def _reset_calls():
    global CALLS
    CALLS = 0


@pytest.mark.parametrize("function, reason", [
    (PrintsInBackward, "print() writes to stdout"),
    (DataDependentBackward, "depends on tensor data"),
    (OnceDifferentiable, "has a once_differentiable backward"),
    (WritesGlobalInForward, "the forward of autograd.Function WritesGlobalInForward writes global 'CALLS'"),
])
def test_an_untraceable_function_falls_back_naming_it(function, reason):
    def fn(x):
        return function.apply(x + 1) * 3

    check(fn, torch.randn(3, requires_grad=True), graphs=2, setup=_reset_calls, state=lambda: CALLS)
    reasons = _reasons(fn, torch.randn(3, requires_grad=True))
    name = function.__qualname__
    assert any(f"autograd.Function {name}" in r and reason in r for r in reasons), reasons
    with pytest.raises(bytegraph.Unsupported, match=name):
        bytegraph.reset()
        bytegraph.compile(fn, fullgraph=True)(torch.randn(3, requires_grad=True))


def test_too_few_gradients_falls_back_and_raises_as_eager_in_backward():
    def fn(x):
        return TooFewGradients.apply(x, x + 1)

    check(fn, torch.randn(3, requires_grad=True))  # eager's backward raises: compared
    reasons = _reasons(fn, torch.randn(3, requires_grad=True))
    assert any("TooFewGradients" in r and "returns 1 gradients for 2 inputs" in r for r in reasons), reasons


def test_keyword_arguments_where_a_gradient_flows_fall_back():
    class Kw(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, scale=1.0):
            ctx.scale = scale
            return x * scale

        @staticmethod
        def backward(ctx, g):
            return g * ctx.scale, None

    def fn(x):
        return Kw.apply(x, scale=2.0) + 1

    check(fn, torch.randn(3, requires_grad=True))
    assert any("Kw applied with keyword arguments" in r for r in _reasons(fn, torch.randn(3, requires_grad=True)))


def test_a_ctx_attribute_holding_an_object_falls_back():
    class Holder:
        def __init__(self, t):
            self.t = t

    class KeepsObject(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.holder = Holder(x * 2)
            return x * 3

        @staticmethod
        def backward(ctx, g):
            return g * ctx.holder.t

    def fn(x):
        return KeepsObject.apply(x) + 1

    check(fn, torch.randn(3, requires_grad=True))
    reasons = _reasons(fn, torch.randn(3, requires_grad=True))
    assert any("KeepsObject" in r and "ctx.holder" in r for r in reasons), reasons


class LinearFunction(torch.autograd.Function):
    """The custom linear layer of torch's "Extending torch.autograd" tutorial."""

    @staticmethod
    def forward(ctx, x, weight, bias):
        ctx.save_for_backward(x, weight)
        return x @ weight.t() + bias

    @staticmethod
    def backward(ctx, g):
        x, weight = ctx.saved_tensors
        return g @ weight, g.t() @ x, g.sum(0)


class CustomLinear(nn.Module):
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 3))
        self.bias = nn.Parameter(torch.randn(4))

    def forward(self, x):
        return LinearFunction.apply(x, self.weight, self.bias)


@pytest.mark.parametrize("backend", BACKENDS)
def test_parameters_passed_to_apply_get_the_users_gradients(backend):
    layer = CustomLinear()

    def fwd(x):
        return layer(x).relu()

    check(fwd, torch.randn(2, 3, requires_grad=True), backend=backend, fullgraph=True)
    x = torch.randn(2, 3)
    layer.zero_grad()
    layer(x).relu().sum().backward()
    expected = layer.weight.grad.clone(), layer.bias.grad.clone()
    layer.zero_grad()
    bytegraph.reset()
    bytegraph.compile(fwd, backend=backend or "eager", fullgraph=True)(x).sum().backward()
    torch.testing.assert_close((layer.weight.grad, layer.bias.grad), expected)


def test_inside_checkpoint_and_cond_bodies():
    layer = CustomLinear()

    def fn(x):
        a = torch.utils.checkpoint.checkpoint(lambda t: layer(t).sin(), x, use_reentrant=False)
        b = torch.cond(x.sum() > 0, lambda t: layer(t), lambda t: t @ layer.weight.t(), (x,))
        return a + b

    check(fn, torch.randn(2, 3, requires_grad=True), graphs=1, fullgraph=True)


def test_dynamic_shapes():
    def fn(x):
        return SavedAndAttr.apply(x * 2, 0.5) + TwoOutputs.apply(x, x.t())[0].sum()

    result = check_sequence(fn, [(torch.randn(n, 3, requires_grad=True),) for n in (2, 3, 5)])
    assert result.counter.frame_count == 2  # the first shape, then one graph for every size


def test_a_module_from_outside_kept_on_ctx():
    lin = nn.Linear(3, 3)

    class KeepsModule(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x, mod):
            ctx.mod = mod
            return mod(x)

        @staticmethod
        def backward(ctx, g):
            return g @ ctx.mod.weight * 2, None

    def fn(x):
        return KeepsModule.apply(x, lin).relu()

    check(fn, torch.randn(2, 3, requires_grad=True), graphs=1, fullgraph=True)
    check(fn, torch.randn(2, 3, requires_grad=True), backend="aot_eager", fullgraph=True)


def test_saved_none_and_nested_tensor_attributes():
    class Nested(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x, None)
            ctx.pair = (x * 2, [x + 1, 3])
            return x * 3

        @staticmethod
        def backward(ctx, g):
            x, none = ctx.saved_tensors
            a, (b, c) = ctx.pair
            return g * a * b * c + x + (none is None)

    def fn(x):
        return Nested.apply(x) + 1

    check(fn, torch.randn(3, requires_grad=True), graphs=1, fullgraph=True)


def test_a_write_to_ctx_in_backward_falls_back():
    class CountsBackward(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.calls = 0
            return x * 2

        @staticmethod
        def backward(ctx, g):
            ctx.calls += 1
            return g * ctx.calls

    def fn(x):
        return CountsBackward.apply(x) + 1

    check(fn, torch.randn(3, requires_grad=True))
    reasons = _reasons(fn, torch.randn(3, requires_grad=True))
    assert any("CountsBackward" in r and "the backward of" in r for r in reasons), reasons


def test_saved_tensors_require_grad_as_eagers():
    """In backward, a saved input requires grad as the input does, a saved output does (its
    grad_fn is the Function's node), an intermediate does not."""

    class SavesOutput(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            y = x.exp()
            ctx.save_for_backward(x, y)
            ctx.mid = x * 2
            return y

        @staticmethod
        def backward(ctx, g):
            x, y = ctx.saved_tensors
            return g * y * (2 if y.requires_grad else 3) * (5 if x.requires_grad else 7) * (
                11 if ctx.mid.requires_grad else 13)

    def fn(x):
        return SavesOutput.apply(x + 0), SavesOutput.apply(x)

    check(fn, torch.randn(3, requires_grad=True), graphs=1, fullgraph=True)
