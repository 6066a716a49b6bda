"""Graph breaks: differential tests, eager vs compiled on fresh copies.

At a break bytegraph compiles the graph so far, runs the breaking instruction eagerly and
resumes capture in a generated resume function; inside a try/with block too where the
block's handler can be kept (Note [Breaks inside blocks] in translate/breaks.py), otherwise
the rest of the frame runs eagerly. Every test compares outputs, gradients, identity of
returned inputs, printed output and mutated arguments (``helpers.check``), and asserts the
graph count where it is well defined; ``check`` also calls a second time and asserts no
recompile.
"""
from __future__ import annotations

import logging
import random
import time
from typing import cast

import numpy as np
import pytest
import torch

import bytegraph
from helpers import CompileCounter, assert_same, check, clone_inputs, compile_counted
from support import break_helpers as bh
from support import other_module as om

log = logging.getLogger("tests.graph_breaks.user")  # a user logger (not bytegraph's)
log.setLevel(logging.DEBUG)
log.propagate = False
log.addHandler(logging.NullHandler())


def _seed_random():
    random.seed(1234)


def T(*shape, grad=False, seed=None):
    if seed is not None:
        torch.manual_seed(seed)
    return torch.randn(*shape, requires_grad=grad)


def breaks_of(fn, *args, **kwargs):
    """explain() on fresh copies: (graph_count, break categories, break line numbers)."""
    args, kwargs = clone_inputs((args, kwargs))
    out = bytegraph.explain(fn)(*args, **kwargs)
    return out


# =========================================================================== positions x kinds
# Each kind of break at the start, the middle and the end of a function.
# start: 1 graph (after the break); middle: 2 graphs; end: 1 graph (before the break).


def start_print(x):
    print("start")
    y = x.sin()
    return y * 2 + 1


def mid_print(x):
    y = x.sin() * 2
    print("middle", y.shape)
    return y.cos() + 1


def end_print(x):
    y = x.sin() * 2 + 1
    print("end")
    return y


def start_explicit(x):
    bytegraph.graph_break()
    y = x.sin()
    return y * 2 + 1


def mid_explicit(x):
    y = x.sin() * 2
    bytegraph.graph_break()
    return y.cos() + 1


def end_explicit(x):
    y = x.sin() * 2 + 1
    bytegraph.graph_break()
    return y


def start_time(x):
    time.time()
    y = x.sin()
    return y * 2 + 1


def mid_time(x):
    y = x.sin() * 2
    time.time()
    return y.cos() + 1


def end_time(x):
    y = x.sin() * 2 + 1
    elapsed = time.time() - 0.0
    return y, elapsed > 0


def start_random(x):
    r = random.random()
    y = x.sin()
    return y * r + 1


def mid_random(x):
    y = x.sin() * 2
    r = random.random()
    return y.cos() + r


def end_random(x):
    y = x.sin() * 2 + 1
    r = random.random()
    return y, r


def start_logging(x):
    log.info("start %s", x)  # a tensor argument: a break (constant ones are replayed after the graph)
    y = x.sin()
    return y * 2 + 1


def mid_logging(x):
    y = x.sin() * 2
    log.info("middle %s", y)
    return y.cos() + 1


def end_logging(x):
    y = x.sin() * 2 + 1
    log.debug("end %s", y)
    return y


# numpy's global state read through a Python function of numpy: a break (numpy's pure
# functions on constants fold: tests/test_numpy_constants.py)
def start_numpy(x):
    k = float(np.get_printoptions()["precision"])
    y = x.sin()
    return y * k + 1


def mid_numpy(x):
    y = x.sin() * 2
    k = float(np.get_printoptions()["precision"])
    return y.cos() + k


def end_numpy(x):
    y = x.sin() * 2 + 1
    k = float(np.get_printoptions()["precision"])
    return y, k


_POSITION_GRAPHS = {"start": 1, "mid": 2, "end": 1}
_KINDS = {
    "print": (start_print, mid_print, end_print),
    "explicit": (start_explicit, mid_explicit, end_explicit),
    "time": (start_time, mid_time, end_time),
    "random": (start_random, mid_random, end_random),
    "logging": (start_logging, mid_logging, end_logging),
    "numpy": (start_numpy, mid_numpy, end_numpy),
}


