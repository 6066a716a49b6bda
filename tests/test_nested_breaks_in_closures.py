"""A graph break inside closures made in the trace resumes in the innermost frame: each
frame's resume function takes its cells as arguments (Note [Resumed cells]), so the frames
after the break keep sharing them with the closures made before it. The shapes are torch's
test_nested_graph_breaks.py ones (cells written by `nonlocal` two frames down, a cell made in
the trace, dead cells, two breaks), with torch.compile's frame and op counts."""
import torch

import bytegraph
from helpers import check, check_calls, explain_counts


def test_cells_written_in_nested_closures():
    def f1(x1):
        cell1 = x1 + 1
        cell2 = x1 + 2

        def f2(x2, x3):
            nonlocal cell1
            cell3 = x2 + x3 + 4
            cell1 += 8

            def f3(x4):
                nonlocal cell2, cell3
                cell2 += 16
                cell3 += 32
                bytegraph.graph_break()
                return x4 + cell1 + cell2 + cell3
            return f3(x2 + x3), cell3
        return f2(x1 + 64, x1 + 128) + (cell1, cell2)

    def outer(x):
        return f1(x)

    result = check(outer, torch.randn(3, requires_grad=True), graphs=2)
    assert result.counter.op_count == 13


def helper_adding_to_its_argument(x, cell1):
    cell1 += 2
    x = x + cell1
    bytegraph.graph_break()
    return x + cell1


def test_dead_cells_of_a_closure_made_in_the_trace():
    def f1(cell1=0):
        def inner(x):
            x += 4
            x = helper_adding_to_its_argument(x, cell1)
            return x + 8
        return inner

    def f2(x):
        return f1()(x + 16) + 32

    result = check(f2, torch.randn(3), graphs=2)
    assert result.counter.op_count == 6


def test_two_breaks_in_a_closure_writing_its_cell():
    def f1(x1):
        cell1 = x1 + 1

        def f2(x2):
            nonlocal cell1
            cell1 += 2
            bytegraph.graph_break()
            bytegraph.graph_break()
            return x2 + cell1
        return f2(x1 + 4), cell1

    def outer(x):
        return f1(x)

    result = check(outer, torch.randn(3), graphs=2)
    assert result.counter.op_count == 4


def test_closure_made_in_the_trace_with_defaults_resumes_inside():
    def f(x, n):
        def mid(t, k=n):
            return helper_adding_to_its_argument(t, 1) * k
        return mid(x) + 1

    result = check_calls(f, torch.randn(3), 3, calls=2, graphs=2)
    assert result.counter.op_count == 4  # x + 3 (the constant cell folded); + 1, * k, + 1


def test_closure_escaping_after_the_break_sees_the_written_cell():
    def f(x):
        total = x * 2

        def add(t):
            nonlocal total
            total = total + t
            bytegraph.graph_break()
            total = total * 3
            return lambda: total
        read = add(x + 1)
        return read(), total

    check(f, torch.randn(3, requires_grad=True), graphs=2)


def doubled_three_times(x):
    def twice(n, t):
        if n == 0:
            bytegraph.graph_break()
            return t
        return twice(n - 1, t * 2)
    return twice(3, x)


def test_recursive_closure_made_in_an_inlined_frame():
    """`twice` closes over the cell of `doubled_three_times` that holds it (a cell made in the
    trace, torch.utils._pytree's `helper` shape): the residual code makes the cell empty and
    fills it after building the function (`CellVariable.reconstruct`), not recursing."""
    def f(x):
        return doubled_three_times(x) + 1

    check(f, torch.randn(3, requires_grad=True))
    assert explain_counts(f, torch.randn(3))[:2] == (2, 1)  # resumed in the recursion, not run eagerly
