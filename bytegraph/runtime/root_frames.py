"""The functions bytegraph compiles in place of a user's own frame: `forward_call`, the root
frame of a compiled module (`bytegraph.compile(module)`), by which the module wrapper calls
it and tooling (verify mode's reports) recognises a module's compiled call, and
`argument_spellings`, its arguments as torch.compile spells them. And the hooks
tooling listens on: `LISTENERS`, the callables told of each new cache entry (counters,
explain, the compile report, tests' recorders), and `RECOMPILE_LISTENERS`, told of each
recompile before it captures (the compile report); with none, a recompile computes nothing
for them.
"""
from __future__ import annotations

import inspect
import os

import torch

LISTENERS: list = []  # callables (compiled_function, entry, graph_break | None) told of each new entry
# callables (compiled_function, failures, values) told of a miss that recompiles, before it captures:
# `failures` are runtime/recompiles.py's (the first failing guard of each entry), `values` the call's locals
RECOMPILE_LISTENERS: list = []
_TORCH_DIR = os.path.dirname(torch.__file__) + os.sep


def forward_call(self, *args, **kwargs):
    """The root frame of a compiled module: one call of the module."""
    return self(*args, **kwargs)


def argument_spellings(values: tuple) -> dict:
    """The spellings of `forward_call`'s arguments (`values`: the module, `args`, `kwargs`)
    in torch.compile's, which traces the module's own `forward` frame: `L['args'][0]` ->
    `L['x']`, `L['kwargs']['mask']` -> `L['mask']`, `L['self']` -> `L['<forward's self>']`
    (Note [Graph input names] in graph/output_graph.py); a `forward` of torch's own (nn.Linear)
    only names the module `L['fn']`. Empty when `forward`'s signature does not bind the call
    (names only: the call then raises as eager does)."""
    module, args, kwargs = values
    forward = module.forward
    code = getattr(getattr(forward, "__func__", None), "__code__", None)
    if code is not None and code.co_filename.startswith(_TORCH_DIR):
        # torch.compile does not start a frame in torch's own files: it traces its wrapper's
        # `fn(*args, **kwargs)`, whose arguments are spelled as forward_call's
        return {"L['self']": "L['fn']"}
    try:
        signature = inspect.signature(forward)
        bound = signature.bind(*args, **kwargs).arguments
    except (TypeError, ValueError):  # no signature, or arguments forward refuses
        return {}
    spellings, position = {}, 0
    if code is not None and code.co_varnames and code.co_varnames[0] != "self":
        spellings["L['self']"] = f"L[{code.co_varnames[0]!r}]"
    for name, parameter in signature.parameters.items():
        if name not in bound:
            continue
        if parameter.kind is parameter.VAR_POSITIONAL:
            for i in range(len(bound[name])):
                spellings[f"L['args'][{position + i}]"] = f"L[{name!r}][{i}]"
            position += len(bound[name])
        elif parameter.kind is parameter.VAR_KEYWORD:
            for key in bound[name]:
                spellings[f"L['kwargs'][{key!r}]"] = f"L[{name!r}][{key!r}]"
        elif parameter.kind is not parameter.KEYWORD_ONLY and position < len(args):
            spellings[f"L['args'][{position}]"] = f"L[{name!r}]"
            position += 1
        else:
            spellings[f"L['kwargs'][{name!r}]"] = f"L[{name!r}]"
    return spellings
