"""Counter-style functions compile at most twice over 20 calls and
agree with eager on every call. The counter (a global, a closure cell, an object or
module attribute, a default, a module buffer) changes on each call and reaches tensor
arithmetic or the return value: after its first change it is a graph input."""
import math

import pytest
import torch
from torch import nn

import bytegraph
from dynamic_support import check_calls
from helpers import CompileCounter

CALLS = 20
step = 0
lr = 1.0
history = {"calls": 0}


def _calls(*shape):
    return [(torch.randn(*shape),) for _ in range(CALLS)]


def _side_by_side(eager, target, shape):
    """`CALLS` calls of `eager` and of `target` compiled, on the same fresh input each time,
    results compared; returns the counting backend."""
    counter = CompileCounter()
    compiled = bytegraph.compile(target, backend=counter)
    for _ in range(CALLS):
        x = torch.randn(*shape)
        torch.testing.assert_close(compiled(x), eager(x))
    return counter


def _reset_globals():
    global step, lr
    step = 0
    lr = 1.0
    history["calls"] = 0


def _globals_state():
    return (step, lr, history["calls"])


def global_counter(x):
    global step
    step += 1
    return x * step


def global_counter_returned(x):
    global step
    step += 1
    return x + 1, step


def global_counter_in_helper(x):
    return _bump() * x


def _bump():
    global step
    step += 1
    return step


def global_float_decay(x):
    global lr
    lr *= 0.5
    return x * lr


def global_counter_offset(x):
    global step
    step += 2
    return x[: (step % 5) + 1].sum() + step


def global_counter_read_only(x):
    return x * (step + 1)


def dict_counter(x):
    history["calls"] += 1
    return x * history["calls"]


def global_counter_through_math(x):
    global step
    step += 1
    return x * math.sqrt(step) + math.floor(step / 3) - math.cos(step / 10)


def global_counter_as_float(x):
    global step
    step += 1
    return x * float(step) + math.ceil(step * 0.7)


def warmup_schedule(x):
    global step
    step += 1
    return x * (lr * min(step, 5) / 5)  # linear warm-up over 5 steps, then flat


GLOBAL_FUNCTIONS = [global_counter, global_counter_returned, global_counter_in_helper, global_float_decay,
                    dict_counter, global_counter_through_math, global_counter_as_float]


@pytest.mark.parametrize("fn", GLOBAL_FUNCTIONS, ids=lambda f: f.__name__)
def test_global_counter_compiles_at_most_twice(fn):
    check_calls(fn, _calls(3), max_graphs=2, reset=_reset_globals, state=_globals_state)


def test_warmup_schedule_recompiles_once_when_the_warm_up_ends():
    # min() guards which argument is smaller, not the value: static, symbolic, then past step 5
    check_calls(warmup_schedule, _calls(3), max_graphs=3, reset=_reset_globals, state=_globals_state)


def test_global_counter_used_as_slice_bound_guards_the_slice():
    check_calls(global_counter_offset, _calls(8), max_graphs=7, reset=_reset_globals, state=_globals_state)


def test_global_read_only_counter_changed_outside():
    def run(fn):
        global step
        return fn(torch.ones(3))

    counter = None
    compiled = bytegraph.compile(global_counter_read_only, backend=(counter := CompileCounter()))
    _reset_globals()
    global step
    for i in range(CALLS):
        step = i
        torch.testing.assert_close(compiled(torch.ones(3)), global_counter_read_only(torch.ones(3)))
    assert counter.frame_count <= 2


def _make_cell_counter():
    n = 0

    def bump(x):
        nonlocal n
        n += 1
        return x * n, n

    return bump


def _make_cell_float():
    scale = 1.0

    def decay(x):
        nonlocal scale
        scale = scale * 0.9
        return x * scale

    return decay


@pytest.mark.parametrize("make", [_make_cell_counter, _make_cell_float], ids=["int", "float"])
def test_closure_cell_counter_compiles_at_most_twice(make):
    eager, compiled_fn = make(), make()
    counter = _side_by_side(eager, compiled_fn, (3,))
    assert compiled_fn.__closure__[0].cell_contents == eager.__closure__[0].cell_contents
    assert counter.frame_count <= 2


class Stepper:
    def __init__(self):
        self.steps = 0

    def __call__(self, x):
        self.steps += 1
        return x * self.steps


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)
        self.count = 0
        self.temperature = 2.0
        self.register_buffer("num_batches", torch.zeros((), dtype=torch.long))

    def forward(self, x):
        self.count += 1
        self.num_batches += 1
        return self.lin(x) * self.count / self.temperature + self.num_batches


