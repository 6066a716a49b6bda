"""Compiled autograd: `bytegraph.compiled_autograd.enable(backend)` captures
`backward()` through the engine's C++ interface and compiles it with bytegraph, hook bodies
traced into the backward graph. Compared with eager: weights after SGD steps, gradients, hook
calls and what the hooks did to outer state; graphs counted through a counting backend."""
from __future__ import annotations

import copy
import operator

import pytest
import torch

import bytegraph
from bytegraph.vars.autograd_ops import AutogradOp
from helpers import _LogCapture
from hook_harness import BACKENDS, Counting


class Stats:
    def __init__(self):
        self.calls = 0


STATS = Stats()
LOG: list = []


def act_hook(g):
    STATS.calls += 1
    return g * 0.5


def param_hook(g):
    return g.clamp(-0.05, 0.05)


def make_mlp():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))


X = torch.randn(6, 4)
T = torch.randn(6, 2)


def train(model, steps, hook=act_hook):
    model[0].weight.register_hook(param_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    for _ in range(steps):
        opt.zero_grad()
        a = model[1](model[0](X))
        a.register_hook(hook)
        loss = ((model[2](a) - T) ** 2).mean()
        loss.backward()
        opt.step()
    return model


def _eager_and_compiled(backend, steps=3, hook=act_hook):
    STATS.calls = 0
    eager = train(make_mlp(), steps, hook)
    eager_calls, STATS.calls = STATS.calls, 0
    counter = Counting(backend)
    with bytegraph.compiled_autograd.enable(counter):
        compiled = train(make_mlp(), steps, hook)
    return eager, eager_calls, compiled, counter


def _call_targets(gm):
    return [n.target for n in gm.graph.nodes if n.op in ("call_function", "call_method")]


@pytest.mark.parametrize("backend", BACKENDS)
def test_mlp_training_step_one_backward_graph(backend):
    eager, eager_calls, compiled, counter = _eager_and_compiled(backend)
    for pe, pc in zip(eager.parameters(), compiled.parameters()):
        torch.testing.assert_close(pe, pc)
    assert STATS.calls == eager_calls == 3          # the activation hook's side effect, replayed each step
    assert len(counter.graphs) == 1                 # one backward graph, reused by steps 2 and 3
    targets = _call_targets(counter.graphs[0])
    assert operator.mul in targets or "mul" in targets  # act_hook's `g * 0.5`, traced in
    assert "clamp" in targets                            # param_hook's body, traced in
    assert any(isinstance(t, AutogradOp) for t in targets)


def test_backward_graph_reused_no_recompile_log():
    with _LogCapture() as logs:
        _, _, _, counter = _eager_and_compiled("eager", steps=4)
    assert len(counter.graphs) == 1
    recompiles = [line for line in logs.lines if line.startswith("[bytegraph.recompiles]")]
    assert len(recompiles) == 1 and "capturing backward graph" in recompiles[0], recompiles  # the first step only


def other_act_hook(g):
    return g * 3


def test_new_hook_code_recompiles_and_is_reported():
    counter = Counting("eager")
    model = make_mlp()
    with _LogCapture() as logs:
        with bytegraph.compiled_autograd.enable(counter):
            for hook in (act_hook, other_act_hook):
                model.zero_grad()            # the same autograd graph: only the hook differs
                a = model[1](model[0](X))
                a.register_hook(hook)
                model[2](a).sum().backward()
    assert len(counter.graphs) == 2
    assert any("[bytegraph.recompiles]" in line and "hooks[" in line for line in logs.lines), logs.lines


def test_new_autograd_graph_shape_is_a_new_capture_and_is_reported():
    counter = Counting("eager")
    model = make_mlp()
    with _LogCapture() as logs:
        with bytegraph.compiled_autograd.enable(counter):
            for batch in (X, X[:3]):
                model(batch).sum().backward()
    assert len(counter.graphs) == 2
    assert any("[bytegraph.recompiles]" in line and "compiled autograd" in line for line in logs.lines), logs.lines


def _compare_grads(run, backend="eager", inputs=()):
    torch.manual_seed(0)
    m1 = torch.nn.Linear(3, 2)
    m2 = copy.deepcopy(m1)
    x1 = torch.randn(4, 3, requires_grad=True)
    x2 = x1.detach().clone().requires_grad_()
    LOG.clear()
    run(m1, x1)
    eager = list(LOG)
    LOG.clear()
    counter = Counting(backend)
    with bytegraph.compiled_autograd.enable(counter):
        run(m2, x2)
    assert [t for t, _ in LOG] == [t for t, _ in eager]
    for (_, a), (_, b) in zip(eager, LOG):
        torch.testing.assert_close(a, b)
    for a, b in zip(m1.parameters(), m2.parameters()):
        torch.testing.assert_close(a.grad, b.grad)
    torch.testing.assert_close(x1.grad, x2.grad)
    return counter


def _post_acc(m, x):
    m.weight.register_post_accumulate_grad_hook(lambda p: LOG.append(("post_acc", p.grad.clone())))
    m(x).relu().sum().backward()


def _input_hook(m, x):
    x.register_hook(lambda g: LOG.append(("x", g.clone())) or g * 2)
    m(x).tanh().sum().backward()


def _full_module_hook(m, x):
    m.register_full_backward_hook(lambda mod, gi, go: LOG.append(("full", go[0].clone())))
    m(x).sigmoid().sum().backward()


def _module_pre_hook(m, x):
    m.register_full_backward_pre_hook(lambda mod, go: LOG.append(("pre", go[0].clone())))
    m(x).exp().sum().backward()


def _node_hook(m, x):
    y = m(x)
    y.grad_fn.register_hook(lambda gi, go: LOG.append(("node", go[0].clone())))
    y.sum().backward()


def _param_hook_scaling(m, x):
    m.bias.register_hook(lambda g: g * 10)
    (m(x) ** 2).sum().backward()


@pytest.mark.parametrize("run", [_post_acc, _input_hook, _full_module_hook, _module_pre_hook, _node_hook,
                                 _param_hook_scaling], ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("backend", ("eager", "aot_eager"))
def test_hook_kinds(run, backend):
    _compare_grads(run, backend)


def test_hook_body_with_print_breaks_and_still_agrees(capsys):
    def run(m, x):
        y = m(x)
        y.register_hook(lambda g: print("grad", tuple(g.shape)) or g * 2)
        y.sum().backward()
    _compare_grads(run)
    assert capsys.readouterr().out.count("grad (4, 2)") == 2


def test_intermediate_hook_node_traced_into_backward_graph():
    """A hook registered on an intermediate inside a bytegraph-compiled forward (its hook node)
    has its body traced into the compiled-autograd graph; a removed one never fires."""
    def f(m, x, remove):
        y = m(x).relu()
        h = y.register_hook(lambda g: LOG.append(("inner", g.clone())) or g * 4)
        if remove:
            h.remove()
        return y.sum()

    for remove in (False, True):
        torch.manual_seed(0)
        m1 = torch.nn.Linear(3, 2)
        m2 = copy.deepcopy(m1)
        x = torch.randn(4, 3)
        LOG.clear()
        f(m1, x, remove).backward()
        eager = [t for t, _ in LOG]
        LOG.clear()
        bytegraph.reset()
        cf = bytegraph.compile(f, backend="eager", fullgraph=True)
        counter = Counting("eager")
        with bytegraph.compiled_autograd.enable(counter):
            cf(m2, x, remove).backward()
        assert [t for t, _ in LOG] == eager == ([] if remove else ["inner"])
        for a, b in zip(m1.parameters(), m2.parameters()):
            torch.testing.assert_close(a.grad, b.grad)
        if not remove:
            assert operator.mul in _call_targets(counter.graphs[0])


def test_aot_compiled_forward_raises_a_clear_error():
    def f(m, x):
        return m(x).relu().sum()
    m = torch.nn.Linear(3, 2)
    cf = bytegraph.compile(f, backend="aot_eager")
    loss = cf(m, torch.randn(4, 3))
    with bytegraph.compiled_autograd.enable("eager"):
        with pytest.raises(NotImplementedError, match="compiled by AOT autograd"):
            loss.backward()


def test_enable_restores_the_engine():
    counter = Counting("eager")
    with bytegraph.compiled_autograd.enable(counter):
        pass
    m = torch.nn.Linear(3, 2)
    m(torch.randn(2, 3)).sum().backward()
    assert counter.graphs == []


GROWN: list = []


def grown_log_hook(g):
    GROWN.append(1)
    return g * len(GROWN)


def test_hook_reading_the_length_of_a_list_it_grows_compiles_at_most_twice():
    """The length of a global list a hook appends to, read into the gradient, is a
    symbolic input once it changed (it was guarded per value: one backward graph per step)."""
    GROWN.clear()
    eager = train(make_mlp(), 6, grown_log_hook)
    eager_log, GROWN[:] = list(GROWN), []
    counter = Counting("eager")
    with _LogCapture() as logs:
        with bytegraph.compiled_autograd.enable(counter):
            compiled = train(make_mlp(), 6, grown_log_hook)
    assert GROWN == eager_log and len(GROWN) == 6
    for p, q in zip(eager.parameters(), compiled.parameters()):
        torch.testing.assert_close(p, q)
    recompiles = [line for line in logs.lines if line.startswith("[bytegraph.recompiles] recompiling")]
    assert len(counter.graphs) <= 2 and len(recompiles) <= 1, (len(counter.graphs), recompiles)


class StrHookState:
    def __init__(self):
        self.count = 0
        self.text = None

    def hook(self, grad):
        self.text = str(grad)  # reads the gradient's values into Python: not traceable
        self.count += 1
        return grad * 2


def test_fullgraph_backward_with_untraceable_hook_raises_before_any_hook_runs():
    """torch's test_complex_state_mutation_in_intermediary_hooks_same_on_inductor_with_graph_break:
    with a fullgraph compiler, a hook the backward graph cannot hold makes backward() raise
    (bytegraph.Unsupported, with the hook's line) and nothing of the backward runs; without
    fullgraph the same backward breaks and agrees with eager."""
    def f(x, state):
        y = x.mul(2)
        y.register_hook(state.hook)
        return y.mul(3).sum()

    cf = bytegraph.compile(f, backend="eager", fullgraph=True)
    state = StrHookState()
    x = torch.ones(4, requires_grad=True)
    loss = cf(x, state)
    with bytegraph.compiled_autograd.enable("eager", fullgraph=True):
        with pytest.raises(bytegraph.Unsupported, match="str"):
            loss.backward()
    assert state.count == 0 and x.grad is None

    eager_state, x_eager = StrHookState(), torch.ones(4, requires_grad=True)
    f(x_eager, eager_state).backward()
    x = torch.ones(4, requires_grad=True)
    with bytegraph.compiled_autograd.enable("eager"):
        cf(x, state).backward()
    assert state.count == eager_state.count == 1 and state.text == eager_state.text
    torch.testing.assert_close(x.grad, x_eager.grad)


def test_enable_with_other_settings_recaptures():
    """The engine keeps its captures across enable() blocks; a block with another backend (or
    fullgraph) must not run backward graphs compiled for the previous one."""
    model = make_mlp()
    first, second = Counting("eager"), Counting("eager")
    for counter in (first, first, second):
        model.zero_grad()
        with bytegraph.compiled_autograd.enable(counter):
            model(X).sum().backward()
    assert len(first.graphs) == 1 and len(second.graphs) == 1
