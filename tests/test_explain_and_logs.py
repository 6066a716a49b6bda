"""`bytegraph.explain`, the logging topics and `fullgraph=True` for graph breaks.

Line numbers are never hard-coded: breaking lines end in a marker comment and are found
with ``helpers.line_of``.
"""
from __future__ import annotations

import logging
import operator
import os
import random
import subprocess
import sys
import time

import pytest
import torch

import bytegraph
from helpers import CompileCounter, assert_same, line_of
from support import break_helpers as bh

HERE = os.path.abspath(__file__)


def loc(marker: str, path: str = HERE) -> str:
    return f"{path}:{line_of(marker, path)}"


def T(*shape, grad=False):
    return torch.randn(*shape, requires_grad=grad)


# =========================================================================== user code


def one_print(x):
    y = x * 2
    print("between")  # EX-ONE-PRINT
    return y + 1


def two_breaks(x):
    y = x.sin()
    print("first")  # EX-TWO-A
    z = y.cos()
    bytegraph.graph_break()  # EX-TWO-B
    return z * 3


def branch_on_tensor(x):
    y = x + 1
    if y.sum() > 0:  # EX-BRANCH
        return y * 2
    return y - 2


def explicit_only(x):
    a = x.exp()
    bytegraph.graph_break()  # EX-EXPLICIT
    return a.log()


def no_breaks(x, w):
    return (x @ w).relu().sum()


def item_in_if(x):
    y = x * 2
    if y.sum().item() > 0:  # EX-ITEM-IF
        return y
    return -y


def calls_deep_helper(x):
    return bh.level1_print(x)  # EX-DEEP-CALL


def time_call(x):
    y = x + 1
    time.time()  # EX-TIME
    return y * 2


def print_then_mutate(x, out):
    out.append("before")
    y = x * 2
    print("should never print under fullgraph")  # EX-FG-PRINT
    out.append("after")
    return y


def mutate_then_explicit(x, out):
    out.append(1)
    x.add_(1)
    bytegraph.graph_break()  # EX-FG-EXPLICIT
    return x


# =========================================================================== explain counts


def test_explain_one_print_counts_and_location():
    out = bytegraph.explain(one_print)(T(3))
    assert out.graph_count == 2
    assert out.graph_break_count == 1
    (brk,) = out.break_reasons
    assert brk.location == loc("# EX-ONE-PRINT")
    assert brk.category == "unsupported builtin"
    assert "print" in brk.reason
    assert brk.hint


def test_explain_call_form_matches_curried_form():
    x = T(3)
    a = bytegraph.explain(one_print)(x.clone())
    bytegraph.reset()
    b = bytegraph.explain(one_print, x.clone())
    assert (a.graph_count, a.graph_break_count) == (b.graph_count, b.graph_break_count)
    assert [r.location for r in a.break_reasons] == [r.location for r in b.break_reasons]
    assert [len(o) for o in a.ops_per_graph] == [len(o) for o in b.ops_per_graph]


def test_explain_two_breaks_in_order():
    out = bytegraph.explain(two_breaks, T(3))
    assert out.graph_count == 3
    assert out.graph_break_count == 2
    assert [r.location for r in out.break_reasons] == [loc("# EX-TWO-A"), loc("# EX-TWO-B")]
    assert [r.category for r in out.break_reasons] == ["unsupported builtin", "explicit graph break"]


def test_explain_explicit_graph_break():
    out = bytegraph.explain(explicit_only, T(4))
    assert (out.graph_count, out.graph_break_count) == (2, 1)
    brk = out.break_reasons[0]
    assert brk.category == "explicit graph break"
    assert "graph_break" in brk.reason
    assert brk.location == loc("# EX-EXPLICIT")


def test_explain_data_dependent_branch():
    out = bytegraph.explain(branch_on_tensor, torch.ones(3))
    assert out.graph_count == 2
    assert out.graph_break_count == 1
    brk = out.break_reasons[0]
    assert brk.category == "data-dependent"
    assert brk.location == loc("# EX-BRANCH")


def test_explain_item_break_category():
    out = bytegraph.explain(item_in_if, torch.ones(3))
    assert out.graph_break_count >= 1
    brk = out.break_reasons[0]
    assert brk.category == "data-dependent", brk
    assert "item" in brk.reason
    assert brk.location == loc("# EX-ITEM-IF")


