"""The transformers side of `make sweep`: every architecture the installed transformers can build
from its own config classes, and how to build one tiny with inputs.

`architectures()` reads the `AutoModel*` mappings: per model type of `CONFIG_MAPPING`, the base
model class of `MODEL_MAPPING` where it has one, else the first class of the task mappings (a
backbone, a causal LM, ...) in the library's own order; config types with no model class at all
(sub-configs such as `clip_text_model` used inside another model) are `config_only()`.
`build(model_type)` makes the default config, shrinks it (bench.sweep_shrink), builds the model
with random weights under a fixed seed in eval mode and makes its inputs: the class's own
`dummy_inputs` where the class defines them for its `main_input_name`, else generic ones by that
name (token ids, images of the config's size and channels, waveforms, audio features); for a
forward that also takes images, the same plus `pixel_values` when the first set does not run.
"""
from __future__ import annotations

import inspect
from typing import Any

import torch

from bench.sweep_shrink import LIMITS, TOKEN_ID, shrink

BATCH, SEQ, DECODER_SEQ = 2, 8, 6
WAVEFORM = 3200  # samples: enough for the strided conv front ends of wav2vec2-style encoders
FRAMES = 64


def _mappings():
    from transformers.models.auto import modeling_auto

    names = sorted(n for n in dir(modeling_auto) if n.startswith("MODEL_FOR_") and n.endswith("_MAPPING_NAMES"))
    return [modeling_auto.MODEL_MAPPING_NAMES] + [getattr(modeling_auto, n) for n in names]


def architectures() -> dict[str, str]:
    """{model_type: model class name} for every config type that has a model class."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    out = {}
    for model_type in CONFIG_MAPPING_NAMES:
        for mapping in _mappings():
            if model_type in mapping:
                cls = mapping[model_type]
                out[model_type] = cls[0] if isinstance(cls, (tuple, list)) else cls
                break
    return out


def config_only() -> list[str]:
    """Config types with no model class in any AutoModel mapping (sub-configs of other models)."""
    from transformers.models.auto.configuration_auto import CONFIG_MAPPING_NAMES

    found = architectures()
    return [t for t in CONFIG_MAPPING_NAMES if t not in found]


def build(model_type: str, cls_name: str) -> tuple[torch.nn.Module, dict[str, Any]]:
    """(tiny model in eval mode, its inputs). Raises whatever building raises."""
    import transformers
    from transformers import CONFIG_MAPPING

    config = shrink(CONFIG_MAPPING[model_type]())
    torch.manual_seed(0)
    model = getattr(transformers, cls_name)(config).eval()
    tries = candidates(model, config)
    for inputs in tries:
        try:
            with torch.no_grad():
                model(**inputs)
            return model, inputs
        except Exception:  # this set does not fit the model: the next one may (the last's error is reported)
            continue
    return model, tries[-1]


def _own_dummy_inputs(model) -> dict | None:
    from transformers import PreTrainedModel

    if type(model).dummy_inputs is PreTrainedModel.dummy_inputs:
        return None
    inputs = model.dummy_inputs
    return inputs if isinstance(inputs, dict) and model.main_input_name in inputs else None


def _find(config, *names):
    """The first of `names` set on `config` or, failing that, on one of its sub-configs."""
    from transformers import PretrainedConfig

    for name in names:
        if getattr(config, name, None) is not None:
            return getattr(config, name)
    for value in vars(config).values():
        if isinstance(value, PretrainedConfig):
            found = _find(value, *names)
            if found is not None:
                return found
    return None


def _special_ids(config) -> set[int]:
    from transformers import PretrainedConfig

    ids = set()
    for name, value in vars(config).items():
        if isinstance(value, PretrainedConfig):
            ids |= _special_ids(value)
        elif TOKEN_ID.fullmatch(name.lstrip("_")):
            ids |= {v for v in (value if isinstance(value, (list, tuple)) else [value]) if isinstance(v, int)}
    return ids


def token_ids(config, gen: torch.Generator, seq: int = SEQ) -> torch.Tensor:
    """Random ids in the vocabulary, none of them a special token (image, pad, eos, ...)."""
    vocab = _find(config, "vocab_size") or LIMITS["vocab"]
    pool = torch.tensor(sorted(set(range(vocab)) - _special_ids(config)) or [0])
    return pool[torch.randint(0, len(pool), (BATCH, seq), generator=gen)]


def candidates(model, config) -> list[dict[str, Any]]:
    """Input sets to try, in order: the model's own dummy inputs or the generic ones for its
    main_input_name; then, for models whose forward also takes images (two-tower and
    image-text models), the same with `pixel_values` added."""
    own = _own_dummy_inputs(model)
    first = own if own is not None else inputs_for(model, config)
    out = [first]
    if "pixel_values" in inspect.signature(model.forward).parameters and "pixel_values" not in first:
        out.append({**first, "pixel_values": _pixels(config, torch.Generator().manual_seed(1))})
    return out


def _pixels(config, gen) -> torch.Tensor:
    size = _find(config, "image_size") or LIMITS["image"]
    hw = tuple(size) if isinstance(size, (list, tuple)) else (size, size)
    channels = _find(config, "num_channels", "in_channels", "in_chans") or 3
    return torch.randn(BATCH, channels, *hw, generator=gen)


def inputs_for(model, config) -> dict[str, Any]:
    """Generic inputs for `model(**inputs)` by its main_input_name."""
    gen = torch.Generator().manual_seed(0)
    params = inspect.signature(model.forward).parameters
    name = model.main_input_name
    inputs: dict[str, Any] = {}
    if name == "input_ids":
        inputs["input_ids"] = token_ids(config, gen)
        if "attention_mask" in params:
            inputs["attention_mask"] = torch.ones(BATCH, SEQ, dtype=torch.long)
    elif name == "pixel_values":
        inputs["pixel_values"] = _pixels(config, gen)
    elif name == "input_values":
        inputs["input_values"] = torch.randn(BATCH, WAVEFORM, generator=gen)
    elif name == "input_features":
        mel = _find(config, "num_mel_bins")
        if mel is not None:
            frames = 2 * (_find(config, "max_source_positions") or FRAMES // 2)
            inputs["input_features"] = torch.randn(BATCH, mel, frames, generator=gen)
        else:
            feat = _find(config, "input_feat_per_channel", "feature_size", "num_mel_bins") or 80
            inputs["input_features"] = torch.randn(BATCH, FRAMES, feat, generator=gen)
    else:
        raise NotImplementedError(f"no generic input for main_input_name {name!r}")
    if getattr(config, "is_encoder_decoder", False) and "decoder_input_ids" in params:
        inputs["decoder_input_ids"] = token_ids(config, gen, DECODER_SEQ)
    return inputs
