"""Tiny versions of transformers configs, derived from the config itself (no per-model list).

`shrink(config)` walks a config's attributes by the names transformers uses for sizes (layers,
hidden width, heads, FFN width, vocabulary, positions, experts, images, ...), caps each at the
sweep's limits (`LIMITS`) and rebuilds the config from its own class with those values, so what
the class derives from them (a `head_dim`, a default `layer_types`) is derived again. Sub-configs
(attributes that are `PretrainedConfig` instances: `text_config`, `vision_config`,
`audio_config`, a `backbone_config`, ...) are shrunk the same way, recursively. Lists that hold
one entry per layer are cut to the new layer count; special token ids beyond the shrunk
vocabulary are moved inside it. Pure: it builds configs, never a model (bench.sweep does that).
"""
from __future__ import annotations

import re
from typing import Any

LIMITS = dict(layers=2, hidden=32, heads=4, kv_heads=2, head_dim=8, intermediate=64, vocab=512,
              positions=128, experts=4, experts_per_token=2, expert_groups=1, image=32, patch=8, channels=32,
              lora_rank=16)

# Attribute-name patterns, matched in this order against the whole name (`re.fullmatch`).
_RULES: list[tuple[str, str]] = [
    (r"(num_|n_)?(\w+_)?(layers|layer|depth)", "layers"),
    (r"(\w+_)?(num_key_value_heads|num_kv_heads|n_kv_heads|key_value_heads|kv_heads|num_kv_groups)",
     "kv_heads"),
    (r"(num_|n_)?(\w+_)?(attention_heads|heads|head)", "heads"),
    (r"(\w+_)?(head_dim|d_kv|kv_channels|head_size|attention_head_size|rotary_dim|d_head)", "head_dim"),
    (r"(\w+_)?(lora_rank)", "lora_rank"),
    (r"(\w+_)?(intermediate_size|ffn_dim|d_ff|n_inner|mlp_dim|ffn_hidden_size|hidden_dim|"
     r"intermediate_dim|dim_feedforward|encoder_ffn_dim|decoder_ffn_dim)", "intermediate"),
    (r"(\w+_)?(hidden_size|d_model|n_embd|embed_dim|embedding_size|embedding_dim|dim|projection_dim|"
     r"proj_dim|d_embed|word_embed_proj_dim|hidden_channels|output_dim|d_inner)", "hidden"),
    (r"(\w+_)?vocab_size", "vocab"),
    (r"(\w+_)?(max_position_embeddings|n_positions|max_source_positions|max_target_positions|n_ctx|"
     r"max_seq_len|max_sequence_length|max_length|seq_length)", "positions"),
    (r"(num_|n_)?(\w+_)?(experts|routed_experts|local_experts)", "experts"),
    (r"(num_experts_per_tok|num_experts_per_token|moe_topk|moe_k|top_k|topk|num_selected_experts)",
     "experts_per_token"),
    (r"(n_group|topk_group|num_expert_group)", "expert_groups"),
    (r"(\w+_)?image_size", "image"),
    (r"(\w+_)?patch_size", "patch"),
    (r"(conv_dim|hidden_sizes|embed_dims|dims|channels)", "channels"),
]
DROP = object()  # an override meaning "not passed: the class derives it"
TOKEN_ID = re.compile(r"(\w+_)?(token_id|token_index|token_ids)")
_DEPTHS = re.compile(r"(\w+_)?depths")


def kind_of(name: str) -> str | None:
    """The size kind a config attribute name stands for (a key of LIMITS), or None."""
    for pattern, kind in _RULES:
        if re.fullmatch(pattern, name):
            return kind
    return None


def _cap(value, limit: int):
    """`value` capped at `limit`: ints, and lists/tuples of ints element-wise."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return min(value, limit) if value > 0 else value
    if isinstance(value, (list, tuple)) and value and all(isinstance(v, int) and not isinstance(v, bool)
                                                          for v in value):
        return type(value)(min(v, limit) if v > 0 else v for v in value)
    return value


def _is_config(value) -> bool:
    from transformers import PretrainedConfig

    return isinstance(value, PretrainedConfig)


def overrides(config) -> dict[str, Any]:
    """The constructor arguments that make `config` tiny: {attribute: new value}."""
    attrs = config.to_dict()  # what the constructor takes back (sub-configs as dicts)
    attrs.update((k, v) for k, v in vars(config).items() if k in attrs and _is_config(v))
    out: dict[str, Any] = {}
    cut = set()  # layer counts that were lowered: lists of that length hold one entry per layer
    for name, value in attrs.items():
        if _is_config(value):
            out[name] = shrink(value)
            continue
        kind = kind_of(name)
        if kind is None:
            continue
        new = _cap(value, LIMITS[kind])
        if kind in ("heads", "kv_heads"):
            new = _power_of_two(new)  # so that it divides the (power-of-two) widths
        if kind == "layers" and _is_int(value) and value > new:
            cut.add(value)
        if new != value:
            out[name] = new
    heads = out.get("num_attention_heads", attrs.get("num_attention_heads"))
    for name, value in attrs.items():
        value = out.get(name, value)
        if kind_of(name) == "kv_heads" and _is_int(value) and attrs[name] == attrs.get("num_attention_heads"):
            out[name] = heads  # "as many as the query heads" stays so
        elif isinstance(value, (list, tuple)) and len(value) in cut:
            out[name] = type(value)(value[:LIMITS["layers"]])
        elif _DEPTHS.fullmatch(name) and isinstance(value, (list, tuple)):
            out[name] = _cap(value, 1)
    if cut and isinstance(attrs.get("out_indices"), (list, tuple)):
        # Backbone outputs name layers by index: clamped into the new count, names re-derived.
        clamped = dict.fromkeys(min(i, LIMITS["layers"]) for i in attrs["out_indices"])
        out["out_indices"] = type(attrs["out_indices"])(clamped)
        out.update({name: DROP for name in ("out_features", "stage_names") if name in attrs})
    vocabs = [v for v in [out.get("vocab_size", attrs.get("vocab_size"))] +
              [getattr(sub, "vocab_size", None) for sub in out.values() if _is_config(sub)] if _is_int(v)]
    if vocabs:
        out.update(_token_ids(attrs, min(vocabs)))
    return out


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _power_of_two(value):
    """The largest power of two <= value (ints, element-wise on lists); other values unchanged."""
    if _is_int(value) and value > 0:
        return 1 << (value.bit_length() - 1)
    if isinstance(value, (list, tuple)) and value and all(_is_int(v) and v > 0 for v in value):
        return type(value)(1 << (v.bit_length() - 1) for v in value)
    return value


def _token_ids(attrs: dict, vocab: int) -> dict[str, Any]:
    """Special token ids that fall outside the shrunk vocabulary, moved to its top, one each."""
    out, spare = {}, vocab - 1
    for name, value in attrs.items():
        if not TOKEN_ID.fullmatch(name):
            continue
        ids = value if isinstance(value, (list, tuple)) else [value]
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in ids):
            continue
        if all(v < vocab for v in ids):
            continue
        moved = []
        for v in ids:
            if v < vocab:
                moved.append(v)
            else:
                moved.append(spare)
                spare -= 1
        out[name] = type(value)(moved) if isinstance(value, (list, tuple)) else moved[0]
    return out


def shrink(config):
    """A new config of `config`'s class with every size capped at LIMITS (recursively): its own
    values (a sub-config keeps what its parent chose) with the overrides on top; a value
    overridden by DROP is left to the class to derive."""
    values = {**config.to_dict(), **overrides(config)}
    return type(config).from_dict({k: v for k, v in values.items() if v is not DROP})
