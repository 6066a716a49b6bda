"""Graph breaks inside inlined calls, resumed where they happen (Note [Continuations]).

The capture that meets the break compiles everything before it (the caller's prefix and
every inlined callee's prefix) as one graph; the breaking instruction runs eagerly; one
continuation then runs the rest of every frame, innermost first, as one more capture.
When that is impossible (a frame inside `try`, a `partial`, a value that cannot be
rebuilt) the capture restarts and breaks at the outermost call site instead.
A module call without hooks counts as a call of its `forward`. Every test is differential
(``helpers.check``: outputs, gradients, printed output, mutated arguments, no recompile on a second call).
"""
from __future__ import annotations

import linecache
import os
import random
import time

import pytest
import torch

import bytegraph
from helpers import check, check_calls, check_sequence, CompileCounter, explain_counts

COUNTS = []


def T(*shape, grad=False):
    return torch.randn(*shape, requires_grad=grad)


# ---------------------------------------------------------------------------- chains


def leaf(x):
    y = x.sin()
    print("leaf", tuple(y.shape))
    return y.cos()


def middle(x, k):
    return leaf(x * k) + k


def top(x):
    return middle(x + 1, 3) * 2


def test_three_levels_prefix_and_rest_are_one_graph_each():
    check(top, T(4, grad=True), graphs=2)
    assert explain_counts(top, T(4)) == (2, 1, [3, 3])  # [add, mul, sin] | print | [cos, add, mul]


def test_values_waiting_on_the_callers_stacks():
    def f(x, y):
        a = y * 2
        return a - middle(x, 2) * 3, [a, leaf(y)]

    check(f, T(3, grad=True), T(3, grad=True), graphs=3)  # two breaks


def test_call_with_null_slots_and_keywords_waiting():
    def combine(a, b, *, scale):
        return (a + b) * scale

    def f(x):
        return combine(x.cos(), middle(x, k=2), scale=0.5)

    check(f, T(3, grad=True), graphs=2)


def test_method_call_in_the_chain():
    class Model:
        def __init__(self):
            self.w = torch.ones(3) * 2

        def run(self, x):
            return leaf(x * self.w) + self.w

    def f(m, x):
        return m.run(x).sum()

    check(f, Model(), T(3, grad=True), graphs=2)


def test_callee_breaks_first_and_last():
    def starts(x):
        print("start")
        return x * 2

    def ends(x):
        y = x * 3
        print("end")
        return y

    def f(x):
        return starts(x).sin() + ends(x).cos()

    check(f, T(3, grad=True), graphs=2)  # [] | print | [mul, sin, mul] | print | [cos, add]
    assert explain_counts(f, T(3))[:2] == (2, 2)


def test_two_breaks_in_sequence_in_callees():
    def f(x):
        a = middle(x, 2)
        b = middle(a, 3)
        return a + b

    check(f, T(3, grad=True), graphs=3)
    assert explain_counts(f, T(3))[:2] == (3, 2)


def inner_again(x):
    print("again")
    return x - 1


def first(x):
    y = leaf(x)
    return inner_again(y) * 2


def test_break_inside_a_continuation_deeper_down():
    def f(x):
        return first(x) + 1

    check(f, T(3, grad=True), graphs=3)  # [sin] | print | [cos, ] | print | [sub, mul, add]


def test_data_dependent_branch_in_callee():
    def helper(x):
        y = x * 2
        if y.sum() > 0:
            return y + 1
        return y - 1

    def f(x):
        return helper(x.cos()) * 3

    check(f, torch.ones(3, requires_grad=True), graphs=2)
    check(f, -torch.ones(3) * 4, graphs=2)


def down(x, n):
    if n == 0:
        print("bottom")
        return x
    return down(x * 2, n - 1) + n


def test_recursion_breaking_at_the_bottom():
    def f(x):
        return down(x, 4)

    check(f, T(3, grad=True), graphs=2)


def test_recursive_closure_resumes_in_place():
    def down_closure(x, n):
        if n == 0:
            print("bottom")
            return x
        return down_closure(x * 2, n - 1) + n

    def f(x):
        return down_closure(x, 3)

    check(f, T(3, grad=True), graphs=2)


def test_breaking_callee_in_a_loop_converges():
    def f(x):
        for i in range(4):
            x = middle(x, i)
        return x

    r = check(f, T(3, grad=True))
    frames = r.counter.frame_count
    r.compiled_fn(T(3, grad=True))
    assert r.counter.frame_count == frames


