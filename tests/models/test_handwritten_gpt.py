"""A hand-written GPT-style model (tests/support/handwritten_gpt.py: small classes that use
`super().__init__`, a config dataclass, properties and a `functools.wraps` decorator on a
method) compiled with `fullgraph=True`: exactly one graph, equal to eager (outputs, loss,
gradients of every parameter), also through `bytegraph.compile(model)`."""
import pytest
import torch

import bytegraph
from helpers import CompileCounter, assert_same, check
from support.handwritten_gpt import GPT, GPTConfig


def _model(**overrides):
    torch.manual_seed(0)
    return GPT(GPTConfig(**overrides))


def _batch(config=GPTConfig()):
    g = torch.Generator().manual_seed(1)
    idx = torch.randint(0, config.vocab_size, (2, config.block_size), generator=g)
    targets = torch.randint(0, config.vocab_size, (2, config.block_size), generator=g)
    return idx, targets


def test_gpt_training_forward_is_one_graph_and_matches_eager():
    idx, targets = _batch()
    check(lambda m, i, t: m(i, t), _model(), idx, targets, graphs=1, fullgraph=True, rtol=1e-5, atol=1e-5)


def test_gpt_inference_forward_is_one_graph_and_matches_eager():
    idx, _ = _batch()
    check(lambda m, i: m(i), _model(), idx, graphs=1, fullgraph=True, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("overrides", [dict(n_layer=3, bias=False), dict(n_head=4, dropout=0.0)])
def test_gpt_variants(overrides):
    idx, targets = _batch()
    check(lambda m, i, t: m(i, t), _model(**overrides), idx, targets, graphs=1, fullgraph=True,
          rtol=1e-5, atol=1e-5)


def test_gpt_compiled_as_module_backward_matches_eager():
    eager = _model()
    compiled_model = _model()
    counter = CompileCounter()
    compiled = bytegraph.compile(compiled_model, backend=counter, fullgraph=True)
    idx, targets = _batch()
    for step in range(2):
        le = eager(idx, targets)[1]
        lc = compiled(idx, targets)[1]
        assert_same(le, lc, f"loss at step {step}", rtol=1e-5, atol=1e-5)
        le.backward()
        lc.backward()
        for (name, pe), pc in zip(eager.named_parameters(), compiled_model.parameters()):
            assert_same(pe.grad, pc.grad, f"grad of {name} at step {step}", rtol=1e-5, atol=1e-5)
    assert counter.frame_count == 1, "a second call with the same shapes must not recompile"


def test_gpt_eval_after_train_recompiles_once_and_matches():
    eager, compiled_model = _model(dropout=0.1), _model(dropout=0.1)
    counter = CompileCounter()
    compiled = bytegraph.compile(compiled_model, backend=counter, fullgraph=True)
    idx, _ = _batch()
    for mode in ("train", "eval", "train", "eval"):
        getattr(eager, mode)()
        getattr(compiled_model, mode)()
        torch.manual_seed(3)
        expected = eager(idx)[0]
        torch.manual_seed(3)
        assert_same(expected, compiled(idx)[0], f"logits in {mode} mode", rtol=1e-5, atol=1e-5)
    assert counter.frame_count == 2
