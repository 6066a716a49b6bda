"""Fault injection: each internal tracer step (tests/fault_injection.py::POINTS) raises in
turn, on its first, middle and last call in a clean run of a handful of programs.

For every (point, program, n) the user must not notice: the compiled call agrees with
eager on fresh state (outputs, grads, stdout, arguments, module globals), the internal
error is logged under `graph_breaks`, and nothing is half-applied: with the fault removed
and *without* `bytegraph.reset()`, later calls still agree with eager (a mutation is never
replayed twice or lost) and every cache entry is consistent. Under `fullgraph=True` the
fault is `bytegraph.Unsupported` naming the internal error.
"""
from __future__ import annotations

import gc
import logging
import types

import pytest
import torch

import bytegraph
from bytegraph.graph import fake_memo
from bytegraph.runtime import compiled_function
from fault_injection import POINTS, InjectedFault, backend as faulty_backend, inject
from helpers import CompileCounter, _backward_and_compare, _compare_runs, _run, clone_inputs

# argument lists that hold graph-computed tensors: their `.grad` is read by the comparison
pytestmark = pytest.mark.filterwarnings("ignore:The .grad attribute of a Tensor that is not a leaf")

# ----------------------------------------------------------------------------- programs

TOTAL = 0


class Box:
    def __init__(self, scale=1.0):
        self.scale = scale
        self.count = 0


def single_graph(x, w):
    return torch.relu(x @ w).sum(dim=0) + 1


def root_break(x, log):
    y = x.sin()
    log.append(len(log))
    print("mid", tuple(y.shape), len(log))
    return y.cos() * len(log)


def _inner(x, box):
    box.count += 1
    print("inner", box.count)
    return x * box.count


def nested_break(x, box):
    return _inner(x + 1, box) - 1


def loop_break(x, xs):
    for i in range(3):
        x = x * 2 + i
        xs.append(i)
        if i == 1:
            print("loop", i, len(xs))
    return x


def side_effects(x, box, xs, d):
    global TOTAL
    TOTAL = TOTAL + 1
    box.scale = box.scale * 2
    xs.append(x.detach().sum())
    d["k"] = x * box.scale
    print("effects", TOTAL, len(xs))
    xs.pop(0)
    box.count = box.count + TOTAL
    return x + d["k"], xs


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a = torch.nn.Linear(4, 4)
        self.b = torch.nn.Linear(4, 2)

    def forward(self, x):
        h = torch.relu(self.a(x))
        print("net", tuple(h.shape))
        return self.b(h)


def module_call(net, x):
    return net(x) * 2


def _broken_callee(x, xs):
    xs.append(len(xs))
    bytegraph.graph_break()
    return x * len(xs)


def callee_in_try(x, xs):
    try:  # the break in the callee cannot resume there: this frame breaks at the call
        return _broken_callee(x + 1, xs) * 2
    finally:
        xs.append(-1)


def _lookup(d, key, xs):
    xs.append(key)
    try:
        return d[key]
    except KeyError as e:
        xs.append(len(e.args))
        raise ValueError(key) from e


def caught_exception(x, d, xs):
    try:
        y = _lookup(d, "missing", xs) * x
    except ValueError:
        y = x.cos()
    finally:
        xs.append("finally")
    print("caught", len(xs))
    return y + _lookup(d, "a", xs)


def _set_total():
    global TOTAL
    TOTAL = 0


PROGRAMS = {
    "single graph": (single_graph, lambda: (torch.randn(3, 4, requires_grad=True), torch.randn(4, 5))),
    "root break": (root_break, lambda: (torch.randn(3, requires_grad=True), [7])),
    "nested break": (nested_break, lambda: (torch.randn(3, requires_grad=True), Box())),
    "loop break": (loop_break, lambda: (torch.randn(2, requires_grad=True), [])),
    "side effects": (side_effects, lambda: (torch.randn(3, requires_grad=True), Box(1.5), [torch.ones(1)],
                                             {"a": 1})),
    "module": (module_call, lambda: (Net(), torch.randn(2, 4))),
    "callee compiled at run time": (callee_in_try, lambda: (torch.randn(3, requires_grad=True), [5])),
    "caught exception": (caught_exception, lambda: (torch.randn(3, requires_grad=True), {"a": torch.ones(3)}, [])),
}

