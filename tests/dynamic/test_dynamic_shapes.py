"""Automatic dynamic shapes. The first call compiles static; a call whose input
differs only in a size recompiles once with that dimension symbolic, and every later
size reuses it. Each test runs a call sequence eagerly and compiled (outputs, gradients,
arguments) and checks the number of graphs over it."""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from dynamic_support import check_calls
from helpers import assert_same, clone_inputs


def batches(*rest, sizes=(2, 3, 4, 5, 3)):
    return [torch.randn(b, *rest) for b in sizes]


def seqs(b, d, lengths=(4, 6, 9, 5, 12)):
    return [torch.randn(b, t, d) for t in lengths]


torch.manual_seed(0)
_MLP = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))
_CONV = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 2, 3, stride=2))
_NORM = nn.LayerNorm(8)
_ATTN = nn.MultiheadAttention(8, 2, batch_first=True)


def mlp(x):
    return _MLP(x)


def conv(x):
    return _CONV(x)


def norm_residual(x):
    return x + _NORM(x).relu()


def sdpa(x):
    q = k = v = x.unsqueeze(1)
    return F.scaled_dot_product_attention(q, k, v, is_causal=True).squeeze(1)


def manual_attention(x):
    b, t, d = x.shape
    scores = x @ x.transpose(-2, -1) / math.sqrt(d)
    mask = torch.tril(torch.ones(t, t, dtype=torch.bool))
    return scores.masked_fill(~mask, float("-inf")).softmax(-1) @ x


def multihead(x):
    return _ATTN(x, x, x, need_weights=False)[0]


