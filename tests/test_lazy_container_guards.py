"""Container lengths guarded only when the trace really needs them (Note [Lazy
containers] in bytegraph/vars/lazy_list.py).

A function, inlined helper or module hook that only appends to a list from outside (a
global, a closure cell, an attribute, an argument) compiles once however long the list
grows, and every call's side effect equals eager's; code that reads the length or the items
still guards them and recompiles when they change (each such test would return a stale
value if the guard were dropped). Also: the replay of the appends, aliasing, realizing after
appends, a graph break between appends, and a checkpoint restored after a realization.
"""
import pytest
import torch

import bytegraph
from bytegraph.guards.guard import GuardKind
from bytegraph.translate.capture import capture
from bytegraph.translate.translator import Translator
from bytegraph.vars.constant import ConstantVariable
from helpers import CompileCounter, assert_same, check, clone_inputs

CALLS = 20


def T(*shape):
    return torch.randn(*shape)


def run_calls(make, calls=CALLS, arg=lambda i: (T(3),)):
    """`make()` -> (fn, snapshot): a function with fresh outer state, and a function returning
    that state. Runs `calls` calls eagerly, then as many compiled on fresh state (one compiled
    function), comparing each call's result and state; returns the counting backend."""
    torch.manual_seed(0)
    args = [arg(i) for i in range(calls)]
    fn, snapshot = make()
    eager = []
    for a in args:
        out = fn(*clone_inputs(a))
        eager.append((out, clone_inputs(snapshot())))
    fn, snapshot = make()
    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter)
    for i, a in enumerate(args):
        out = compiled(*clone_inputs(a))
        assert_same(eager[i][0], out, f"call #{i + 1}: result")
        assert_same(eager[i][1], snapshot(), f"call #{i + 1}: outer state")
    return counter


# ---------------------------------------------------------------- only appended: one compile

LOG = []


def appends_to_global(x):
    LOG.append(x * 2)
    return x + 1


def fresh_global():
    LOG.clear()
    return appends_to_global, lambda: list(LOG)


def test_global_list_appended_compiles_once():
    assert run_calls(fresh_global).frame_count == 1


def test_closure_list_appended_compiles_once():
    def make():
        log = []

        def f(x):
            log.append(x.sum())
            return x.cos()
        return f, lambda: list(log)

    assert run_calls(make).frame_count == 1


def test_attribute_list_appended_in_forward_compiles_once():
    class Recorder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)
            self.history = []

        def forward(self, x):
            y = self.lin(x)
            self.history.append(y.detach().sum())
            return y.relu()

    def make():
        torch.manual_seed(1)
        m = Recorder()
        return m, lambda: list(m.history)

    assert run_calls(make).frame_count == 1


def test_argument_list_appended_compiles_once():
    def f(x, log):
        log.append(x * 3)
        log.append(len)  # not a tensor: replayed as the same object
        return x - 1

    eager_log, comp_log = [], []
    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter)
    for i in range(CALLS):
        x = T(3)
        assert_same(f(x, eager_log), compiled(x, comp_log), f"call #{i + 1}")
        assert_same(eager_log, comp_log, f"call #{i + 1}: the list")
    assert counter.frame_count == 1


def test_module_forward_hook_appending_does_not_recompile():
    def make():
        torch.manual_seed(1)
        seen = []
        m = torch.nn.Linear(3, 3)
        m.register_forward_hook(lambda mod, inp, out: seen.append(out.sum()))
        return (lambda x: m(x) * 2), lambda: list(seen)

    assert run_calls(make).frame_count == 1


def test_extend_and_inplace_add_compile_once():
    def make():
        log = []

        def f(x):
            nonlocal log
            log.extend([x, x + 1])
            log += (x * 3,)
            return x
        return f, lambda: list(log)

    assert run_calls(make).frame_count == 1


def record(log, value):
    log.append(value)


def test_append_inside_an_inlined_helper_compiles_once():
    def make():
        log = []

        def f(x):
            record(log, x.sum())
            record(log, "tag")
            return x * 2
        return f, lambda: list(log)

    assert run_calls(make).frame_count == 1


