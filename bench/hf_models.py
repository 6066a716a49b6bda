"""Hugging Face transformers models under bytegraph (issue 13): how much of each captures.

`python -m bench.hf_models [NAME ...]` builds tiny-config models (random weights, nothing is
downloaded: `HF_HUB_OFFLINE=1`), runs each in eval mode eagerly, under bytegraph (`eager`
backend, through `bytegraph.explain`) and under `torch.compile(backend="eager")` (reference only),
checks that every output tensor equals eager's, and prints per model: graphs, breaks and ops for
both systems and the wall time of each one's first (capturing) call, then bytegraph's break
reasons ranked by how many models hit them. Capture times are those of `explain` runs (one
capture each, on a shared machine): a rough comparison, not `make bench`'s measurement.

The model table `MODELS` is also what tests/models/test_transformers_models.py draws its cases from;
`ONE_GRAPH` names the models captured whole, which tests/models and `make bench` both use.
"""
from __future__ import annotations

import argparse
import collections
import os
import re
import sys
import time
from dataclasses import dataclass
from typing import Any, Callable

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import torch  # noqa: E402

import bytegraph  # noqa: E402

SEQ = 8
VOCAB = 99
TINY = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37,
            vocab_size=VOCAB, max_position_embeddings=64)


@dataclass(frozen=True)
class ModelCase:
    name: str
    build: Callable[[], tuple[torch.nn.Module, dict[str, Any]]]


def _ids(batch: int = 2, seq: int = SEQ) -> torch.Tensor:
    return torch.randint(0, VOCAB, (batch, seq), generator=torch.Generator().manual_seed(0))


def _text(model_cls: str, config_cls: str, extra: dict | None = None, mask: bool = True,
          decoder: bool = False, **overrides):
    def build():
        import transformers

        cfg = dict(TINY)
        cfg.update(overrides)
        config = getattr(transformers, config_cls)(**cfg)
        model = getattr(transformers, model_cls)(config).eval()
        inputs = {"input_ids": _ids()}
        if mask:
            inputs["attention_mask"] = torch.ones(2, SEQ, dtype=torch.long)
        if decoder:
            inputs["decoder_input_ids"] = _ids(seq=SEQ - 2)
        inputs.update(extra or {})
        return model, inputs
    return build


def _vision(model_cls: str, config_cls: str, image: int = 32, **overrides):
    def build():
        import transformers

        config = getattr(transformers, config_cls)(**overrides)
        model = getattr(transformers, model_cls)(config).eval()
        pixels = torch.randn(2, 3, image, image, generator=torch.Generator().manual_seed(0))
        return model, {"pixel_values": pixels}
    return build


def _whisper_encoder():
    import transformers

    config = transformers.WhisperConfig(d_model=32, encoder_layers=2, decoder_layers=2,
                                        encoder_attention_heads=4, decoder_attention_heads=4,
                                        encoder_ffn_dim=37, decoder_ffn_dim=37, num_mel_bins=16,
                                        max_source_positions=15, vocab_size=VOCAB, pad_token_id=1,
                                        bos_token_id=0, eos_token_id=2, decoder_start_token_id=0)
    model = transformers.WhisperModel(config).get_encoder().eval()
    feats = torch.randn(2, 16, 30, generator=torch.Generator().manual_seed(0))
    return model, {"input_features": feats}


_VIT = dict(image_size=32, patch_size=8, num_channels=3, hidden_size=32, num_hidden_layers=2,
            num_attention_heads=4, intermediate_size=37)
_ENC_DEC = dict(d_model=32, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                decoder_attention_heads=4, encoder_ffn_dim=37, decoder_ffn_dim=37, vocab_size=VOCAB,
                max_position_embeddings=64)

