"""Graph breaks that used to run the rest of the frame eagerly and now resume (issue 4):
frames with cell variables (Note [Resumed cells] in `translate/resume.py`).

Every test is differential (``helpers.check``: outputs, gradients, printed output,
mutated arguments, no recompile on a second call) and asserts, through the graph count
or `bytegraph.explain`, that the code after the break is really captured.
"""
from __future__ import annotations

import torch

import bytegraph
from helpers import CompileCounter, check, check_calls


def T(*shape, grad=False):
    return torch.randn(*shape, requires_grad=grad)


def explain_counts(fn, *args):
    out = bytegraph.explain(fn, *args)
    return out.graph_count, out.graph_break_count, [len(ops) for ops in out.ops_per_graph]


def eager_rests(fn, *args):
    """Why some frame (or the rest of one, after a break) ran eagerly in one explained call."""
    out = bytegraph.explain(fn, *args)
    frames = out.eager_frames  # a frame run eagerly at a break is listed there with the break's reason
    return [r.reason for r in out.break_reasons
            if "runs eagerly" in r.reason and not any(r.reason in f for f in frames)] + frames


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


# ------------------------------------------------- breaks inside try / with (Note [Breaks inside blocks])


def test_break_in_try_code_after_raises_and_is_caught():
    def f(x):
        try:
            y = x * 2
            print("in try")
            z = y + 1
            if z.shape[0] == 3:
                raise ValueError("boom")
        except ValueError:
            z = y * 3
        return z.sin()

    check(f, T(3, grad=True))
    # the resume function raises and catches in its own frame: it compiles too (Note [Traced exceptions])
    assert explain_counts(f, T(3))[:2] == (2, 1)


def test_break_in_try_rest_is_compiled():
    def f(x):
        try:
            y = x * 2
            print("in try")
            z = y.cos() + 1
        except RuntimeError:
            z = x
        return z * 2

    check(f, T(3, grad=True), graphs=2)
    assert explain_counts(f, T(3)) == (2, 1, [1, 3])


def test_breaking_call_raises_inside_try():
    def boom(t):
        raise KeyError("k")

    def f(x):
        y = x + 1
        try:
            torch._C._log_api_usage_once("bytegraph.test")
            y = y * 2
            boom(y)
        except KeyError as e:
            return y - 1, str(e)
        return y, ""

    check(f, T(3, grad=True))


def test_breaking_instruction_itself_raises_inside_try():
    def f(x, d):
        y = x * 2
        try:
            v = d["missing"].item()
        except KeyError:
            v = -1.0
        return y + v

    check(f, T(3, grad=True), {"present": torch.ones(())})


def test_break_in_try_finally_runs_finally():
    def f(x, log):
        try:
            y = x * 2
            bytegraph.graph_break()
            y = y + 1
        finally:
            log.append("finally")
            y = y * 3
        return y

    check(f, T(3, grad=True), [], graphs=2)
    assert explain_counts(f, T(3), []) == (2, 1, [1, 2])


def test_try_finally_when_code_after_break_raises():
    def f(x, log):
        try:
            y = x * 2
            print("before")
            y.view(7)
        finally:
            log.append(len(log))
        return y

    check(f, T(3, grad=True), [1])


def test_item_break_inside_try_in_loop():
    def f(x):
        total = x * 0
        for i in range(3):
            try:
                s = (x * i).sum()
                v = s.item()
                total = total + v
            except ZeroDivisionError:
                total = total - 1
        return total

    check(f, T(3, grad=True))
    assert eager_rests(f, T(3)) == []


def test_break_inside_no_grad():
    def f(x):
        with torch.no_grad():
            y = x * 2
            print("no grad")
            z = y + 1
            inside = torch.is_grad_enabled()
        return z, x * 2, inside, torch.is_grad_enabled()

    check(f, T(3, grad=True), graphs=2)
    assert explain_counts(f, T(3, grad=True)) == (2, 1, [2, 3])


def test_break_inside_enable_grad_under_no_grad():
    def f(x):
        with torch.enable_grad():
            y = x * 2
            bytegraph.graph_break()
            z = y.sin()
        return z, torch.is_grad_enabled()

    with torch.no_grad():
        check(f, T(3, grad=True), graphs=2)


def test_break_inside_set_grad_enabled():
    def f(x, flag):
        with torch.set_grad_enabled(flag):
            y = x * 2
            print("flag", flag)
            z = y * y.sum()
        return z, z.requires_grad, torch.is_grad_enabled()

    check(f, T(3, grad=True), False, graphs=2)
    check(f, T(3, grad=True), True, graphs=2)


def test_no_grad_exit_after_exception_in_resumed_block():
    def f(x):
        try:
            with torch.no_grad():
                y = x * 2
                print("inside")
                y.view(7)
        except RuntimeError:
            pass
        return torch.is_grad_enabled(), x * 3

    check(f, T(3, grad=True))


def test_nested_with_and_try():
    def f(x, log):
        with torch.no_grad():
            try:
                y = x * 2
                print("nested")
                y = y + 1
            finally:
                log.append(torch.is_grad_enabled())
        w = x * y
        return w, w.requires_grad, torch.is_grad_enabled()

    check(f, T(3, grad=True), [], graphs=2)
    assert eager_rests(f, T(3, grad=True), []) == []


def test_break_in_except_block_falls_back_but_matches_eager():
    def f(x):
        try:
            raise ValueError("v")
        except ValueError:
            y = x * 2
            print("in except")
            y = y + 1
        return y

    check(f, T(3, grad=True))




class UserCtx:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_break_inside_user_context_manager_falls_back():
    def f(x):
        with UserCtx():
            y = x * 2
            print("user ctx")
            y = y + 1
        return y

    check(f, T(3, grad=True))


def test_try_with_cells_breaks_still_correct():
    def f(x):
        k = x * 2
        g = lambda: k  # noqa: E731
        try:
            print("cells in try")
            k = k + 1
        except RuntimeError:
            pass
        return g()

    check(f, T(3, grad=True))


class _BlockBreakNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        with torch.no_grad():
            stats = h.mean()
            print("stats", round(float(stats), 4))
        try:
            out = torch.relu(h) * 2
        finally:
            print("done")
        return out, stats


def test_break_in_with_and_try_blocks_of_a_compiled_modules_forward_is_captured():
    # the module's forward is inlined into the wrapper's root frame; a break inside its
    # with block is taken at the module call, which then runs forward compiled on its own
    torch.manual_seed(0)
    net = _BlockBreakNet()
    check(lambda m, x: m(x), net, torch.randn(2, 4, requires_grad=True))
    torch.manual_seed(0)
    out = bytegraph.explain(_BlockBreakNet())(torch.randn(2, 4))
    assert out.graph_count >= 2, out  # linear + mean before the break, relu/mul after it
    ops = [str(op) for graph_ops in out.ops_per_graph for op in graph_ops]
    assert any("linear" in op for op in ops) and any("relu" in op for op in ops), out