@pytest.mark.parametrize("position", ["start", "mid", "end"])
@pytest.mark.parametrize("kind", sorted(_KINDS))
def test_break_position(kind, position, request):
    fn = _KINDS[kind][("start", "mid", "end").index(position)]
    check(fn, T(3, 4, grad=True), graphs=_POSITION_GRAPHS[position], setup=_seed_random)


@pytest.mark.parametrize("kind", sorted(_KINDS))
def test_break_position_no_grad_inputs(kind, request):
    check(_KINDS[kind][1], T(5), graphs=2, setup=_seed_random)


# =========================================================================== several breaks


def test_two_prints_three_graphs():
    def f(x):
        a = x + 1
        print("one")
        b = a * a
        print("two")
        return b.sum()

    check(f, T(4, grad=True), graphs=3)


def test_three_breaks_four_graphs():
    def f(x, y):
        a = x @ y
        print("first", a.shape)
        b = a.relu()
        bytegraph.graph_break()
        c = b * 3
        n = c.sum().item()
        return c / (1 + abs(n)), n

    check(f, T(3, 4, grad=True), T(4, 2, grad=True), graphs=4)


def test_adjacent_breaks_no_empty_graph():
    def f(x):
        y = x * 2
        print("a")
        print("b")
        bytegraph.graph_break()
        return y + 1

    check(f, T(3, grad=True), graphs=2)


def test_three_different_kinds_with_random():
    def f(x):
        y = x.exp()
        r = random.random()
        z = y * r
        print("r", round(r, 6))
        w = z + z.sum().item()
        return w

    # [exp] | random | [mul] | print | [sum] | .item() | [add]
    check(f, T(3, grad=True), graphs=4, setup=_seed_random)


def test_only_breaks_no_tensor_work():
    def f(x):
        print("hello")
        bytegraph.graph_break()
        return x

    check(f, T(2), graphs=0)


# =========================================================================== loops


def test_break_in_range_loop_loop_carried():
    def f(x):
        acc = torch.zeros_like(x)
        for i in range(3):
            acc = acc + x * i
            print("iter", i)
            acc = acc.sin()
        return acc

    check(f, T(4, grad=True))


def test_break_in_range_loop_twice_no_recompile():
    def f(x):
        for i in range(4):
            x = x * 1.5
            bytegraph.graph_break()
            x = x - i
        return x

    r = check(f, T(3, grad=True))
    cf, cnt = r.compiled_fn, r.counter
    before = cnt.frame_count
    for _ in range(3):
        cf(T(3, grad=True))
    assert cnt.frame_count == before


def test_break_in_loop_over_list_of_tensors():
    def f(xs, w):
        total = w * 0
        for t in xs:
            total = total + (t * w).sum()
            print("seen", tuple(t.shape))
        return total

    check(f, [T(3, grad=True), T(3, grad=True), T(3)], T(3, grad=True))


def test_break_in_enumerate_loop():
    def f(xs):
        out = []
        for i, t in enumerate(xs):
            v = t * (i + 1)
            bytegraph.graph_break()
            out.append(v.cos())
        return out

    check(f, [T(2, grad=True) for _ in range(3)])


def test_break_in_zip_loop():
    def f(xs, ys):
        acc = 0
        for a, b in zip(xs, ys):
            acc = acc + a * b
            print("pair")
        return acc

    check(f, [T(3, grad=True), T(3, grad=True)], [T(3), T(3, grad=True)])


def test_item_in_loop_accumulates_python_float():
    def f(xs):
        s = 0.0
        out = torch.zeros(2)
        for t in xs:
            s += t.sum().item()
            out = out + t * s
        return out, s

    check(f, [T(2, grad=True), T(2, grad=True), T(2, grad=True)])


def test_break_in_while_loop_python_counter():
    def f(x):
        n = 0
        while n < 3:
            x = x + n
            print("n =", n)
            n += 1
        return x * 2, n

    check(f, T(3, grad=True))


def test_data_dependent_while_loop():
    def f(x):
        steps = 0
        while x.abs().sum() > 1.0:
            x = x / 2
            steps += 1
        return x, steps

    check(f, T(4, grad=True) * 10)


def test_break_then_loop_break_statement():
    def f(x):
        for i in range(10):
            x = x + 1
            if i == 2:
                print("stop at", i)
                break
        return x

    check(f, T(3, grad=True))