class Annealed(Model):
    def forward(self, x):
        y = self.lin(x) + self.num_batches
        self.temperature = self.temperature * 0.99
        return y / self.temperature


def test_object_attribute_counter():
    eager, obj = Stepper(), Stepper()
    counter = _side_by_side(eager, obj, (3,))
    assert obj.steps == eager.steps == CALLS
    assert counter.frame_count <= 2


def test_module_attribute_buffer_and_float_counters():
    eager, model = Model(), Model()
    counter = _side_by_side(eager, model, (2, 4))
    assert (model.count, int(model.num_batches)) == (eager.count, int(eager.num_batches)) == (CALLS, CALLS)
    assert counter.frame_count <= 2


def test_module_float_attribute_written_in_forward():
    # a write to a module attribute breaks the graph (nn.Module.__setattr__): the graph before
    # the break, then the rest with the float pinned once and symbolic after it changed
    eager, model = Annealed(), Annealed()
    counter = _side_by_side(eager, model, (2, 4))
    assert model.temperature == eager.temperature
    assert counter.frame_count <= 3


def test_module_counter_called_from_a_compiled_function():
    eager, model = Model(), Model()

    def train_step(m, x):
        return m(x).sum()

    counter = CompileCounter()
    compiled = bytegraph.compile(train_step, backend=counter)
    for _ in range(CALLS):
        x = torch.randn(2, 4)
        torch.testing.assert_close(compiled(model, x), train_step(eager, x))
    assert counter.frame_count <= 2


def test_default_argument_changed_between_calls():
    def f(x, k=1):
        return x * k

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter)
    for i in range(CALLS):
        f.__defaults__ = (i + 1,)
        x = torch.randn(3)
        torch.testing.assert_close(compiled(x), x * (i + 1))
    assert counter.frame_count <= 2


def test_counter_passed_as_argument():
    counter_values = [(torch.randn(3), i) for i in range(CALLS)]

    def f(x, i):
        return x * i + i

    counter, _ = check_calls(f, counter_values, max_graphs=2)


def test_counter_through_a_graph_break():
    def f(x):
        global step
        step += 1
        y = x * step
        bytegraph.graph_break()
        return y + step

    check_calls(f, _calls(3), max_graphs=4, reset=_reset_globals, state=_globals_state)


def test_steady_state_has_no_recompiles():
    counter = CompileCounter()
    compiled = bytegraph.compile(global_counter, backend=counter)
    _reset_globals()
    for _ in range(3):
        compiled(torch.ones(2))
    settled = counter.frame_count
    for _ in range(50):
        compiled(torch.ones(2))
    assert counter.frame_count == settled == 2
    assert step == 53


class HookLogged(nn.Module):
    """A forward hook appends to `seen`; `forward` reads its length into tensor arithmetic."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = nn.Linear(4, 4)
        self.seen = []
        self.lin.register_forward_hook(lambda mod, args, out: self.seen.append(out.shape[0]))

    def forward(self, x):
        return self.lin(x) * (len(self.seen) + 1)


def test_list_grown_by_a_module_hook_compiles_at_most_twice():
    eager, model = HookLogged(), HookLogged()
    counter = _side_by_side(eager, model, (2, 4))
    assert model.seen == eager.seen and len(model.seen) == CALLS
    assert counter.frame_count <= 2


GRAD_LOG = []


def _log_grad(g):
    GRAD_LOG.append(g.sum().item())


def grad_logged(x):
    y = x * 2
    y.register_hook(_log_grad)
    return (y * len(GRAD_LOG)).sum()


def test_list_grown_by_a_tensor_hook_compiles_at_most_twice():
    def run(fn):
        GRAD_LOG.clear()
        outs = []
        for i in range(CALLS):
            x = torch.full((3,), float(i + 1), requires_grad=True)
            out = fn(x)
            out.backward()
            outs.append((out.detach(), x.grad))
        return outs, list(GRAD_LOG)

    eager_outs, eager_log = run(grad_logged)
    counter = CompileCounter()
    compiled_outs, compiled_log = run(bytegraph.compile(grad_logged, backend=counter))
    torch.testing.assert_close(compiled_outs, eager_outs)
    assert compiled_log == eager_log and len(compiled_log) == CALLS
    assert counter.frame_count <= 2
