"""`register_hook` on tensors computed in the compiled function: the
hook node of Note [Intermediate hook node] instead of a graph break. Each test compares
eager and compiled (outputs, gradients, which hooks ran with which gradient, in order) over
two calls, without a recompile, on the backends `eager`, `aot_eager` and `inductor`."""
from __future__ import annotations

import functools
import gc

import pytest
import torch

import bytegraph
from bytegraph.ops import hooks as hook_op
from hook_harness import BACKENDS, LOG, diff

FAST = ("eager", "aot_eager")


def log_hook(g):
    LOG.append(("log", g.clone()))


def double(g):
    LOG.append(("double", g.clone()))
    return g * 2


def zero(g):
    LOG.append(("zero", g.clone()))
    return torch.zeros_like(g)


def tagged(tag, g):
    LOG.append((tag, g.clone()))
    return g + 1


class Scaler:
    def __init__(self, k):
        self.k = k

    def hook(self, g):
        LOG.append((f"scaler{self.k}", g.clone()))
        return g * self.k


GLOBAL_SCALER = Scaler(3)
GLOBAL_PARTIAL = functools.partial(tagged, "partial")


def make_global_closure(k):
    def hook(g):
        LOG.append((f"closure{k}", g.clone()))
        return g * k
    return hook


GLOBAL_CLOSURE = make_global_closure(5)


def _x():
    return torch.randn(4, 3, requires_grad=True)


# ---- every hook form, on every backend ------------------------------------------------

def f_global_function(x):
    y = x.sin() * 2
    y.register_hook(double)
    return y.cos()


def f_global_observer(x):
    y = x * 3
    y.register_hook(log_hook)
    return y.exp()


def f_bound_method_global(x):
    y = x.tanh()
    y.register_hook(GLOBAL_SCALER.hook)
    return (y * y).sum(1)


def f_partial_global(x):
    y = x + 1
    y.register_hook(GLOBAL_PARTIAL)
    return y.relu() * x


def f_partial_inside(x):
    y = x * x
    y.register_hook(functools.partial(tagged, "inside"))
    return y.sigmoid()


def f_lambda_inside(x):
    y = x.sin()
    y.register_hook(lambda g: g * 4)
    return y * 2


def f_lambda_logging(x):
    y = x.cos()
    y.register_hook(lambda g: LOG.append(("lambda", g.clone())))
    return y + x


def f_nested_closure(x):
    k = x.shape[0]

    def hook(g):
        LOG.append(("nested", g.clone()))
        return g * k
    y = x.exp()
    y.register_hook(hook)
    return y.mean(0)


def f_closure_over_graph_tensor(x):
    scale = x.detach().abs() + 1
    y = x * 2
    y.register_hook(lambda g: g * scale)
    return y.sin()


def f_global_closure(x):
    y = x.sigmoid()
    y.register_hook(GLOBAL_CLOSURE)
    return y * 3


def f_bound_method_inside(x):
    s = Scaler(7)
    y = x * 0.5
    y.register_hook(s.hook)
    return y.tanh()


def f_hook_keyword(x):
    y = x.abs() + 1
    y.register_hook(hook=double)
    return y.log()


FORMS = [f_global_function, f_global_observer, f_bound_method_global, f_partial_global, f_partial_inside,
         f_lambda_inside, f_lambda_logging, f_nested_closure, f_closure_over_graph_tensor, f_global_closure,
         f_bound_method_inside, f_hook_keyword]


@pytest.mark.parametrize("backend", FAST)
@pytest.mark.parametrize("fn", FORMS, ids=lambda f: f.__name__)
def test_hook_forms(fn, backend):
    diff(fn, _x(), backend=backend, graphs=1, fullgraph=True, hook_nodes=1)


@pytest.mark.slow
@pytest.mark.parametrize("fn", [f_global_function, f_lambda_inside, f_closure_over_graph_tensor,
                                f_bound_method_global], ids=lambda f: f.__name__)
def test_hook_forms_inductor(fn):
    diff(fn, _x(), backend="inductor", graphs=1, fullgraph=True, hook_nodes=1)