def test_break_in_nested_loops():
    def f(x):
        for i in range(2):
            for j in range(2):
                x = x * 1.1 + j
                bytegraph.graph_break()
            x = x - i
        return x

    check(f, T(3, grad=True))


def test_loop_continue_after_print():
    def f(xs):
        out = []
        for t in xs:
            if t.shape[0] == 1:
                print("skip")
                continue
            out.append(t.relu())
        return out

    check(f, [T(2, grad=True), T(1), T(3, grad=True)])


def test_break_in_loop_with_iterator_argument_state():
    # Note §7: an iterator consumed partly before a break must be in eager's state after it.
    def f(x, it):
        a = next(it)
        print("took", a)
        b = next(it)
        return x * a + b, list(it)

    def run(cf):
        it = iter([1, 2, 3, 4])
        out = cf(torch.ones(2), it)
        return out, next(it, "exhausted")

    e = run(f)
    c = run(bytegraph.compile(f, backend=CompileCounter()))
    assert_same(e, c)


# =========================================================================== no_grad / grad mode


def test_break_inside_no_grad_block():
    def f(x):
        y = x * 2
        with torch.no_grad():
            z = y + 1
            print("inside no_grad", torch.is_grad_enabled())
            w = z * 3
        return y, w, w.requires_grad, torch.is_grad_enabled()

    r = check(f, T(3, grad=True), state=torch.is_grad_enabled)
    assert torch.is_grad_enabled()
    assert r.compiled.out[1].requires_grad is False


def test_break_inside_enable_grad_under_outer_no_grad():
    def f(x):
        with torch.enable_grad():
            y = x * 2
            bytegraph.graph_break()
            z = y.sin()
        return z, z.requires_grad, torch.is_grad_enabled()

    x = T(3, grad=True)
    with torch.no_grad():
        r = check(f, x, state=torch.is_grad_enabled, grads=False)
        assert not torch.is_grad_enabled()
    assert r.compiled.out[1] is True


def test_set_grad_enabled_false_across_break():
    def f(x):
        torch.set_grad_enabled(False)
        y = x * 2
        print("grad", torch.is_grad_enabled())
        z = y + 1
        torch.set_grad_enabled(True)
        return z, z.requires_grad

    check(f, T(3, grad=True), state=torch.is_grad_enabled)
    assert torch.is_grad_enabled()


def test_grad_mode_after_exception_in_no_grad_block():
    def f(x):
        with torch.no_grad():
            y = x + 1
            print("about to fail")
            raise ValueError("boom")
        return y

    check(f, T(2, grad=True), state=torch.is_grad_enabled)
    assert torch.is_grad_enabled()


def test_no_grad_block_after_break():
    def f(x):
        y = x.exp()
        print("before no_grad")
        with torch.no_grad():
            z = y * 2
        return y + z, torch.is_grad_enabled()

    check(f, T(3, grad=True), state=torch.is_grad_enabled)


def test_no_grad_inlined_helper_breaks():
    def helper(t):
        with torch.no_grad():
            print("helper")
            return t * 2

    def f(x):
        y = x.sin()
        return y + helper(y), torch.is_grad_enabled()

    check(f, T(3, grad=True), state=torch.is_grad_enabled)


# =========================================================================== try / except / finally


def test_break_in_try_then_raise_caught():
    def f(x):
        y = x * 2
        try:
            print("in try")
            z = y + 1
            raise KeyError("k")
        except KeyError as e:
            z = y - 1
            msg = str(e)
        return z, msg

    check(f, T(3, grad=True))


def test_eager_instruction_itself_raises_caught():
    def f(x):
        y = x * 2
        try:
            time.sleep(-1)  # the breaking call raises ValueError eagerly
            y = y + 100
        except ValueError as e:
            y = y - 1
            msg = str(e)
        return y.cos(), msg

    check(f, T(3, grad=True))


def test_item_on_multi_element_raises_caught():
    def f(x):
        y = x + 1
        try:
            v = y.item()
        except RuntimeError:
            v = -1.0
        return y * v, v

    check(f, T(3, grad=True))


def test_break_in_try_finally_runs_once():
    def f(x, log_):
        y = x + 1
        try:
            print("body")
            y = y * 2
        finally:
            log_.append("finally")
            print("finally")
        return y, len(log_)

    check(f, T(3, grad=True), [])