def test_explain_item_break_location():
    out = bytegraph.explain(item_in_if, torch.ones(3))
    assert out.break_reasons[0].location == loc("# EX-ITEM-IF")


def test_explain_no_breaks():
    out = bytegraph.explain(no_breaks, T(2, 3), T(3, 4))
    assert out.graph_count == 1
    assert out.graph_break_count == 0
    assert out.break_reasons == []
    assert len(out.ops_per_graph) == 1 and len(out.ops_per_graph[0]) == 3
    assert "Graph break count: 0" in str(out)


def test_explain_ops_per_graph_split_at_break():
    out = bytegraph.explain(two_breaks, T(3))
    assert [len(ops) for ops in out.ops_per_graph] == [1, 1, 1]
    assert "sin" in out.ops_per_graph[0][0]
    assert "cos" in out.ops_per_graph[1][0]


def test_explain_deep_break_location_and_reason():
    out = bytegraph.explain(calls_deep_helper, T(3))
    root = out.break_reasons[0]
    assert root.location == loc("# BH-L3-PRINT", bh.FILE)  # where the break really happens...
    assert any(loc("# EX-DEEP-CALL") in frame for frame in root.user_stack)  # ...reached from this call
    assert loc("# BH-L3-PRINT", bh.FILE) in str(out)


def test_explain_deep_break_user_stack():
    out = bytegraph.explain(calls_deep_helper, T(3))
    stack = out.break_reasons[0].user_stack
    assert len(stack) == 4, stack
    assert str(line_of("# BH-L3-PRINT", bh.FILE)) in stack[-1] or str(line_of("# BH-L3-PRINT", bh.FILE)) in stack[0]


def test_explain_deep_break_graph_count():
    # root: [mul? no]  level1: [sin] ... level3: [mul] | print | [sub] ... then returns build [mul],[add]
    out = bytegraph.explain(calls_deep_helper, T(3))
    assert out.graph_count >= 2
    assert all(ops for ops in out.ops_per_graph)


def test_explain_result_is_function_result():
    x = T(3)
    out = bytegraph.explain(one_print, x)
    assert_same(one_print(x), out.result)


def test_explain_str_mentions_reason_and_line():
    out = bytegraph.explain(one_print, T(3))
    text = str(out)
    assert "Graph count: 2" in text
    assert "Graph break count: 1" in text
    assert loc("# EX-ONE-PRINT") in text
    assert "print" in text


def test_explain_break_reason_str():
    out = bytegraph.explain(explicit_only, T(3))
    text = str(out.break_reasons[0])
    assert loc("# EX-EXPLICIT") in text
    assert "explicit graph break" in text


def test_explain_guards_listed():
    out = bytegraph.explain(one_print, T(3))
    assert out.guards
    assert any("x" in g for g in out.guards)


def test_explain_time_call_single_break():
    out = bytegraph.explain(time_call, T(3))
    assert out.graph_count == 2
    assert out.graph_break_count == 1
    assert out.break_reasons[0].location == loc("# EX-TIME")
    assert "time" in out.break_reasons[0].reason


def test_explain_prints_user_output_once(capsys):
    bytegraph.explain(one_print, T(3))
    assert capsys.readouterr().out == "between\n"


def test_explain_does_not_leave_listeners_or_cache():
    x = T(3)
    bytegraph.explain(one_print, x)
    cf = bytegraph.compile(one_print, backend=(cnt := CompileCounter()))
    cf(x)
    assert cnt.frame_count == 2  # explain's own compile is not reused by a new backend


def test_explain_logging_call_reports_only_user_lines():
    lg = logging.getLogger("tests.explain.user")
    lg.addHandler(logging.NullHandler())
    lg.propagate = False

    def f(x):
        y = x * 2
        lg.warning("hello %s", x)  # a tensor argument: a break (a constant one is replayed, no break)
        return y + 1

    out = bytegraph.explain(f, T(3))
    assert out.graph_count == 2
    assert all(r.location.startswith(HERE) for r in out.break_reasons), [r.location for r in out.break_reasons]


# =========================================================================== logs


class _Capture(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)

    def text(self) -> str:
        return "\n".join(r.getMessage() for r in self.records)


@pytest.fixture
def capture_topic():
    attached = []

    def attach(topic):
        h = _Capture()
        lg = logging.getLogger(f"bytegraph.{topic}")
        lg.addHandler(h)
        attached.append((lg, h))
        return h

    yield attach
    for lg, h in attached:
        lg.removeHandler(h)
    bytegraph.set_logs()


