"""`map` (torch's and bytegraph's), `wrap` and non-reentrant `checkpoint` captured by
speculation: differential tests with kwargs, closures, pytrees, gradients, one graph."""
from __future__ import annotations

import importlib

import pytest
import torch
import torch._higher_order_ops.wrap as hop_wrap
from torch.utils.checkpoint import checkpoint

import bytegraph
from bytegraph.graph.backends import lookup_backend
from helpers import check

torch_map = importlib.import_module("torch._higher_order_ops.map").map
MAP = pytest.mark.parametrize("hmap", [torch_map, bytegraph.map], ids=["torch", "bytegraph"])
W = torch.linspace(0.5, 1.5, 3)


def T(*shape, grad=True):
    return torch.randn(*shape, requires_grad=grad)


def op_targets(result, index=-1) -> list:
    gm = result.counter.graphs[index]
    return [n.target for n in gm.graph.nodes if n.op in ("call_function", "call_module")]


# ---- map ----------------------------------------------------------------------------------------
@MAP
def test_map_over_a_tensor(hmap):
    def fn(xs):
        return hmap(lambda x: x.sin() * 2, xs)

    r = check(fn, T(4, 3), graphs=1, fullgraph=True, grads=False)
    assert torch.ops.higher_order.map_impl in op_targets(r)


@MAP
def test_map_with_extra_arguments(hmap):
    def fn(xs, y, z):
        return hmap(lambda x, a, b: x * a + b, xs, y, z)

    check(fn, T(5, 2), T(2), T(2), graphs=1, fullgraph=True, grads=False)


@MAP
def test_map_with_a_constant_argument(hmap):
    def fn(xs):
        return hmap(lambda x, k: x * k, xs, 3)

    check(fn, T(3, 2), graphs=1, fullgraph=True, grads=False)


@MAP
def test_map_over_a_pytree(hmap):
    def fn(a, b):
        return hmap(lambda d: d["a"] * d["b"][0], {"a": a, "b": (b,)})

    check(fn, T(3, 2), T(3, 2), graphs=1, fullgraph=True, grads=False)


@MAP
def test_map_returns_a_pytree(hmap):
    def fn(xs):
        out = hmap(lambda x: (x + 1, {"m": x.max()}), xs)
        return out[0], out[1]["m"]

    check(fn, T(4, 3), graphs=1, fullgraph=True, grads=False)


@MAP
def test_map_body_closes_over_locals_and_globals(hmap):
    def fn(xs, y):
        z = y.exp()
        return hmap(lambda x: x * z + W, xs)

    check(fn, T(2, 3), T(3), graphs=1, fullgraph=True, grads=False)


@MAP
def test_map_body_uses_a_module(hmap):
    lin = torch.nn.Linear(3, 2)

    def fn(xs):
        return hmap(lin, xs)

    check(fn, T(4, 3), graphs=1, fullgraph=True, grads=False)


@MAP
def test_map_result_used_after(hmap):
    def fn(xs):
        return hmap(lambda x: x.cos(), xs).sum(0) + xs.mean()

    check(fn, T(3, 3), graphs=1, fullgraph=True, grads=False)


@MAP
def test_map_nested_in_map(hmap):
    def fn(xs):
        return hmap(lambda row: hmap(lambda v: v * 2, row), xs)

    check(fn, T(2, 3, 4), graphs=1, fullgraph=True, grads=False)


def test_bytegraph_map_gradients():
    def fn(xs, w):
        return bytegraph.map(lambda x: (x * w).tanh(), xs)

    check(fn, T(3, 4), T(4), graphs=1, fullgraph=True)


def test_map_with_mismatched_leading_dims_breaks():
    def fn(a, b):
        return bytegraph.map(lambda p: p[0] + p[1], (a, b))

    check(fn, T(2, 3), T(3, 3))
    with pytest.raises(bytegraph.Unsupported, match="leading dimensions"):
        bytegraph.compile(fn, fullgraph=True)(T(2, 3), T(3, 3))


