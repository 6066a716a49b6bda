"""transformers models in train mode (dropout, `labels=`, `loss.backward()`) and with the
`output_hidden_states` / `output_attentions` flags, compiled with bytegraph: loss, every
parameter's grad and every output tensor equal eager's. Tiny configs, random weights,
nothing downloaded. The labels path logs once through transformers' `logger.warning_once`
(an `lru_cache` over a Logger): replayed after the graph, logged exactly as eagerly."""
import contextlib
import copy
import io
import logging
import os

import pytest
import torch

os.environ.setdefault("HF_HUB_OFFLINE", "1")
transformers = pytest.importorskip("transformers")

import bytegraph  # noqa: E402
from bench.hf_models import MODELS, TINY, output_tensors  # noqa: E402
from tests.helpers import CompileCounter  # noqa: E402

hf_logging = transformers.utils.logging

IDS = torch.randint(0, 99, (2, 8), generator=torch.Generator().manual_seed(1))


def _padded_mask():
    mask = torch.ones(2, 8, dtype=torch.long)
    mask[1, -3:] = 0
    return mask


def _gpt2():
    config = transformers.GPT2Config(n_embd=32, n_layer=2, n_head=4, n_positions=64, vocab_size=99,
                                     bos_token_id=0, eos_token_id=0, pad_token_id=0)
    return transformers.GPT2LMHeadModel(config)


def _llama():  # attention dropout on, so train mode draws random numbers in attention too
    return transformers.LlamaForCausalLM(transformers.LlamaConfig(**TINY, attention_dropout=0.1))


def _bert():
    return transformers.BertForMaskedLM(transformers.BertConfig(**TINY))


def _bloom():  # in train mode its GeLU is a custom autograd.Function (one autograd_function_apply per layer)
    return transformers.BloomForCausalLM(transformers.BloomConfig(n_layer=2, n_head=4, hidden_size=32, vocab_size=99))


LMS = {"gpt2": _gpt2, "llama": _llama, "bert": _bert, "bloom": _bloom}


def _fresh(name):
    torch.manual_seed(0)
    return LMS[name]().train()


def _step(run, **inputs):
    torch.manual_seed(7)  # the same dropout masks, eager and compiled
    out = run(input_ids=IDS, labels=IDS, **inputs)
    out.loss.backward()
    return out


def _assert_same_step(name, compile_target, fullgraph=True, **inputs):
    """One training step eagerly and compiled (one graph when `fullgraph`): loss, logits and
    every parameter's grad equal."""
    eager_model = _fresh(name)
    expected = _step(eager_model, **inputs)
    model = _fresh(name)
    counter = CompileCounter()
    bytegraph.reset()
    run = bytegraph.compile(compile_target(model), backend=counter, fullgraph=fullgraph)
    actual = _step(run, **inputs)
    torch.testing.assert_close(actual.loss, expected.loss, rtol=0, atol=0)
    torch.testing.assert_close(actual.logits, expected.logits, rtol=0, atol=0)
    want = dict(eager_model.named_parameters())
    got = dict(model.named_parameters())
    assert want.keys() == got.keys()
    for pname, p in want.items():
        assert (p.grad is None) == (got[pname].grad is None), pname
        if p.grad is not None:
            torch.testing.assert_close(got[pname].grad, p.grad, rtol=0, atol=0, msg=pname)
    return counter


@pytest.mark.parametrize("name", ["gpt2", "llama", "bloom"])
def test_training_step_one_graph(name):
    counter = _assert_same_step(name, lambda m: m)
    assert counter.frame_count == 1


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_training_step_through_model_forward(name):
    counter = _assert_same_step(name, lambda m: m.forward)
    assert counter.frame_count == 1


@pytest.mark.parametrize("name", ["gpt2", "llama"])
def test_training_step_with_padded_attention_mask(name):
    counter = _assert_same_step(name, lambda m: m, attention_mask=_padded_mask())
    assert counter.frame_count == 1


def test_bert_training_step_one_graph_with_the_loss_module_made_in_forward():
    """BertForMaskedLM makes `CrossEntropyLoss()` inside forward: a stateless torch.nn module
    made in the trace is built while tracing (Note [Modules made in the trace]), one graph."""
    counter = _assert_same_step("bert", lambda m: m)
    assert counter.frame_count == 1
    model = _fresh("bert")
    bytegraph.reset()
    out = bytegraph.explain(model, input_ids=IDS, labels=IDS)
    assert out.graph_count == 1 and not out.break_reasons and not out.eager_frames


