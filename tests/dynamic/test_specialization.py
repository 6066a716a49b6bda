"""What specializes a symbolic size (a Python-level use: `if`, `range`, an index, a
dict key), 0/1 specialization, `mark_dynamic`/`mark_static`, and `dynamic=True/False`."""
import pytest
import torch

import bytegraph
from dynamic_support import check_calls


def branch_on_batch(x):
    if x.shape[0] > 2:
        return x * 2
    return x - 1


def branch_on_equality(x):
    if x.size(0) == 4:
        return x.sum(0)
    return x.mean(0)


def loop_over_rows(x):
    out = x[0]
    for i in range(1, x.shape[0]):
        out = out + x[i]
    return out


def size_as_dict_key(x):
    table = {2: 1.0, 3: 2.0, 4: 3.0, 5: 4.0}
    return x * table[x.shape[0]]


def size_as_list_index(x):
    weights = [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    return x * weights[x.shape[0]]


def size_formatted(x):
    return x * len(f"{x.shape[0]}")


def size_in_min(x):
    return x[: min(x.shape[0], 3)]


def test_branch_on_size_guards_the_condition():
    calls = [torch.randn(b, 3) for b in (1, 2, 3, 4, 5, 6, 2, 7)]
    counter, _ = check_calls(branch_on_batch, calls, graphs=3)


def test_branch_on_size_equality():
    calls = [torch.randn(b, 3) for b in (2, 3, 4, 5, 4, 6)]
    check_calls(branch_on_equality, calls, graphs=3)


@pytest.mark.parametrize("fn", [loop_over_rows, size_as_dict_key, size_as_list_index],
                         ids=lambda f: f.__name__)
def test_python_use_of_a_size_specializes_it(fn):
    calls = [torch.randn(b, 3) for b in (2, 3, 4, 3, 2)]
    check_calls(fn, calls, graphs=3)


def test_formatting_a_size_specializes_it():
    check_calls(size_formatted, [torch.randn(b, 3) for b in (2, 3, 4)], graphs=3)


def test_min_of_a_size_specializes_it():
    check_calls(size_in_min, [torch.randn(b, 3) for b in (2, 3, 4, 5)], max_graphs=4)


@pytest.mark.parametrize("sizes, graphs", [
    ((1, 2, 3, 1, 4), 2),   # 1 stays its own (static) entry; 2, 3, 4 share the dynamic one
    ((2, 1, 3, 1, 5), 3),   # 1 after 2: its own entry (1 is specialized even when dynamic)
    ((0, 2, 3, 0), 2),      # an empty batch stays specialized too
    ((3, 3, 3), 1),
])
def test_zero_and_one_specialize(sizes, graphs):
    def f(x):
        return x.sum(1) * x.shape[0] + 1

    check_calls(f, [torch.randn(b, 4) for b in sizes], graphs=graphs)


def test_size_one_in_a_dynamic_entry_does_not_match():
    def f(x):
        return x.sum(0) * 2

    cf = bytegraph.compile(f, dynamic=True)
    cf(torch.randn(3, 2))
    entry = cf.__bg_compiled__.entries[0]
    assert entry.guards.fn(torch.randn(7, 2))
    assert not entry.guards.fn(torch.randn(1, 2)) and not entry.guards.fn(torch.randn(0, 2))


def test_broadcast_against_a_static_tensor_specializes():
    bias = torch.randn(4)

    def f(x):
        return x + bias

    check_calls(f, [torch.randn(2, 4), torch.randn(3, 4), torch.randn(5, 4)], graphs=2)


def _mark(dims):
    def prepare(args):
        bytegraph.mark_dynamic(args[0], dims)
    return prepare


def test_mark_dynamic_first_call_is_already_symbolic():
    def f(x):
        return x.relu().sum(0) / x.shape[0]

    calls = [torch.randn(b, 3) for b in (2, 3, 4, 5)]
    check_calls(f, calls, graphs=1, prepare=_mark(0))


def test_mark_dynamic_one_dimension_keeps_the_other_static():
    def f(x):
        return x * 2

    calls = [torch.randn(b, d) for b, d in [(2, 3), (3, 3), (4, 5)]]
    check_calls(f, calls, graphs=2, prepare=_mark(0))


def test_mark_dynamic_several_dimensions():
    def f(x):
        return x.reshape(-1) + 1

    calls = [torch.randn(b, d) for b, d in [(2, 3), (3, 4), (4, 5)]]
    check_calls(f, calls, graphs=1, prepare=_mark([0, 1]))


def test_mark_dynamic_negative_dimension():
    def f(x):
        return x.mean(-1)

    calls = [torch.randn(2, d) for d in (3, 4, 6)]
    check_calls(f, calls, graphs=1, prepare=_mark(-1))


def test_mark_dynamic_rejects_a_bad_dimension():
    with pytest.raises(IndexError, match="out of range"):
        bytegraph.mark_dynamic(torch.randn(2, 3), 2)


def test_mark_static_prevents_automatic_dynamic():
    def f(x):
        return x * 2

    def prepare(args):
        bytegraph.mark_static(args[0], 0)

    calls = [torch.randn(b, 3) for b in (2, 3, 4)]
    check_calls(f, calls, graphs=3, prepare=prepare)


def test_mark_static_under_dynamic_true():
    def f(x):
        return x * 2

    def prepare(args):
        bytegraph.mark_static(args[0])

    calls = [torch.randn(b, 3) for b in (2, 3, 4)]
    check_calls(f, calls, graphs=3, dynamic=True, prepare=prepare)


def test_dynamic_true_keeps_parameters_static():
    lin = torch.nn.Linear(3, 2)

    def f(x):
        return lin(x)

    counter, cfn = check_calls(f, [torch.randn(b, 3) for b in (2, 3, 4)], graphs=1, dynamic=True)
    source = cfn.__bg_compiled__.entries[0].guards.source
    assert "shape == (2, 3)" in source  # the weight's guard stays static


def test_dynamic_false_never_makes_ints_symbolic():
    def f(x, n):
        return x * n

    check_calls(f, [(torch.randn(2), n) for n in (2, 3, 4)], graphs=3, dynamic=False)


def test_dynamic_true_compiles_a_module_once():
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    counter = __import__("helpers").CompileCounter()
    compiled = bytegraph.compile(model, backend=counter, dynamic=True)
    for b in (2, 3, 5, 9):
        x = torch.randn(b, 4)
        torch.testing.assert_close(compiled(x), model(x))
    assert counter.frame_count == 1


def test_reset_forgets_what_was_dynamic():
    def f(x):
        return x * 2

    counter = __import__("helpers").CompileCounter()
    cf = bytegraph.compile(f, backend=counter)
    cf(torch.randn(2))
    cf(torch.randn(3))
    bytegraph.reset()
    cf(torch.randn(4))
    assert counter.frame_count == 3
    assert "x.shape == (4,)" in cf.__bg_compiled__.entries[0].guards.source


def test_fullgraph_with_dynamic_sizes():
    def f(x):
        b, t = x.shape
        return x.view(t, b).cumsum(0)

    calls = [torch.randn(b, t) for b, t in [(2, 3), (3, 4), (5, 6)]]
    check_calls(f, calls, graphs=2, fullgraph=True)


def test_shape_guard_failure_is_explained_with_its_line(caplog):
    def f(x):
        if x.shape[0] > 3:
            return x + 1
        return x - 1

    bytegraph.set_logs("recompiles")
    try:
        cf = bytegraph.compile(f)
        with caplog.at_level("DEBUG", logger="bytegraph.recompiles"):
            for b in (2, 3, 5):
                cf(torch.randn(b))
    finally:
        bytegraph.set_logs()
    assert "x.size(0) <= 3" in caplog.text and "test_specialization.py" in caplog.text, caplog.text
