"""Lazy modules (`torch.nn.LazyLinear` and friends, any `LazyModuleMixin`) called for the
first time inside the compiled function, eager vs compiled on two copies of the same world
(same seed, so the initial values drawn agree): the first call materializes the
parameters through the module's forward pre-hook and turns it into its `cls_to_become`,
as eagerly, and later calls reuse the entry. Where eager's order cannot be kept (a random
draw earlier in the graph, a pre-hook before the initialization, a read of the module
before the call, ...) the call is a graph break with the reason (Note [Lazy module
initialization] in bytegraph/vars/lazy_modules.py).
"""
from __future__ import annotations

import copy
from typing import NamedTuple

import pytest
import torch
from helpers import CompileCounter, assert_same
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.parameter import UninitializedParameter

import bytegraph


def _types(world):
    return [type(m) for m in world.modules()] if isinstance(world, torch.nn.Module) else None


def lazy_check(make, args, fn=None, calls: int = 3, graphs: int | None = None, fullgraph: bool = False,
               dynamic=None, seed: int = 0):
    """Build the world `make()` twice (same seed); call `fn(module, *args)` (or the compiled
    module itself when `fn` is None) `calls` times eagerly on one and compiled on the other,
    with the same seed before each call; compare outputs or exceptions, the modules (classes,
    parameters, buffers) after every call, and the graphs compiled over all calls."""
    torch.manual_seed(seed)
    eager = make()
    torch.manual_seed(seed)
    world = make()
    counter = CompileCounter()
    bytegraph.reset()
    if fn is None:
        compiled = bytegraph.compile(world, backend=counter, fullgraph=fullgraph, dynamic=dynamic)
        run_e, run_c = eager, compiled
    else:
        compiled = bytegraph.compile(fn, backend=counter, fullgraph=fullgraph, dynamic=dynamic)
        run_e, run_c = (lambda *a: fn(eager, *a)), (lambda *a: compiled(world, *a))
    for i in range(calls):
        outs = []
        for run in (run_e, run_c):
            torch.manual_seed(100 + i)
            try:
                outs.append((run(*copy.deepcopy(args)), None))
            except Exception as e:  # compared below
                outs.append((None, e))
        (out_e, exc_e), (out_c, exc_c) = outs
        where = f"call {i}"
        assert (type(exc_c), str(exc_c)) == (type(exc_e), str(exc_e)), f"{where}: {exc_c!r} != eager {exc_e!r}"
        assert_same(out_e, out_c, f"{where} output")
        assert _types(world) == _types(eager), f"{where}: module classes {_types(world)} != eager {_types(eager)}"
        if not any(isinstance(p, UninitializedParameter) for p in eager.parameters()):  # no values to compare
            assert_same(eager, world, f"{where} module")
    if graphs is not None:
        assert counter.frame_count == graphs, f"expected {graphs} graph(s), compiled {counter.frame_count}"
    return counter, world


def test_lazy_linear_first_called_inside_the_compiled_function():
    counter, m = lazy_check(lambda: torch.nn.LazyLinear(4), (torch.randn(2, 3),),
                            fn=lambda m, x: m(x).relu(), graphs=1, fullgraph=True)
    assert type(m) is torch.nn.Linear and m.weight.shape == (4, 3)


class LazyMLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.LazyLinear(10)
        self.relu1 = torch.nn.ReLU()
        self.fc2 = torch.nn.LazyLinear(1)
        self.relu2 = torch.nn.ReLU()

    def forward(self, x):
        return self.relu2(self.fc2(self.relu1(self.fc1(x))))


def test_two_lazy_layers_of_a_compiled_module_in_one_graph():
    lazy_check(LazyMLP, (torch.rand(10, 10),), graphs=1, fullgraph=True)


def test_lazy_convolution_and_batch_norm_in_training():
    def make():
        return torch.nn.Sequential(torch.nn.LazyConv2d(4, 3), torch.nn.LazyBatchNorm2d(), torch.nn.ReLU(),
                                   torch.nn.Flatten(), torch.nn.LazyLinear(5))
    lazy_check(make, (torch.randn(2, 3, 6, 6),), graphs=1, fullgraph=True)