# ----------------------------------------------------------------------------- running


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(record.getMessage())


class graph_breaks_log:
    """The `graph_breaks` log topic captured at DEBUG level."""

    def __enter__(self):
        self.handler = _Lines()
        self.logger = logging.getLogger("bytegraph.graph_breaks")
        self.level = self.logger.level
        self.logger.setLevel(logging.DEBUG)
        self.logger.addHandler(self.handler)
        return self.handler

    def __exit__(self, *exc):
        self.logger.removeHandler(self.handler)
        self.logger.setLevel(self.level)


def _call_and_compare(fn, cfn, make_args, label):
    torch.manual_seed(0)
    args = make_args()
    eager = _run(fn, *clone_inputs((args, {})), 0, _set_total, lambda: TOTAL)
    comp = _run(cfn, *clone_inputs((args, {})), 0, _set_total, lambda: TOTAL)
    _compare_runs(eager, comp, label, None, None)
    if eager.exc is None:
        _backward_and_compare(eager, comp, label, None, None)
    return comp


def _count_calls(point, fn, make_args) -> int:
    bytegraph.reset()
    fake_memo._memo.clear()
    cfn = bytegraph.compile(fn, backend=faulty_backend(CompileCounter()))
    with inject(point, None) as probe:
        _call_and_compare(fn, cfn, make_args, "clean run")
    bytegraph.reset()
    return probe.calls