def reshape_heads(x):
    b, t, d = x.shape
    h = x.view(b, t, 2, d // 2).transpose(1, 2)
    return h.reshape(b * 2, t, d // 2).sum(0)


def flatten_batch(x):
    b = x.size(0)
    return x.reshape(b, -1) * b


def shape_arithmetic(x):
    n = x.shape[0] * x.shape[1]
    return x.new_ones(n) * (x.shape[-1] + 1)


def half_slice(x):
    return x[:, : x.shape[1] // 2] * 2


def tail_slice(x):
    t = x.size(1)
    return x[:, t - 2:] + x[:, :2]


def positions(x):
    t = x.shape[1]
    return x + torch.arange(t, dtype=x.dtype).view(1, t, 1)


def concat(x):
    return torch.cat([x, x * 2], dim=0).sum(-1)


def concat_seq(x):
    return torch.cat([x, x.flip(1)], dim=1).mean(1)


def mean_by_size(x):
    return x.sum(0) / x.shape[0]


def expand_rows(x):
    return x.mean(1, keepdim=True).expand(-1, x.size(1), -1) - x


def numel_scale(x):
    return x / x.numel()


def zeros_like_shape(x):
    return torch.zeros(x.shape) + x


BATCH_FUNCTIONS = [mlp, norm_residual, flatten_batch, shape_arithmetic, concat, mean_by_size, numel_scale,
                   zeros_like_shape]


@pytest.mark.parametrize("fn", BATCH_FUNCTIONS, ids=lambda f: f.__name__)
def test_varying_batch_compiles_twice(fn):
    check_calls(fn, batches(6, 8), graphs=2)


@pytest.mark.parametrize("fn", BATCH_FUNCTIONS, ids=lambda f: f.__name__)
def test_varying_batch_under_dynamic_true_compiles_once(fn):
    check_calls(fn, batches(6, 8), graphs=1, dynamic=True)


@pytest.mark.parametrize("fn", BATCH_FUNCTIONS, ids=lambda f: f.__name__)
def test_varying_batch_under_dynamic_false_compiles_per_size(fn):
    check_calls(fn, batches(6, 8), graphs=4, dynamic=False)


SEQ_FUNCTIONS = [sdpa, manual_attention, multihead, reshape_heads, half_slice, tail_slice, positions, concat_seq,
                 expand_rows, mlp]


@pytest.mark.parametrize("fn", SEQ_FUNCTIONS, ids=lambda f: f.__name__)
def test_varying_sequence_compiles_twice(fn):
    check_calls(fn, seqs(2, 8), graphs=2, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fn", SEQ_FUNCTIONS, ids=lambda f: f.__name__)
def test_varying_batch_and_sequence_compiles_once_per_changing_dimension(fn):
    calls = [torch.randn(b, t, 8) for b, t in [(2, 5), (3, 5), (4, 7), (5, 9), (2, 5), (6, 11)]]
    check_calls(fn, calls, graphs=3, rtol=1e-5, atol=1e-5)


def test_convolution_over_batch_and_spatial_sizes():
    calls = [torch.randn(b, 3, h, h) for b, h in [(2, 8), (3, 8), (2, 10), (4, 12), (3, 9)]]
    check_calls(conv, calls, graphs=3, rtol=1e-5, atol=1e-5)


def test_batch_and_sequence_sizes_of_a_b_t_d_input_compile_three_times():
    def f(x):
        b, t, d = x.shape
        h = x.reshape(b * t, d) @ torch.ones(d, 3)
        return h.view(b, t, 3).softmax(-1) + t

    calls = [torch.randn(b, t, 4) for b, t in [(2, 5), (3, 5), (4, 7), (5, 9), (2, 5), (6, 11)]]
    counter, _ = check_calls(f, calls, max_graphs=3)
    assert counter.frame_count == 3


def test_graph_takes_symbolic_sizes_as_inputs():
    counter, _ = check_calls(flatten_batch, batches(6, 8), graphs=2)
    dynamic_graph = counter.graphs[1]
    placeholders = [n for n in dynamic_graph.graph.nodes if n.op == "placeholder"]
    assert [type(n.meta["example_value"]) for n in placeholders] == [torch._subclasses.FakeTensor, torch.SymInt]
    assert any(isinstance(v, torch.SymInt) for v in counter.example_inputs[1])


def test_static_graph_gets_real_example_inputs():
    counter, _ = check_calls(mlp, batches(6, 8, sizes=(2, 2)), graphs=1)
    assert not any(isinstance(v, torch._subclasses.FakeTensor) for v in counter.example_inputs[0])
    assert all(isinstance(v, torch.Tensor) for v in counter.example_inputs[0])


def test_two_inputs_with_one_changing_size():
    def f(x, y):
        return x @ y

    calls = [(torch.randn(b, 4), torch.randn(4, 3)) for b in (2, 3, 5, 7)]
    check_calls(f, calls, graphs=2)


def test_two_inputs_sharing_a_dynamic_size():
    def f(x, y):
        return x + y

    calls = [(torch.randn(b, 4), torch.randn(b, 4)) for b in (2, 3, 5, 7)]
    check_calls(f, calls, graphs=2)


def test_shared_size_then_different_sizes_recompiles():
    def f(x, y):
        return x.sum(0) + y.sum(0)

    calls = [(torch.randn(b, 4), torch.randn(c, 4)) for b, c in [(2, 2), (3, 3), (5, 5), (4, 6)]]
    check_calls(f, calls, max_graphs=3)


def test_size_returned_to_python():
    def f(x):
        return x * 2, x.shape[0] + 1, x.size()

    check_calls(f, batches(3), max_graphs=5)


def test_size_returned_symbolically_does_not_recompile():
    def f(x):
        return x.relu(), x.shape[0] * 2 + 1

    check_calls(f, batches(3), graphs=2)


def test_backward_through_dynamic_graph():
    w = torch.randn(6, 4, requires_grad=True)

    def f(x):
        return (x @ w).tanh().sum(1)

    check_calls(f, [torch.randn(b, 6, requires_grad=True) for b in (2, 3, 4, 6)], graphs=2)


def test_aot_eager_backend_with_dynamic_sizes():
    import bytegraph

    def f(x):
        return x.reshape(x.shape[0], -1).softmax(-1) * x.shape[0]

    cf = bytegraph.compile(f, backend="aot_eager")
    for b in (2, 3, 4, 5):
        x = torch.randn(b, 3, 2)
        torch.testing.assert_close(cf(x), f(x))
    assert len(cf.__bg_compiled__.entries) == 2


def test_transposed_input_recompiles_for_strides():
    def f(x):
        return x * 2

    base = [torch.randn(3, 4), torch.randn(5, 4), torch.randn(4, 6).t(), torch.randn(7, 4)]
    check_calls(f, base, max_graphs=3)


def test_miss_reason_names_the_size_in_user_terms(caplog):
    import bytegraph

    def f(x):
        return x * 2

    bytegraph.set_logs("recompiles")
    try:
        cf = bytegraph.compile(f)
        with caplog.at_level("DEBUG", logger="bytegraph.recompiles"):
            cf(torch.randn(2, 5))
            cf(torch.randn(3, 5))
            cf(torch.randn(3, 6))
    finally:
        bytegraph.set_logs()
    text = caplog.text
    assert "x.size(1) == 5" in text, text


def test_dynamic_entry_guard_is_one_function():
    import bytegraph

    def f(x):
        return x.sum(0) * x.shape[0]

    cf = bytegraph.compile(f)
    cf(torch.randn(2, 3))
    cf(torch.randn(4, 3))
    entries = cf.__bg_compiled__.entries
    assert len(entries) == 2
    source = entries[1].guards.source
    assert source.count("def ") == 1 and "x.size()" in source
    assert entries[1].guards.fn(torch.randn(9, 3)) and not entries[1].guards.fn(torch.randn(9, 4))
    assert not entries[1].guards.fn(torch.randn(1, 3))  # 1 is specialized


def test_the_graph_call_reads_a_tensor_s_shape_once_for_its_sizes():
    import dis

    import bytegraph

    def f(x):
        b, t, d = x.shape
        return x.reshape(b * t, d).sum(0) * t + b

    x = torch.randn(3, 5, 4)
    bytegraph.mark_dynamic(x, [0, 1])
    cf = bytegraph.compile(f, backend="eager")
    assert_same(cf(x), f(x))
    (entry,) = cf.__bg_compiled__.entries
    loads = [(i.opname, i.argval) for i in dis.get_instructions(entry.fn)]
    assert loads.count(("LOAD_ATTR", "shape")) == 1, loads  # `x.shape[0]`, `x.shape[1]` from one read
    assert ("LOAD_METHOD", "size") not in loads, loads
    for sizes in [(2, 7, 4), (6, 3, 4)]:
        y = torch.randn(*sizes)
        assert_same(cf(y), f(y))
    assert len(cf.__bg_compiled__.entries) == 1


def _at_offset(offset, *sizes):
    """A contiguous tensor of `sizes` that starts `offset` elements into its storage (a leaf)."""
    numel = math.prod(sizes)
    return torch.randn(offset + numel)[offset:].view(*sizes)


def test_a_dynamic_entry_serves_inputs_at_another_storage_offset():
    def f(x):
        return x.sum(0) * x.shape[0]

    calls = [torch.randn(2, 3), torch.randn(4, 3), _at_offset(5, 6, 3), _at_offset(2, 3, 3)]
    assert [c.storage_offset() for c in clone_inputs(calls)] == [0, 0, 5, 2]  # the copies keep it
    _, cf = check_calls(f, calls, graphs=2)
    guard_source = cf.__bg_compiled__.entries[1].guards.source
    assert "storage_offset" not in guard_source, guard_source  # static offsets are not guarded


def test_reading_the_storage_offset_of_a_dynamic_input_guards_it():
    def f(x):
        return x * x.storage_offset() + x.shape[0]

    calls = [torch.randn(2, 3), torch.randn(4, 3), _at_offset(5, 6, 3), _at_offset(5, 3, 3), torch.randn(5, 3)]
    check_calls(f, calls, graphs=3)  # offset 0 (static, then dynamic), offset 5


def test_a_dynamic_capture_of_an_input_at_an_offset_binds_the_offset():
    def f(x):
        return x.sum(0) * x.shape[0], x[1:].sum()

    calls = [torch.randn(2, 3), _at_offset(5, 4, 3), _at_offset(7, 6, 3), _at_offset(3, 5, 3)]
    _, cf = check_calls(f, calls, graphs=2)
    guard_source = cf.__bg_compiled__.entries[1].guards.source
    assert "x.storage_offset()" in guard_source, guard_source  # the offset's symbol, bound there