def test_break_in_try_finally_exception_propagates():
    def f(x, log_):
        try:
            y = x + 1
            bytegraph.graph_break()
            log_.append("before raise")
            raise RuntimeError("propagates")
        finally:
            log_.append("finally")
        return y

    r = check(f, T(3), [])
    assert isinstance(r.compiled.exc, RuntimeError)
    assert r.compiled.args[0][1] == ["before raise", "finally"]


def test_break_inside_except_handler():
    def f(x):
        try:
            y = x[10]
        except IndexError:
            print("handled")
            y = x.sum()
        return y * 2

    check(f, T(3, grad=True))


def test_nested_try_break_inner_raises_outer_catches():
    def f(x, out):
        try:
            try:
                out.append(1)
                print("inner")
                raise ValueError("v")
            finally:
                out.append("inner-finally")
        except ValueError:
            out.append("outer-except")
        return x * len(out)

    check(f, T(2, grad=True), [])


def test_break_after_try_block():
    def f(x):
        try:
            y = x + 1
        except Exception:
            y = x
        print("after try")
        return y * 3

    check(f, T(3, grad=True), graphs=2)


def test_exception_after_break_uncaught():
    def f(x, out):
        out.append("a")
        print("going")
        out.append("b")
        return x + {"k": 1}["missing"]

    check(f, T(2), [])


# =========================================================================== inlined calls


def inner3(x):
    y = x.relu()
    print("inner3", y.shape)  # TGB-INNER3
    return y + 1


def inner2(x, k):
    return inner3(x * k) * 2


def inner1(x):
    return inner2(x - 1, k=3).sum()


def test_break_three_levels_deep_in_test_module():
    check(inner1, T(4, grad=True))


def test_break_three_levels_deep_other_module_print():
    def f(x):
        return bh.level1_print(x * 2)

    check(f, T(3, grad=True))


def test_break_three_levels_deep_other_module_item():
    def f(x):
        return bh.level1_item(x) + x

    check(f, T(3, grad=True))


def test_break_three_levels_deep_explicit_with_list():
    def f(x, out):
        y = bh.level1_explicit(x, out)
        out.append("root")
        return y

    check(f, T(3, grad=True), [])


def test_callee_with_break_called_twice():
    def f(x):
        a = inner3(x)
        b = inner3(a)
        return a + b

    check(f, T(3, grad=True))


def test_callee_returning_argument_identity():
    def f(x, y):
        z = bh.returns_arg_after_print(x)
        return z, z is x, y + 1

    check(f, T(3), T(2, grad=True))


def test_method_of_user_object_breaks():
    def f(s, x):
        y = s.apply(x + 1)
        return y.sum(), s.calls

    check(f, bh.Scaler(2.5), T(3, grad=True))


def test_inlined_other_module_helpers_around_break():
    def f(x):
        y = om.affine(x, 3, bias=0.5)
        print("between")
        return om.uses_own_globals(y)

    check(f, T(4, grad=True), graphs=2)


def test_break_in_callee_prefix_captured_in_outer_graph():
    def helper(x):
        bytegraph.graph_break()
        return x * 2

    def f(x):
        a = x.sin()
        b = helper(a)
        return b.cos()

    check(f, T(3, grad=True), graphs=2)  # [sin] | break | [mul, cos] (Note [Continuations])


def test_lambda_passed_to_breaking_helper():
    def apply_twice(fn, x):
        x = fn(x)
        print("once")
        return fn(x)

    def f(x):
        return apply_twice(lambda t: t * 2 + 1, x)

    check(f, T(3, grad=True))


# =========================================================================== nn.Module


def test_break_in_module_forward():
    torch.manual_seed(0)
    block = bh.PrintingBlock(4)

    def f(m, x):
        return m(x) * 2

    check(f, block, T(2, 4, grad=True))


def test_break_in_submodule_forward():
    torch.manual_seed(0)
    net = bh.BreakingNet(4)

    def f(m, x):
        return m(x).sum(dim=1)

    check(f, net, T(3, 4, grad=True))


