"""Hooks on intermediates that branch on the gradient's layout, contiguity, memory format or
strides. torch.compile refuses them (its hook body is traced in the forward, where the gradient's
metadata is not known yet: "Strict mode banned op" for `grad.layout`, "register_hook with
stride-dependent code" for `is_contiguous()`/`stride()`; with fullgraph=False a break at
`register_hook`). bytegraph never traces the hook in the forward: the hook node calls it on the
real gradient at backward time (Note [Intermediate hook node]), or compiled autograd traces it in
the backward graph, where the gradient is a value of that graph with the metadata the backward
ops give it. So the branch follows the gradient the backward actually produces, and these hooks
are captured in one graph. Compared with eager on gradients arriving contiguous, transposed,
expanded, channels-last, permuted and sparse: which branch each hook took (what it saw, as the log tag),
the gradient it got, and the inputs' gradients."""
from __future__ import annotations

import operator

import pytest
import torch

import bytegraph
from hook_harness import BACKENDS, LOG, Counting, diff


def branch_on_layout(g):
    strided = g.layout == torch.strided and not g.is_sparse
    LOG.append((f"layout strided={strided}", g.clone()))
    return g * 2 if strided else g


def branch_on_contiguity(g):
    contiguous = g.is_contiguous()
    channels_last = g.dim() == 4 and g.is_contiguous(memory_format=torch.channels_last)
    LOG.append((f"contiguous={contiguous} channels_last={channels_last}", g.clone()))
    return g * 2 if contiguous else g * 3


def branch_on_strides(g):
    LOG.append((f"strides={g.stride()} offset={g.storage_offset()}", g.clone()))
    return g * 2 if g.stride()[-1] == 1 else g * 3


HOOKS = (branch_on_layout, branch_on_contiguity, branch_on_strides)


def transposed_grad(hook):
    def f(x):
        y = x * 2
        y.register_hook(hook)
        return (y.t() * 3).sum()  # y's gradient arrives as the transpose of an expanded tensor
    return f


def expanded_grad(hook):
    def f(x):
        y = x.sin()
        y.register_hook(hook)
        return y.sum()  # y's gradient arrives expanded (stride 0)
    return f


def permuted_grad(hook):
    def f(x):
        y = x.permute(0, 2, 1) * 2  # a permuted intermediate: its gradient follows its layout
        y.register_hook(hook)
        return (y.cos() * y).sum()
    return f


def contiguous_grad_of_permuted(hook):
    def f(x):
        y = x * 2
        y.register_hook(hook)
        return (y.permute(0, 2, 1).contiguous().cos() * 3).sum()
    return f


PROGRAMS = (transposed_grad, expanded_grad, permuted_grad, contiguous_grad_of_permuted)


def _x():
    return torch.randn(2, 3, 4, requires_grad=True)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("hook", HOOKS, ids=lambda h: h.__name__)
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda p: p.__name__)
def test_branching_hook_one_graph_as_eager(program, hook, backend):
    x = _x() if program is not transposed_grad else torch.randn(3, 4, requires_grad=True)
    diff(program(hook), x, backend=backend, graphs=1, fullgraph=True, hook_nodes=1)


def conv_channels_last(x, w):
    y = torch.nn.functional.conv2d(x, w)
    y.register_hook(branch_on_contiguity)
    return (torch.relu(y) * y.sin()).sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_channels_last_gradient(backend):
    """A convolution of channels-last inputs: eager's gradient of its output is channels-last,
    and the hook takes the non-contiguous branch under every backend as in eager."""
    x = torch.randn(2, 3, 8, 8).to(memory_format=torch.channels_last).requires_grad_()
    w = torch.randn(4, 3, 3, 3).to(memory_format=torch.channels_last)
    diff(conv_channels_last, x, w, backend=backend, graphs=1, fullgraph=True, hook_nodes=1)


@pytest.mark.parametrize("hook", HOOKS, ids=lambda h: h.__name__)
@pytest.mark.parametrize("program", (transposed_grad, permuted_grad), ids=lambda p: p.__name__)
def test_branching_hook_under_compiled_autograd(program, hook):
    """Under compiled autograd the hook's branch is traced into the backward graph (fullgraph: no
    break) and agrees with eager, for two backward passes of one captured graph."""
    fn = program(hook)
    make = (lambda: torch.randn(3, 4)) if program is transposed_grad else (lambda: torch.randn(2, 3, 4))
    forward = Counting("eager")
    backward = Counting("eager")
    compiled = bytegraph.compile(fn, backend=forward, fullgraph=True)
    for _ in range(2):
        value = make()
        x_eager, x = value.clone().requires_grad_(), value.clone().requires_grad_()
        LOG.clear()
        fn(x_eager).backward()
        eager_log = [tag for tag, _ in LOG]
        LOG.clear()
        with bytegraph.compiled_autograd.enable(backward, fullgraph=True):
            compiled(x).backward()
        assert [tag for tag, _ in LOG] == eager_log
        torch.testing.assert_close(x.grad, x_eager.grad)
    assert len(forward.graphs) == 1 and len(backward.graphs) == 1
    targets = [n.target for n in backward.graphs[0].graph.nodes if n.op == "call_function"]
    assert operator.mul in targets  # the branch taken, traced into the backward graph


def sparse_grad(w, idx):
    y = w * 1
    y.register_hook(branch_on_layout)
    return torch.nn.functional.embedding(idx, y, sparse=True).sum()  # y's gradient is sparse (COO)


# inductor fails on this backward with or without the hook, as torch.compile does
@pytest.mark.parametrize("backend", ("eager", "aot_eager"))
def test_sparse_gradient_takes_the_sparse_branch(backend):
    diff(sparse_grad, torch.randn(10, 3, requires_grad=True), torch.tensor([1, 2, 2, 5]), backend=backend, graphs=1,
         fullgraph=True, hook_nodes=1)


def test_sparse_gradient_under_compiled_autograd():
    w_value, idx = torch.randn(10, 3), torch.tensor([1, 2, 2, 5])
    w_eager, w = w_value.clone().requires_grad_(), w_value.clone().requires_grad_()
    LOG.clear()
    sparse_grad(w_eager, idx).backward()
    eager_log = [tag for tag, _ in LOG]
    LOG.clear()
    out = bytegraph.compile(sparse_grad, backend="eager", fullgraph=True)(w, idx)
    with bytegraph.compiled_autograd.enable("eager", fullgraph=True):
        out.backward()
    assert [tag for tag, _ in LOG] == eager_log == ["layout strided=False"]
    assert w.grad.layout == torch.sparse_coo
    torch.testing.assert_close(w.grad.to_dense(), w_eager.grad.to_dense())
