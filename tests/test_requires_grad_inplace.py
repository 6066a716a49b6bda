"""`t.requires_grad_()` / `t.requires_grad = flag` in the trace (Note [requires_grad_ in the
trace] in bytegraph/vars/requires_grad.py): no-op when the flag does not change; on a tensor
made in the trace (and the views made from it under no_grad) the fake takes the flag and the
graph's outputs get it right after the graph call: one graph, as torch.compile keeps it
(transformers' MRA without its CUDA kernel: `torch.zeros_like(q).requires_grad_()` under
no_grad). A break with the reason where the flag would matter inside the graph (an op over it
with grad mode on) or on a tensor from outside."""
import pytest
import torch

import bytegraph
from helpers import check


def _reasons(fn, *args) -> list:
    return [b.reason for b in bytegraph.explain(fn, *args).break_reasons]


def test_mra_pattern_under_no_grad_is_one_graph():
    def attention(q):
        return torch.zeros_like(q).requires_grad_()

    def fn(q, v):
        with torch.no_grad():
            out = attention(q)
            return out @ v + 1, out, out.requires_grad, out.is_leaf

    result = check(fn, torch.randn(2, 3), torch.randn(3, 3), graphs=1, fullgraph=True)
    assert result.compiled.out[1].requires_grad and result.compiled.out[1].is_leaf
    assert not result.compiled.out[0].requires_grad


def test_made_tensor_flag_set_with_grad_on_and_returned():
    def fn(x):
        t = (x + 1).requires_grad_(True)  # a leaf: x does not require grad
        return t, t.requires_grad

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_setter_and_keyword_and_set_back():
    def fn(x):
        a = torch.ones(3)
        a.requires_grad = True
        b = torch.zeros(2).requires_grad_(requires_grad=True)
        c = torch.ones(1).requires_grad_()
        c.requires_grad_(False)
        return x + 1, a, b, c, c.requires_grad

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_in_place_use_under_no_grad():
    def fn(x):
        t = torch.zeros(3).requires_grad_()
        with torch.no_grad():
            t.add_(x)
            y = t * 2
        return y, t

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_unchanged_flag_is_a_no_op():
    def fn(x, w):
        y = x * w  # requires grad through w
        y.requires_grad_()
        z = (x + 1).requires_grad_(False)
        w.requires_grad_(True)  # an input already requiring grad: nothing changes
        return (y * z).sum(), y.requires_grad, z.requires_grad

    check(fn, torch.randn(3), torch.randn(3, requires_grad=True), graphs=1, fullgraph=True)


def test_eager_errors_are_the_programs():
    def non_leaf(x, w):
        y = x * w
        try:
            y.requires_grad_(False)
        except RuntimeError as e:
            return x - 1, str(e)
        return x + 1, ""

    def integer(x):
        try:
            torch.arange(3).requires_grad_()
        except RuntimeError as e:
            return x - 1, str(e)
        return x + 1, ""

    check(non_leaf, torch.randn(3), torch.randn(3, requires_grad=True), graphs=1, fullgraph=True)
    check(integer, torch.randn(3), graphs=1, fullgraph=True)


def test_grad_mode_use_breaks_with_reason():
    def fn(x):
        t = torch.ones(3).requires_grad_()
        return (t * x).sum(), t

    reasons = _reasons(fn, torch.randn(3))
    assert any("grad mode on" in r and "requires_grad_()" in r for r in reasons), reasons
    check(fn, torch.randn(3))


def test_views_under_no_grad_carry_the_flag():
    def fn(x):
        t = torch.ones(2, 3).requires_grad_()
        with torch.no_grad():
            v = t[:, :2]
            w = v.reshape(4).permute(0)
            y = w.contiguous() * x
        return v, w, y, v.requires_grad, y.requires_grad

    check(fn, torch.randn(4), graphs=1, fullgraph=True)


def test_grad_mode_use_of_a_view_breaks_with_reason():
    def fn(x):
        t = torch.ones(3).requires_grad_()
        with torch.no_grad():
            v = t[:2]
        return (v * x).sum()

    reasons = _reasons(fn, torch.randn(2))
    assert any("grad mode on" in r for r in reasons), reasons
    check(fn, torch.randn(2))


def test_input_flag_change_breaks_with_reason():
    def fn(x):
        x.requires_grad_(True)
        return (x * 2).sum()

    reasons = _reasons(fn, torch.randn(3))
    assert any("from outside the compiled function" in r for r in reasons), reasons
    check(fn, torch.randn(3))


def test_flag_survives_a_graph_break():
    def fn(x):
        with torch.no_grad():
            t = torch.zeros_like(x).requires_grad_()
            y = t + x
        bytegraph.graph_break()
        return y * 2, t

    check(fn, torch.randn(3), graphs=2)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_backends_agree(backend):
    def fn(q):
        with torch.no_grad():
            out = torch.zeros_like(q).requires_grad_()
            return out * q, out

    check(fn, torch.randn(4), backend=backend, fullgraph=True)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_factory_with_requires_grad_returns_a_leaf_on_every_backend(backend):
    def fn(x):
        w = torch.zeros(3, requires_grad=True)
        b = x.new_ones(3, requires_grad=True)
        return x + 1, w, b, w.is_leaf

    result = check(fn, torch.randn(3), backend=backend, fullgraph=True)
    assert [t.requires_grad for t in result.compiled.out[:3]] == [False, True, True]


def test_op_over_a_factory_leaf_with_grad_on_breaks_and_backpropagates():
    def fn(x):
        w = torch.ones(3, requires_grad=True)
        loss = (w * x).sum()
        loss.backward()
        return loss, w.grad

    reasons = _reasons(fn, torch.randn(3))
    assert any("grad mode on" in r for r in reasons), reasons
    for backend in ("eager", "aot_eager"):
        check(fn, torch.randn(3), backend=backend)
