"""A GPT-2-style model over sequence lengths 8..64 compiles at most
twice (the static first call, then one entry with the sequence length symbolic), equal to
eager on every call: the hand-written GPT of tests/support/handwritten_gpt.py (training and
inference forward, gradients) and transformers' GPT2Model from bench/hf_models.py."""
import os

import pytest
import torch

import bytegraph
from helpers import CompileCounter, assert_same
from support.handwritten_gpt import GPT, GPTConfig

LENGTHS = list(range(8, 65, 8)) + [13, 64, 8, 37]


def _model(**overrides):
    torch.manual_seed(0)
    return GPT(GPTConfig(block_size=128, **overrides))


@pytest.mark.parametrize("fullgraph", [False, True])
def test_gpt_over_sequence_lengths_compiles_at_most_twice(fullgraph):
    eager, compiled_model = _model(), _model()
    counter = CompileCounter()
    compiled = bytegraph.compile(compiled_model, backend=counter, fullgraph=fullgraph)
    g = torch.Generator().manual_seed(1)
    for t in LENGTHS:
        idx = torch.randint(0, 40, (2, t), generator=g)
        targets = torch.randint(0, 40, (2, t), generator=g)
        le, lc = eager(idx, targets), compiled(idx, targets)
        assert_same(le, lc, f"outputs at length {t}", rtol=1e-5, atol=1e-5)
        le[1].backward()
        lc[1].backward()
        for (name, pe), pc in zip(eager.named_parameters(), compiled_model.parameters()):
            assert_same(pe.grad, pc.grad, f"grad of {name} at length {t}", rtol=1e-4, atol=1e-5)
            pe.grad = pc.grad = None
    assert counter.frame_count == 2


def test_gpt_inference_over_batch_and_sequence():
    model = _model()
    counter = CompileCounter()
    compiled = bytegraph.compile(model, backend=counter)
    for b, t in [(1, 8), (2, 8), (3, 16), (4, 24), (2, 9)]:
        idx = torch.randint(0, 40, (b, t))
        assert_same(model(idx), compiled(idx), f"({b}, {t})", rtol=1e-5, atol=1e-5)
    assert counter.frame_count <= 3


def test_gpt_dynamic_true_compiles_once():
    model = _model()
    counter = CompileCounter()
    compiled = bytegraph.compile(model, backend=counter, dynamic=True)
    for t in LENGTHS:
        idx = torch.randint(0, 40, (2, t))
        assert_same(model(idx), compiled(idx), f"length {t}", rtol=1e-5, atol=1e-5)
    assert counter.frame_count == 1


def test_transformers_gpt2_over_sequence_lengths():
    pytest.importorskip("transformers")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from bench.hf_models import MODELS, VOCAB, output_tensors

    model, _ = MODELS["gpt2"].build()
    counter = CompileCounter()
    compiled = bytegraph.compile(model, backend=counter)
    g = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for t in LENGTHS:
            ids = torch.randint(0, VOCAB, (2, t), generator=g)
            mask = torch.ones(2, t, dtype=torch.long)
            expected, actual = model(input_ids=ids, attention_mask=mask), compiled(input_ids=ids, attention_mask=mask)
            for e, a in zip(output_tensors(expected), output_tensors(actual), strict=True):
                assert_same(e, a, f"length {t}", rtol=1e-5, atol=1e-5)
    assert counter.frame_count <= 2