class _Records(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.messages = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@contextlib.contextmanager
def _transformers_warnings():
    """transformers' logger at WARNING, its records collected (and its stderr handler's)."""
    root = logging.getLogger("transformers")
    records, level = _Records(), hf_logging.get_verbosity()
    hf_logging.set_verbosity_warning()
    root.addHandler(records)
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            yield records
    finally:
        root.removeHandler(records)
        hf_logging.set_verbosity(level)


def test_labels_warning_logged_once_as_eagerly():
    """GPT2LMHeadModel has no `loss_type`: `loss_function` calls `logger.warning_once(...)` on
    every call, which logs the first time only (its lru_cache). Compiled: the same records, in
    the same number, over three calls in one graph."""
    logged = []
    for compiled in (False, True):
        model = _fresh("gpt2")
        hf_logging.warning_once.cache_clear()
        counter = CompileCounter()
        bytegraph.reset()
        run = bytegraph.compile(model, backend=counter, fullgraph=True) if compiled else model
        with _transformers_warnings() as records:
            for _ in range(3):
                _step(run)
        logged.append(records.messages)
    assert logged[0] == logged[1]
    assert len(logged[0]) == 1 and "loss_type=None" in logged[0][0]
    assert counter.frame_count == 1


# ------------------------------------------------------------------ output flags

FLAGS = dict(output_hidden_states=True, output_attentions=True)


def _assert_same_outputs(expected, actual):
    want, got = output_tensors(expected), output_tensors(actual)
    assert len(want) == len(got) and len(want) > 3  # hidden states and attentions included
    for a, b in zip(want, got):
        torch.testing.assert_close(b, a, rtol=0, atol=0)


def _hooks(model) -> int:
    return sum(len(m._forward_hooks) for m in model.modules())


@pytest.mark.parametrize("name", ["gpt2", "bert", "llama"])
def test_output_flags_one_graph_once_the_capturing_hooks_exist(name):
    """transformers installs its output-capturing forward hooks on the first call with these
    flags (under a threading lock); after that, the call is one graph with every hidden state
    and attention equal to eager's."""
    model, inputs = MODELS[name].build()
    with torch.no_grad():
        expected = model(**inputs, **FLAGS)
        hooks = _hooks(model)
        bytegraph.reset()
        counter = CompileCounter()
        actual = bytegraph.compile(model, backend=counter, fullgraph=True)(**inputs, **FLAGS)
    _assert_same_outputs(expected, actual)
    assert counter.frame_count == 1 and _hooks(model) == hooks


@pytest.mark.parametrize("name", ["gpt2", "bert", "llama"])
def test_output_flags_first_call_installs_the_hooks_at_a_clean_break(name):
    """The first call: the hook installation's lock is a graph break naming it; the block runs
    holding the real lock (hooks installed once, as eagerly), nothing of the model's forward
    runs eagerly, and a second compiled call is one more graph at most."""
    eager_model, inputs = MODELS[name].build()
    model = copy.deepcopy(eager_model)
    with torch.no_grad():
        expected = eager_model(**inputs, **FLAGS)
        bytegraph.reset()
        out = bytegraph.explain(model, **inputs, **FLAGS)
        _assert_same_outputs(expected, out.result)
        assert _hooks(model) == _hooks(eager_model) > 0
        assert any("a threading lock" in r.reason for r in out.break_reasons), out.break_reasons
        assert all("install" in frame or "hook" in frame for frame in out.eager_frames), out.eager_frames
        again = bytegraph.compile(model)(**inputs, **FLAGS)
    _assert_same_outputs(expected, again)
    assert _hooks(model) == _hooks(eager_model)


def test_output_flags_in_train_mode_with_labels():
    eager_model = _fresh("gpt2")
    model = _fresh("gpt2")
    with torch.no_grad():  # install the capturing hooks on both (the first call with the flags)
        eager_model(input_ids=IDS, **FLAGS)
        model(input_ids=IDS, **FLAGS)
    expected = _step(eager_model, **FLAGS)
    bytegraph.reset()
    actual = _step(bytegraph.compile(model, fullgraph=True), **FLAGS)
    _assert_same_outputs(expected, actual)
    for (pname, p), q in zip(eager_model.named_parameters(), model.parameters()):
        torch.testing.assert_close(q.grad, p.grad, rtol=0, atol=0, msg=pname)
