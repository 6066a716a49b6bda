"""Graph breaks in frames with cell variables resume (Note [Resumed cells] in
`translate/resume.py`): closures made before the break and read after it, `nonlocal` writes
on both sides of it, cells made or first assigned after it, closures per loop iteration and
in comprehensions, nested breaks through callers and callees with cells; the harder cases (a
captured variable deleted, or read before it is assigned, `locals()`, `super()` after the
break) match eager. Breaks inside `try`/`with` blocks: tests/test_resume_in_blocks.py and,
with cells, tests/test_resume_cells_in_blocks.py.

Every test is differential (``helpers.check``: outputs, gradients, printed output,
mutated arguments, no recompile on a second call) and asserts, through the graph count
or `bytegraph.explain`, that the code after the break is really captured.
"""
from __future__ import annotations

import torch

import bytegraph
from helpers import check, check_calls, CompileCounter, eager_rests, explain_counts


def T(*shape, grad=False):
    return torch.randn(*shape, requires_grad=grad)


# ------------------------------------------------------------------- cells across a break


def closure_read_after_print(x):
    y = x * 2
    g = lambda: y + 1  # noqa: E731
    print("between")
    return (g() * y).sin()


def test_closure_made_before_print_read_after():
    check(closure_read_after_print, T(3, grad=True), graphs=2)
    assert explain_counts(closure_read_after_print, T(3)) == (2, 1, [1, 3])


def nonlocal_counter(x):
    n = 0

    def inc():
        nonlocal n
        n += 1
        return x * n

    a = inc()
    bytegraph.graph_break()
    b = inc()
    n += 10
    return a + b + inc(), n


def test_nonlocal_written_before_and_after_break():
    check(nonlocal_counter, T(3, grad=True), graphs=2)
    assert explain_counts(nonlocal_counter, T(3)) == (2, 1, [1, 4])


def test_cell_argument_captured():
    def f(x, k):
        g = lambda t: t * k  # noqa: E731
        y = g(x)
        print("k", k)
        k = k + 1
        return g(y)

    check(f, T(3, grad=True), 2, graphs=2)
    assert explain_counts(f, T(3), 2) == (2, 1, [1, 1])


def test_closure_created_after_break():
    def f(x):
        y = x.cos()
        torch._C._log_api_usage_once("bytegraph.test")
        z = y + 1

        def h(t):
            return t * z + y

        return h(x)

    check(f, T(3, grad=True), graphs=2)
    assert explain_counts(f, T(3)) == (2, 1, [1, 3])


def test_closure_returned_after_break_shares_the_cell():
    def f(x):
        k = x + 1

        def get():
            return k

        def put(v):
            nonlocal k
            k = v

        print("made")
        put(k * 3)
        return get, put, k

    x = T(3)
    get, put, k = bytegraph.compile(f)(x)
    assert torch.equal(get(), k) and torch.allclose(k, (x + 1) * 3)
    put(torch.zeros(3))
    assert torch.equal(get(), torch.zeros(3))
    assert explain_counts(f, T(3)) == (2, 1, [1, 1])


def test_closure_returned_compared_with_eager():
    def f(x):
        k = x.sin()
        print("k")
        k = k * 2
        return (lambda: k)().cos()

    check(f, T(3, grad=True), graphs=2)


def test_item_break_with_closure():
    def f(x):
        s = x.sum()
        scale = lambda t: t * s  # noqa: E731
        v = s.item()
        return scale(x) + v

    check(f, T(4, grad=True), graphs=2)
    assert explain_counts(f, T(4)) == (2, 1, [1, 2])


def test_cell_variable_mutated_in_loop_with_break():
    def f(x):
        total = x * 0

        def add(t):
            nonlocal total
            total = total + t

        for i in range(3):
            add(x * i)
            bytegraph.graph_break()
        return total

    check(f, T(3, grad=True))
    assert eager_rests(f, T(3)) == []


def test_closure_per_iteration_in_loop_with_break():
    def f(x):
        acc = []
        for i in range(3):
            x = x + 1
            h = lambda: x * i  # noqa: E731
            print("step", i)
            acc.append(h())
        return acc

    check(f, T(3, grad=True))
    out = bytegraph.explain(f, T(3))
    assert eager_rests(f, T(3)) == [] and out.graph_count >= 4


def test_lambdas_in_comprehension_after_break():
    def f(x):
        w = x * 2
        print("w")
        fs = [lambda t, i=i: t * i + w for i in range(3)]
        return sum(g(x) for g in fs)

    check(f, T(3, grad=True))
    assert eager_rests(f, T(3)) == []


def test_comprehension_closing_over_local_with_break():
    def f(x):
        k = x.cos()
        bytegraph.graph_break()
        return [k * i for i in range(3)]

    check(f, T(3, grad=True), graphs=2)


