"""Data-dependent capture: `bytegraph.config.capture_scalar_outputs` and
`capture_dynamic_output_shape_ops`, as torch.compile's fields of the same names.

With them on, `t.item()` / `int(t)` / `float(t)` / `operator.index(t)` / `t.tolist()` are
unbacked symbolic numbers and `nonzero`, `masked_select`, `x[mask]`, `unique` give tensors with
unbacked sizes; what consumes them stays in the one graph, and the same compiled entry is right
for data that changes those values (no recompile). A Python branch on such a value is a graph
break (a data-dependent guard), never a wrong answer. With them off (the default) each is a
graph break that names the config field capturing it.
"""
from __future__ import annotations

import operator
import os
import subprocess
import sys

import pytest
import torch
from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

import bytegraph
from bytegraph import config

from helpers import CompileCounter, assert_same, check, clone_inputs


@pytest.fixture
def capture(monkeypatch):
    """Both data-dependent switches on for one test."""
    monkeypatch.setattr(config, "capture_scalar_outputs", True)
    monkeypatch.setattr(config, "capture_dynamic_output_shape_ops", True)


def check_values(fn, *arg_tuples, backend=None, **kwargs):
    """`check` on the first arguments (fullgraph, one graph), then the same compiled function on
    each further argument tuple: equal to eager every time, with no recompile."""
    counter = CompileCounter() if backend is None else None
    result = check(fn, *arg_tuples[0], fullgraph=True, graphs=None if counter is None else 1,
                   backend=counter or backend, **kwargs)
    for args in arg_tuples[1:]:
        eager_args, compiled_args = clone_inputs(args), clone_inputs(args)
        assert_same(fn(*eager_args), result.compiled_fn(*compiled_args), f"output for {args!r}",
                    kwargs.get("rtol"), kwargs.get("atol"))
    if counter is not None:
        assert counter.frame_count == 1, f"recompiled: {counter.frame_count} graphs"
    return result


def _assert_all_bound(gm) -> None:
    """Every unbacked symbol in the graph's values is bound by a node (`meta["unbacked_bindings"]`)."""
    bound = set()
    used = set()
    for node in gm.graph.nodes:
        bound.update(node.meta.get("unbacked_bindings") or ())
        value = node.meta.get("example_value")
        if value is not None:
            used |= free_unbacked_symbols(value)
    assert used and used <= bound, (sorted(map(str, used - bound)), gm.code)


def _targets(result) -> list:
    return [getattr(t, "__name__", t) for t in result.counter.ops()]


# ---------------------------------------------------------------------------- scalar outputs


def _item_consumers(x, n):
    k = n.item()
    return (x[:k] * 2, torch.arange(k), x.new_zeros(k * 2).view(2, k), x.narrow(0, 0, k),
            torch.ones(k, 3).sum(0), k, k * 3 - 1)


def test_item_into_view_arange_narrow_arithmetic(capture):
    r = check_values(_item_consumers, (torch.randn(8), torch.tensor(3)), (torch.randn(8), torch.tensor(5)),
                     (torch.randn(8), torch.tensor(0)), (torch.randn(8), torch.tensor(8)))
    assert "item" in _targets(r)


def test_item_unbacked_binding_is_recorded(capture):
    r = check(_item_consumers, torch.randn(8), torch.tensor(3), fullgraph=True, graphs=1)
    gm = r.counter.graphs[0]
    items = [node for node in gm.graph.nodes if node.target == "item"]
    assert len(items) == 1 and items[0].meta["unbacked_bindings"], gm.code
    _assert_all_bound(gm)
    # the range facts the trace assumed are checked in the graph (`u0 >= 0` from arange)
    assert torch.ops.aten._assert_scalar.default in r.counter.ops(), gm.code


def _float_item(x):
    s = x.sum().item()
    return x * s, x > s, torch.where(x > s / 4, x, -x), s * 2 + 1, s


def test_float_item_into_ops_and_comparisons(capture):
    check_values(_float_item, (torch.randn(6),), (torch.randn(6),), (torch.zeros(6),))


def _conversions(x, n):
    return (x[:int(n)] * 2, float(n) + 1.5, int(x.sum() * 3), float(x.sum()), x.narrow(0, 0, operator.index(n)),
            int(n > 1))