# ---- several hooks, where they fire ----------------------------------------------------

def f_several_on_one(x):
    y = x * 2
    y.register_hook(functools.partial(tagged, "first"))
    y.register_hook(double)
    y.register_hook(functools.partial(tagged, "third"))
    return y.sin()


def f_two_intermediates(x):
    y = x * 2
    z = y.sin()
    y.register_hook(functools.partial(tagged, "y"))
    z.register_hook(functools.partial(tagged, "z"))
    return z * y


def f_uses_before_registration(x):
    y = x * 2
    a = y.sin()                 # a use before the hook: its gradient reaches the hook too
    y.register_hook(double)
    b = y.cos()
    return a + b


def f_hook_on_returned(x):
    y = x * 2
    y.register_hook(double)
    return y


def f_hook_on_view(x):
    y = (x * 2).view(-1)
    y.register_hook(double)
    return y.sin()


def f_replace_then_observe(x):
    y = x.exp()
    y.register_hook(zero)
    y.register_hook(log_hook)
    return y * x


def helper_registers(y):
    y.register_hook(double)
    return y * 3


def f_inlined_helper(x):
    y = x.sin()
    return helper_registers(y).sum()


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)

    def forward(self, x):
        h = self.lin(x)
        h.register_hook(self.observe)
        return h.relu()

    def observe(self, g):
        LOG.append(("block", g.clone()))


def f_module_method(x):
    return BLOCK(x) * 2


BLOCK = Block()

SHAPES = [f_several_on_one, f_two_intermediates, f_uses_before_registration, f_hook_on_returned,
          f_hook_on_view, f_replace_then_observe, f_inlined_helper, f_module_method]


@pytest.mark.parametrize("backend", FAST)
@pytest.mark.parametrize("fn", SHAPES, ids=lambda f: f.__name__)
def test_hook_placement(fn, backend):
    diff(fn, _x(), backend=backend, graphs=1, fullgraph=True)


@pytest.mark.slow
@pytest.mark.parametrize("fn", [f_several_on_one, f_uses_before_registration, f_hook_on_returned],
                         ids=lambda f: f.__name__)
def test_hook_placement_inductor(fn):
    diff(fn, _x(), backend="inductor", graphs=1, fullgraph=True)


def test_module_parameter_grads_with_hook():
    """The module's parameters get eager's gradients through the hooked activation."""
    block_eager = Block()
    block_comp = Block()
    block_comp.load_state_dict(block_eager.state_dict())
    x = _x()
    LOG.clear()
    block_eager(x).sum().backward()
    eager_log = [t for t, _ in LOG]
    LOG.clear()
    bytegraph.compile(block_comp, backend="aot_eager", fullgraph=True)(x.detach()).sum().backward()
    assert [t for t, _ in LOG] == eager_log == ["block"]
    for pe, pc in zip(block_eager.parameters(), block_comp.parameters()):
        torch.testing.assert_close(pe.grad, pc.grad)


# ---- handles -------------------------------------------------------------------------

def f_remove_inside(x):
    y = x * 2
    h = y.register_hook(double)
    z = y.sin()
    h.remove()
    return z


def f_remove_one_of_two(x):
    y = x * 2
    h1 = y.register_hook(functools.partial(tagged, "kept"))
    h2 = y.register_hook(functools.partial(tagged, "removed"))
    h2.remove()
    return y.cos(), h1


def f_remove_twice(x):
    y = x.exp()
    h = y.register_hook(double)
    h.remove()
    h.remove()
    return y * 2


def f_return_handle(x):
    y = x.sin()
    h = y.register_hook(double)
    return y * 2, h


def f_handle_in_list(x, out):
    y = x.sin()
    out.append(y.register_hook(double))
    return y * 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_remove_inside_never_fires(backend):
    diff(f_remove_inside, _x(), backend=backend, graphs=1, fullgraph=True)


@pytest.mark.parametrize("backend", FAST)
@pytest.mark.parametrize("fn", [f_remove_one_of_two, f_remove_twice, f_return_handle], ids=lambda f: f.__name__)
def test_handles(fn, backend):
    diff(fn, _x(), backend=backend, graphs=1, fullgraph=True)


