"""What a captured higher-order op looks like and costs: `explain()` of a cond (one graph,
one cond node, two subgraphs); rollback of a speculation that fails halfway (the output
graph and all tracer state equal a capture that never tried, by structural dump); the
eager and aot_eager backends never reach torch.compile; gradients through cond on eager,
aot_eager and inductor; `bytegraph.counters`."""
from __future__ import annotations

import importlib
import types

import pytest
import torch

import bytegraph
from bytegraph.errors import GraphBreak
from bytegraph.graph.output_graph import OutputGraph
from bytegraph.runtime.compiled_function import LISTENERS
from bytegraph.vars.hops.cond import CondVariable
from helpers import check, compile_counted
from test_speculation import _normalized, dump_state

W = torch.tensor([0.5, -1.0, 2.0])
SEEN: list = []
LIMIT = 4


def _backend(gm, example_inputs):
    return gm.forward


def T(*shape):
    return torch.randn(*shape, requires_grad=True)


# ---- explain ------------------------------------------------------------------------------------
def test_explain_shows_one_graph_with_one_cond_node_and_two_subgraphs():
    def fn(x):
        return torch.cond(x.sum() > 0, lambda a: a.sin() * W, lambda a: a.cos() + W, (x,)) * 2

    out = bytegraph.explain(fn)(torch.randn(3))
    assert out.graph_count == 1 and out.graph_break_count == 0
    assert out.ops_per_graph[0].count("cond") == 1
    gm = out.graphs[0]
    assert sorted(name for name, _ in gm.named_children()) == ["cond_false_0", "cond_true_0"]
    text = str(out)
    assert "torch.ops.higher_order.cond(" in text
    assert "Subgraph cond_true_0:" in text and "Subgraph cond_false_0:" in text
    assert "sin = " in text and "cos = " in text


def test_explain_of_a_refused_cond_shows_the_break_and_its_reason():
    def body(a):
        SEEN.append(1)
        return a

    def fn(x):
        return bytegraph.cond(x.sum() > 0, body, lambda a: a + 1, (x * 1,))

    out = bytegraph.explain(fn)(torch.ones(3))
    SEEN.clear()
    assert out.graph_break_count == 1
    reason = out.break_reasons[0]
    assert "bytegraph.cond is not captured" in reason.reason and "G['SEEN']" in reason.reason
    assert reason.location.endswith(f"test_hop_capture.py:{fn.__code__.co_firstlineno + 1}")


# ---- rollback leaves nothing behind ---------------------------------------------------------------
def _inner_true(b):
    return b * W


def _half_failing_false(a):
    w = a * W + LIMIT  # a new graph input (W) and a guard (LIMIT), in the false branch only
    kept = [w]
    kept.append(w.relu())
    nested = bytegraph.cond(w.sum() > 1, _inner_true, lambda b: b - 1, (w,))  # a nested cond: its subgraphs
    SEEN.append(nested)  # refused: written outside the body
    return kept[1] + nested


def _fails_halfway(x, y):
    h = x + y
    out = bytegraph.cond(h.sum() > 0, lambda a: a.sin() * 3, _half_failing_false, (h,))
    return out * 2


def _first_capture(fn, args):
    """The first cache entry compiling `fn` made (its code, graph and guards), as `capture` gives them."""
    entries = []

    def listener(compiled, entry, brk):
        if compiled.code is fn.__code__:
            entries.append(entry)

    LISTENERS.append(listener)
    try:  # a backend of its own: a wrapper with an earlier one's would reuse its entry (Note [Recompile limit])
        bytegraph.compile(fn, backend=lambda gm, example_inputs: _backend(gm, example_inputs))(*args)
    finally:
        LISTENERS.remove(listener)
    entry = entries[0]
    return types.SimpleNamespace(fn=entry.fn, graph_module=entry.graph_module, guards=entry.guards.guards)


def _never_tried(monkeypatch):
    """CondVariable breaks at once, with the reason the failed speculation gives."""
    def call_function(self, tx, args, kwargs):
        tx.unsupported("bytegraph.cond is not captured (never tried)", category="side effect in higher-order op")
    monkeypatch.setattr(CondVariable, "call_function", call_function)


def test_failed_speculation_leaves_the_state_of_a_capture_that_never_tried(monkeypatch):
    dumps = []
    original = CondVariable.call_function

    def call_function(self, tx, args, kwargs):
        before = dump_state(tx)
        subgraphs = (dict(tx.output.submodules), list(tx.output._subgraphs))
        try:
            return original(self, tx, args, kwargs)
        except GraphBreak as brk:
            dumps.append((before, dump_state(tx), subgraphs, (dict(tx.output.submodules), list(tx.output._subgraphs)),
                          brk))
            raise

    made = []  # what the speculation made before it failed (all of it rolled back)
    add_submodule, add_input = OutputGraph.add_submodule, OutputGraph.add_input
    monkeypatch.setattr(OutputGraph, "add_submodule", lambda self, p, gm: made.append(p) or add_submodule(self, p, gm))
    monkeypatch.setattr(OutputGraph, "add_input",
                        lambda self, src, real: made.append(src.name()) or add_input(self, src, real))
    monkeypatch.setattr(CondVariable, "call_function", call_function)
    args = (torch.ones(3), torch.ones(3))
    tried = _first_capture(_fails_halfway, args)
    ((before, after, subs_before, subs_after, brk),) = dumps
    assert "writes G['SEEN']" in brk.reason and "false branch" in brk.reason
    # the nested cond was captured, then undone
    assert made[:5] == ["x", "y", "G['W']", "cond_true", "cond_false"], made
    assert after == before  # nodes, FX names, guards, inputs, tracked, side effects, trackers, frames
    assert subs_after == subs_before == ({}, [])
    monkeypatch.undo()
    _never_tried(monkeypatch)
    never = _first_capture(_fails_halfway, args)
    assert _normalized(tried) == _normalized(never)  # graph, guards, generated code and names
    assert tried.graph_module.code == never.graph_module.code
    assert "G_W_" not in tried.graph_module.code and not SEEN