def test_compiled_module_with_breaking_submodule():
    torch.manual_seed(0)
    net = bh.BreakingNet(4)
    x = T(3, 4)
    e_net, c_net = clone_inputs(net), clone_inputs(net)
    counter = CompileCounter()
    cnet = bytegraph.compile(c_net, backend=counter)
    expected = e_net(x)
    got = cnet(x)
    assert_same(expected, got)
    expected.sum().backward()
    got.sum().backward()
    for (n, pe), (_, pc) in zip(e_net.named_parameters(), c_net.named_parameters()):
        assert_same(pe.grad, pc.grad, f"grad of {n}")
    frames = counter.frame_count
    cnet(x)
    assert counter.frame_count == frames


def test_module_forward_graph_break_sequential():
    class Breaker(torch.nn.Module):
        def forward(self, x):
            bytegraph.graph_break()
            return x * 2

    torch.manual_seed(0)
    seq = torch.nn.Sequential(torch.nn.Linear(3, 3), Breaker(), torch.nn.ReLU(), torch.nn.Linear(3, 1))

    def f(m, x):
        return m(x)

    check(f, seq, T(2, 3, grad=True))


def test_module_attribute_mutation_across_break():
    class Counting(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(2, 2)
            self.calls = 0

        def forward(self, x):
            self.calls += 1
            print("calls", self.calls)
            return self.lin(x) + self.calls

    torch.manual_seed(0)

    def f(m, x):
        return m(x), m.calls

    check(f, Counting(), T(2, grad=True))


def test_module_in_eval_mode_dropout_across_break():
    torch.manual_seed(0)
    seq = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.Dropout(0.5)).eval()

    def f(m, x):
        h = m(x)
        print("training", m.training)
        return m(h)

    check(f, seq, T(2, 3, grad=True))


# =========================================================================== live Python values


class Box:
    def __init__(self, v, name):
        self.v = v
        self.name = name


def test_list_live_across_break():
    def f(x):
        items = [x * 1, x * 2]
        print("n", len(items))
        items.append(x * 3)
        return items

    check(f, T(2, grad=True), graphs=2)


def test_dict_live_across_break():
    def f(x):
        d = {"a": x + 1, "n": 3}
        bytegraph.graph_break()
        d["b"] = d["a"] * d["n"]
        return d

    check(f, T(2, grad=True))


def test_tuple_int_str_live_across_break():
    def f(x):
        t = (x.sin(), 4)
        name = "layer" + str(t[1])
        k = t[1] * 2
        print(name)
        return t[0] * k, name + "!", k

    check(f, T(2, grad=True), graphs=2)


def test_user_object_live_across_break():
    def f(x, b):
        b.v = b.v + x
        print("box", b.name)
        b.name = b.name.upper()
        return b.v * 2

    check(f, T(3, grad=True), Box(T(3), "box"))


def test_new_user_object_made_before_break():
    def f(x):
        b = Box(x * 2, "made")
        bytegraph.graph_break()
        return b.v + 1, b.name

    check(f, T(3, grad=True))


def test_closure_lambda_live_across_break():
    scale = 3.0

    def f(x):
        g = lambda t: t * scale  # noqa: E731  (no cell in f: `scale` is f's free var)
        y = g(x)
        print("lambda")
        return g(y)

    check(f, T(3, grad=True))


def test_closure_over_frame_local_across_break():
    def f(x):
        k = x.shape[0]

        def g(t):
            return t * k

        y = g(x)
        print("cell var k =", k)
        k = k + 1
        return g(y)

    check(f, T(3, grad=True))


def test_mutated_list_argument_across_break():
    def f(x, acc):
        acc.append(1)
        print("acc", acc)
        acc.append(2)
        acc[0] = "first"
        return x + len(acc)

    check(f, T(2, grad=True), [0])


def test_dict_argument_mutated_before_and_after_break():
    def f(x, d):
        d["before"] = x * 2
        bytegraph.graph_break()
        d["after"] = d["before"] + 1
        del d["drop"]
        return d["after"]

    check(f, T(2, grad=True), {"drop": 1})


def test_python_int_counter_global_module_across_break():
    def f(x):
        n = om.bump_counter()
        print("counter")
        m = om.bump_counter(2)
        return x * (m - n)

    def setup():
        om.COUNTER[0] = 0

    check(f, T(2, grad=True), setup=setup, state=lambda: list(om.COUNTER))