def test_cell_assigned_only_after_break():
    def f(x):
        print("start")
        y = x + 1
        g = lambda: y * 2  # noqa: E731
        return g()

    check(f, T(3, grad=True), graphs=1)
    assert explain_counts(f, T(3)) == (1, 1, [2])


def test_cell_read_before_assignment_after_break_raises_like_eager():
    def f(x):
        print("start")
        if x.shape[0] > 10:
            y = x
        g = lambda: 0  # noqa: E731
        del g
        return y + 1

    check(f, T(3))


def test_captured_variable_read_before_assigned_after_break_runs_eagerly():
    def f(x, flag):
        def g():
            return y

        print("start")
        if flag:
            y = x + 1
        return g() if flag else x

    check(f, T(3), True)
    check(f, T(3), False)


def test_deleted_captured_variable_falls_back():
    def f(x):
        y = x + 1
        g = lambda: y  # noqa: E731,F821
        print("x")
        z = g()
        del y
        return z

    check(f, T(3, grad=True))
    assert ["deletes a variable" in r for r in eager_rests(f, T(3))] == [True]


def test_locals_call_with_cells_falls_back():
    def f(x):
        y = x + 1
        g = lambda: y  # noqa: E731
        print("x")
        return g(), sorted(locals())

    check(f, T(3, grad=True))


def test_closure_stored_in_argument_list_across_break():
    def f(x, fns):
        k = x * 2
        fns.append(lambda: k)
        print("stored")
        return fns.pop()() + 1

    check(f, T(3, grad=True), [], graphs=2)


def test_closure_over_object_attribute_written_after_break():
    class Box:
        pass

    def f(x, box):
        def setv(v):
            box.v = v

        setv(x * 2)
        print("set")
        setv(box.v + 1)
        return box.v

    b = Box()
    check(f, T(3, grad=True), b, graphs=2)


def test_closure_called_repeatedly_across_calls():
    def f(x, state):
        def bump():
            state["n"] = state.get("n", 0) + 1
            return x * state["n"]

        a = bump()
        bytegraph.graph_break()
        return a + bump()

    check_calls(f, T(3), {}, calls=3)


# -------------------------------------------------------------- nested breaks with cells


def leaf_with_cells(x):
    k = x.sin()
    g = lambda t: t + k  # noqa: E731
    print("leaf")
    return g(x).cos()


def caller_of_leaf(x):
    return leaf_with_cells(x * 2) + 1


def test_nested_break_in_callee_with_cells():
    check(caller_of_leaf, T(3, grad=True), graphs=2)
    out = bytegraph.explain(caller_of_leaf, T(3))
    assert eager_rests(caller_of_leaf, T(3)) == [] and [len(o) for o in out.ops_per_graph] == [2, 3]


def outer_with_cells(x):
    k = x * 3
    g = lambda t: t - k  # noqa: E731
    y = leaf_with_cells(x)
    return g(y)


def test_nested_break_through_waiting_frame_with_cells():
    check(outer_with_cells, T(3, grad=True), graphs=2)
    out = bytegraph.explain(outer_with_cells, T(3))
    assert eager_rests(outer_with_cells, T(3)) == [] and [len(o) for o in out.ops_per_graph] == [2, 3]


def test_nested_break_callee_writes_nonlocal_after_break():
    def f(x):
        n = x * 0

        def step(t):
            nonlocal n
            n = n + t
            print("step")
            n = n * 2
            return n

        step(x)
        return step(x) + n

    check(f, T(3, grad=True))
    assert eager_rests(f, T(3)) == []


def test_closure_made_per_call_shares_one_resume_function():
    def make(k):
        def f(x):
            y = x * k
            print("made")
            return y + k

        return f

    check(make(T(3)), T(3, grad=True), graphs=2)
    counter, counts = CompileCounter(), []
    for _ in range(3):  # each closure compiles its prefix; the resume function is shared
        k, x = T(3), T(3)
        assert torch.allclose(bytegraph.compile(make(k), backend=counter)(x), x * k + k)
        counts.append(counter.frame_count)
    assert counts == [2, 3, 4]


def test_nested_break_in_closure_made_per_call_does_not_recompile():
    def f(x):
        n = x * 0

        def step(t):
            nonlocal n
            n = n + t
            print("step")
            n = n * 2
            return n

        step(x)
        return step(x) + n

    one = check_calls(f, T(3), calls=1).counter.frame_count
    assert check_calls(f, T(3), calls=3).counter.frame_count == one  # no recompile per closure
    assert eager_rests(f, T(3)) == []


def test_method_calling_super_after_break_falls_back():
    class Base(torch.nn.Module):
        def forward(self, x):
            return x + 1

    class M(Base):
        def forward(self, x):
            y = x * 2
            print("m")
            return super().forward(y)

    check(M(), T(3, grad=True))