def test_loop_inside_the_breaking_callee():
    def looper(x):
        for i in range(3):
            x = x + i
            print("step", i)
        return x

    def f(x):
        return looper(x.sin()).cos()

    check(f, T(3, grad=True))


def test_breaking_call_with_keywords_in_callee():
    def helper(x):
        y = x + 1
        print("kw", tuple(y.shape), sep="|", end="\n")
        return y * 2

    def f(x):
        return helper(x).sum()

    check(f, T(3, grad=True), graphs=2)


def test_eager_instruction_raises_through_the_chain():
    def helper(x):
        y = x + 1
        os.stat("/nonexistent/bytegraph")  # raises FileNotFoundError eagerly
        return y

    def f(x):
        return helper(x) * 2

    check(f, T(3, grad=True))


def test_eager_instruction_raises_caught_by_caller():
    def helper(x):
        os.stat("/nonexistent/bytegraph")
        return x

    def f(x):
        try:
            return helper(x) * 2
        except FileNotFoundError:
            return x - 1

    check(f, T(3, grad=True))


G_STEP = 0


def bump_then_break(x):
    global G_STEP
    G_STEP += 1
    print("step", G_STEP)
    G_STEP += 1
    return x * G_STEP


def test_global_written_in_callee_around_the_break():
    def f(x):
        return bump_then_break(x + 1) - G_STEP

    def setup():
        global G_STEP
        G_STEP = 0

    check(f, T(3, grad=True), setup=setup, state=lambda: G_STEP, graphs=2)


def test_decorated_callee_resumes_in_place():
    def deco(fn):
        def wrapper(*args, **kwargs):
            return fn(*args, **kwargs) + 1
        return wrapper

    @deco
    def helper(x):
        print("decorated")
        return x * 2

    def f(x):
        return helper(x.sin()).cos()

    check(f, T(3, grad=True), graphs=2)  # [sin] | print | [mul, add, cos]


def make_scaler(k):
    def scale(x):
        print("scale", k)
        return x * k
    return scale


def test_new_closure_per_call_is_not_baked_in():
    def f(x, fn):
        return fn(x + 1) - 1

    check_sequence(f, [(T(3), make_scaler(2.0)), (T(3), make_scaler(3.0)), (T(3), make_scaler(-1.0))])


def test_partial_callee_breaks_at_the_call_site():
    import functools

    def f(x):
        return functools.partial(middle, k=2)(x) + 1

    check(f, T(3, grad=True))


# ---------------------------------------------------------------------------- state


def test_list_mutated_across_frames():
    def helper(x, out):
        out.append(1)
        print("helper", len(out))
        out.append(2)
        return x * len(out)

    def f(x, out):
        out.append(0)
        y = helper(x, out)
        out.append(3)
        return y

    check(f, T(3, grad=True), [], graphs=1)  # [] | print | [mul]


def test_new_list_shared_by_two_frames():
    def helper(xs):
        xs.append(xs[0] * 2)
        print("helper")
        xs.append(xs[-1] + 1)
        return xs

    def f(x):
        xs = [x]
        ys = helper(xs)
        return ys is xs, xs

    check(f, T(3, grad=True))


def test_iterator_shared_by_two_frames():
    def take(it):
        a = next(it)
        print("took", a)
        return a * 2 + next(it)

    def f(x):
        it = iter([x, x + 1, x + 2, x + 3])
        first = take(it)
        return first, list(it)

    check(f, T(3, grad=True))


def test_object_state_across_nested_break():
    class Acc:
        def __init__(self):
            self.n = 0

        def add(self, x):
            self.n += 1
            print("add", self.n)
            self.n += 1
            return x + self.n

    def f(acc, x):
        return acc.add(x) * acc.n

    check_calls(f, Acc(), T(3, grad=True))


def test_grad_mode_changed_before_the_call():
    def f(x):
        with torch.no_grad():
            y = x * 2
        torch.set_grad_enabled(False)
        z = middle(y, 2)
        torch.set_grad_enabled(True)
        return z + x

    check(f, T(3, grad=True))


def timed(x):
    t = time.perf_counter()
    return x + 1, t


def test_float_carried_into_the_continuation_does_not_recompile():
    def f(x):
        y, t = timed(x)
        return y * 2, t

    counter = CompileCounter()
    cf = bytegraph.compile(f, backend=counter)
    cf(T(3))
    frames = counter.frame_count
    cf(T(3))
    assert counter.frame_count == frames