def test_string_formatting_of_tensor_metadata_before_break():
    def f(x):
        desc = f"{x.shape[0]}x{x.shape[1]}:{x.dtype}"
        print(desc)
        return x.t(), desc

    check(f, T(2, 3, grad=True))


# =========================================================================== returning inputs


def test_return_input_after_break():
    def f(x):
        print("return me")
        return x

    check(f, T(3, grad=True))


def test_return_input_and_new_tensor_after_break():
    def f(x, y):
        z = x + y
        bytegraph.graph_break()
        return y, z, x

    check(f, T(3, grad=True), T(3))


def test_return_input_list_after_break():
    def f(xs):
        xs.append(xs[0] * 2)
        print(len(xs))
        return xs

    check(f, [T(2, grad=True)])


def test_return_same_tensor_twice_across_break():
    def f(x):
        y = x * 2
        print("alias")
        return y, y

    check(f, T(2, grad=True))


def test_return_view_of_input_after_break():
    def f(x):
        v = x[0]
        print("view")
        return v, x

    check(f, T(2, 3, grad=True))


# =========================================================================== keyword args / defaults


def test_kwargs_and_defaults_across_break():
    def f(x, scale=2.0, *, bias=1.0, name="n"):
        y = x * scale
        print(name, scale, bias)
        return y + bias

    check(f, T(3, grad=True), bias=0.25)
    check(f, T(3, grad=True), 4.0, name="m")


def test_star_args_across_break():
    def f(*xs, **opts):
        total = sum(xs)
        print("opts", sorted(opts))
        return total * opts.get("k", 1), len(xs)

    check(f, T(2, grad=True), T(2), T(2, grad=True), k=3)


def test_keyword_call_to_breaking_callee():
    def callee(a, *, b, c=2):
        print("callee", c)
        return a * b + c

    def f(x):
        return callee(x, b=x.cos(), c=5)

    check(f, T(3, grad=True))


def test_kw_names_at_breaking_call():
    def f(x):
        y = x + 1
        print("a", "b", sep="-", end="|\n")
        return y

    check(f, T(2, grad=True), graphs=1)


# =========================================================================== data-dependent


def test_item_used_in_python_arithmetic():
    def f(x):
        s = x.sum().item()
        k = s * 2 + 1 if s > 0 else s - 1
        return x * k + x.mean()

    check(f, T(4, grad=True))


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_if_tensor_condition_both_paths(sign):
    def f(x):
        y = x * 2
        if y.sum() > 0:
            z = y + 1
        else:
            z = y - 1
        return z.exp()

    check(f, torch.full((3,), sign, requires_grad=True), graphs=2)


def test_if_tensor_condition_both_paths_one_compiled_fn():
    def f(x):
        if x.sum() > 0:
            return x * 2
        return -x

    cf, cnt = compile_counted(f)
    pos, neg = torch.ones(3), -torch.ones(3)
    assert_same(f(pos), cf(pos))
    assert_same(f(neg), cf(neg))
    frames = cnt.frame_count
    for _ in range(2):
        assert_same(f(pos), cf(pos))
        assert_same(f(neg), cf(neg))
    assert cnt.frame_count == frames


def test_bool_of_tensor_direct():
    def f(x, flag):
        if flag:
            return x + 1
        return x - 1

    check(f, T(2, grad=True), torch.tensor(True))
    check(f, T(2, grad=True), torch.tensor(False))


def test_tolist_then_tensor_work():
    def f(x):
        vals = x.detach().tolist()
        m = max(vals)
        return x * m, vals

    check(f, T(4, grad=True))


def test_float_and_int_of_tensor():
    def f(x):
        a = float(x.sum())
        n = int(x.abs().max() * 10)
        return x * a + n, a, n

    check(f, T(3, grad=True))


def test_and_or_on_tensor_conditions():
    def f(x):
        if (x > 0).any() and (x < 10).all():
            return x + 1
        return x

    check(f, T(3, grad=True))


def test_item_in_condition_then_tensor_work():
    def f(x):
        out = x
        if x.max().item() > 0.5:
            out = out * 2
        print("done")
        return out.sum()

    check(f, T(5, grad=True))


def test_numpy_on_tensor_data():
    def f(x):
        arr = x.detach().numpy()
        m = float(np.abs(arr).mean())
        return x / (m + 1)

    check(f, T(3, grad=True))