def test_graph_breaks_log_names_file_and_line(capture_topic):
    h = capture_topic("graph_breaks")
    bytegraph.set_logs("graph_breaks")
    bytegraph.compile(one_print)(T(3))
    assert loc("# EX-ONE-PRINT") in h.text()
    assert "print" in h.text()


def test_graph_breaks_log_for_explicit_break(capture_topic):
    h = capture_topic("graph_breaks")
    bytegraph.set_logs("graph_breaks")
    bytegraph.compile(explicit_only)(T(3))
    assert loc("# EX-EXPLICIT") in h.text()


def test_logs_quiet_by_default(capture_topic):
    h = capture_topic("graph_breaks")
    g = capture_topic("graph")
    bytegraph.set_logs()
    bytegraph.compile(two_breaks)(T(3))
    assert h.records == [] and g.records == []


def test_logs_quiet_by_default_in_fresh_process():
    code = (
        "import torch, bytegraph\n"
        "def f(x):\n    y = x * 2\n    bytegraph.graph_break()\n    return y + 1\n"
        "bytegraph.compile(f)(torch.ones(2))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "BYTEGRAPH_LOGS"}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "" and "bytegraph" not in r.stderr, r.stderr


def test_env_var_turns_on_graph_break_logs():
    code = (
        "import torch, bytegraph\n"
        "def f(x):\n    y = x * 2\n    bytegraph.graph_break()\n    return y + 1\n"
        "bytegraph.compile(f)(torch.ones(2))\n"
    )
    env = dict(os.environ, BYTEGRAPH_LOGS="graph_breaks")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    assert "<string>:4" in r.stderr and "graph_break" in r.stderr, r.stderr


def test_set_logs_resets_topics(capture_topic):
    h = capture_topic("graph_breaks")
    bytegraph.set_logs("graph_breaks", "graph")
    bytegraph.set_logs()
    bytegraph.compile(one_print)(T(3))
    assert h.records == []


def test_set_logs_turns_off_unlisted_topics(capture_topic):
    h = capture_topic("graph_breaks")
    g = capture_topic("graph")
    bytegraph.set_logs("graph_breaks")
    bytegraph.set_logs("graph")
    bytegraph.compile(one_print)(T(3))
    assert h.records == []
    assert g.records, "the graph topic should log the compiled graphs"


def test_graph_log_shows_graphs(capture_topic):
    g = capture_topic("graph")
    bytegraph.set_logs("graph")
    bytegraph.compile(one_print)(T(3))
    assert len(g.records) == 2
    assert "mul" in g.text() and "add" in g.text()


def test_recompiles_log(capture_topic):
    r = capture_topic("recompiles")
    bytegraph.set_logs("recompiles")
    cf = bytegraph.compile(one_print)
    cf(T(3))
    assert r.records == []
    cf(T(4))
    assert r.records and "one_print" in r.text()


def test_guards_log(capture_topic):
    g = capture_topic("guards")
    bytegraph.set_logs("guards")
    bytegraph.compile(one_print)(T(3))
    assert g.records


def test_all_topics_accepted():
    bytegraph.set_logs("graph_breaks", "graph", "guards", "recompiles", "perf")
    bytegraph.set_logs()


def test_unknown_topic_raises_value_error():
    with pytest.raises(ValueError, match="nope"):
        bytegraph.set_logs("graph_breaks", "nope")


def test_unknown_topic_leaves_levels_unchanged(capture_topic):
    h = capture_topic("graph_breaks")
    with pytest.raises(ValueError):
        bytegraph.set_logs("bogus")
    bytegraph.compile(one_print)(T(3))
    assert h.records == []


def test_bytegraph_logs_do_not_reach_root_logger(caplog):
    bytegraph.set_logs("graph_breaks")
    try:
        with caplog.at_level(logging.DEBUG):
            bytegraph.compile(one_print)(T(3))
    finally:
        bytegraph.set_logs()
    assert not [r for r in caplog.records if r.name.startswith("bytegraph") and r.name != "bytegraph"
                and "test_explain_and_logs" not in r.getMessage()] or logging.getLogger("bytegraph").propagate is False


# =========================================================================== fullgraph=True


def _fullgraph_error(fn, *args):
    with pytest.raises(bytegraph.Unsupported) as info:
        bytegraph.compile(fn, fullgraph=True)(*args)
    return info.value


def test_fullgraph_print_raises_with_location(capsys):
    out = []
    err = _fullgraph_error(print_then_mutate, T(3), out)
    assert loc("# EX-FG-PRINT") in str(err)
    assert "print" in str(err)
    assert err.location == loc("# EX-FG-PRINT")
    assert capsys.readouterr().out == ""  # nothing ran eagerly
    assert out == []


def test_fullgraph_item_in_control_flow_raises():
    err = _fullgraph_error(item_in_if, T(3))
    assert loc("# EX-ITEM-IF") in str(err)
    assert "item" in str(err)


def test_fullgraph_tensor_branch_raises():
    err = _fullgraph_error(branch_on_tensor, T(3))
    assert loc("# EX-BRANCH") in str(err)
    assert "depends on tensor data" in err.reason


def test_fullgraph_graph_break_raises_and_input_untouched():
    x = torch.zeros(3)
    out = []
    err = _fullgraph_error(mutate_then_explicit, x, out)
    assert loc("# EX-FG-EXPLICIT") in str(err)
    assert "graph_break" in str(err)
    assert out == []
    assert torch.equal(x, torch.zeros(3))  # the add_ before the break never ran


def test_fullgraph_time_call_raises():
    err = _fullgraph_error(time_call, T(3))
    assert loc("# EX-TIME") in str(err)


def test_fullgraph_deep_break_names_inner_line(capsys):
    err = _fullgraph_error(calls_deep_helper, T(3))
    assert str(line_of("# BH-L3-PRINT", bh.FILE)) in str(err)
    assert bh.FILE in str(err)
    assert capsys.readouterr().out == ""


def test_fullgraph_raises_again_on_second_call(capsys):
    cf = bytegraph.compile(one_print, fullgraph=True)
    for _ in range(2):
        with pytest.raises(bytegraph.Unsupported):
            cf(T(3))
    assert capsys.readouterr().out == ""


def test_fullgraph_without_breaks_is_one_graph():
    cnt = CompileCounter()
    x, w = T(2, 3), T(3, 4)
    assert_same(no_breaks(x, w), bytegraph.compile(no_breaks, backend=cnt, fullgraph=True)(x, w))
    assert cnt.frame_count == 1


def test_fullgraph_unsupported_has_hint():
    err = _fullgraph_error(one_print, T(3))
    assert err.hint
    assert isinstance(err, RuntimeError)


def test_fullgraph_random_call_raises_and_rng_untouched():
    def f(x):
        y = x + 1
        r = random.random()  # EX-FG-RANDOM
        return y * r

    random.seed(5)
    expected_next = random.random()
    random.seed(5)
    err = _fullgraph_error(f, T(3))
    assert loc("# EX-FG-RANDOM") in str(err)
    assert random.random() == expected_next


# ====================================================== stack traces of graph nodes


def _two_steps(x):
    yield x + 1  # EX-GEN-FIRST
    yield x * 2  # EX-GEN-SECOND


def generator_resumed_twice(x):
    steps = _two_steps(x)
    a = next(steps)  # EX-RESUME-FIRST
    b = next(steps)  # EX-RESUME-SECOND
    return a, b


def test_node_stack_traces_follow_each_generator_resume():
    """An op's `stack_trace` (what a backend sees, as under torch.compile) names the caller
    line that resumed the generator it runs in, not the line of an earlier resume."""
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    x = T(3)
    assert_same(generator_resumed_twice(x), bytegraph.compile(generator_resumed_twice, backend=backend,
                                                                fullgraph=True)(x))
    traces = {node.target: node.meta["stack_trace"] for node in graphs[0].graph.nodes
              if node.op == "call_function"}
    add, mul = traces[operator.add], traces[operator.mul]
    assert f'line {line_of("# EX-RESUME-FIRST", HERE)}, in generator_resumed_twice' in add
    assert f'line {line_of("# EX-GEN-FIRST", HERE)}, in _two_steps' in add
    assert f'line {line_of("# EX-RESUME-SECOND", HERE)}, in generator_resumed_twice' in mul
    assert f'line {line_of("# EX-GEN-SECOND", HERE)}, in _two_steps' in mul
    assert f'line {line_of("# EX-RESUME-FIRST", HERE)},' not in mul