def _remove_returned(out):
    out[1].remove()


@pytest.mark.parametrize("backend", BACKENDS)
def test_remove_outside_before_backward(backend):
    diff(f_return_handle, _x(), backend=backend, graphs=1, fullgraph=True, after=_remove_returned)


@pytest.mark.parametrize("backend", FAST)
def test_handle_stored_in_argument_list(backend):
    def after(out):
        pass
    bytegraph.reset()
    cfn = bytegraph.compile(f_handle_in_list, backend=backend, fullgraph=True)
    handles: list = []
    LOG.clear()
    out = cfn(_x(), handles)
    assert len(handles) == 1 and isinstance(handles[0], torch.utils.hooks.RemovableHandle)
    handles[0].remove()
    out.sum().backward()
    assert LOG == []
    out = cfn(_x(), handles)
    out.sum().backward()
    assert [t for t, _ in LOG] == ["double"] and len(handles) == 2


def test_handle_type_and_context_manager_outside():
    bytegraph.reset()
    cfn = bytegraph.compile(f_return_handle, backend="eager", fullgraph=True)
    out, h = cfn(_x())
    assert type(h) is torch.utils.hooks.RemovableHandle
    with h:
        pass                      # RemovableHandle.__exit__ removes it
    LOG.clear()
    out.sum().backward()
    assert LOG == []


def f_hook_registered_and_removed(x, flag):
    """A hook registered and removed in one call (once 3 graphs, 3 breaks and recompiles;
    torch.compile raises an AssertionError on the removal)."""
    y = x * 2
    h = y.register_hook(double)
    z = y.sin()
    if flag:
        h.remove()
    w = z * y
    v = w.relu()
    u = v + 1
    return u.sum()


@pytest.mark.parametrize("backend", BACKENDS)
def test_hook_registered_and_removed_in_one_call_one_graph_no_recompile(backend):
    for flag in (True, False):
        diff(f_hook_registered_and_removed, _x(), flag, backend=backend, graphs=1, fullgraph=True, calls=3)


# ---- outer side effects, breaks, call sequences ----------------------------------------

SEEN: list = []


def f_global_list_append(x):
    y = x * 2
    y.register_hook(SEEN.append)
    return y.sin()


def test_bound_builtin_method_of_global_list():
    SEEN.clear()
    bytegraph.reset()
    x = _x()
    f_global_list_append(x).sum().backward()
    eager = [g.clone() for g in SEEN]
    SEEN.clear()
    cfn = bytegraph.compile(f_global_list_append, backend="aot_eager", fullgraph=True)
    cfn(x.detach().requires_grad_()).sum().backward()
    assert len(SEEN) == len(eager) == 1
    torch.testing.assert_close(SEEN[0], eager[0])


class Counter:
    def __init__(self):
        self.n = 0

    def hook(self, g):
        self.n += 1
        LOG.append((f"count{self.n}", g.clone()))


@pytest.mark.parametrize("backend", FAST)
def test_hook_mutating_argument_object(backend):
    def f(x, c):
        y = x * 2
        y.register_hook(c.hook)
        return y.cos()
    diff(f, _x(), Counter(), backend=backend, graphs=1, fullgraph=True)


@pytest.mark.parametrize("backend", FAST)
def test_hook_then_graph_break(backend):
    def f(x):
        y = x * 2
        y.register_hook(double)
        bytegraph.graph_break()
        return y.sin()
    diff(f, _x(), backend=backend, graphs=2)


@pytest.mark.parametrize("backend", FAST)
def test_handle_removed_after_graph_break(backend):
    def f(x):
        y = x * 2
        h = y.register_hook(double)
        bytegraph.graph_break()
        h.remove()
        return y.sin()
    diff(f, _x(), backend=backend)


