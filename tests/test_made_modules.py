"""torch.nn modules made inside the compiled function (Note [Modules made in the trace] in
bytegraph/vars/made_modules.py): a stateless torch.nn module with constant arguments is
built while tracing and traced in the graph; where the program gets the module (returned,
stored, live at a break) it is a fresh one per call, as eagerly; everything else stays a
reasoned graph break."""
import pytest
import torch
import torch.nn.functional as F
from torch import nn

import bytegraph
from helpers import check

X = torch.randn(4, 5, requires_grad=True)
Y = torch.tensor([1, 2, -100, 0])


def loss_made_per_call(x, y):
    loss_fct = nn.CrossEntropyLoss(ignore_index=-100, label_smoothing=0.1)
    return loss_fct(x.relu() * 2, y)


def activations_made_inline(x):
    return nn.GELU(approximate="tanh")(x) + nn.Softmax(dim=-1)(x) + nn.Dropout(p=0.0)(x) + nn.Flatten(0)(x).sum()


def several_losses(x, y):
    total = nn.MSELoss()(x, torch.zeros_like(x))
    total = total + nn.NLLLoss(reduction="sum")(F.log_softmax(x, -1), y.clamp(min=0))
    return total + nn.SmoothL1Loss(beta=0.5)(x, x.detach() * 0.5)


@pytest.mark.parametrize("fn", [loss_made_per_call, activations_made_inline, several_losses],
                         ids=lambda f: f.__name__)
def test_stateless_module_made_in_the_trace_is_one_graph(fn):
    args = (X, Y) if fn is not activations_made_inline else (X,)
    check(fn, *args, graphs=1, fullgraph=True)


def test_made_module_in_a_training_step_matches_eager_grads():
    torch.manual_seed(0)
    model = nn.Linear(5, 5)

    def step(x, y):
        return nn.CrossEntropyLoss()(model(x), y.clamp(min=0))

    check(step, X.detach(), Y, graphs=1, fullgraph=True)


def test_returned_module_is_fresh_per_call():
    def make(x):
        return nn.Dropout(p=0.25), x + 1

    compiled = bytegraph.compile(make, backend="eager")
    (first, out1), (second, out2) = compiled(X), compiled(X)
    assert type(first) is nn.Dropout and first.p == 0.25 and first.training
    assert first is not second  # eager makes a new module per call
    first.p = 0.5  # the caller's module is its own: the next call's is untouched
    third, _ = compiled(X)
    assert third.p == 0.25 and len(compiled.__bg_compiled__.entries) == 1
    torch.testing.assert_close(out1, X + 1)


STORE = []


def test_stored_module_is_fresh_per_call():
    def keep(x):
        STORE.append(nn.ReLU())
        return x * 2

    STORE.clear()
    compiled = bytegraph.compile(keep, backend="eager")
    compiled(X)
    compiled(X)
    assert len(STORE) == 2 and STORE[0] is not STORE[1] and all(type(m) is nn.ReLU for m in STORE)


def test_made_module_live_across_a_graph_break():
    def broken(x):
        act = nn.LeakyReLU(negative_slope=0.2)
        y = act(x)
        print("between")  # a graph break: the module is live in the resumed code
        return act(y) + y

    check(broken, X, graphs=2)


def test_written_made_module_breaks_and_matches_eager():
    def written(x):
        act = nn.Dropout(p=0.0)
        act.p = 0.0  # a write to a module attribute: a graph break, the write is eager's
        return act(x) * 3

    check(written, X)


class LoudLoss(nn.Module):
    def __init__(self):
        super().__init__()
        print("made")  # an effect of the constructor: the construction is not traced into the graph

    def forward(self, x):
        return x.pow(2).mean()


@pytest.mark.parametrize("make, reason", [
    (lambda: LoudLoss(), "LoudLoss"),
    (lambda: nn.Linear(5, 2), "Linear"),
    (lambda: nn.LayerNorm(5), "LayerNorm"),
], ids=["user class whose __init__ prints", "with parameters", "norm with parameters"])
def test_modules_with_state_or_constructor_effects_still_break(make, reason):
    def f(x):
        return make()(x).sum()

    check(f, X)
    out = bytegraph.explain(f, X)
    assert any(reason in r.reason for r in out.break_reasons), out.break_reasons


def test_non_constant_argument_breaks():
    def f(x):
        return nn.CrossEntropyLoss(weight=x.detach()[0].abs())(x, Y.clamp(min=0))

    check(f, X)
    assert bytegraph.explain(f, X).break_reasons


def test_bad_constructor_arguments_raise_as_eagerly():
    def f(x):
        return nn.Dropout(p=2.0)(x)

    check(f, X, grads=False)  # both raise ValueError with the same message