def test_failed_speculation_then_runs_eagerly_with_eager_results():
    SEEN.clear()
    try:
        check(_fails_halfway, -torch.rand(3) - 1, torch.zeros(3), graphs=2)
    finally:
        SEEN.clear()


def test_rollback_when_the_first_branch_fails():
    def fn(x):
        def t(a):
            b = a * W
            SEEN.append(b)
            return b

        return bytegraph.cond(x.sum() > 0, t, lambda a: a * 2, (x + 1,))

    SEEN.clear()
    try:
        r = check(fn, torch.rand(3), graphs=1)
        gm = r.counter.graphs[0]
        assert not list(gm.named_children())
        assert [n.op for n in gm.graph.nodes].count("placeholder") == 1  # W was never added
    finally:
        SEEN.clear()


# ---- backends ----------------------------------------------------------------------------------------
def _gated(x, w):
    h = x * w
    return torch.cond(h.sum() > 0, lambda a: (a.sin() * w).relu(), lambda a: a.cos() * 2, (h,)).sum()


@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
def test_eager_backends_never_call_torch_compile(backend, monkeypatch):
    calls = []
    dynamo_eval_frame = importlib.import_module("torch._dynamo.eval_frame")

    def refuse(*args, **kwargs):
        calls.append(args)
        raise AssertionError("torch.compile was called")

    x, w = torch.rand(3).requires_grad_(), torch.rand(3).requires_grad_()
    bytegraph.reset()
    compiled = bytegraph.compile(_gated, backend=backend, fullgraph=True)
    monkeypatch.setattr(torch, "compile", refuse)
    monkeypatch.setattr(dynamo_eval_frame, "_optimize", refuse)
    for sign in (1, -1):
        xs = (x.detach() * sign).requires_grad_()
        compiled(xs, w).backward()
    assert calls == []


@pytest.mark.parametrize("backend", ["eager", "aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
@pytest.mark.parametrize("sign", [1, -1], ids=["true", "false"])
def test_gradients_through_cond_match_eager(backend, sign):
    x = (torch.rand(4) * sign).requires_grad_()
    w = torch.rand(4).requires_grad_()
    _gated(x, w).backward()
    want = (x.grad.clone(), w.grad.clone())
    x.grad = w.grad = None
    bytegraph.reset()
    bytegraph.compile(_gated, backend=backend, fullgraph=True)(x, w).backward()
    torch.testing.assert_close((x.grad, w.grad), want)


def test_inductor_cond_with_a_module_matches_eager():
    lin = torch.nn.Linear(4, 4)

    def fn(x):
        return torch.cond(x.mean() > 0, lin, lambda a: a * 0.5, (x,))

    check(fn, T(2, 4), backend="inductor", rtol=1e-4, atol=1e-5)


# ---- counters ------------------------------------------------------------------------------------------
def test_counters_count_graphs_calls_and_breaks():
    def fn(x):
        y = x.sin() + 1
        bytegraph.graph_break()
        return y * 2

    bytegraph.counters.clear()
    out = bytegraph.explain(fn)(torch.ones(3))
    stats = bytegraph.counters["stats"]
    assert stats["unique_graphs"] == 2 and stats["calls_captured"] == 3
    assert dict(bytegraph.counters["graph_break"]) == {out.break_reasons[0].reason: 1}


def test_counters_are_a_defaultdict_of_counters_and_survive_reset():
    import collections

    assert isinstance(bytegraph.counters, collections.defaultdict)
    assert isinstance(bytegraph.counters["anything_new"], collections.Counter)
    del bytegraph.counters["anything_new"]
    bytegraph.counters.clear()
    cfn, _ = compile_counted(lambda x: x + 1)
    cfn(torch.ones(2))
    cfn(torch.ones(2))  # a cache hit counts nothing
    assert bytegraph.counters["stats"]["unique_graphs"] == 1
    bytegraph.reset()  # as torch._dynamo.reset(): the counters stay
    assert bytegraph.counters["stats"]["unique_graphs"] == 1


def test_counters_count_a_cond_as_one_graph_and_each_break_reason():
    def fn(x):
        return bytegraph.cond(x.sum() > 0, lambda a: a * 2, lambda a: a * 3, (x,))

    def fn_break(x):
        return bytegraph.cond(x.sum() > 0, lambda a: SEEN.append(a) or a, lambda a: a * 3, (x,))

    bytegraph.counters.clear()
    cfn, _ = compile_counted(fn)
    cfn(torch.ones(2))
    assert bytegraph.counters["stats"]["unique_graphs"] == 1
    assert bytegraph.counters["stats"]["calls_captured"] == 4  # sum, gt, cond, getitem
    assert not bytegraph.counters["graph_break"]
    bfn, _ = compile_counted(fn_break)
    for _ in range(2):
        bfn(torch.ones(2))
    SEEN.clear()
    (reason, n), = bytegraph.counters["graph_break"].items()
    assert n == 1 and "bytegraph.cond is not captured" in reason and "G['SEEN']" in reason


def test_counters_count_a_break_that_runs_a_frame_eagerly():
    def fn(x):
        print("hi")
        return x

    bytegraph.counters.clear()
    bytegraph.compile(fn, backend=_backend)(torch.ones(1))
    assert sum(bytegraph.counters["graph_break"].values()) == 1