@pytest.mark.parametrize("backend", FAST)
def test_two_calls_then_one_backward(backend):
    """Two calls' hooks are alive at once; each fires with its own call's gradient."""
    bytegraph.reset()
    cfn = bytegraph.compile(f_global_function, backend=backend, fullgraph=True)
    x1, x2 = _x(), _x()
    LOG.clear()
    (f_global_function(x1) * 2 + f_global_function(x2)).sum().backward()
    eager = [g.clone() for _, g in LOG]
    e1, e2 = x1.grad, x2.grad
    x1.grad = x2.grad = None
    LOG.clear()
    (cfn(x1) * 2 + cfn(x2)).sum().backward()
    assert len(LOG) == 2
    for (_, g), ge in zip(sorted(LOG, key=lambda t: t[1].sum().item()), sorted(eager, key=lambda g: g.sum().item())):
        torch.testing.assert_close(g, ge)
    torch.testing.assert_close(x1.grad, e1)
    torch.testing.assert_close(x2.grad, e2)


@pytest.mark.parametrize("backend", FAST)
def test_retain_graph_fires_twice(backend):
    bytegraph.reset()
    cfn = bytegraph.compile(f_global_function, backend=backend, fullgraph=True)
    LOG.clear()
    out = cfn(_x()).sum()
    out.backward(retain_graph=True)
    out.backward()
    assert [t for t, _ in LOG] == ["double", "double"]


@pytest.mark.parametrize("backend", FAST)
def test_slots_freed_without_backward(backend):
    bytegraph.reset()
    cfn = bytegraph.compile(f_global_function, backend=backend, fullgraph=True)
    cfn(_x())
    before = len(hook_op._SLOTS)
    for _ in range(3):
        cfn(_x())
    gc.collect()
    assert len(hook_op._SLOTS) <= before


def test_hook_on_tensor_without_grad_raises_like_eager():
    def f(x):
        y = x * 2
        y.register_hook(double)
        return y
    x = torch.randn(3)
    with pytest.raises(RuntimeError) as eager:
        f(x)
    with pytest.raises(RuntimeError) as compiled:
        bytegraph.compile(f, backend="eager")(x)
    assert str(compiled.value) == str(eager.value)


def test_ops_in_backward_graph_aot():
    """Under aot_eager the forward has no hook op left and the backward has one
    `bytegraph_call_hook` node (the hook body is not traced)."""
    from torch._functorch.aot_autograd import aot_module_simplified, make_boxed_func

    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    def backend(gm, example_inputs):
        return aot_module_simplified(gm, example_inputs, fw_compiler=keep, bw_compiler=keep)

    cfn = bytegraph.compile(f_global_function, backend=backend, fullgraph=True)
    cfn(_x()).sum().backward()
    forward, backward = graphs
    assert not any(n.target is hook_op.hook_op for n in forward.graph.nodes)
    assert [n for n in backward.graph.nodes if n.target is hook_op.call_hook]
    assert not any("double" in str(n.target) for n in backward.graph.nodes)


def f_unrebuildable_hook(x):
    y = x * 2
    y.register_hook(torch.no_grad()(double))   # a no_grad wrapper made in the trace: not rebuilt
    return y.sin()


def test_unrebuildable_hook_breaks_at_register_hook():
    out = bytegraph.explain(f_unrebuildable_hook)(_x())
    reasons = [r.reason for r in out.break_reasons]
    assert any(r.startswith("register_hook(") and "cannot be rebuilt" in r for r in reasons), reasons
    diff(f_unrebuildable_hook, _x(), backend="eager")


def f_hook_over_suspended_generator(x):
    def gen():
        try:
            yield 1
            yield 2
        finally:
            pass
    c = gen()
    next(c)
    y = x * 2
    y.register_hook(lambda g: g * next(c))
    return y


def test_hook_over_unrebuildable_value_runs_eagerly_with_reason():
    """A closure over a value the residual code cannot rebuild: the frame runs eagerly, with
    the reason (the hook runs once, as in eager)."""
    out = bytegraph.explain(f_hook_over_suspended_generator)(_x())
    assert any("cannot be rebuilt" in r.reason for r in out.break_reasons)
    diff(f_hook_over_suspended_generator, _x(), backend="eager")