# =========================================================================== in-place ops and breaks


def test_inplace_on_input_before_break():
    def f(x):
        x.add_(1)
        print("after add_")
        return x * 2

    check(f, T(3), graphs=2)


def test_inplace_on_input_before_break_return_input():
    def f(x, y):
        x.mul_(y)
        bytegraph.graph_break()
        x.sub_(1)
        return x

    check(f, T(3), T(3))


def test_inplace_on_intermediate_across_break():
    def f(x):
        y = x * 2
        y.add_(1)
        print("y mutated")
        y.mul_(3)
        return y

    check(f, T(3, grad=True), graphs=2)


def test_inplace_view_of_input_before_break():
    def f(x):
        x[0].fill_(5.0)
        print("view mutated")
        return x.sum()

    check(f, T(2, 3))


def test_inplace_input_seen_by_eager_print():
    def f(x):
        x.add_(10)
        print(x)
        return x

    check(f, torch.arange(3.0))


# =========================================================================== repeated calls


def test_repeated_calls_no_recompile_print():
    def f(x):
        y = x * 2
        print("call")
        return y + 1

    cf, cnt = compile_counted(f)
    for i in range(5):
        x = T(3, seed=i)
        assert_same(f(x), cf(x))
        if i == 0:
            frames = cnt.frame_count
    assert frames == 2
    assert cnt.frame_count == frames


def test_repeated_calls_no_recompile_time_discarded():
    def f(x):
        y = x * 2
        time.time()
        return y + 1

    cf, cnt = compile_counted(f)
    cf(T(3))
    frames = cnt.frame_count
    for i in range(4):
        x = T(3)
        assert_same(f(x), cf(x))
    assert cnt.frame_count == frames


def test_repeated_calls_no_recompile_unused_time_local():
    def f(x):
        y = x * 2
        t0 = time.time()  # noqa: F841
        return y + 1

    cf, cnt = compile_counted(f)
    cf(T(3))
    frames = cnt.frame_count
    for _ in range(4):
        cf(T(3))
    assert cnt.frame_count == frames


def test_repeated_calls_loop_break_stable():
    def f(xs):
        s = xs[0] * 0
        for t in xs:
            s = s + t
            bytegraph.graph_break()
        return s

    cf, cnt = compile_counted(f)
    xs = [T(2) for _ in range(3)]
    cf(xs)
    frames = cnt.frame_count
    for _ in range(3):
        assert_same(f(xs), cf(xs))
    assert cnt.frame_count == frames


def test_compiled_twice_different_values_same_shape():
    def f(x):
        y = x.exp()
        print("hi")
        return y.log()

    cf, cnt = compile_counted(f)
    cf(T(3))
    frames = cnt.frame_count
    assert frames == 2
    x = T(3, seed=7)
    assert_same(f(x), cf(x))
    assert cnt.frame_count == frames


def test_resume_guard_not_baked_on_global_vs_local():
    # Note §7: a graph-broken callee compiled for one call must not bake in which object an argument was.
    def callee(t):
        print("callee")
        return t * 2

    def f(x, y):
        return callee(x) + callee(y)

    check(f, T(2, grad=True), T(2))


# =========================================================================== backends


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_backend_mid_print(backend):
    check(mid_print, T(3, 4, grad=True), backend=backend)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_backend_data_dependent_branch(backend):
    def f(x, w):
        h = x @ w
        if h.mean() > 0:
            h = h.relu()
        else:
            h = h.tanh()
        return h.sum(0)

    check(f, T(3, 4, grad=True), T(4, 2, grad=True), backend=backend)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_backend_inlined_break(backend):
    check(inner1, T(4, grad=True), backend=backend)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_backend_no_grad_break(backend):
    def f(x):
        with torch.no_grad():
            y = x * 2
            print("ng")
        return x * y

    check(f, T(3, grad=True), backend=backend, state=torch.is_grad_enabled)


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_backend_inplace_input(backend):
    check(_inplace_then_print, T(3), backend=backend)


def _inplace_then_print(x):
    x.mul_(3)
    print("mul_")
    return x.sin()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_backend_module_break(backend):
    torch.manual_seed(0)

    def f(m, x):
        return m(x)

    check(f, bh.BreakingNet(4), T(2, 4, grad=True), backend=backend)


# =========================================================================== graph counts of specific breaks

