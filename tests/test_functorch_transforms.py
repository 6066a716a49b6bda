"""functorch's transforms in the trace (`torch.vmap`, `torch.func.grad`, `jacrev`, ...):
bytegraph does not trace them (their drivers run the function on batched or dual tensors at
nesting levels), so calling a transform and calling what it returns are graph breaks with that
reason (`trace_rules.PACKAGE_BREAKS`), run eagerly, with eager's results; `functional_call`
is not a transform and stays traced. torch.compile traces vmap into one graph (transformers'
vmapped mask functions: t5gemma2, unlimited_ocr): a known gap, kept as a strict xfail (plan in
docs/sweep.md)."""
import pytest
import torch

import bytegraph
from helpers import check


def _fn(x, y):
    return torch.vmap(lambda a, b: (a * b).sum())(x, y) + 1


def _nested(x):
    return torch.vmap(torch.vmap(lambda v: v.cos() * 2))(x).sum(0)


def _grad(x):
    return torch.func.grad(lambda v: (v.sin() ** 2).sum())(x) * 3


def _jacrev(x):
    return torch.func.jacrev(torch.tanh)(x).sum(0) + x


_LINEAR = torch.nn.Linear(3, 2)


def _functional_call(x):
    weights = {"weight": torch.ones(2, 3), "bias": torch.zeros(2)}
    return torch.func.functional_call(_LINEAR, weights, (x,))


@pytest.mark.parametrize("fn", [_fn, _nested, _grad, _jacrev])
def test_a_transform_runs_as_eager_with_its_reason(fn):
    args = (torch.randn(4, 3), torch.randn(4, 3))[:fn.__code__.co_argcount]
    reasons = [b.reason for b in bytegraph.explain(fn, *args).break_reasons]
    assert reasons and all("functorch's transforms" in r for r in reasons), reasons
    check(fn, *args)


def test_functional_call_is_traced():
    check(_functional_call, torch.randn(4, 3), graphs=1, fullgraph=True)


@pytest.mark.xfail(strict=True, reason="torch.vmap's batching transform is not traced (torch.compile keeps one graph)")
def test_vmap_in_one_graph():
    check(_fn, torch.randn(4, 3), torch.randn(4, 3), graphs=1, fullgraph=True)