# ---------------------------------------------------------------------------- fallbacks


def test_caller_inside_try_breaks_at_the_call_site():
    def f(x):
        try:
            y = middle(x, 2)
        except ValueError:
            y = x
        return y + 1

    check(f, T(3, grad=True))


def test_callee_with_closure_resumes_in_place():
    k = 3

    def helper(x):
        print("closure", k)
        return x * k

    def f(x):
        return helper(x.sin()) + 1

    check(f, T(3, grad=True), graphs=2)


def test_callee_inside_with_block_of_its_caller():
    def f(x):
        with torch.no_grad():
            y = middle(x, 2)
        return y + x

    check(f, T(3, grad=True))


# ---------------------------------------------------------------------------- modules


class Printing(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x).relu()
        print("Printing", tuple(h.shape))
        return h + x


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.norm = torch.nn.BatchNorm1d(4)
        self.body = torch.nn.Sequential(torch.nn.Linear(4, 4), Printing(), torch.nn.Tanh())
        self.head = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.head(self.body(self.norm(x)))


def test_break_in_a_module_inside_sequential_in_train_mode():
    torch.manual_seed(0)

    def f(m, x):
        return m(x).sum(dim=1)

    check(f, Net(), T(3, 4, grad=True), graphs=2)  # batch-norm stats update before the break
    assert explain_counts(f, Net(), T(3, 4))[:2] == (2, 1)


def test_compiled_module_with_breaking_submodule_resumes_in_place():
    torch.manual_seed(0)
    net, x = Net().eval(), T(3, 4)
    counter = CompileCounter()
    compiled = bytegraph.compile(net, backend=counter)
    torch.testing.assert_close(compiled(x), net(x))
    torch.testing.assert_close(compiled(x), net(x))
    assert counter.frame_count == 2


def test_module_with_a_forward_hook_breaks_at_the_call_site():
    torch.manual_seed(0)
    net = Net()
    net.body[1].register_forward_hook(lambda mod, args, out: out * 2)

    def f(m, x):
        return m(x)

    check(f, net, T(3, 4, grad=True))


# ---------------------------------------------------------------------------- fuzz

_STEPS = ("x = x * 1.5 + k", "x = x.sin() + acc[-1]", "acc.append(x.sum())", "x = x - len(acc)",
          "t = x.cos(); x = t * t")
_BREAKS = ("print('break', len(acc))", "bytegraph.graph_break()", "os.getpid()")


def _fuzz_source(seed: int) -> str:
    """A chain root -> f1 -> ... -> fN; each level does a few steps, may break (before or
    after calling the next level, whose result it uses in several ways) or branch on a tensor."""
    r = random.Random(seed)
    depth = r.randint(1, 5)
    defs = []
    for d in range(depth, 0, -1):
        steps = [r.choice(_STEPS) for _ in range(r.randint(1, 3))]
        if r.random() < 0.5:
            steps.insert(r.randint(0, len(steps)), r.choice(_BREAKS))
        if r.random() < 0.2:
            steps.append("if x.sum() > 0:\n        x = x + 1\n    else:\n        x = x - 1")
        if d < depth:
            nxt = f"f{d + 1}"
            steps.insert(r.randint(0, len(steps)), r.choice([
                f"x = {nxt}(x, acc, k + 1)", f"x = x + {nxt}(x * 2, acc, k)",
                f"y = [x, {nxt}(x, acc, k)]; x = y[0] * y[1]", f"x = {nxt}(x, acc, k=k) * k"]))
        defs.append(f"def f{d}(x, acc, k):\n" + "".join(f"    {s}\n" for s in steps) + "    return x\n")
    defs.append("def root(x, acc):\n    z = f1(x + 1, acc, 2)\n    acc.append(z.mean())\n    return z * 2, len(acc)\n")
    return "\n".join(defs)


@pytest.mark.parametrize("seed", range(40))
def test_fuzzed_chain_of_breaking_calls(seed):
    src = _fuzz_source(seed)
    filename = f"<nested break fuzz {seed}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)  # for tracebacks
    ns = {"os": os, "bytegraph": bytegraph}
    exec(compile(src, filename, "exec"), ns)
    check(ns["root"], torch.randn(3), [torch.tensor(0.5)], grads=False)