MODELS: dict[str, ModelCase] = {case.name: case for case in [
    ModelCase("gpt2", _text("GPT2Model", "GPT2Config", n_embd=32, n_layer=2, n_head=4, n_positions=64)),
    ModelCase("bert", _text("BertModel", "BertConfig")),
    ModelCase("roberta", _text("RobertaModel", "RobertaConfig", pad_token_id=1)),
    ModelCase("distilbert", _text("DistilBertModel", "DistilBertConfig", dim=32, n_layers=2, n_heads=4,
                                  hidden_dim=37)),
    ModelCase("albert", _text("AlbertModel", "AlbertConfig", embedding_size=16)),
    ModelCase("electra", _text("ElectraModel", "ElectraConfig", embedding_size=16)),
    ModelCase("llama", _text("LlamaModel", "LlamaConfig", num_key_value_heads=2)),
    ModelCase("mistral", _text("MistralModel", "MistralConfig", num_key_value_heads=2)),
    ModelCase("qwen2", _text("Qwen2Model", "Qwen2Config", num_key_value_heads=2)),
    ModelCase("gemma", _text("GemmaModel", "GemmaConfig", num_key_value_heads=2, head_dim=8)),
    ModelCase("phi", _text("PhiModel", "PhiConfig")),
    ModelCase("falcon", _text("FalconModel", "FalconConfig")),
    ModelCase("bloom", _text("BloomModel", "BloomConfig", n_layer=2, n_head=4)),
    ModelCase("opt", _text("OPTModel", "OPTConfig", ffn_dim=37, word_embed_proj_dim=32)),
    ModelCase("gpt_neo", _text("GPTNeoModel", "GPTNeoConfig", num_layers=2, attention_types=[[["global"], 2]],
                               num_heads=4)),
    ModelCase("gptj", _text("GPTJModel", "GPTJConfig", n_embd=32, n_layer=2, n_head=4, n_positions=64,
                            rotary_dim=4)),
    ModelCase("t5", _text("T5Model", "T5Config", decoder=True, d_model=32, d_kv=8, d_ff=37, num_layers=2,
                          num_heads=4, decoder_start_token_id=0)),
    ModelCase("bart", _text("BartModel", "BartConfig", decoder=True, **_ENC_DEC)),
    ModelCase("mbart", _text("MBartModel", "MBartConfig", decoder=True, **_ENC_DEC)),
    ModelCase("pegasus", _text("PegasusModel", "PegasusConfig", decoder=True, **_ENC_DEC)),
    ModelCase("vit", _vision("ViTModel", "ViTConfig", **_VIT)),
    ModelCase("deit", _vision("DeiTModel", "DeiTConfig", **_VIT)),
    ModelCase("clip_vision", _vision("CLIPVisionModel", "CLIPVisionConfig", **_VIT)),
    ModelCase("convnext", _vision("ConvNextModel", "ConvNextConfig", num_channels=3, hidden_sizes=[8, 16],
                                  depths=[1, 1], num_stages=2)),
    ModelCase("resnet", _vision("ResNetModel", "ResNetConfig", num_channels=3, embedding_size=8,
                                hidden_sizes=[8, 16], depths=[1, 1])),
    ModelCase("whisper_encoder", _whisper_encoder),
]}

# The models bytegraph captures whole (`fullgraph=True`, one graph): tests/models checks each,
# and `make bench` times each against torch.compile (bench/model_workloads.py).
ONE_GRAPH = ["gpt2", "bert", "roberta", "distilbert", "albert", "electra", "llama", "mistral", "qwen2", "gemma", "phi",
             "falcon", "bloom", "opt", "gpt_neo", "gptj", "t5", "bart", "mbart", "pegasus", "vit", "deit",
             "clip_vision", "convnext", "resnet", "whisper_encoder"]


def output_tensors(value) -> list[torch.Tensor]:
    """Every tensor in a model output, in a fixed order (ModelOutput, tuples, caches...)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, dict):
        return [t for v in value.values() for t in output_tensors(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in output_tensors(v)]
    return []


def same_outputs(expected, got) -> bool:
    """Every output tensor of `got` equals `expected`'s, bit for bit, and there are as many."""
    want, have = output_tensors(expected), output_tensors(got)
    return len(want) == len(have) and all(torch.equal(a, b) for a, b in zip(want, have))


@dataclass
class Result:
    name: str
    graphs: int | None = None
    breaks: int | None = None
    ops: int | None = None
    eager_frames: int | None = None
    reasons: tuple = ()
    ref_graphs: int | None = None
    ref_breaks: int | None = None
    ref_ops: int | None = None
    ref_capture_s: float | None = None
    correct: bool | None = None
    capture_s: float | None = None
    error: str | None = None


def run_bytegraph(model: torch.nn.Module, inputs: dict, args: tuple = ()):
    """One fresh bytegraph capture of `model(*args, **inputs)` -> (output, ExplainOutput, seconds)."""
    bytegraph.reset()
    start = time.perf_counter()
    out = bytegraph.explain(model, *args, **inputs)
    return out.result, out, time.perf_counter() - start


