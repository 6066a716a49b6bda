"""The torch.nn side of `make sweep`: every public module class of `torch.nn`, built with small
arguments derived from its constructor's signature, and an input shaped to it.

`modules()` lists the classes (every `nn.Module` subclass `torch.nn` exports). `build(name)`
fills each constructor parameter from `ARGS` by its name (features 8, channels 4, kernel 3,
...): required ones always, optional ones where their default is a large size (`SIZES`), and
every known one when that does not build; a required parameter with no known value makes the
class unbuildable, with that reason. The input
is the first candidate the module runs eagerly on: one tensor per required `forward` parameter,
of a shape from `SHAPES` (4-d, 3-d, 2-d, 5-d), values in [0, 1) (probabilities for the losses
that want them), with the later arguments as class indices for the losses that take targets,
or all as indices (embeddings).
"""
from __future__ import annotations

import inspect
import re
from typing import Any

import torch

SHAPES = [(2, 4, 8, 8), (2, 4, 8), (2, 8), (2, 4, 8, 8, 8)]
ARGS: dict[str, Any] = dict(
    in_features=8, out_features=8, in1_features=8, in2_features=8, in_channels=4, out_channels=4,
    num_features=4, num_channels=4, num_groups=2, kernel_size=3, output_size=4, input_size=8,
    hidden_size=8, num_layers=2, normalized_shape=8, num_embeddings=10, embedding_dim=8, d_model=8,
    nhead=2, embed_dim=8, num_heads=2, n_classes=10, cutoffs=[4], num_classes=10, upscale_factor=2,
    downscale_factor=2, groups=2, padding=1, value=0.0, size=4, dim=1, unflattened_size=(2, 2),
    norm_type=2.0, threshold=0.5, bias=True, num_chunks=1, dim_feedforward=16,
    num_encoder_layers=1, num_decoder_layers=1)
SIZES = {"d_model", "nhead", "dim_feedforward", "num_encoder_layers", "num_decoder_layers"}
INDEX_RANGE = 4


def modules() -> list[str]:
    """Names of the public nn.Module classes of torch.nn, sorted."""
    return sorted(n for n in dir(torch.nn) if not n.startswith("_") and isinstance(getattr(torch.nn, n), type)
                  and issubclass(getattr(torch.nn, n), torch.nn.Module))


def _arg(name: str):
    if name == "module":
        return torch.nn.Linear(8, 8)
    if name == "encoder_layer":
        return torch.nn.TransformerEncoderLayer(8, 2, dim_feedforward=16)
    if name == "decoder_layer":
        return torch.nn.TransformerDecoderLayer(8, 2, dim_feedforward=16)
    return ARGS[name]


def _signature(cls) -> tuple[list[inspect.Parameter], bool]:
    """(the constructor's parameters, whether they are the class's own): for a class whose
    `__init__` only forwards `*args, **kwargs` (nn.LSTM, nn.GRU), those of the nearest base
    that names them."""
    for base in cls.__mro__:
        params = [p for p in inspect.signature(base).parameters.values()
                  if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
        if params:
            return params, base is cls
    return [], True


def _kwargs(params: list[inspect.Parameter], own: bool, optional: bool) -> dict[str, Any]:
    """Known small values by parameter name; a required one with none raises, unless the
    parameters are a base's (the class may pass it itself, as nn.GRU passes `mode`)."""
    kwargs = {}
    for p in params:
        if p.default is p.empty or p.name in SIZES or (optional and p.name in ARGS):
            if p.name in ARGS or p.name in ("module", "encoder_layer", "decoder_layer"):
                kwargs[p.name] = _arg(p.name)
            elif own:
                raise TypeError(f"no small value for constructor parameter {p.name!r}")
    return kwargs


def _call(cls, kwargs: dict[str, Any]) -> torch.nn.Module:
    """`cls(**kwargs)`, leaving out what the class passes its base itself (a base's parameter
    the call then gives twice: "got multiple values for argument 'mode'")."""
    while True:
        try:
            return cls(**kwargs)
        except TypeError as exc:
            given_twice = re.search(r"multiple values for argument '(\w+)'", str(exc))
            if not given_twice or given_twice.group(1) not in kwargs:
                raise
            del kwargs[given_twice.group(1)]


def construct(cls, every_known: bool = False) -> torch.nn.Module:
    """`cls` built from its signature: the required parameters and the large sizes, or, with
    `every_known`, every parameter with a known small value too (an `Upsample` needs `size` or
    `scale_factor`); raises TypeError naming a parameter it cannot fill."""
    return _call(cls, _kwargs(*_signature(cls), optional=every_known))


def _tensor_params(module) -> int:
    params = list(inspect.signature(module.forward).parameters.values())
    required = [p for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if not required and any(p.kind is p.VAR_POSITIONAL for p in params):
        return 1
    return len(required)


def candidates(count: int):
    """Input tuples to try, in order: float, then float + class-index targets, then indices."""
    gen = torch.Generator().manual_seed(0)
    for shape in SHAPES:
        yield tuple(torch.rand(shape, generator=gen) for _ in range(count))
        if count > 1:
            yield (torch.rand(shape, generator=gen),) + tuple(
                torch.randint(0, INDEX_RANGE, shape[:1], generator=gen) for _ in range(count - 1))
        yield tuple(torch.randint(0, INDEX_RANGE, shape, generator=gen) for _ in range(count))


def build(name: str) -> tuple[torch.nn.Module, tuple]:
    """(module in eval mode, positional inputs it runs eagerly on): built from the required
    arguments first, from every known one when that fails to build or no input fits; raises
    when nothing fits, with the last reason."""
    last, built = None, False
    for every_known in (False, True):
        torch.manual_seed(0)
        try:
            module = construct(getattr(torch.nn, name), every_known).eval()
        except (TypeError, ValueError) as exc:  # not buildable this way: the other may do
            last = exc
            continue
        built = True
        for args in candidates(_tensor_params(module)):
            try:
                with torch.no_grad():
                    module(*args)
                return module, args
            except Exception as exc:  # a candidate that does not fit: try the next, report the last
                last = exc
    if not built:
        raise last
    raise RuntimeError(f"no input shape fits ({type(last).__name__}: {str(last).splitlines()[0][:100]})")