def item_then_tensor_work(x):
    s = x.sum().item()
    return x * (s + 1) + x.mean()


def tolist_then_tensor_work(x):
    vals = x.tolist()
    return x * len(vals) + 1, vals


def test_item_break_graph_count():
    check(item_then_tensor_work, T(4, grad=True), graphs=2)


def test_tolist_break_graph_count():
    # nothing to capture before the break: one graph, after it
    r = check(tolist_then_tensor_work, T(3, grad=True), graphs=1)
    assert r.counter.ops(0), "the code after the break is captured"


def test_item_break_correct_even_with_inplace_before():
    def f(x, out):
        x.add_(1)
        out.append("once")
        s = x.sum().item()
        return x * s

    check(f, T(3), [])


def test_data_dependent_branch_graph_count_at_module_level():
    check(item_free_branch, T(3, grad=True), graphs=2)


def item_free_branch(x):
    y = x.cos()
    if y.sum() > 1:
        return y * 2
    return y / 2


def callee_breaks_first(x):
    bytegraph.graph_break()
    return x * 2


def caller_of_breaking_callee(x):
    a = x.sin()
    b = callee_breaks_first(a)
    return b.cos()


def test_break_in_callee_prefix_and_suffix_captured():
    # before the break [sin]; after it one continuation graph: callee's rest [mul], root's rest [cos]
    check(caller_of_breaking_callee, T(3, grad=True), graphs=2)


def _make_closure_fn(k):
    def f(x):
        y = x * k
        print("closure over", k)
        return y + 1

    return f


def test_function_with_free_variables_resumes():
    check(_make_closure_fn(3), T(3, grad=True), graphs=2)


def test_function_with_free_variables_breaks_correctly():
    check(_make_closure_fn(2.5), T(3, grad=True))


def test_module_forward_break_graph_count():
    torch.manual_seed(0)

    def f(m, x):
        return m(x)

    # PrintingBlock.forward: [linear, relu] | print | [add]
    check(f, bh.PrintingBlock(4), T(2, 4, grad=True), graphs=2)


def test_submodule_forward_break_graph_count():
    torch.manual_seed(0)
    # BreakingNet: [pre, tanh, block: lin, relu] | print | [block: add, post] (Note [Continuations])

    def f(m, x):
        return m(x)

    check(f, bh.BreakingNet(4), T(2, 4, grad=True), graphs=2)


def test_compiled_module_captures_around_submodule_break():
    torch.manual_seed(0)
    net = bh.BreakingNet(4)
    counter = CompileCounter()
    bytegraph.compile(net, backend=counter)(T(2, 4))
    assert counter.frame_count == 2


def test_many_calls_with_print_never_hit_recompile_limit():
    cf, cnt = compile_counted(mid_print)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", bytegraph.RecompileLimitWarning)
        for i in range(12):
            x = T(3, 4, seed=i)
            assert_same(mid_print(x), cf(x))
    assert cnt.frame_count == 2


def test_item_on_a_temporary_tensor_resumes():
    def f(x):
        y = x * 2
        n = y.sum().item()
        return y + n

    r = check(f, torch.randn(3), graphs=2)
    assert r.counter.ops(-1), "the code after the break is captured"


def test_tolist_on_a_temporary_tensor_in_an_expression():
    def f(x):
        vals = (x * 3).round().tolist()
        return x + len(vals), vals

    check(f, torch.randn(4), graphs=2)


def test_method_of_temporary_tensor_with_arguments_at_a_break():
    def f(x):
        m = (x + 1).max(dim=0).values.sum().item()
        return x * m

    check(f, torch.randn(3, 2), graphs=2)


# =========================================================================== breaks inside resume functions

class _Opt:
    hooks = {}


def _step_wrapper(*args, **kwargs):
    # The shape of torch.optim's profile_hook_step: breaks (cast, __class__, a C context manager)
    # inside resume functions whose own stack parameters must survive the next break.
    self, *_ = args
    self = cast(_Opt, self)
    name = f"step#{self.__class__.__name__}"
    with torch.autograd.profiler.record_function(name):
        for hook in self.hooks.values():
            hook()
        return self, name, args[1] * 2


def test_break_inside_resume_function_keeps_its_stack_parameters():
    check(_step_wrapper, _Opt(), torch.randn(3))
