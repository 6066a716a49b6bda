"""`register_hook` / `register_post_accumulate_grad_hook` inside a compiled region on tensors
that have a source (arguments, parameters, tensors reached from arguments, globals, module
attributes): recorded, replayed after the graph, no graph break."""
from __future__ import annotations

import functools

import pytest
import torch

import bytegraph
from hook_helpers import BACKENDS, FAST_BACKENDS, Counting, differential, leaf


# ---- hook forms ---------------------------------------------------------------------------

@pytest.mark.parametrize("backend", BACKENDS)
def test_lambda_scales_the_input_grad(backend):
    def build():
        def f(x):
            x.register_hook(lambda g: g * 3)
            return (x * x).sum()
        return f, lambda i: (leaf(4, seed=i),), []
    differential(build, backend=backend, graphs=1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_hook_with_side_effect_appends_to_a_closure_list(backend):
    def build():
        log = []

        def f(x, w):
            x.register_hook(lambda g: log.append(g.sum().item()))
            return torch.tanh(x @ w).sum()
        return f, lambda i: (leaf(2, 3, seed=i), leaf(3, 3, seed=10)), log
    differential(build, backend=backend, graphs=1)


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_hook_counting_calls_through_nonlocal(backend):
    def build():
        log = []
        count = 0

        def bump(g):
            nonlocal count
            count += 1
            log.append(count)

        def f(x):
            x.register_hook(bump)
            return (x.sin() * 2).sum()
        return f, lambda i: (leaf(3, seed=i),), log
    differential(build, backend=backend, graphs=1)


GLOBAL_LOG = []


def _global_hook(g):
    global GLOBAL_COUNT
    GLOBAL_COUNT += 1
    GLOBAL_LOG.append(("global", GLOBAL_COUNT, g.shape))


GLOBAL_COUNT = 0


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_module_level_hook_writes_a_global(backend):
    def build():
        global GLOBAL_COUNT
        GLOBAL_LOG.clear()
        GLOBAL_COUNT = 0

        def f(x):
            x.register_hook(_global_hook)
            return (x * 5).sum()
        return f, lambda i: (leaf(2, 2, seed=i),), GLOBAL_LOG
    differential(build, backend=backend, graphs=1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_several_hooks_on_one_tensor_run_in_registration_order(backend):
    def build():
        log = []

        def f(x):
            x.register_hook(lambda g: log.append("a") or g + 1)
            x.register_hook(lambda g: log.append("b") or g * 2)
            x.register_hook(lambda g: log.append(("c", g.sum().item())))
            return (x * x).sum()
        return f, lambda i: (leaf(3, seed=i),), log
    differential(build, backend=backend, graphs=1)


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_hooks_registered_before_and_inside_keep_order(backend):
    def build():
        log = []

        def make(i):
            x = leaf(3, seed=i)
            x.register_hook(lambda g: log.append("outside") or g * 10)
            return (x,)

        def f(x):
            x.register_hook(lambda g: log.append(("inside", g.sum().item())) or g - 1)
            return (x * 2).sum()
        return f, make, log
    differential(build, backend=backend, graphs=1)


class Scaler:
    def __init__(self, k):
        self.k = k
        self.seen = []

    def hook(self, g):
        self.seen.append(g.sum().item())
        return g * self.k


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_bound_method_hook(backend):
    def build():
        s = Scaler(4)

        def f(x, s):
            x.register_hook(s.hook)
            return x.exp().sum()
        return f, lambda i: (leaf(3, seed=i), s), s.seen
    differential(build, backend=backend, graphs=1)


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_partial_made_inside(backend):
    def build():
        log = []

        def add(k, g):
            log.append(k)
            return g + k

        def f(x):
            x.register_hook(functools.partial(add, 7))
            return (x ** 2).sum()
        return f, lambda i: (leaf(3, seed=i),), log
    differential(build, backend=backend, graphs=1)


def _scale_by(k, g):
    return g * k


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_partial_made_outside(backend):
    def build():
        hook = functools.partial(_scale_by, 3.5)

        def f(x, hook):
            x.register_hook(hook)
            return x.cos().sum()
        return f, lambda i: (leaf(3, seed=i), hook), []
    differential(build, backend=backend, graphs=1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_nested_function_with_closure_made_inside(backend):
    def build():
        log = []

        def f(x, k):
            scale = k * 2

            def hook(g):
                log.append(scale)
                return g * scale
            x.register_hook(hook)
            return (x * x).sum()
        return f, lambda i: (leaf(3, seed=i), 3), log
    differential(build, backend=backend, graphs=1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_lambda_closing_over_a_graph_tensor(backend):
    def build():
        def f(x):
            norm = x.detach().norm()
            x.register_hook(lambda g: g / norm)
            return (x * 3).sum()
        return f, lambda i: (leaf(4, seed=i),), []
    differential(build, backend=backend, graphs=1)


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_hook_registered_in_an_inlined_helper(backend):
    def build():
        log = []

        def watch(t, name):
            t.register_hook(lambda g: log.append(name))
            return t

        def f(x, y):
            watch(x, "x")
            watch(y, "y")
            return (x * y).sum()
        return f, lambda i: (leaf(3, seed=i), leaf(3, seed=i + 5)), log
    differential(build, backend=backend, graphs=1)


# ---- tensors with a source -------------------------------------------------------------------

@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_tensor_reached_from_list_dict_and_object(backend):
    class Box:
        def __init__(self, t):
            self.t = t

    def build():
        log = []

        def make(i):
            return ([leaf(2, seed=i)], {"a": leaf(2, seed=i + 1)}, Box(leaf(2, seed=i + 2)))

        def f(xs, d, box):
            xs[0].register_hook(lambda g: log.append("list") or g * 2)
            d["a"].register_hook(lambda g: log.append("dict") or g * 3)
            box.t.register_hook(lambda g: log.append("attr") or g * 4)
            return (xs[0] + d["a"] + box.t).sum()
        return f, make, log
    differential(build, backend=backend, graphs=1, unordered_log=True)


GLOBAL_T = leaf(3, seed=3)


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_hook_on_a_global_tensor(backend):
    def build():
        global GLOBAL_T
        GLOBAL_T = leaf(3, seed=3)
        log = []

        def f(x):
            GLOBAL_T.register_hook(lambda g: log.append(g.sum().item()))
            return (GLOBAL_T * x).sum()
        return f, lambda i: (leaf(3, seed=i),), log
    differential(build, backend=backend, graphs=1, calls=3)


class WithParams(torch.nn.Module):
    def __init__(self, log):
        super().__init__()
        self.lin = torch.nn.Linear(3, 2)
        self.extra = torch.nn.Parameter(torch.ones(2))
        self.log = log

    def forward(self, x):
        self.lin.weight.register_hook(lambda g: self.log.append(("w", g.shape)) or g * 0.5)
        self.extra.register_hook(lambda g: g + 1)
        return self.lin(x) * self.extra


@pytest.mark.parametrize("backend", BACKENDS)
def test_hooks_on_parameters_inside_forward(backend):
    def build():
        torch.manual_seed(0)
        log = []
        m = WithParams(log)
        return m, lambda i: (torch.randn(4, 3), ), log

    differential(build, backend=backend, graphs=1)


def test_parameter_grads_equal_eager_with_hooks_inside_forward():
    torch.manual_seed(0)
    m_e = WithParams([])
    m_c = WithParams([])
    m_c.load_state_dict(m_e.state_dict())
    cm = bytegraph.compile(m_c, backend="aot_eager")
    x = torch.randn(4, 3)
    for _ in range(2):
        m_e(x).sum().backward()
        cm(x).sum().backward()
    for (n, pe), pc in zip(m_e.named_parameters(), m_c.parameters()):
        torch.testing.assert_close(pc.grad, pe.grad, msg=n)
    assert m_c.log == m_e.log and len(m_e.log) == 1 + 2  # each forward adds a hook: 1, then 2 fire


class AttrTensor(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.t = leaf(3, seed=1)  # a plain tensor attribute, not a parameter

    def forward(self, x):
        self.t.register_hook(lambda g: g * 9)
        return (self.t * x).sum()


def test_hook_on_a_module_attribute_tensor():
    def build():
        m = AttrTensor()
        return (lambda x: m(x)), lambda i: (leaf(3, seed=i),), [m.t]
    differential(build, backend="eager", graphs=1)


def test_loop_over_parameters_registers_a_hook_each():
    def build():
        torch.manual_seed(0)
        lin = torch.nn.Linear(3, 3)
        log = []

        def f(x):
            for name, p in lin.named_parameters():
                p.register_hook(lambda g, name=name: log.append(name))
            return lin(x).relu().sum()
        return f, lambda i: (torch.randn(2, 3),), log
    differential(build, backend="aot_eager", graphs=1, unordered_log=True)


# ---- post-accumulate-grad hooks ---------------------------------------------------------------

@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_post_accumulate_grad_hook_on_a_parameter(backend):
    def build():
        torch.manual_seed(0)
        lin = torch.nn.Linear(3, 2)
        log = []

        def sgd(p):
            log.append(p.grad.sum().item())
            with torch.no_grad():
                p.add_(p.grad, alpha=-0.1)

        def f(x):
            lin.weight.register_post_accumulate_grad_hook(sgd)
            return lin(x).sum()
        return f, lambda i: (torch.randn(4, 3),), log
    differential(build, backend=backend, graphs=1)


def test_post_accumulate_grad_hook_on_an_input_leaf():
    def build():
        log = []

        def f(x):
            x.register_post_accumulate_grad_hook(lambda p: log.append(p.grad.clone()))
            return (x * x).sum()
        return f, lambda i: (leaf(3, seed=i),), log
    differential(build, backend="aot_eager", graphs=1)


def test_post_accumulate_grad_hook_on_a_non_leaf_raises_like_eager():
    def build():
        def f(x):
            x.register_post_accumulate_grad_hook(lambda p: None)
            return x * 2
        return f, lambda i: (leaf(3, seed=i) * 1,), []
    differential(build, backend="eager", backward=False)


def test_hook_on_a_tensor_without_grad_raises_like_eager():
    def build():
        def f(x):
            x.register_hook(lambda g: g)
            return x * 2
        return f, lambda i: (torch.randn(3),), []
    differential(build, backend="eager")


def test_hook_on_a_non_leaf_input():
    def build():
        log = []

        def make(i):
            base = leaf(3, seed=i)
            return (base * 2, base)

        def f(y, base):
            y.register_hook(lambda g: log.append("y") or g * 3)
            return (y * y).sum()
        return f, make, log
    differential(build, backend="aot_eager", graphs=1)


# ---- graph breaks and fullgraph ------------------------------------------------------------

def test_fullgraph_function_registering_a_hook_on_an_input_is_one_graph():
    log = []

    def f(x, w):
        h = x.register_hook(lambda g: log.append("x") or g * 2)
        y = torch.relu(x @ w)
        return y.sum(), h
    counter = Counting("eager")
    cf = bytegraph.compile(f, backend=counter, fullgraph=True)
    x, w = leaf(2, 3), leaf(3, 3, seed=1)
    out, h = cf(x, w)
    out.backward()
    assert counter.frames == 1 and log == ["x"]
    assert isinstance(h, torch.utils.hooks.RemovableHandle)
    x_e = x.detach().clone().requires_grad_()
    x_e.register_hook(lambda g: g * 2)
    torch.relu(x_e @ w.detach()).sum().backward()
    torch.testing.assert_close(x.grad, x_e.grad)


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_registration_then_graph_break_fires_once(backend):
    def build():
        log = []

        def f(x):
            x.register_hook(lambda g: log.append("once") or g * 2)
            y = x * 3
            bytegraph.graph_break()
            return (y + 1).sum()
        return f, lambda i: (leaf(3, seed=i),), log
    differential(build, backend=backend, graphs=2)


def test_hook_on_an_intermediate_is_captured_in_the_graph():
    """Once a break ("register_hook() registers a tensor hook"); the intermediate hook node
    (Note [Intermediate hook node]) now captures it: one graph with fullgraph=True, the hook
    fires in backward as in eager."""
    def f(x):
        y = x * 2
        y.register_hook(lambda g: g + 1)
        return y.sum()
    explained = bytegraph.explain(f, leaf(3))
    assert explained.graph_count == 1 and explained.graph_break_count == 0, explained
    x = leaf(3)
    bytegraph.compile(f, fullgraph=True)(x).sum().backward()
    torch.testing.assert_close(x.grad, torch.full((3,), 4.0))


def test_torch_function_as_a_hook():
    def f(x):
        x.register_hook(torch.neg)  # a torch op read from the torch module: it has a source
        return (x * 2).sum()

    def build():
        return f, lambda i: (leaf(3, seed=i),), []
    differential(build, backend="eager", graphs=1)


# ---- guards: steady state and hook identity ----------------------------------------------------

def _make_hook(k, log):
    def hook(g):
        log.append(k)
        return g * k
    return hook


def test_no_recompile_on_hook_identity_change():
    """A new closure object of the same code every call (torch.compile's
    test_no_recompile_on_hook_identity_change): registered as itself, no recompile."""
    log = []

    def f(x, hook):
        x.register_hook(hook)
        return (x * x).sum()
    counter = Counting("eager")
    cf = bytegraph.compile(f, backend=counter)
    for k in range(1, 6):
        x = leaf(3, seed=k)
        cf(x, _make_hook(k, log)).backward()
        torch.testing.assert_close(x.grad, 2 * x.detach() * k)
    assert log == [1, 2, 3, 4, 5]
    assert counter.frames == 1


def test_a_different_hook_function_is_registered_not_the_first_one():
    def double(g):
        return g * 2

    def triple(g):
        return g * 3

    def f(x, hook):
        x.register_hook(hook)
        return x.sum()
    cf = bytegraph.compile(f)
    for hook, k in ((double, 2), (triple, 3), (double, 2)):
        x = leaf(3)
        cf(x, hook).backward()
        torch.testing.assert_close(x.grad, torch.full((3,), float(k)))


STEADY_CASES = {
    "lambda": lambda x, log: x.register_hook(lambda g: g * 2),
    "logging_closure": lambda x, log: x.register_hook(lambda g: log.append(1)),
    "partial": lambda x, log: x.register_hook(functools.partial(_scale_by, 2.0)),
    "removed": lambda x, log: x.register_hook(lambda g: g * 100).remove(),
    "post_accumulate": lambda x, log: x.register_post_accumulate_grad_hook(lambda p: log.append(2)),
}


@pytest.mark.parametrize("case", sorted(STEADY_CASES))
def test_ten_calls_compile_once(case):
    register = STEADY_CASES[case]

    def build():
        log = []

        def f(x):
            register(x, log)
            return (x * x).sum()
        return f, lambda i: (leaf(3, seed=i),), log
    differential(build, backend="eager", calls=10, graphs=1)


def test_hook_passed_by_keyword():
    def build():
        def f(x):
            x.register_hook(hook=lambda g: g * 4)
            return x.sum()
        return f, lambda i: (leaf(3, seed=i),), []
    differential(build, backend="eager", graphs=1)


def test_register_hook_with_a_wrong_call_raises_like_eager():
    def build():
        def f(x):
            x.register_hook(lambda g: g, 2)
            return x.sum()
        return f, lambda i: (leaf(3, seed=i),), []
    differential(build, backend="eager")
