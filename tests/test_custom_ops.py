"""Dispatcher ops and `torch.library` custom ops (vars/torch_op_rule.py): called as the
decorated function, as `torch.ops.ns.name` and as `.default`, they go into the graph when
fake propagation runs them; an op that mutates an argument (`mutates_args`) keeps eager's
effect; an op without a fake kernel is a graph break naming it."""
import pytest
import torch

import bytegraph
from helpers import check, compile_counted

T = lambda *shape: torch.randn(*shape, requires_grad=True)  # noqa: E731


@torch.library.custom_op("bg_test::scale", mutates_args=())
def scale(x: torch.Tensor, k: float) -> torch.Tensor:
    return x * k


@scale.register_fake
def _scale_fake(x, k):
    return torch.empty_like(x)


def _scale_backward(ctx, grad):
    return grad * ctx.k, None


def _scale_setup(ctx, inputs, output):
    ctx.k = inputs[1]


scale.register_autograd(_scale_backward, setup_context=_scale_setup)


@torch.library.custom_op("bg_test::take_rows", mutates_args=())
def take_rows(x: torch.Tensor, start: int, length: int) -> torch.Tensor:
    """A `slice` op of the kind state-space layers register: a fresh tensor of some rows."""
    return x[start:start + length].clone()


@take_rows.register_fake
def _take_rows_fake(x, start, length):
    return x.new_empty((length, *x.shape[1:]))


@torch.library.custom_op("bg_test::accumulate", mutates_args=("acc",))
def accumulate(x: torch.Tensor, acc: torch.Tensor) -> None:
    acc.add_(x)


@accumulate.register_fake
def _accumulate_fake(x, acc):
    return None


@torch.library.custom_op("bg_test::no_fake", mutates_args=())
def no_fake(x: torch.Tensor) -> torch.Tensor:
    return x * 2


_LIB = torch.library.Library("bg_test_lib", "DEF")
_LIB.define("grouped_mm(Tensor x, Tensor w, int groups) -> Tensor")
_LIB.define("cpu_only(Tensor x) -> Tensor")


def _grouped_mm(x, w, groups):
    """A grouped-mm fallback: each group of rows times its own weight."""
    return torch.cat([a @ b for a, b in zip(x.chunk(groups), w.unbind(0))])


def _grouped_mm_meta(x, w, groups):
    return x.new_empty((x.shape[0], w.shape[-1]))


_LIB.impl("grouped_mm", _grouped_mm, "CompositeExplicitAutograd")
_LIB.impl("grouped_mm", _grouped_mm_meta, "Meta")
_LIB.impl("cpu_only", lambda x: x + 1, "CPU")


def test_custom_op_called_every_way():
    def fn(x):
        return scale(x, 2.0) + torch.ops.bg_test.scale(x, 3.0) + torch.ops.bg_test.scale.default(x, 0.5)

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_custom_op_in_graph_as_its_overload():
    fn, counter = compile_counted(lambda x: scale(x, 2.0).sin())
    torch.testing.assert_close(fn(torch.ones(2)), (torch.ones(2) * 2).sin())
    assert counter.ops()[0] is torch.ops.bg_test.scale.default


def test_custom_op_gradients():
    def fn(x, w):
        return scale(x @ w, 4.0).tanh().sum()

    check(fn, T(3, 4), T(4, 2), graphs=1, fullgraph=True)


def test_custom_slice_op():
    def fn(x):
        head = take_rows(x, 1, 2)
        return head * 2 + torch.ops.bg_test.take_rows(x, 0, 2)

    check(fn, torch.randn(5, 3), graphs=1, fullgraph=True)


def test_library_defined_op_with_meta_kernel():
    def fn(x, w):
        return torch.ops.bg_test_lib.grouped_mm(x, w, 2).relu() + torch.ops.bg_test_lib.grouped_mm.default(x, w, 2)

    check(fn, torch.randn(4, 3), torch.randn(2, 3, 5), graphs=1, fullgraph=True)


def test_mutating_custom_op_keeps_eager_effect():
    def fn(x, acc):
        y = x.sin()
        accumulate(y, acc)
        torch.ops.bg_test.accumulate.default(y * 2, acc)
        return acc * 2, acc.sum()

    check(fn, torch.randn(3), torch.zeros(3), graphs=1, fullgraph=True)


def test_mutating_custom_op_on_a_trace_made_tensor():
    def fn(x):
        acc = torch.zeros_like(x)
        accumulate(x, acc)
        accumulate(x, acc)
        return acc

    check(fn, torch.randn(4), graphs=1, fullgraph=True)


def test_mutating_aten_overload_writes_its_schema_argument():
    def fn(x, y):
        torch.ops.aten.add_.Tensor(y, x)
        torch.ops.aten.mul_(y, 2)
        return y + torch.ops.aten.add.Tensor(x, 1)

    check(fn, torch.randn(3), torch.randn(3), graphs=1, fullgraph=True)


def test_aten_overloads_and_packets():
    def fn(x):
        a = torch.ops.aten.mm.default(x, x.t())
        b = torch.ops.aten.softmax.int(a, -1)
        return torch.ops.aten.sum(b, [0]), torch.ops.aten.view.default(x, [-1])

    check(fn, T(3, 3), graphs=1, fullgraph=True)


def test_custom_op_without_fake_kernel_breaks_naming_it():
    def fn(x):
        y = x + 1
        return no_fake(y) * 2

    check(fn, torch.randn(3), graphs=2)
    report = bytegraph.explain(fn)(torch.randn(3))
    reasons = [b.reason for b in report.break_reasons]
    assert any("bg_test.no_fake" in r and "no fake kernel" in r for r in reasons), reasons
    with pytest.raises(bytegraph.Unsupported, match="bg_test.no_fake.*no fake kernel"):
        bytegraph.compile(fn, fullgraph=True)(torch.randn(3))
    for op in (torch.ops.bg_test.no_fake, torch.ops.bg_test.no_fake.default):
        with pytest.raises(bytegraph.Unsupported, match="bg_test.no_fake.*no fake kernel"):
            bytegraph.compile(lambda x: op(x) + 1, fullgraph=True)(torch.randn(3))


def test_op_without_meta_kernel_breaks_naming_it():
    def fn(x):
        return torch.ops.bg_test_lib.cpu_only(x.cos()) * 2

    check(fn, torch.randn(3), graphs=2)
    reasons = [b.reason for b in bytegraph.explain(fn)(torch.randn(3)).break_reasons]
    assert any("cpu_only" in r and "fake" in r for r in reasons), reasons


def test_aten_view_overload_aliases_its_argument():
    """An overload returning an alias (`Tensor(a)`): writing the view writes the argument."""
    def fn(x):
        y = x * 1
        v = torch.ops.aten.transpose.int(y, 0, 1)
        torch.ops.aten.add_.Tensor(v, torch.ones(3, 2))
        w = torch.ops.aten.select.int(y, 0, 1)
        w.mul_(3)
        return y, v.is_contiguous(), v.shape

    check(fn, torch.randn(2, 3), graphs=1, fullgraph=True)
