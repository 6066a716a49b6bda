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