def test_appends_around_a_graph_break_do_not_recompile():
    def make():
        log = []

        def f(x):
            log.append(x + 1)
            bytegraph.graph_break()
            log.append(x + 2)
            return x * 2
        return f, lambda: list(log)

    assert run_calls(make).frame_count == 2  # the graph before the break and the resume function's


def breaks_in_helper(log, x):
    log.append(x.sum())
    bytegraph.graph_break()
    log.append(x.mean())
    return x + 1


def test_appends_around_a_nested_break_do_not_recompile():
    def make():
        log = []

        def f(x):
            return breaks_in_helper(log, x * 2) * 3
        return f, lambda: list(log)

    counter = run_calls(make, calls=2)
    settled = counter.frame_count
    assert run_calls(make).frame_count == settled


def test_one_list_appended_through_two_paths():
    def make():
        log = []
        holder = {"log": log}

        def f(x):
            log.append(x)
            holder["log"].append(x + 1)
            return x
        return f, lambda: (list(log), holder["log"] is log)

    assert run_calls(make).frame_count == 1


def test_appended_list_returned_is_the_real_list():
    def f(x, log):
        log.append(x * 2)
        return log

    check(f, T(3), [T(2)], graphs=1)


# ---------------------------------------------------------------- read: guarded, recompiled

def test_length_used_as_a_python_value_guards_the_length():
    """A loop bound is specialized, symbolic or not: one graph per length."""
    def make():
        log = []

        def f(x):
            log.append(1)
            for i in range(len(log)):  # unrolled: a stale entry would add the wrong terms
                x = x + i
            return x
        return f, lambda: list(log)

    assert run_calls(make, calls=5).frame_count == 5


def test_length_in_tensor_arithmetic_becomes_a_graph_input_once_it_changes():
    """A log that grows on every call, its length read into tensor arithmetic,
    compiles twice (static, then with the length a symbolic input), not once per length."""
    def make():
        log = []

        def f(x):
            log.append(1)
            return x * len(log)  # a stale entry would multiply by an old length
        return f, lambda: list(log)

    assert run_calls(make, calls=8).frame_count == 2


def test_length_read_does_not_guard_the_items():
    def f(x, xs):
        return x * len(xs)

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter)
    x = T(3)
    for xs in ([1, 2], [3, 4], ["a", T(2)]):
        assert_same(f(x, xs), compiled(x, xs), repr(xs))
    assert counter.frame_count == 1
    assert_same(f(x, [1, 2, 3]), compiled(x, [1, 2, 3]), "a longer list")
    assert counter.frame_count == 2


def test_truth_of_an_outer_list_guards_whether_it_is_empty():
    def make():
        log = []

        def f(x):
            if log:
                out = x + 1
            else:
                out = x - 1
            log.append(0)
            return out
        return f, lambda: list(log)

    # empty on the first call, not empty from then on: two graphs (a stale one would take
    # the other branch), not one per length
    assert run_calls(make, calls=4).frame_count == 2


def test_truth_after_an_append_in_the_trace_needs_no_guard():
    def make():
        log = []

        def f(x):
            log.append(1)
            if log:  # not empty, whatever it held before the append
                return x + 1
            return x - 1
        return f, lambda: list(log)

    assert run_calls(make, calls=6).frame_count == 1


def test_emptiness_guard_is_one_clause_per_state():
    log = []

    def f(x):
        return x + 1 if log else x - 1

    compiled = bytegraph.compile(f, backend="eager")
    x = torch.zeros(2)
    assert_same(f(x), compiled(x), "empty log")
    (entry,) = compiled.__bg_compiled__.entries
    assert "len(" in entry.guards.source and ") == 0" in entry.guards.source
    log.append(1)
    assert_same(f(x), compiled(x), "log with an item")
    assert len(compiled.__bg_compiled__.entries) == 2
    log.append(2)
    assert_same(f(x), compiled(x), "log with two items")
    assert len(compiled.__bg_compiled__.entries) == 2


