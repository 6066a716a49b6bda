"""The ambient autocast state of a capture that never touches autocast: an entry that calls a
graph traced with autocast off is guarded on autocast being off, so a call under
`torch.autocast` recompiles with autocast's dtypes (torch's test_ambient_autocast_recompile);
an entry without a graph is not guarded (Note [Autocast in the trace], vars/autocast/)."""
import pytest
import torch

import bytegraph
from helpers import CompileCounter, assert_same

BF16, F16 = torch.bfloat16, torch.float16
WEIGHTS = torch.randn(10, 10)



@pytest.fixture(autouse=True)
def _autocast_off_after():
    yield
    assert not torch._C._is_any_autocast_enabled(), "the autocast state leaked out of the test"


def mm(x):
    return torch.mm(x, WEIGHTS)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_ambient_autocast_recompiles_each_state(backend):
    counter = CompileCounter(backend)
    compiled = bytegraph.compile(mm, backend=counter, fullgraph=True)
    x = torch.randn(1, 10)
    assert compiled(x).dtype == torch.float32
    for dtype in (F16, BF16):
        with torch.autocast("cpu", dtype):
            got = compiled(x)
            assert got.dtype == dtype
            assert_same(mm(x), got)
    assert compiled(x).dtype == torch.float32  # back outside: the first entry again
    assert counter.frame_count == 3


def dtype_folded(x):
    y = x @ x
    return y * 2, y.dtype, str(y.dtype)


def test_dtypes_folded_at_trace_time_follow_the_ambient_state():
    counter = CompileCounter()
    compiled = bytegraph.compile(dtype_folded, backend=counter)
    x = torch.randn(3, 3)
    assert_same(dtype_folded(x), compiled(x))
    with torch.autocast("cpu", BF16):
        assert_same(dtype_folded(x), compiled(x))
    assert counter.frame_count == 2


def test_autocast_constant_fold():
    """torch's test_autocast_constant_fold: a branch on the autocast dtype."""
    counter = CompileCounter()

    def fn(x):
        if torch.get_autocast_dtype("cpu") == F16:
            x = x + 1
        else:
            x = x - 1
        return torch.mm(x, WEIGHTS)

    compiled = bytegraph.compile(fn, backend=counter, fullgraph=True)
    x = torch.randn(1, 10)
    for dtype in (F16, BF16):
        with torch.autocast("cpu", dtype):
            assert_same(fn(x), compiled(x))
    assert counter.frame_count == 2


def test_a_capture_without_a_graph_is_not_guarded():
    def pure(items, k):
        return [v * k for v in items]

    compiled = bytegraph.compile(pure, backend=CompileCounter())
    assert compiled([1, 2], 3) == [3, 6]
    with torch.autocast("cpu", BF16):
        assert compiled([1, 2], 3) == [3, 6]
    entries = compiled.__bg_compiled__.entries
    assert len(entries) == 1
    assert not any("autocast" in clause for clause in entries[0].guards.clauses)


def test_both_sides_of_a_graph_break_are_guarded():
    def broken(x):
        y = x @ x
        bytegraph.graph_break()
        return y.dtype, (y @ x).dtype

    counter = CompileCounter()
    compiled = bytegraph.compile(broken, backend=counter)
    x = torch.randn(2, 2)
    assert_same(broken(x), compiled(x))
    with torch.autocast("cpu", BF16):
        assert_same(broken(x), compiled(x))
    assert counter.frame_count == 4


def test_guard_text_names_the_state():
    compiled = bytegraph.compile(mm, backend=CompileCounter())
    compiled(torch.randn(1, 10))
    guards = compiled.__bg_compiled__.entries[0].guards.guards
    assert [g.describe() for g in guards[:2]] == ["torch.is_grad_enabled() is True",
                                                   "_is_any_autocast_enabled() == False"]
