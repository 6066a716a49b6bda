"""nn.Module instances created inside the compiled function and called there: torch.nn
activations made per call (`nn.GELU()`, `nn.SiLU()`), transformers' `ACT2FN["gelu"]` (a
ClassInstantier making a new `GELUActivation()` per lookup), user module classes without
parameters whose `__init__` is Python (Note [Modules made in the trace] in
bytegraph/vars/made_modules.py: the construction is traced first, then the module is built
once per trace). Differential: outputs, grads, stdout, the module returned; torch.compile
with fullgraph=True is the reference for the one-graph cases."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import bytegraph
from helpers import check

X = torch.randn(3, 4, requires_grad=True)


def _one_graph_as_torch_compile(fn, *args):
    torch._dynamo.reset()
    torch.compile(fn, backend="eager", fullgraph=True)(*args)
    return check(fn, *args, graphs=1, fullgraph=True)


class Scaled(nn.Module):
    def __init__(self, alpha=2.0, *, shift=0.0):
        super().__init__()
        self.alpha = alpha
        self.shift = shift

    def forward(self, x):
        return x * self.alpha + self.shift


class ScaledTanh(Scaled):
    def __init__(self, alpha):
        super().__init__(alpha, shift=1.0)
        self.inner = torch.tanh  # a function stored on the module, as GELUActivation does

    def forward(self, x):
        return self.inner(super().forward(x))


class NoInit(nn.Module):
    def forward(self, x):
        return x.relu() * 2


class PickAct(nn.Module):
    def __init__(self, use_python=False):
        super().__init__()
        self.act = self._python if use_python else F.gelu

    def _python(self, x):
        return x * 0.5 * (1.0 + torch.erf(x / 2.0 ** 0.5))

    def forward(self, x):
        return self.act(x)


@pytest.mark.parametrize("fn", [
    lambda x: nn.GELU()(x) + nn.SiLU()(x),
    lambda x: nn.GELU(approximate="tanh")(x) * nn.Sigmoid()(x),
    lambda x: Scaled(3.0, shift=0.5)(x),
    lambda x: ScaledTanh(0.5)(x) + Scaled()(x),
    lambda x: NoInit()(x),
    lambda x: PickAct()(x) + PickAct(use_python=True)(x),
], ids=["torch.nn activations", "torch.nn with arguments", "user class", "user subclass chain",
        "user class without __init__", "user class storing a function or a bound method"])
def test_module_made_per_call_is_one_graph(fn):
    _one_graph_as_torch_compile(fn, X)


def test_transformers_act2fn_is_one_graph():
    activations = pytest.importorskip("transformers.activations")

    def f(x):
        return activations.ACT2FN["gelu"](x) + activations.ACT2FN["silu"](x)

    _one_graph_as_torch_compile(f, X)


def test_made_module_in_a_loop_and_a_helper():
    def layer(x, i):
        return Scaled(float(i))(x)

    def f(x):
        for i in range(3):
            x = layer(x, i + 1)
        return x

    _one_graph_as_torch_compile(f, X)


def test_returned_module_is_a_fresh_module_per_call():
    res = check(lambda x: (Scaled(2.0)(x), Scaled(4.0)), X, graphs=1)
    assert res.compiled.out[1].alpha == 4.0 and isinstance(res.compiled.out[1], Scaled)


def test_module_live_across_a_graph_break():
    def f(x):
        act = ScaledTanh(2.0)
        y = act(x)
        print("between")
        return act(y)

    check(f, X, graphs=2)


COUNT = []


class Counting(nn.Module):
    def __init__(self):
        super().__init__()
        COUNT.append(1)  # writes outside the new module: not folded into the graph

    def forward(self, x):
        return x + len(COUNT)


class WithChild(nn.Module):
    def __init__(self):
        super().__init__()
        self.child = nn.Identity()  # a submodule: a module with state is made outside the trace

    def forward(self, x):
        return self.child(x)


@pytest.mark.parametrize("cls, reason", [
    (Counting, "Counting"),
    (WithChild, "WithChild"),
], ids=["__init__ writes outside the module", "__init__ makes a submodule"])
def test_construction_with_effects_or_state_breaks_with_the_reason(cls, reason):
    def f(x):
        return cls()(x)

    check(f, X, setup=COUNT.clear, state=lambda: list(COUNT))
    out = bytegraph.explain(f, X)
    assert any(reason in r.reason and "a module made in the compiled function" in r.reason
               for r in out.break_reasons), out.break_reasons


def test_constructor_error_is_raised_as_eager():
    check(lambda x: Scaled(1.0, 2.0)(x), X)  # `shift` is keyword-only: TypeError
    check(lambda x: nn.Dropout(p=2.0)(x), X)


ALPHA = 2.0


class FromGlobal(nn.Module):
    def __init__(self):
        super().__init__()
        self.alpha = ALPHA  # read when the module is made: guarded, as any read of the trace

    def forward(self, x):
        return x * self.alpha


def test_init_reading_a_global_sees_its_new_value():
    global ALPHA
    cf = bytegraph.compile(lambda x: FromGlobal()(x), fullgraph=True)
    x = torch.ones(2)
    try:
        assert torch.equal(cf(x), x * 2)
        ALPHA = 5.0
        assert torch.equal(cf(x), x * 5)  # the guard on ALPHA failed: traced again
    finally:
        ALPHA = 2.0
