"""Backends: names, callables following the torch.compile protocol (eager vs compiled)."""
import pytest
import torch
import torch.nn.functional as F

from helpers import CompileCounter, assert_same, check

import bytegraph


def _mlp(x, w1, w2):
    return F.gelu(x @ w1).softmax(-1) @ w2


def _args():
    return torch.randn(4, 8), torch.randn(8, 16, requires_grad=True), torch.randn(16, 3, requires_grad=True)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_named_backend(backend):
    check(_mlp, *_args(), backend=backend)


def test_aot_eager_with_inplace_and_views():
    def f(x, y):
        z = x * 2
        z[0] += y.sum()
        return z.t(), z.view(-1)

    check(f, torch.randn(3, 2, requires_grad=True), torch.randn(3, requires_grad=True), backend="aot_eager")


def test_aot_eager_mutating_input():
    def f(x):
        x.mul_(2)
        return x + 1

    check(f, torch.randn(3), backend="aot_eager")


def test_callable_backend_receives_graph_and_example_inputs():
    seen = []

    def backend(gm, example_inputs):
        assert isinstance(gm, torch.fx.GraphModule)
        seen.append([tuple(t.shape) for t in example_inputs if isinstance(t, torch.Tensor)])
        return gm.forward

    def f(x, y):
        return (x + y).relu()

    check(f, torch.randn(2, 3), torch.randn(2, 3), backend=backend)
    assert seen and (2, 3) in seen[0]


def test_callable_backend_return_value_is_used():
    calls = []

    def backend(gm, example_inputs):
        def run(*args):
            calls.append(len(args))
            return gm.forward(*args)

        return run

    def f(x):
        return x.sin() * 2

    cf = bytegraph.compile(f, backend=backend)
    x = torch.randn(3)
    assert_same(f(x), cf(x), "output")
    assert_same(f(x), cf(x), "output")
    assert len(calls) == 2


def test_backend_class_instance_callable():
    cnt = CompileCounter()

    def f(x):
        return x.cos() + 1

    check(f, torch.randn(3), backend=cnt, graphs=1)
    assert cnt.op_count == 2


@pytest.mark.slow
def test_inductor_backend_mlp():
    check(_mlp, *_args(), backend="inductor", rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_inductor_backend_reduction_and_inplace_input():
    def f(x, y):
        x.add_(1)
        return (x * y).sum(dim=0), torch.softmax(y, dim=1)

    check(f, torch.randn(5, 4), torch.randn(5, 4, requires_grad=True), backend="inductor", rtol=1e-4, atol=1e-5)


def _saved(out) -> list:
    """What the backward of `out` (an AOT-compiled graph's result) keeps: per saved tensor, its
    shape, strides, and whether it is one of the model's parameters itself (sorted: the two
    systems order their graph inputs differently)."""
    node = out.grad_fn
    while type(node).__name__ != "CompiledFunctionBackward":
        node = node.next_functions[0][0]
    return sorted((tuple(t.shape), t.stride(), any(t is p for p in _saved.params)) for t in node.saved_tensors)


def test_aot_eager_saves_parameters_as_torch_compile_does():
    # Note [Inputs that live across calls]: a parameter lives across calls, so the partitioner
    # saves it rather than its transpose, and recomputes the transpose in the backward, as
    # under torch.compile's "aot_eager" (bytegraph used to save the transposed weights).
    import torch._dynamo  # the reference only

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    _saved.params = list(model.parameters())
    x = torch.randn(3, 8, requires_grad=True)
    ours = _saved(bytegraph.compile(model, backend="aot_eager")(x))
    torch._dynamo.reset()
    theirs = _saved(torch.compile(model, backend="aot_eager")(x))
    assert ours == theirs
    assert sum(is_param for _, _, is_param in ours) == 2  # both weights, not their transposes
    check(lambda m, x: m(x).sum(), model, x, backend="aot_eager")