def test_lazy_batch_norm_without_affine_or_running_stats_becomes_its_class():
    module = torch.nn.LazyBatchNorm3d(affine=False, track_running_stats=False)
    counter, m = lazy_check(lambda: copy.deepcopy(module), (torch.ones(16, 3, 6, 7, 8),),
                            fn=lambda m, x: m(x), graphs=1, fullgraph=True)
    assert type(m) is torch.nn.BatchNorm3d


def test_ten_lazy_layers_initialize_in_one_capture():
    def make():
        return torch.nn.Sequential(*[torch.nn.LazyLinear(6) for _ in range(10)])
    lazy_check(make, (torch.randn(2, 3),), graphs=1, fullgraph=True)


# ---- user lazy modules (LazyModuleMixin) ---------------------------------------------------

class Materialized(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_parameter("param", None)

    def forward(self, x):
        return x * 2


class LazyWithBreakInInit(LazyModuleMixin, Materialized):
    cls_to_become = Materialized

    def __init__(self):
        super().__init__()
        self.param = UninitializedParameter()

    def initialize_parameters(self, x):
        bytegraph.graph_break()  # the initialization runs for real: no break
        self.param.materialize(x.shape)
        with torch.no_grad():
            self.param.fill_(0.5)


def test_user_lazy_module_whose_initialization_breaks_when_traced():
    counter, m = lazy_check(LazyWithBreakInInit, (torch.ones(3, 4),), fn=lambda m, x: m(x) + 1, graphs=1,
                            fullgraph=True)
    assert type(m) is Materialized and m.param.shape == (3, 4)


class LazyListLayer(LazyModuleMixin, torch.nn.Module):
    def initialize_parameters(self, xs):
        with torch.no_grad():
            self._param = torch.nn.Parameter(torch.empty(xs[0].shape).fill_(0.5))

    def forward(self, xs):
        out = 0
        for x in xs:
            out = out + x
        return out * self._param


class ListInput(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = LazyListLayer()

    def forward(self, xs):
        return self.layer(xs[:-1])


def test_user_lazy_module_with_a_list_input():
    lazy_check(ListInput, ([torch.rand(5, 5)] * 3 + [None],), graphs=1, fullgraph=True)


class Inputs(NamedTuple):
    x: dict
    y: torch.Tensor


class LazyNamedTupleLayer(LazyModuleMixin, torch.nn.Module):
    def initialize_parameters(self, inp):
        with torch.no_grad():
            self._param = torch.nn.Parameter(torch.empty(inp.x["a"][0].shape).fill_(0.5))

    def forward(self, inp):
        return sum(inp.x["a"]) * self._param + inp.y


def test_user_lazy_module_with_a_namedtuple_of_dicts_input():
    inp = Inputs(x={"a": [torch.rand(5, 5)] * 3, "b": torch.rand(5, 5)}, y=torch.rand(5, 5))
    lazy_check(LazyNamedTupleLayer, (inp,), fn=lambda m, i: m(i), graphs=1, fullgraph=True)


class LazyTwoInputs(LazyModuleMixin, torch.nn.Module):
    def initialize_parameters(self, x, y):
        with torch.no_grad():
            self._px = torch.nn.Parameter(torch.empty(x[0].shape).fill_(0.5))
            self._py = torch.nn.Parameter(torch.empty(y[0].shape).fill_(0.25))

    def forward(self, x, y):
        return sum(x) * self._px + sum(y) * self._py


class LazyMakesLazyChild(LazyModuleMixin, torch.nn.Module):
    def initialize_parameters(self, *args, **kwargs):
        with torch.no_grad():
            self.layer = LazyTwoInputs()

    def forward(self, x, y):
        return self.layer(x, y=y)


def test_lazy_initialization_making_a_lazy_child_called_with_a_keyword():
    counter, m = lazy_check(LazyMakesLazyChild, ([torch.rand(5, 5)] * 3, [torch.rand(5, 5)] * 2), graphs=1,
                            fullgraph=True)
    assert isinstance(m.layer, LazyTwoInputs) and not m.layer.has_uninitialized_params()


class LazyParent(LazyModuleMixin, torch.nn.Module):
    def impl(self, x):
        return x.cos() + self._val


class LazyChildNoClassToBecome(LazyParent):
    def forward(self, x):
        return super().impl(x.sin())

    def initialize_parameters(self, x):
        self._val = torch.nn.Parameter(torch.ones(2, 2))


def test_lazy_module_without_cls_to_become_and_super():
    lazy_check(LazyChildNoClassToBecome, (torch.rand(2, 2),), graphs=1, fullgraph=True)


class OneLazyLinear(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layer = torch.nn.LazyLinear(8)

    def forward(self, x):
        return self.layer(x)


def _passes_through_a_break(x):
    bytegraph.graph_break()
    return x


def test_lazy_call_then_a_break_in_an_inlined_function_compiles_once():
    def test(mod, x):
        res = mod(x)
        _passes_through_a_break(res)
        return res

    first, _ = lazy_check(OneLazyLinear, (torch.ones(10, 3),), fn=test, calls=1)
    three, _ = lazy_check(OneLazyLinear, (torch.ones(10, 3),), fn=test, calls=3)
    assert three.frame_count == first.frame_count == 1  # the later calls reuse what the first compiled


def test_a_fresh_lazy_module_on_a_later_call_is_initialized_too():
    torch.manual_seed(0)
    counter = CompileCounter()
    compiled = bytegraph.compile(lambda m, x: m(x) * 2, backend=counter)
    x = torch.randn(2, 3)
    for i in range(2):
        torch.manual_seed(i)
        m_e = torch.nn.LazyLinear(4)
        m_c = torch.nn.LazyLinear(4)
        torch.manual_seed(10 + i)
        ref = m_e(x) * 2
        torch.manual_seed(10 + i)
        assert_same(ref, compiled(m_c, x), f"module {i}")
        assert_same(m_e, m_c, f"module {i} after the call")
    # the second lazy module fails the entry's type guard (a Linear now): initialized, and a new entry
    assert counter.frame_count == 2
    m = torch.nn.Linear(3, 4)
    assert_same(m(x) * 2, compiled(m, x), "an initialized module")
    assert counter.frame_count == 2


# ---- where eager's order cannot be kept: a graph break, eager's results --------------------

def _dropout_then_lazy(m, x):
    return m(torch.nn.functional.dropout(x, 0.5, training=True))


def test_random_draw_earlier_in_the_graph_breaks_before_the_initialization():
    lazy_check(lambda: torch.nn.LazyLinear(4), (torch.randn(8, 3),), fn=_dropout_then_lazy, calls=3)
    with pytest.raises(bytegraph.Unsupported, match="may draw random numbers"):
        torch.manual_seed(0)
        bytegraph.compile(_dropout_then_lazy, fullgraph=True)(torch.nn.LazyLinear(4), torch.randn(8, 3))


class NoiseThenLazy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.LazyLinear(4)

    def forward(self, x):
        return self.fc(x + torch.randn_like(x))


def test_random_tensor_made_before_the_lazy_call_in_a_forward():
    lazy_check(NoiseThenLazy, (torch.randn(2, 3),), calls=3)


def test_dropout_that_draws_nothing_keeps_one_graph():
    lazy_check(lambda: torch.nn.LazyLinear(4), (torch.randn(8, 3),),
               fn=lambda m, x: m(torch.nn.functional.dropout(x, 0.5, training=False)), graphs=1, fullgraph=True)


def test_initialization_that_raises_raises_like_eager_and_leaves_the_module_lazy():
    counter, m = lazy_check(lambda: torch.nn.LazyLinear(4), (torch.tensor(3.0),), fn=lambda m, x: m(x), calls=2)
    assert type(m) is torch.nn.LazyLinear


class LazyFromData(LazyModuleMixin, torch.nn.Module):
    def initialize_parameters(self, x):
        self.scale = torch.nn.Parameter(x.mean(0).detach())  # a value, not a shape, of the input

    def forward(self, x):
        return x * self.scale


def test_initialization_keeping_a_value_of_the_input_runs_eagerly():
    counter, m = lazy_check(LazyFromData, (torch.randn(4, 3),), fn=lambda m, x: m(x) + 1, calls=3)
    assert isinstance(m.scale, torch.nn.Parameter)
    with pytest.raises(bytegraph.Unsupported, match="computed from the call's inputs"):
        bytegraph.compile(lambda m, x: m(x), fullgraph=True)(LazyFromData(), torch.randn(4, 3))


def test_symbolic_sizes_cannot_be_materialized_the_call_runs_eagerly():
    lazy_check(lambda: torch.nn.LazyLinear(4), (torch.randn(5, 3),), fn=lambda m, x: m(x).sum(), dynamic=True)


def test_reading_the_module_before_its_first_call_sees_it_uninitialized():
    def fn(m, x):
        n = m.in_features  # 0 before the initialization
        return m(x) * (n + 1)
    lazy_check(lambda: torch.nn.LazyLinear(4), (torch.randn(2, 3),), fn=fn, calls=3)


def test_pre_hook_prepended_before_the_initialization_runs_first():
    def make():
        m = torch.nn.LazyLinear(4)
        m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,), prepend=True)
        return m
    lazy_check(make, (torch.randn(2, 3),), fn=lambda m, x: m(x), calls=3)


def test_pre_hook_registered_after_the_initialization_hook_is_traced():
    def make():
        m = torch.nn.LazyLinear(4)
        m.register_forward_pre_hook(lambda mod, args: (args[0] * 2,))
        return m
    lazy_check(make, (torch.randn(2, 3),), fn=lambda m, x: m(x), graphs=1, fullgraph=True)


def test_lazy_module_called_in_a_cond_branch():
    def fn(m, x):
        return torch.cond(x.sum() > 0, lambda t: m(t), lambda t: m(t) * 2, (x,))
    lazy_check(lambda: torch.nn.LazyLinear(4), (torch.ones(2, 3),), fn=fn, calls=2)


def test_lazy_module_compiled_itself():
    counter, m = lazy_check(lambda: torch.nn.LazyLinear(4), (torch.randn(2, 3),), graphs=1, fullgraph=True)
    assert type(m) is torch.nn.Linear


def test_a_later_input_of_another_width_raises_like_eager():
    def make():
        return torch.nn.LazyLinear(4)
    torch.manual_seed(0)
    m_e, m_c = make(), make()
    compiled = bytegraph.compile(lambda m, x: m(x), fullgraph=True)
    for m, run in ((m_e, lambda x: m_e(x)), (m_c, lambda x: compiled(m_c, x))):
        torch.manual_seed(1)
        run(torch.randn(2, 3))
    assert_same(m_e, m_c, "after the first call")
    errors = []
    for run in (lambda x: m_e(x), lambda x: compiled(m_c, x)):
        with pytest.raises(RuntimeError) as caught:
            run(torch.randn(2, 5))
        errors.append(str(caught.value))
    assert errors[0] == errors[1]


class LazyMadeInTheFunction(LazyModuleMixin, Materialized):
    cls_to_become = Materialized

    def __init__(self):
        super().__init__()
        self.param = UninitializedParameter()

    def initialize_parameters(self, x):
        self.param.materialize(x.shape)
        with torch.no_grad():
            self.param.fill_(2.0)


def test_lazy_module_made_inside_the_compiled_function():
    made = []

    def fn(x):
        m = LazyMadeInTheFunction()
        made.append(m)
        return m(x) + m.param

    x = torch.ones(3, 4)
    ref = fn(x)
    out = bytegraph.compile(fn)(x)
    assert_same(ref, out, "output")
    assert type(made[-1]) is Materialized and type(made[0]) is Materialized
