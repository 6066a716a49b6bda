"""Isolation from torch.compile's process-wide patches.

The eager reference of these tests is torch's own `torch.cond` / `map`, which compile their
bodies with torch.compile. Its first compile in a process runs
`torch._dynamo.eval_frame.TorchPatcher.patch()`, which wraps, for good, torch.optim's
`_init_group`/`step`/fused kernels, `torch.jit.trace*` and `torch.fx.Tracer.trace` in
`torch._dynamo.disable` (and turns distribution argument validation off). Tests elsewhere
that run in the same xdist worker afterwards would then see those wrappers (bytegraph does
not trace into torch._dynamo: an optimizer step would break). After every test here,
everything the patch touches is put back as it was before the first one.
"""
from __future__ import annotations

import importlib
import inspect

import pytest
import torch
import torch.distributions
import torch.fx._symbolic_trace
import torch.optim

_MISSING = object()


def _patched_slots() -> list:
    """(owner, attribute name) of everything TorchPatcher.patch may replace."""
    slots = [(torch.jit, "trace"), (torch.jit, "trace_module"), (torch.jit, "_get_trace_graph"),
             (torch.fx._symbolic_trace.Tracer, "trace"), (torch.distributions.Distribution, "_validate_args")]
    for name in ("adadelta", "adagrad", "adam", "adamax", "adamw", "asgd", "lbfgs", "nadam", "radam", "rmsprop",
                 "rprop", "sgd", "sparse_adam"):
        module = importlib.import_module(f"torch.optim.{name}")
        slots.append((module, f"_fused_{name}"))
    for cls in vars(torch.optim).values():
        if inspect.isclass(cls) and issubclass(cls, torch.optim.Optimizer):
            slots += [(cls, "step"), (cls, "_init_group")]
    return slots


_SLOTS = _patched_slots()
_BEFORE = [vars(owner).get(name, _MISSING) for owner, name in _SLOTS]


@pytest.fixture(autouse=True)
def undo_torch_compile_patches():
    yield
    for (owner, name), value in zip(_SLOTS, _BEFORE):
        if vars(owner).get(name, _MISSING) is value:
            continue
        if value is _MISSING:
            delattr(owner, name)
        else:
            setattr(owner, name, value)