def _chosen(calls: int) -> list[int]:
    return sorted({1, (calls + 1) // 2, calls}) if calls else []


def _assert_no_orphan_graphs():
    """Every graph global of this module belongs to a live cache entry."""
    gc.collect()  # what earlier scenarios dropped (tracebacks of the faults make cycles) goes
    graphs = {e.graph_name for cf in compiled_function._live if cf.fn.__globals__ is globals()
              for e in cf.entries if e.graph_name}
    assert {name for name in globals() if name.startswith("__bg_graph_")} == graphs


def _assert_cache_consistent():
    """Every live compiled function's wrapper runs exactly its entries, and each entry is
    whole: a guard function, a callable, and for a graph its installed global."""
    for cf in list(compiled_function._live):
        names = cf.wrapper.__code__.co_names
        assert sum(n.startswith("__bg_g") for n in names) == len(cf.entries), (
            f"{cf.code.co_qualname}: wrapper code and cache entries disagree")
        for i, entry in enumerate(cf.entries):
            assert cf.namespace[f"__bg_g{i}"] is entry.guards.fn and cf.namespace[f"__bg_f{i}"] is entry.fn
            assert isinstance(entry.fn, types.FunctionType)
            if entry.kind == "eager":
                assert entry.fn is cf.fn and entry.graph_name is None
            elif entry.graph_name is not None:
                assert entry.fn.__globals__.get(entry.graph_name) is not None, entry.graph_name
        sources = [(e.kind, e.guards.source) for e in cf.entries]
        assert len(sources) == len(set(sources)), f"{cf.code.co_qualname}: duplicate cache entries"


def _scenario(point, fn, make_args, n):
    bytegraph.reset()
    fake_memo._memo.clear()
    cfn = bytegraph.compile(fn, backend=faulty_backend(CompileCounter()))
    with graph_breaks_log() as log, inject(point, n) as probe:
        _call_and_compare(fn, cfn, make_args, f"call with fault #{n}")
    assert probe.fired, f"{point.name}: call #{n} did not happen"
    text = "\n".join(log.lines)
    assert "InjectedFault" in text and "internal error" in text, (
        f"{point.name} #{n}: the internal error is not logged under graph_breaks:\n{text}")
    for i in range(2):  # fault removed, no reset: the cache is whole and agrees with eager
        _call_and_compare(fn, cfn, make_args, f"call #{i + 2} after fault #{n}")
    _assert_cache_consistent()

    bytegraph.reset()
    fake_memo._memo.clear()
    cfn = bytegraph.compile(fn, backend=faulty_backend(CompileCounter()), fullgraph=True)
    torch.manual_seed(0)
    _set_total()
    with inject(point, n) as probe:
        try:
            cfn(*clone_inputs((make_args(), {}))[0])
        except bytegraph.Unsupported as e:
            if probe.fired:
                assert "internal error" in str(e) and "InjectedFault" in str(e), str(e)
                assert isinstance(e.__cause__.cause, InjectedFault)
        else:
            assert not probe.fired, f"{point.name} #{n}: fullgraph=True ran despite the internal error"


@pytest.fixture(autouse=True)
def _fresh_fake_memo(monkeypatch):
    """An empty fake-tensor memo (it outlives `reset()`), so every op runs its fake kernel
    and the memo's `remember` is reached."""
    monkeypatch.setattr(fake_memo, "_memo", {})


CASES = [(point, name) for point in POINTS for name in PROGRAMS]


@pytest.mark.parametrize("point,program", CASES, ids=[f"{p.name}-{name}" for p, name in CASES])
def test_fault(point, program):
    fn, make_args = PROGRAMS[program]
    calls = _count_calls(point, fn, make_args)
    for n in _chosen(calls):
        _scenario(point, fn, make_args, n)
    _assert_no_orphan_graphs()


@pytest.mark.parametrize("point", POINTS, ids=[p.name for p in POINTS])
def test_every_point_is_reached(point):
    """A point no program reaches would test nothing."""
    reached = [name for name, (fn, make_args) in PROGRAMS.items() if _count_calls(point, fn, make_args)]
    assert reached, f"no program reaches {point.name}"


def test_injection_is_removed_afterwards():
    with pytest.raises(InjectedFault):
        with inject("variable building", 1):
            bytegraph.vars.builder.wrap(None, 1)
    bytegraph.reset()
    x, w = torch.randn(2, 4), torch.randn(4, 3)
    torch.testing.assert_close(bytegraph.compile(single_graph, backend="eager", fullgraph=True)(x, w),
                               single_graph(x, w))


def test_guards_that_never_compile_run_eagerly_uncached(monkeypatch):
    """When neither the compiled entry's guards nor the eager fallback's compile, the call
    runs eagerly and nothing is cached; once guards compile again, the next call compiles."""
    from bytegraph.guards.compile import CompiledGuards

    def broken(self, *args):
        raise InjectedFault("guards never compile")

    x, w = torch.randn(3, 4), torch.randn(4, 5)
    cfn = bytegraph.compile(single_graph, backend=CompileCounter())
    with monkeypatch.context() as patch, graph_breaks_log() as log:
        patch.setattr(CompiledGuards, "__init__", broken)
        torch.testing.assert_close(cfn(x, w), single_graph(x, w))
    assert sum(line.startswith("bytegraph internal error") and "InjectedFault" in line for line in log.lines) == 2
    assert cfn.__bg_compiled__.entries == []
    _assert_cache_consistent()
    torch.testing.assert_close(cfn(x, w), single_graph(x, w))
    assert [e.kind for e in cfn.__bg_compiled__.entries] == ["compiled"]

    full = bytegraph.compile(single_graph, backend="eager", fullgraph=True)
    with monkeypatch.context() as patch:
        patch.setattr(CompiledGuards, "__init__", broken)
        with pytest.raises(bytegraph.Unsupported, match="internal error.*InjectedFault"):
            full(x, w)