def reference_explain(model, *args, **kwargs):
    """One fresh `torch._dynamo.explain` of `model(*args, **kwargs)` (the reference's view)."""
    import torch._dynamo

    torch._dynamo.reset()
    return torch._dynamo.explain(model)(*args, **kwargs)


def reference_outputs(model, *args, **kwargs):
    """`model(*args, **kwargs)` under a fresh `torch.compile(backend="eager")`, to compare with eager's."""
    import torch._dynamo

    torch._dynamo.reset()
    return torch.compile(model, backend="eager")(*args, **kwargs)


def _run_reference(model, inputs):
    explained = reference_explain(model, **inputs)
    ops = sum(len(ops) for ops in explained.ops_per_graph)
    return explained.graph_count, explained.graph_break_count, ops


def measure(case: ModelCase, reference: bool) -> Result:
    res = Result(case.name)
    try:
        model, inputs = case.build()
        with torch.no_grad():
            expected = model(**inputs)
            out, explained, seconds = run_bytegraph(model, inputs)
        res.graphs, res.breaks = explained.graph_count, explained.graph_break_count
        res.ops = sum(len(ops) for ops in explained.ops_per_graph)
        res.eager_frames = len(explained.eager_frames)
        res.reasons = tuple(f"[{b.category}] {b.reason}" for b in explained.break_reasons) + tuple(
            f"[eager frame] {f}" for f in explained.eager_frames)
        res.capture_s = seconds
        res.correct = same_outputs(expected, out)
        if reference:
            with torch.no_grad():
                start = time.perf_counter()
                res.ref_graphs, res.ref_breaks, res.ref_ops = _run_reference(model, inputs)
                res.ref_capture_s = time.perf_counter() - start
    except Exception as exc:  # a failing model is reported in its row; the run goes on
        res.error = f"{type(exc).__name__}: {exc}".splitlines()[0][:160]
    return res


def short_reason(reason: str) -> str:
    """One line per kind of reason: tracer-made names (`__bg_3_func`) and the model's own class
    names in 'of X.forward' are folded so the same break in different models counts once."""
    line = re.sub(r"__bg_stack_\d+", "<stack>", reason.splitlines()[0])
    line = re.sub(r"__bg_\d+_", "", line)
    line = re.sub(r"of \w+\.forward", "of <Model>.forward", line)
    return line[:150]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="models to run (default: all)")
    parser.add_argument("--no-reference", action="store_true", help="skip torch.compile")
    parser.add_argument("--reasons", type=int, default=20, help="how many break reasons to list")
    args = parser.parse_args(argv)
    import transformers

    transformers.logging.set_verbosity_error()
    names = args.names or list(MODELS)
    results = []
    header = f"{'model':16} {'ok':>3} {'graphs':>6} {'breaks':>6} {'ops':>5} {'eager':>5} {'cap s':>6}   " \
             f"{'tc graphs':>9} {'tc breaks':>9} {'tc ops':>6} {'tc cap s':>8}"
    print(header)
    for name in names:
        r = measure(MODELS[name], not args.no_reference)
        results.append(r)
        if r.error:
            print(f"{name:16} ERROR {r.error}")
            continue
        ref_s = f"{r.ref_capture_s:.2f}" if r.ref_capture_s is not None else "-"
        ref = f"{r.ref_graphs!s:>9} {r.ref_breaks!s:>9} {r.ref_ops!s:>6} {ref_s:>8}"
        print(f"{name:16} {'yes' if r.correct else 'NO':>3} {r.graphs:>6} {r.breaks:>6} {r.ops:>5} "
              f"{r.eager_frames:>5} {r.capture_s:>6.2f}   {ref}", flush=True)
    ranked = collections.Counter()
    for r in results:
        for reason in set(map(short_reason, r.reasons)):
            ranked[reason] += 1
    one_graph = sum(1 for r in results if r.graphs == 1 and not r.breaks and not r.eager_frames)
    print(f"\none graph, no break: {one_graph}/{len(results)};"
          f" wrong: {sum(1 for r in results if r.correct is False)}; errors: {sum(1 for r in results if r.error)}")
    print("break reasons (models hitting each):")
    for reason, count in ranked.most_common(args.reasons):
        print(f"  {count:3}  {reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