def test_int_float_index_of_a_tensor(capture):
    check_values(_conversions, (torch.randn(8), torch.tensor(3)), (torch.randn(8), torch.tensor(6)))


def _tolist(x, n, flags):
    return n.tolist(), x.tolist(), flags.tolist(), [v * 2 for v in x[:2].tolist()]


def test_tolist_of_static_sizes(capture):
    check_values(_tolist, (torch.randn(2, 3), torch.tensor(4), torch.tensor([True, False])),
                 (torch.randn(2, 3), torch.tensor(-7), torch.tensor([False, False])))


def _bool_item(x):
    b = (x > 0).any().item()
    return torch.tensor(b), x * b, torch.tensor([b, True])


def test_bool_item_into_tensors(capture):
    check_values(_bool_item, (torch.randn(5),), (-torch.ones(5),))


def _max_as_size(x):
    n = int(x.max().item())
    return torch.ones(n), torch.zeros(n, 2).sum()


def test_item_as_a_factory_size(capture):
    check_values(_max_as_size, (torch.tensor([1, 4, 2]),), (torch.tensor([0, 0, 0]),), (torch.tensor([9, 2, 3]),))


def _negative_stop(x, n):
    return x[:n.item()]


def test_item_as_a_negative_slice_bound(capture):
    check_values(_negative_stop, (torch.randn(8), torch.tensor(-2)), (torch.randn(8), torch.tensor(3)),
                 (torch.randn(8), torch.tensor(20)))


def _arange_of_item(n):
    return torch.arange(n.item())


def test_a_broken_assumption_raises_never_a_wrong_answer(capture):
    compiled = bytegraph.compile(_arange_of_item, fullgraph=True)
    assert_same(_arange_of_item(torch.tensor(4)), compiled(torch.tensor(4)))
    with pytest.raises(RuntimeError):
        _arange_of_item(torch.tensor(-1))
    with pytest.raises(RuntimeError, match="u0 >= 0"):  # the graph checks what arange assumed
        compiled(torch.tensor(-1))


# ---------------------------------------------------------------------------- dynamic output shapes


def _masked(x):
    mask = x > 0
    m = x[mask]
    return m * 2, torch.nonzero(mask), x.nonzero().sum(), torch.masked_select(x, mask).sum(), m.shape[0], len(m) + 1


def test_nonzero_masked_select_boolean_mask(capture):
    r = check_values(_masked, (torch.randn(8),), (torch.randn(8),), (-torch.ones(8),), (torch.ones(8),))
    _assert_all_bound(r.counter.graphs[0])


def _unique(x):
    values, counts = torch.unique(x, return_counts=True)
    values2, inverse = torch.unique(x, sorted=True, return_inverse=True)
    return torch.unique(x) * 2, values, counts, values2, inverse, values.numel()


def test_unique(capture):
    check_values(_unique, (torch.tensor([1, 2, 2, 3, 1]),), (torch.tensor([5, 5, 5, 5, 5]),),
                 (torch.tensor([4, 3, 2, 1, 0]),))


def _mask_grad(x, mask):
    m = x[mask]
    return (m * m).sum() + m.numel()


def test_boolean_mask_gradients(capture):
    x = torch.randn(8, requires_grad=True)
    check(_mask_grad, x, torch.tensor([1, 0, 1, 1, 0, 0, 0, 1], dtype=torch.bool), fullgraph=True, graphs=1)
    check_values(_mask_grad, (x, torch.tensor([1, 0, 1, 1, 0, 0, 0, 1], dtype=torch.bool)),
                 (x, torch.zeros(8, dtype=torch.bool)))


def _nonzero_then_item(x):
    idx = torch.nonzero(x > 0)
    k = idx.size(0)
    return torch.arange(k) + idx.squeeze(1), x[: (x > 10).sum().item()]


def test_unbacked_size_reused_by_python_arithmetic(capture):
    check_values(_nonzero_then_item, (torch.randn(8),), (torch.randn(8) * 20,))


