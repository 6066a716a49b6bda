"""Differential runs for hook tests: one world eager, one compiled, compared call by call.

A test gives `build()`, which returns a fresh world every time it is called: the function
to run, a function making the arguments of call `i`, and the hook log (a list the hooks
append to; its contents are compared after every call). Each call runs the function,
then backward of the sum of its floating outputs that require grad, and records the
outputs, the gradients of every argument tensor and module parameter, and the log, and
the warnings the program emits (not bytegraph's own about compiling: tests/hooks/
test_global_module_hooks.py checks that one).
"""
from __future__ import annotations

import os
import warnings

import torch

import bytegraph
from bytegraph.graph.backends import lookup_backend
from helpers import assert_same

BACKENDS = ("eager", "aot_eager", "inductor")
FAST_BACKENDS = ("eager", "aot_eager")


class Counting:
    """A backend that counts the graphs it compiles and delegates to a real backend."""

    def __init__(self, backend: str = "eager"):
        self.inner = lookup_backend(backend)
        self.frames = 0
        self.graphs = []

    def __call__(self, gm, example_inputs):
        self.frames += 1
        self.graphs.append(gm)
        return self.inner(gm, example_inputs)


def _tensors(value, out):
    if isinstance(value, torch.Tensor):
        out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _tensors(v, out)
    elif isinstance(value, dict):
        for v in value.values():
            _tensors(v, out)
    elif isinstance(value, torch.nn.Module):
        out.extend(value.parameters())
    return out


def _snapshot(value):
    """What of a value is compared: tensors detached, handles by type, the rest as is."""
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)):
        return type(value)(_snapshot(v) for v in value)
    if isinstance(value, dict):
        return {k: _snapshot(v) for k, v in value.items()}
    if isinstance(value, torch.utils.hooks.RemovableHandle):
        return "<RemovableHandle>"
    if isinstance(value, torch.nn.Module):
        return "<module>"
    return value


_PACKAGE = os.path.dirname(bytegraph.__file__)  # warnings of bytegraph's own are not compared


def _run_world(fn, make_args, log, calls: int, backward: bool, after_call=None):
    records = []
    for i in range(calls):
        torch.manual_seed(i)
        args = make_args(i)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                out = fn(*args)
                exc = None
            except Exception as e:  # compared with the other world
                out, exc = None, e
            if exc is None and backward:
                ts = [t for t in _tensors(out, []) if t.requires_grad and t.is_floating_point()]
                if ts:
                    sum(t.sum() for t in ts).backward()
        grads = [t.grad.clone() if t.grad is not None else None
                 for t in _tensors(args, []) if isinstance(t, torch.Tensor) and t.is_leaf]
        records.append({
            "out": _snapshot(out),
            "exc": (type(exc).__name__, str(exc)) if exc is not None else None,
            "grads": grads,
            "log": _snapshot(list(log)),
            "warnings": sorted({(w.category.__name__, str(w.message)) for w in caught
                                if not str(w.filename).startswith(_PACKAGE) and w.category is not DeprecationWarning
                                and not issubclass(w.category, bytegraph.GlobalModuleHooksWarning)}),
        })
        if after_call is not None:
            after_call(i, args, out)
    return records


def differential(build, calls: int = 3, backend: str = "eager", graphs: int | None = None, backward: bool = True,
                 fullgraph: bool = False, after_call=None, steady: bool = True, unordered_log: bool = False):
    """Run `build()`'s world eagerly and compiled `calls` times each; every call must agree.
    `graphs`: graphs compiled over all calls; `steady`: no graph compiled after the first call.
    `after_call(i, args, out, world)` runs outside the compiled function after call i.
    `unordered_log`: hooks of independent leaves fire in autograd's order, which a compiled
    graph's single backward node may change; compare the log as a multiset.
    Returns (counter, compiled records)."""
    fn_e, args_e, log_e = build()
    eager = _run_world(fn_e, args_e, log_e, calls, backward,
                       after_call and (lambda i, a, o: after_call(i, a, o, "eager")))
    fn_c, args_c, log_c = build()
    counter = Counting(backend)
    bytegraph.reset()
    compiled_fn = bytegraph.compile(fn_c, backend=counter, fullgraph=fullgraph)
    first = []

    def after(i, a, o):
        if i == 0:
            first.append(counter.frames)
        if after_call is not None:
            after_call(i, a, o, "compiled")
    comp = _run_world(compiled_fn, args_c, log_c, calls, backward, after)
    tol = dict(rtol=1e-4, atol=1e-5) if backend == "inductor" else {}
    for i, (e, c) in enumerate(zip(eager, comp)):
        assert c["exc"] == e["exc"], f"call {i}: compiled raised {c['exc']}, eager {e['exc']}"
        assert_same(e["out"], c["out"], f"call {i} output", **tol)
        assert_same(e["grads"], c["grads"], f"call {i} gradients", **tol)
        if unordered_log:
            e["log"], c["log"] = sorted(e["log"], key=repr), sorted(c["log"], key=repr)
        assert_same(e["log"], c["log"], f"call {i} hook log", **tol)
        assert c["warnings"] == e["warnings"], f"call {i}: warnings {c['warnings']} != eager {e['warnings']}"
    if graphs is not None:
        assert counter.frames == graphs, f"expected {graphs} graph(s) over {calls} calls, got {counter.frames}"
    if steady and calls > 1:
        assert counter.frames == first[0], f"recompiled after the first call: {first[0]} -> {counter.frames} graphs"
    return counter, comp


def leaf(*shape, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g).requires_grad_()