def test_map_body_returning_a_non_tensor_breaks():
    def fn(xs):
        return bytegraph.map(lambda x: x.shape[0], xs)

    with pytest.raises(bytegraph.Unsupported, match="the value the body of bytegraph.map .* returns holds"):
        bytegraph.compile(fn, fullgraph=True)(T(2, 3))


# ---- wrap ----------------------------------------------------------------------------------------
def test_wrap_a_function():
    def fn(x, y):
        return hop_wrap.wrap(lambda a, b: (a * b).sin(), x, y)

    r = check(fn, T(3), T(3), graphs=1, fullgraph=True)
    gm = r.counter.graphs[0]
    assert "wrap_body_0" in dict(gm.named_children())


def _wrap_nodes(gm):
    return [n for n in gm.graph.nodes if n.op == "call_function" and n.target is torch.ops.higher_order.wrap]


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_wrap_is_a_wrap_node_with_its_free_variables_lifted(backend):
    """As torch.compile records it: `wrap(self.wrap_body_0, x, w)`, the body a subgraph and the
    tensor it closes over an explicit operand, not inlined and not a module call."""
    w = T(3)

    def fn(x):
        return hop_wrap.wrap(lambda a: (a * w).sin(), x) + 1

    compiled_graphs = []

    def keep(gm, example_inputs):
        compiled_graphs.append(gm)
        return lookup_backend(backend)(gm, example_inputs)

    x = T(3)
    check(fn, x, fullgraph=True)
    out = bytegraph.compile(fn, backend=keep, fullgraph=True)(x)
    assert torch.allclose(out, fn(x))
    (gm,) = compiled_graphs
    (node,) = _wrap_nodes(gm)
    body, *operands = node.args
    assert body.op == "get_attr" and isinstance(getattr(gm, body.target), torch.fx.GraphModule)
    assert len(operands) == 2 and all(o.op == "placeholder" for o in operands)
    assert not [n for n in gm.graph.nodes if n.op == "call_module"]


def test_wrap_with_kwargs():
    def body(a, *, scale, shift=0.0):
        return a * scale + shift

    def fn(x):
        return hop_wrap.wrap(body, x, scale=2.0, shift=1.5)

    check(fn, T(3), graphs=1, fullgraph=True)


def test_wrap_with_tensor_kwargs():
    def body(a, *, other):
        return a - other

    def fn(x, y):
        return hop_wrap.wrap(body, x, other=y)

    check(fn, T(3), T(3), graphs=1, fullgraph=True)


def test_wrap_closure_over_local_and_parameter():
    lin = torch.nn.Linear(3, 3)

    def fn(x):
        y = x * 2
        return hop_wrap.wrap(lambda a: lin(a) + y, x)

    check(fn, T(2, 3), graphs=1, fullgraph=True)


def test_wrap_pytree_in_and_out():
    def body(d, t):
        return {"sum": d["a"] + t[1], "pair": (d["a"] * 2, t[0])}

    def fn(x, y):
        out = hop_wrap.wrap(body, {"a": x}, (y, y * 3))
        return out["sum"], out["pair"]

    check(fn, T(3), T(3), graphs=1, fullgraph=True)


def test_wrap_returns_a_constant_too():
    def fn(x):
        out, n = hop_wrap.wrap(lambda a: (a.relu(), 7), x)
        return out * n

    check(fn, T(3), graphs=1, fullgraph=True)


def test_wrap_nested():
    def fn(x):
        return hop_wrap.wrap(lambda a: hop_wrap.wrap(lambda b: b.exp(), a) + 1, x)

    r = check(fn, T(3), graphs=1, fullgraph=True)
    assert sorted(dict(r.counter.graphs[0].named_children())) == ["wrap_body_1"]


def test_wrap_a_module():
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())

    def fn(x):
        return hop_wrap.wrap(m, x)

    check(fn, T(2, 4), graphs=1, fullgraph=True)


def test_wrap_in_a_loop():
    def fn(x):
        for i in range(3):
            x = hop_wrap.wrap(lambda a, k: a * k + 1, x, i)
        return x

    check(fn, T(3), graphs=1, fullgraph=True)