def test_item_read_after_append_sees_old_items_then_the_tail():
    def make():
        log = [10]

        def f(x):
            log.append(x.sum())
            return x * log[0] + log[-1]
        return f, lambda: list(log)

    assert run_calls(make, calls=4).frame_count == 4


def test_items_changed_between_calls_recompile():
    def f(x, xs):
        return x * sum(xs)

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter)
    xs, x = [1, 2], T(3)
    assert_same(f(x, xs), compiled(x, xs), "first")
    xs[0] = 5  # same length, new item: a stale entry would use 1 + 2
    x = T(3)
    assert_same(f(x, xs), compiled(x, xs), "after xs[0] = 5")
    assert counter.frame_count == 2


def test_iteration_after_append_sees_the_appended_items():
    def make():
        log = [1.0]

        def f(x):
            log.append(2.0)
            for v in log:
                x = x + v
            return x
        return f, lambda: list(log)

    assert run_calls(make, calls=3).frame_count == 3


def test_extend_with_itself():
    def f(x, xs):
        xs.extend(xs)
        xs.append(x)
        return x + 1

    check(f, T(3), [1, 2], graphs=1)


def test_append_then_pop_and_insert():
    def f(x, xs):
        xs.append(x)
        last = xs.pop()
        xs.insert(0, last * 2)
        return last

    check(f, T(3), [T(3)], graphs=1)


def test_append_then_in_and_index():
    def f(x, xs):
        xs.append(7)
        return x * (7 in xs), xs.index(7)

    check(f, T(3), [1, 2], graphs=1)


def test_read_then_append_across_a_graph_break():
    def make():
        log = []

        def f(x):
            log.append(x.sum())
            bytegraph.graph_break()
            return x * len(log)
        return f, lambda: list(log)

    counter = run_calls(make, calls=4)
    assert counter.frame_count == 1 + 2  # the part before the break once, the resume static then symbolic


def test_guard_dropped_would_be_wrong_for_an_appended_then_read_list():
    """A list appended to in one call and read in the next: the reading entry guards it."""
    def make():
        log = []

        def f(x, read):
            if read:
                return x * len(log)
            log.append(1)
            return x - 1
        return f, lambda: list(log)

    counter = run_calls(make, calls=6, arg=lambda i: (T(3), i % 2 == 1))
    assert counter.frame_count == 1 + 2  # appending: one entry; reading: static, then the length symbolic


# ---------------------------------------------------------------- checkpoints


def _speculate():
    """Eagerly nothing; traced, the test's hook checkpoints, realizes the list, restores."""


@pytest.fixture
def speculate_hook(monkeypatch):
    inline = Translator.inline_call
    seen = []

    def inline_call(self, fn_vt, args, kwargs):
        if getattr(fn_vt, "fn", None) is _speculate:
            lst = self.locals["xs"]
            guards_before = len(self.output.guards)
            cp = self.checkpoint()
            lst.len_impl(self)
            seen.append([i.value for i in lst.items])  # realized: length and items guarded
            assert len(self.output.guards) > guards_before
            self.restore(cp)
            self.release(cp)
            seen.append(len(self.output.guards) - guards_before)
            return ConstantVariable(None)
        return inline(self, fn_vt, args, kwargs)

    monkeypatch.setattr(Translator, "inline_call", inline_call)
    return seen


def test_restored_realization_leaves_the_list_unguarded(speculate_hook):
    def f(xs, x):
        xs.append(3)
        _speculate()
        xs.append(4)
        return x + 1

    cap = capture(f, ([1, 2], T(2)), lambda gm, example_inputs: gm.forward)
    assert speculate_hook == [[1, 2, 3], 0]
    kinds = {g.kind for g in cap.guards if g.source is not None and g.source.name() == "xs"}
    assert kinds == {GuardKind.TYPE_MATCH}  # no length or item guard survived the restore
    if cap.graph is not None:
        name, compiled = cap.graph
        f.__globals__[name] = compiled
    for start in ([], [9], [5, 6, 7]):
        xs = list(start)
        cap.fn(xs, T(2))
        assert xs == [*start, 3, 4]
