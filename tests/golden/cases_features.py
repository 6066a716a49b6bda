"""Golden cases: the richest outputs. Higher-order ops (a `cond` with its two branch
subgraphs closing over a local, a `map` body, a `wrap` body), a hook on an intermediate
tensor (its hook node), dynamic shapes (symbolic guard clauses), and a backward captured
by compiled autograd (its graph)."""
import torch
import torch._higher_order_ops.wrap as hop_wrap

import bytegraph

from .harness import case


def T(*shape, grad=False):
    return torch.randn(*shape, requires_grad=grad)


# ---------------------------------------------------------------- higher-order ops

@case(lambda: (T(3, grad=True), T(3)), fullgraph=True)
def cond_branches_close_over_a_local(x, w):
    k = w.exp()
    return bytegraph.cond(x.sum() > 0, lambda a: (a * k).sin(), lambda a: a.cos() - k, (x,))


@case(lambda: (T(4, 3), T(3)), fullgraph=True)
def map_body(xs, y):
    z = y * 2
    return bytegraph.map(lambda row, b: (row + z).relu() * b, xs, y)


@case(lambda: (T(3, grad=True), T(3)), fullgraph=True)
def wrap_body(x, y):
    return hop_wrap.wrap(lambda a, b: (a * b).sin() + 1, x, y)


# ---------------------------------------------------------------- a hook on an intermediate


def _double_grad(g):
    return g * 2


@case(lambda: (T(4, 3, grad=True),), fullgraph=True)
def intermediate_tensor_hook(x):
    y = x.sin() * 2
    y.register_hook(_double_grad)
    return y.cos().sum()


# ---------------------------------------------------------------- dynamic shapes

@case(calls=lambda: [(T(2, 4),), (T(3, 4),), (T(5, 4),)])
def dynamic_batch_after_recompile(x):
    b = x.size(0)
    return x.reshape(b * 2, -1) * b


def _marked(*shape):
    t = T(*shape)
    bytegraph.mark_dynamic(t, 0)
    return t


@case(calls=lambda: [(_marked(4, 3), _marked(4, 3)), (_marked(6, 3), _marked(6, 3))])
def mark_dynamic_shared_size(x, y):
    if x.size(0) > 2:
        return (x + y).sum(1) / x.size(0)
    return x - y


# ---------------------------------------------------------------- compiled autograd


def _half_grad(g):
    return g * 0.5


@case(lambda: (T(4, 3, grad=True), T(3, 2, grad=True)), mode="compiled_autograd")
def compiled_autograd_backward(x, w):
    h = (x @ w).relu()
    h.register_hook(_half_grad)
    return h.sum()