def test_wrap_body_that_breaks_runs_eagerly():
    def body(a):
        print("inside")
        return a + 1

    def fn(x):
        return hop_wrap.wrap(body, x * 2)

    check(fn, T(3), graphs=1)


# ---- checkpoint --------------------------------------------------------------------------------------
def test_checkpoint_gradients_match_eager():
    lin1, lin2 = torch.nn.Linear(4, 8), torch.nn.Linear(8, 4)

    def block(x):
        return lin2(torch.relu(lin1(x)))

    def fn(x):
        return checkpoint(block, x, use_reentrant=False).sum()

    r = check(fn, T(3, 4), graphs=1, fullgraph=True)
    assert torch.ops.higher_order.tag_activation_checkpoint in op_targets(r)


def test_checkpoint_parameter_gradients():
    lin = torch.nn.Linear(3, 3)

    def fn(x):
        return checkpoint(lambda a: lin(a).tanh(), x, use_reentrant=False).pow(2).sum()

    x = T(2, 3)
    fn(x).backward()
    want = [p.grad.clone() for p in lin.parameters()]
    lin.zero_grad()
    bytegraph.compile(fn, fullgraph=True)(x.detach().requires_grad_()).backward()
    for p, w in zip(lin.parameters(), want):
        torch.testing.assert_close(p.grad, w)


def test_checkpoint_with_kwargs_and_closures():
    def body(a, b, *, power):
        return (a * b + W).pow(power)

    def fn(x, y):
        return checkpoint(body, x, y, use_reentrant=False, power=2)

    check(fn, T(3), T(3), graphs=1, fullgraph=True)


def test_checkpoint_of_a_module_in_forward():
    class Net(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.block = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.GELU(), torch.nn.Linear(4, 4))

        def forward(self, x):
            return checkpoint(self.block, x, use_reentrant=False) + x

    check(Net(), T(2, 4), graphs=1, fullgraph=True)


def test_checkpoint_returns_a_tuple():
    def fn(x):
        a, b = checkpoint(lambda t: (t.sin(), t.cos()), x, use_reentrant=False)
        return a * b

    check(fn, T(3), graphs=1, fullgraph=True)


def test_two_checkpoints_in_sequence():
    def fn(x):
        y = checkpoint(torch.sin, x, use_reentrant=False)
        return checkpoint(lambda a: a.exp() * 2, y, use_reentrant=False)

    r = check(fn, T(3), graphs=1, fullgraph=True)
    assert sorted(dict(r.counter.graphs[0].named_children())) == ["checkpoint_body_0", "checkpoint_body_1"]


def test_checkpoint_reentrant_is_not_captured():
    def fn(x):
        return checkpoint(torch.sin, x * 1, use_reentrant=True)

    check(fn, T(3))
    with pytest.raises(bytegraph.Unsupported, match="use_reentrant=False"):
        bytegraph.compile(fn, fullgraph=True)(T(3))


def test_checkpoint_with_an_option_is_not_captured():
    def fn(x):
        return checkpoint(torch.sin, x * 1, use_reentrant=False, debug=False)

    check(fn, T(3))
    with pytest.raises(bytegraph.Unsupported, match="with debug"):
        bytegraph.compile(fn, fullgraph=True)(T(3))


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_checkpoint_gradients_on_backends(backend):
    lin = torch.nn.Linear(4, 4)

    def fn(x):
        return checkpoint(lambda a: lin(a).relu() * a, x, use_reentrant=False).sum()

    x = T(3, 4)
    fn(x).backward()
    want = x.grad.clone()
    x.grad = None
    bytegraph.compile(fn, backend=backend, fullgraph=True)(x).backward()
    torch.testing.assert_close(x.grad, want)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_wrap_and_map_on_backends(backend):
    def fn(xs, y):
        a = hop_wrap.wrap(lambda t: t * y, xs)
        return bytegraph.map(lambda r: r.sin() + y, a)

    xs, y = T(3, 2, grad=False), T(2, grad=False)
    torch.testing.assert_close(bytegraph.compile(fn, backend=backend, fullgraph=True)(xs, y), fn(xs, y))
