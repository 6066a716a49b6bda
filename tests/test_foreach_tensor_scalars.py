"""torch's multi-tensor ops given a 0-dim tensor where they take a Scalar:
`torch._foreach_pow(beta, steps)` (torch.optim's NAdam/RAdam with `capturable`),
`torch._foreach_pow(xs, t)`, `_foreach_add(xs, t)`, `_foreach_maximum(xs, t)`, ... torch reads
such a scalar with `.item()`, which fake tensors cannot answer; the call is recorded with the
tensor repeated in a list instead (`torch._foreach_pow([beta, beta], steps)`, the op's
tensor-list overload, as torch.compile decomposes `_foreach_pow`), when that overload gives
what the scalar one gives (result dtypes, errors: probed on small real tensors), else the
graph breaks at the data-dependent call (`vars/tensor_scalar_args.py`). Differential:
outputs, grads, one graph where the rewrite applies."""
import operator

import pytest
import torch

import bytegraph
from helpers import check, compile_counted


def _xs(*sizes, grad=True, dtype=torch.float32):
    return [torch.rand(n, dtype=dtype).add(0.5).requires_grad_(grad) for n in sizes]


def scalar_base(scalar, exps):
    return torch._foreach_pow(scalar, exps)


def test_pow_with_a_tensor_base_is_one_graph_as_torch_compile():
    compiled, counter = compile_counted(scalar_base, fullgraph=True)
    scalar, exps = torch.tensor(2.0), _xs(4, 4)
    torch.testing.assert_close(compiled(scalar, exps), scalar_base(scalar, exps))
    graph = counter.graphs[0].graph
    (node,) = [n for n in graph.nodes if n.op == "call_function" and n.target is not operator.getitem]
    (placeholder,) = [n for n in graph.nodes if n.op == "placeholder" and "scalar" in n.name]
    assert node.target is torch._foreach_pow and node.args[0] == [placeholder] * 2, counter.graphs[0].code
    check(scalar_base, torch.tensor(0.9), _xs(3, 2), graphs=1, fullgraph=True)


@pytest.mark.parametrize("fn", [
    lambda xs, t: torch._foreach_pow(xs, t),
    lambda xs, t: torch._foreach_add(xs, t),
    lambda xs, t: torch._foreach_sub(xs, t),
    lambda xs, t: torch._foreach_maximum(xs, t),
    lambda xs, t: torch._foreach_minimum(xs, t),
    lambda xs, t: torch._foreach_clamp_min(xs, t),
    lambda xs, t: torch._foreach_clamp_max(xs, t),
    lambda xs, t: torch._foreach_lerp(xs, [x * 2 for x in xs], t),
    lambda xs, t: torch._foreach_pow(self=xs, exponent=t),
], ids=["pow", "add", "sub", "maximum", "minimum", "clamp_min", "clamp_max", "lerp", "pow by keyword"])
def test_tensor_scalar_argument_is_one_graph(fn):
    check(fn, _xs(3, 2), torch.tensor(0.7), graphs=1, fullgraph=True)


def test_in_place_with_a_tensor_exponent_is_one_graph():
    def fn(xs, t):
        ys = [x * 1 for x in xs]
        torch._foreach_pow_(ys, t)
        torch._foreach_maximum_(ys, t)
        return ys

    check(fn, _xs(3, 2), torch.tensor(1.5), graphs=1, fullgraph=True)


def test_step_count_tensor_base_as_radam_uses_it():
    def bias_corrections(beta2, steps):
        bc = torch._foreach_pow(beta2, steps)
        torch._foreach_neg_(bc)
        torch._foreach_add_(bc, 1)
        return bc

    check(bias_corrections, torch.tensor(0.999), [torch.tensor(3.0), torch.tensor(7.0)], graphs=1, fullgraph=True)


def test_scalar_tensor_computed_in_the_graph():
    check(lambda xs, a: torch._foreach_pow(xs, a.sum() / 4), _xs(3, 2), torch.rand(4), graphs=1, fullgraph=True)


def test_other_dtype_than_the_scalar_overload_gives_breaks():
    """A float64 scalar tensor on integer tensors: the scalar overload gives float32 (a Python
    float), the tensor one float64. Not rewritten: the data-dependent call breaks."""
    fn = lambda xs, t: torch._foreach_pow(xs, t)  # noqa: E731
    args = ([torch.tensor([1, 2, 3]), torch.tensor([4])], torch.tensor(0.5, dtype=torch.float64))
    check(fn, *args)
    with pytest.raises(bytegraph.Unsupported, match=r"_foreach_pow\(\) has an output that depends on tensor data"):
        bytegraph.compile(fn, fullgraph=True)(*args)


def test_a_scalar_requiring_grad_raises_as_eager():
    """torch refuses a tensor requiring grad as a Scalar (TypeError): not rewritten."""
    check(lambda xs, t: torch._foreach_pow(xs, t), _xs(3), torch.tensor(0.5, requires_grad=True))


def test_add_with_a_scalar_requiring_grad_is_the_tensor_overload():
    """`_foreach_add` has a Tensor overload: a scalar requiring grad takes it (its gradient flows)."""
    check(lambda xs, t: torch._foreach_add(xs, t), _xs(3, 2), torch.tensor(0.5, requires_grad=True),
          graphs=1, fullgraph=True)


def test_mul_keeps_its_tensor_overload():
    def fn(xs, t):
        return torch._foreach_mul(xs, t)

    compiled, counter = compile_counted(fn, fullgraph=True)
    xs, t = _xs(3, 2), torch.tensor(0.5)
    torch.testing.assert_close(compiled(xs, t), fn(xs, t))
    assert not any(isinstance(a, list) for n in counter.graphs[0].graph.nodes for a in n.args[1:]), \
        counter.graphs[0].code


def test_integer_exponent_is_not_rewritten():
    """A negative integer exponent makes the scalar overload raise, not the list one: no rewrite."""
    fn = lambda xs, t: torch._foreach_pow(xs, t)  # noqa: E731
    check(fn, [torch.tensor([1, 2, 3])], torch.tensor(-1))
    check(fn, [torch.tensor([1, 2, 3])], torch.tensor(2))
    with pytest.raises(bytegraph.Unsupported, match=r"depends on tensor data"):
        bytegraph.compile(fn, fullgraph=True)([torch.tensor([1, 2, 3])], torch.tensor(2))
