"""Weight normalization, both APIs: `nn.utils.weight_norm` (a forward pre-hook that sets
the module's `weight` to `torch._weight_norm(v, g, dim)` as a plain attribute) and
`nn.utils.parametrizations.weight_norm` (a parametrization whose module calls
`torch._weight_norm`), as wav2vec2-style audio models use them on a positional conv.
`torch._weight_norm` is a graph op by the torch-op rule (vars/torch_op_rule.py); forward
and gradients equal eager, in one graph, as under torch.compile."""
import pytest
import torch
from torch.nn.utils import weight_norm
from torch.nn.utils.parametrizations import weight_norm as parametrized_weight_norm

from helpers import check, compile_counted

APIS = pytest.mark.parametrize("wn", [weight_norm, parametrized_weight_norm], ids=["hook", "parametrization"])


class _PositionalConv(torch.nn.Module):
    """A grouped conv over time with weight norm on the kernel dimension, then a linear."""

    def __init__(self, wn):
        super().__init__()
        self.conv = wn(torch.nn.Conv1d(4, 4, 3, padding=1, groups=2), name="weight", dim=2)
        self.proj = wn(torch.nn.Linear(4, 5))

    def forward(self, x):
        h = torch.nn.functional.gelu(self.conv(x)) + x
        return self.proj(h.transpose(1, 2))


def _same_models(wn, n: int = 2):
    """`n` equal fresh models (`nn.utils.weight_norm`'s cannot be deep-copied: its `weight`
    is a non-leaf attribute, so `check` cannot copy one as an argument)."""
    models = []
    for _ in range(n):
        torch.manual_seed(0)
        models.append(_PositionalConv(wn))
    return models


@APIS
def test_weight_norm_module_forward_and_grads(wn):
    """Eager and compiled on equal fresh models, twice (the hook's `weight` set by the first
    call is there at the second): outputs, the input's and every parameter's gradients."""
    eager, compiled = _same_models(wn)
    fn, counter = compile_counted(compiled, fullgraph=True)
    for step in range(2):
        x = torch.randn(2, 4, 6)
        x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
        out1, out2 = eager(x1), fn(x2)
        torch.testing.assert_close(out2, out1)
        out1.square().sum().backward()
        out2.square().sum().backward()
        torch.testing.assert_close(x2.grad, x1.grad)
        for (name, p1), (_, p2) in zip(eager.named_parameters(), compiled.named_parameters(), strict=True):
            torch.testing.assert_close(p2.grad, p1.grad, msg=f"step {step}: {name}.grad")
    assert counter.frame_count == 1


def test_parametrized_weight_norm_differential():
    """The parametrization API can be copied: the full differential check."""
    check(lambda m, x: m(x), _same_models(parametrized_weight_norm, 1)[0], torch.randn(2, 4, 6, requires_grad=True),
          graphs=1, fullgraph=True)


@APIS
def test_weight_norm_in_eval_without_grad(wn):
    eager, compiled = _same_models(wn)
    fn, counter = compile_counted(compiled.eval(), fullgraph=True)
    eager.eval()
    with torch.no_grad():
        x = torch.randn(1, 4, 5)
        torch.testing.assert_close(fn(x), eager(x))
    assert counter.frame_count == 1


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_weight_norm_function(dim):
    def fn(v, g, x):
        return x @ torch._weight_norm(v, g, dim)

    g_shape = (5, 1) if dim == 0 else (1, 4)
    check(fn, torch.randn(5, 4, requires_grad=True), torch.randn(*g_shape, requires_grad=True),
          torch.randn(3, 5), graphs=1, fullgraph=True)


def test_weight_norm_matches_torch_compile_graph_count():
    """torch.compile (the reference) keeps either API in one graph; so does bytegraph."""
    import torch._dynamo

    for wn in (weight_norm, parametrized_weight_norm):
        torch.manual_seed(0)
        model = torch.nn.Sequential(wn(torch.nn.Linear(4, 3)))
        x = torch.randn(2, 4)
        torch._dynamo.reset()
        torch.testing.assert_close(torch.compile(model, fullgraph=True, backend="eager")(x), model(x))
        fn, counter = compile_counted(model, fullgraph=True)
        torch.testing.assert_close(fn(x), model(x))
        assert counter.frame_count == 1