@pytest.mark.parametrize("backend", ["aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
def test_backends_accept_unbacked_graphs(capture, backend):
    def fn(x, mask, n):
        m = x[mask]
        k = n.item()
        return (m * 2).sum(), torch.nonzero(mask).sum(), m.sum().item() + k, x.new_ones(k).sum(), (x[:k] * k).sum()

    x = torch.randn(8, requires_grad=True)
    check_values(fn, (x, torch.tensor([1, 0, 1, 1, 0, 0, 0, 1], dtype=torch.bool), torch.tensor(3)),
                 (x, torch.tensor([0, 0, 0, 1, 0, 0, 0, 1], dtype=torch.bool), torch.tensor(6)),
                 backend=backend, rtol=1e-5, atol=1e-5)


# ---------------------------------------------------------------------------- branches and breaks


def _branch_on_item(x):
    if x.sum().item() > 0:  # DD-BRANCH
        return x + 1
    return x - 1


def test_branch_on_an_unbacked_value_is_a_break(capture):
    out = bytegraph.explain(_branch_on_item, torch.ones(3))
    assert out.graph_break_count == 1
    brk = out.break_reasons[0]
    assert brk.category == "data-dependent", brk
    assert "data-dependent guard" in brk.reason and "zuf0 > 0" in brk.reason, brk
    for x in (torch.ones(3), -torch.ones(3)):
        check(_branch_on_item, x, graphs=2)
    with pytest.raises(bytegraph.Unsupported, match="data-dependent guard"):
        bytegraph.compile(_branch_on_item, fullgraph=True)(torch.ones(3))


def _loop_to_item(x, n):
    out = x
    for _ in range(n.item()):
        out = out * 2
    return out


def test_range_of_an_unbacked_value_is_a_break(capture):
    for n in (torch.tensor(0), torch.tensor(3)):
        check(_loop_to_item, torch.randn(3), n)
    with pytest.raises(bytegraph.Unsupported, match="data-dependent guard"):
        bytegraph.compile(_loop_to_item, fullgraph=True)(torch.randn(3), torch.tensor(2))


def _branch_on_nonzero(x):
    idx = x.nonzero()
    if idx.size(0) > 2:
        return x[x > 0].sum()
    return x


def test_branch_on_an_unbacked_size_is_a_break(capture):
    for x in (torch.tensor([1.0, 2.0, 3.0, -1.0]), torch.tensor([1.0, -2.0, -3.0, -1.0])):
        check(_branch_on_nonzero, x, graphs=2)


@pytest.mark.parametrize("fn,op,field", [
    (lambda x: x * x.sum().item(), "item()", "capture_scalar_outputs"),
    (lambda x: x[: int(x.sum())], "__int__()", "capture_scalar_outputs"),
    (lambda x: x.tolist(), "tolist()", "capture_scalar_outputs"),
    (lambda x: torch.nonzero(x > 0) * 2, "nonzero", "capture_dynamic_output_shape_ops"),
    (lambda x: x[x > 0], "getitem() has an output that depends on tensor data", "capture_dynamic_output_shape_ops"),
    (lambda x: torch.unique(x), "unique", "capture_dynamic_output_shape_ops"),
], ids=["item", "int", "tolist", "nonzero", "mask", "unique"])
def test_off_by_default_a_break_naming_the_field(fn, op, field):
    assert config.capture_scalar_outputs is False and config.capture_dynamic_output_shape_ops is False
    x = torch.tensor([1.0, -2.0, 3.0])
    check(fn, x, graphs=None)
    out = bytegraph.explain(fn, x)
    brk = out.break_reasons[0]
    assert brk.category == "data-dependent", brk
    assert op in brk.reason, brk
    assert f"bytegraph.config.{field} = True" in brk.hint, brk
    with pytest.raises(bytegraph.Unsupported, match=f"config.{field}"):
        bytegraph.compile(fn, fullgraph=True)(x)


def test_the_environment_sets_the_defaults():
    code = "from bytegraph import config; print(config.capture_scalar_outputs, config.capture_dynamic_output_shape_ops)"
    env = dict(os.environ, BYTEGRAPH_CAPTURE_SCALAR_OUTPUTS="1", BYTEGRAPH_CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True,
                         cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    assert out.stdout.split() == ["True", "True"], out.stderr


# ---------------------------------------------------------------------------- facts, breaks, dynamic sizes


def _checked_view(x, n):
    k = n.item()
    torch._check(k >= 2)
    return x.view(k, -1)


def test_torch_check_is_a_fact_checked_by_the_graph(capture):
    r = check_values(_checked_view, (torch.randn(8), torch.tensor(4)), (torch.randn(8), torch.tensor(2)),
                     (torch.randn(8), torch.tensor(8)))
    assert "u0 >= 2" in r.counter.graphs[0].code
    with pytest.raises(RuntimeError):
        _checked_view(torch.randn(8), torch.tensor(1))
    with pytest.raises(RuntimeError, match="u0 >= 2"):
        r.compiled_fn(torch.randn(8), torch.tensor(1))


def _live_across_print(x, n):
    k = n.item()
    s = x.sum().item()
    print("k is", k, "and s > 0 is", s > 0)
    return x[:k] + k, s


def test_unbacked_values_live_across_a_break(capture):
    for n in (torch.tensor(3), torch.tensor(6)):
        check(_live_across_print, torch.randn(8), n, graphs=2)


def _appended(x, n, out):
    out.append(n.item())
    out.append(x.nonzero().shape[0])
    return x * 2


def test_unbacked_values_written_to_a_list(capture):
    check_values(_appended, (torch.randn(8), torch.tensor(3), []), (torch.randn(8), torch.tensor(-5), [1]))


def _sized_and_unbacked(x, n):
    return x[:n.item()].sum() + x.shape[0], torch.arange(x.shape[0] + n.item())


def test_with_dynamic_input_sizes(capture):
    counter = CompileCounter()
    compiled = bytegraph.compile(_sized_and_unbacked, backend=counter, dynamic=True, fullgraph=True)
    for size, n in ((8, 3), (9, 5), (12, 0)):
        x = torch.randn(size)
        assert_same(_sized_and_unbacked(x, torch.tensor(n)), compiled(x, torch.tensor(n)))
    assert counter.frame_count == 1


def _item_and_mask(x):
    return x * x.sum().item(), x[x > 0]


def test_each_field_captures_its_own_kind(monkeypatch):
    monkeypatch.setattr(config, "capture_scalar_outputs", True)
    out = bytegraph.explain(_item_and_mask, torch.tensor([1.0, -2.0, 3.0]))
    assert len(out.break_reasons) == 1 and "capture_dynamic_output_shape_ops" in out.break_reasons[0].hint
    assert "Tensor.item" in out.ops_per_graph[0], out.ops_per_graph
    check(_item_and_mask, torch.tensor([1.0, -2.0, 3.0]), graphs=1)  # x[mask] runs eagerly at the break
    monkeypatch.setattr(config, "capture_scalar_outputs", False)
    monkeypatch.setattr(config, "capture_dynamic_output_shape_ops", True)
    out = bytegraph.explain(_item_and_mask, torch.tensor([1.0, -2.0, 3.0]))
    assert len(out.break_reasons) == 1 and "capture_scalar_outputs" in out.break_reasons[0].hint


# ---------------------------------------------------------------------------- a bound C method across a break


def _index_copy_masked(g, t, m, i):
    g.index_copy_(0, i, t[m])  # `g.index_copy_` is on the stack when `t[m]` breaks
    return g * 2


_INDEX_COPY_ARGS = (torch.zeros(4, dtype=torch.long), torch.arange(4), torch.arange(4) > 1, torch.tensor([0, 2]))


def test_a_tensor_method_left_on_the_stack_at_a_break_is_the_tensor_op():
    """nn.AdaptiveLogSoftmaxWithLoss's `gather_inds.index_copy_(0, rows, target[mask])`: the bound
    `index_copy_` crosses the mask's break into the resume function, where it is `g`'s method (a
    graph op), not an unknown C function."""
    check(_index_copy_masked, *_INDEX_COPY_ARGS, graphs=1)
    out = bytegraph.explain(_index_copy_masked, *clone_inputs(_INDEX_COPY_ARGS))
    assert [b.category for b in out.break_reasons] == ["data-dependent"], out.break_reasons
    assert any("index_copy_" in str(g.code) for g in out.graphs), [g.code for g in out.graphs]


def test_index_copy_of_a_masked_source_is_one_graph(capture):
    check(_index_copy_masked, *_INDEX_COPY_ARGS, fullgraph=True, graphs=1)
