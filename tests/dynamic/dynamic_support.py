"""`check_calls`: `helpers.check` over a sequence of calls, for dynamic shapes.

Eager and compiled run the same calls in order, each on fresh copies of its arguments
(`reset()` first puts outside state, such as a counter, back before each sequence), and
every call is compared in full as `check` does (outputs, identity, stdout, arguments,
gradients, then `state()`). The graph count over the whole sequence is checked with a
counting backend; a last call repeats the first and must not compile again.
"""
from __future__ import annotations

import bytegraph
from helpers import CompileCounter, _backward_and_compare, _compare_runs, _LogCapture, _run, clone_inputs


def check_calls(fn, calls, *, graphs: int | None = None, max_graphs: int | None = None, dynamic=None,
                reset=None, state=None, prepare=None, grads: bool = True, backend=None, fullgraph=False,
                repeat_first: bool = True, rtol=None, atol=None):
    """Run `fn(*args)` for each `args` in `calls` eagerly and compiled; `prepare(args)` is
    applied to both runs' copies (e.g. `bytegraph.mark_dynamic`)."""
    counter = backend if backend is not None else CompileCounter()
    calls = [c if isinstance(c, tuple) else (c,) for c in calls]
    eager_runs = _sequence(fn, calls, reset, state, prepare)
    bytegraph.reset()
    cfn = bytegraph.compile(fn, backend=counter, dynamic=dynamic, fullgraph=fullgraph)
    with _LogCapture() as logs:
        comp_runs = _sequence(cfn, calls, reset, state, prepare)
    for i, (eager, comp) in enumerate(zip(eager_runs, comp_runs)):
        label = f"call {i} {_shapes(calls[i])}"
        _compare_runs(eager, comp, label, rtol, atol)
        if grads and eager.exc is None:
            _backward_and_compare(eager, comp, label, rtol, atol)
    count = counter.frame_count
    detail = f"\n  bytegraph log:{logs.text()}" + "".join(
        f"\n--- graph {i}:\n{g.code}" for i, g in enumerate(counter.graphs))
    if graphs is not None:
        assert count == graphs, f"expected {graphs} graph(s) over {len(calls)} calls, compiled {count}{detail}"
    if max_graphs is not None:
        assert count <= max_graphs, f"expected at most {max_graphs} graph(s), compiled {count}{detail}"
    if repeat_first and reset is None:
        args = clone_inputs(calls[0])
        if prepare is not None:
            prepare(args)
        cfn(*args)
        assert counter.frame_count == count, f"repeating the first call compiled again{detail}"
    return counter, cfn


def _sequence(fn, calls, reset, state, prepare):
    if reset is not None:
        reset()
    runs = []
    for args in calls:
        copied = clone_inputs(args)
        if prepare is not None:
            prepare(copied)
        runs.append(_run(fn, copied, {}, 0, None, state))
    return runs


def _shapes(args) -> str:
    return "(" + ", ".join(str(tuple(a.shape)) if hasattr(a, "shape") else repr(a) for a in args) + ")"
