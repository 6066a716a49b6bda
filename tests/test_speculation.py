"""Speculation: the mutation barrier and scopes, checkpoint/restore/subgraph, the
speculation log, and the rule that no code changes tracker state around the barrier.

The capture-level tests drive real captures (`translate.capture.capture`) of small
functions that call test hooks; a fixture makes the translator run each hook itself,
the way a higher-order op will (`_speculate(body)`: checkpoint, run `body`, restore).
"""
from __future__ import annotations

import ast
import os
import random
import re
import types

import pytest
import torch

import bytegraph
from bytegraph.errors import GraphBreak
from bytegraph.translate.capture import capture
from bytegraph.translate.translator import Translator
from bytegraph.vars.base import VariableTracker, _state_slots
from bytegraph.vars.constant import ConstantVariable

_PACKAGE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "bytegraph")


# ---- hooks the traced code calls --------------------------------------------------------
def _speculate(body):
    """Eagerly: nothing (the speculated body's effects are undone when traced)."""


def _in_scope(body):
    return body()


def _in_subgraph(body):
    return body()


def _probe(tag):
    return None


_HOOKS: dict = {}
_SEEN: list = []  # what hooks observed, for the assertions


def _run_speculate(tx, body, dumps):
    before = dump_state(tx)
    cp = tx.checkpoint()
    aborted = None
    try:
        body.call_function(tx, [], {})
    except GraphBreak as e:
        aborted = e
    tx.restore(cp)
    tx.release(cp)
    after = dump_state(tx)
    dumps.append((before, after, aborted))
    return ConstantVariable(None)


def _run_in_scope(tx, body):
    with tx.output.side_effects.scope("the body of test_op"):
        body.call_function(tx, [], {})
    return ConstantVariable(None)


def _run_in_subgraph(tx, body):
    with tx.output.subgraph() as sub:
        result = body.call_function(tx, [], {})
        sub.graph.output(result.node)
    _SEEN.append(sub)
    return ConstantVariable(None)


def _run_probe(tx, tag):
    _SEEN.append(tx.output.speculation_log)
    if tx.speculation_decision("probe") is None:
        tx.restart_with("probe", tag.as_python_constant())
    return ConstantVariable(None)


@pytest.fixture(autouse=True)
def hooks(monkeypatch):
    inline = Translator.inline_call

    def inline_call(self, fn_vt, args, kwargs):
        hook = _HOOKS.get(getattr(fn_vt, "fn", None))
        if hook is not None:
            return hook(self, *args)
        return inline(self, fn_vt, args, kwargs)

    monkeypatch.setattr(Translator, "inline_call", inline_call)
    _SEEN.clear()
    _HOOKS.clear()
    _HOOKS.update({_in_scope: _run_in_scope, _in_subgraph: _run_in_subgraph, _probe: _run_probe})
    yield
    _HOOKS.clear()


def _backend(gm, example_inputs):
    return gm.forward


# ---- a full structural dump ---------------------------------------------------------------
def dump_state(tx) -> tuple:
    """Everything a speculation could change, with identities as stable numbers."""
    ids: dict = {}
    trackers: list = []

    def ref(x):
        if isinstance(x, VariableTracker):
            if id(x) not in ids:
                ids[id(x)] = len(ids)
                trackers.append(x)
            return ("vt", ids[id(x)])
        if isinstance(x, torch.fx.Node):
            return ("node", x.name)
        if isinstance(x, (list, tuple)):
            return (type(x).__name__, tuple(ref(i) for i in x))
        if isinstance(x, dict):
            return ("dict", tuple((repr(k), ref(v)) for k, v in x.items()))
        if isinstance(x, set):
            return ("set", tuple(sorted(repr(i) for i in x)))
        if isinstance(x, torch.Tensor):
            return ("tensor", tuple(x.shape), x.stride(), x.storage_offset(), x.requires_grad)
        if isinstance(x, Translator):  # a generator's frame
            if id(x) in ids:
                return ("tx", ids[id(x)])
            ids[id(x)] = len(ids)
            return ("tx", x.code.co_name, x.ip, x.steps, ref(x.stack), ref(x.locals), x.yielded is None)
        return ("value", type(x).__name__, repr(x) if isinstance(x, (int, float, str, bool, type(None))) else id(x))

    frames = []
    t = tx
    while t is not None:
        frames.append((ref(t.stack), ref(t.locals), ref(t.cells), t.ip, t.steps, t.kw_names))
        t = t.parent
    out = tx.output
    se = out.side_effects
    roots = (ref(list(out.tracked.values())), ref(list(se.by_id.values())), ref(list(se.mutated.values())),
             tuple((k[1], ref(e[3])) for k, e in se.globals.items()))
    dumped = []
    i = 0
    while i < len(trackers):  # trackers reachable from the frames and the tables, by their state
        vt = trackers[i]
        dumped.append((type(vt).__name__, vt.scope, repr(vt.source),
                       tuple((name, ref(getattr(vt, name, None))) for name in _state_slots(type(vt)))))
        i += 1
    graph = tuple((n.name, n.op, str(n.target), ref(n.args), ref(n.kwargs), ref(n.meta.get("example_value")))
                  for n in out.graph.nodes)
    namespace = out.graph._graph_namespace
    return (graph, tuple(sorted(namespace._used_names)), tuple(sorted(namespace._base_count.items())),
            tuple((repr(k), repr(g)) for k, g in out.guards.items()), tuple(out.first_use.items()),
            tuple((repr(s), ref(vt)) for s, vt, _ in out.inputs), tuple(map(repr, out.tracked)),
            tuple(out.globals_sources), out.grad_enabled, torch.is_grad_enabled(), out.guard_aliases,
            se.writes, se.current_scope, tuple(se.by_id), frames, roots, tuple(dumped))


def _normalized(cap) -> tuple:
    """The generated code, graph and guards of a capture, graph names and addresses aside (a
    callee's wrapper is one per backend: two captures with their own backends call equal ones)."""
    def norm(s):
        return re.sub(r" at 0x[0-9a-f]+", " at 0x?", re.sub(r"__bg_graph_\d+", "__bg_graph_N", s))

    code = cap.fn.__code__
    consts = tuple(norm(repr(c)) if not isinstance(c, types.CodeType) else c.co_code for c in code.co_consts)
    return (code.co_code, tuple(map(norm, code.co_names)), code.co_varnames, consts,
            cap.graph_module.code if cap.graph_module is not None else None,
            tuple(norm(repr(g)) for g in cap.guards))


# ---- random trace fragments ------------------------------------------------------------------
G_COUNT = 0
G_TENSOR = torch.ones(3)
G_MODULE = torch.nn.Linear(3, 3)


class Box:
    def __init__(self):
        self.a0 = 0
        self.a1 = 1
        self.flag = True


class Point:
    pass


_FRAGMENTS = (
    "xs.append({k})", "xs[0] = {k}", "xs.pop() if len(xs) > 1 else None", "xs.insert(0, {k})", "xs.extend([{k}, {k}])",
    "d['k{i}'] = {k}", "d.pop('k{i}', None)", "d.update(n{k}={k})", "d.clear()",
    "s.add({k})", "s.discard({i})",
    "o.a{j} = {k}", "o.n{k} = len(xs)", "o.tmp = {k}; del o.tmp", "o.a0 = o.a1 + {k}",
    "G_COUNT = {k}", "G_COUNT += 1",
    "c = {k}", "loc = loc + {k}", "acc.append(x * {k})", "y.unsqueeze_(0)", "y.add_({k})",
    "acc.append(G_TENSOR + {k})", "acc.append(G_MODULE(x))", "acc.append(x.sum() if o.flag else x)",
    "p = Point(); p.v = {k}; xs.append(p)", "next(it, None)", "acc.append(torch.relu(x - {k}))",
    "torch.set_grad_enabled(False)", "next(gen, None)", "h.__name__ = 'n{k}'", "h.tag = {k}",
    "q = [v for v in xs]; q.append({k}); acc.append(len(q))", "m = {{**d, 'z': {k}}}; acc.append(m)",
)


def _fragment_source(seed: int, n: int, abort: bool = False) -> str:
    rng = random.Random(seed)
    lines = []
    for _ in range(n):
        template = rng.choice(_FRAGMENTS)
        lines.append(template.format(i=rng.randrange(3), j=rng.randrange(2), k=rng.randrange(1, 9)))
    if abort:
        lines.insert(rng.randrange(len(lines) // 2, len(lines)), "print('leaves the trace')")
    lines = "\n".join("            " + line for line in lines)
    return f'''
def factory():
    c = 0

    def f(xs, d, s, o, x):
        global G_COUNT
        loc = 1
        acc = []
        y = x + 1
        it = iter((1, 2, 3))
        gen = (v + 1 for v in (1, 2, 3))
        h = lambda: 0
        def body():
            global G_COUNT
            nonlocal c, loc
{lines}
        _speculate(body)
        return x * 2, xs, d, s, o.a0, G_COUNT, c, loc, acc, y, next(it, None), next(gen, None), h.__name__
    return f
'''


def _fresh_args():
    return [1, 2, 3], {"k0": 0, "k1": 1}, {1, 2}, Box(), torch.randn(3)


def _capture(fn, args, backend, fullgraph: bool = False):
    """`capture`, with its graph installed in `fn`'s globals as the runtime installs it with
    a cache entry, so `cap.fn` can run."""
    cap = capture(fn, args, backend, fullgraph=fullgraph)
    if cap.graph is not None:
        name, compiled = cap.graph
        fn.__globals__[name] = compiled
    return cap


def _compile_fragment(seed, n, speculate: bool, abort: bool = False):
    namespace = dict(globals())
    exec(compile(_fragment_source(seed, n, abort), f"<fragment_{seed}>", "exec"), namespace)
    fn = namespace["factory"]()
    dumps = []
    _HOOKS[namespace["_speculate"]] = (lambda tx, body: _run_speculate(tx, body, dumps)) if speculate \
        else (lambda tx, body: ConstantVariable(None))
    cap = _capture(fn, _fresh_args(), _backend)
    return fn, cap, dumps


@pytest.mark.parametrize("seed", range(40))
def test_restored_speculation_leaves_nothing_and_generates_the_same_code(seed):
    n = 1 + seed % 12
    _, speculated, dumps = _compile_fragment(seed, n, speculate=True)
    _, plain, _ = _compile_fragment(seed, n, speculate=False)
    ((before, after, aborted),) = dumps
    assert aborted is None, aborted
    assert after == before
    assert _normalized(speculated) == _normalized(plain)


@pytest.mark.parametrize("seed", range(8))
def test_aborted_mutation_heavy_speculation_leaves_nothing_behind(seed):
    fn, speculated, dumps = _compile_fragment(100 + seed, 30, speculate=True, abort=True)
    _, plain, _ = _compile_fragment(100 + seed, 30, speculate=False, abort=True)
    ((before, after, aborted),) = dumps
    assert aborted is not None and "print" in aborted.reason
    assert after == before  # graph nodes, guards, inputs, side effects, trackers, grad mode
    assert _normalized(speculated) == _normalized(plain)
    assert torch.is_grad_enabled()
    args = _fresh_args()
    x = args[-1]
    out = speculated.fn(*args)
    assert torch.equal(out[0], x * 2)


def test_restore_can_repeat_and_nested_checkpoints_unwind_in_order():
    def f(xs, x):
        xs.append(1)
        return x + 1

    seen = []

    def hook(tx, body):
        out = tx.output
        lst = tx.locals["xs"]
        cp = tx.checkpoint()
        for _ in range(2):  # restore, run again, restore again
            lst.call_method(tx, "append", [ConstantVariable(5)], {})
            inner = tx.checkpoint()
            lst.call_method(tx, "append", [ConstantVariable(6)], {})
            out.call_op("call_function", torch.sin, [tx.locals["x"]], {})
            tx.restore(inner)
            tx.release(inner)
            seen.append([i.value for i in lst.items])
            tx.restore(cp)
            seen.append([i.value for i in lst.items])
        tx.release(cp)
        return ConstantVariable(None)

    def g(xs, x):
        _speculate(None)
        xs.append(2)
        return x + 1

    _HOOKS[_speculate] = hook
    cap = _capture(g, ([0], torch.ones(2)), _backend)
    assert seen == [[0, 5], [0], [0, 5], [0]]
    assert [n.op for n in cap.graph_module.graph.nodes] == ["placeholder", "call_function", "output"]
    xs = [0]
    cap.fn(xs, torch.ones(2))
    assert xs == [0, 2]


def test_translator_restore_puts_back_stack_locals_and_position():
    def hook(tx, body):
        cp = tx.checkpoint()
        state = (list(tx.stack), dict(tx.locals), tx.ip, tx.steps)
        tx.stack.append(ConstantVariable(1))
        tx.locals["z"] = ConstantVariable(2)
        tx.ip += 3
        tx.steps += 7
        tx.restore(cp)
        tx.release(cp)
        _SEEN.append(state == (list(tx.stack), dict(tx.locals), tx.ip, tx.steps))
        return ConstantVariable(None)

    def f(x):
        a = x + 1
        _speculate(None)
        return a * 2

    _HOOKS[_speculate] = hook
    cap = _capture(f, (torch.ones(2),), _backend)
    assert _SEEN == [True]
    assert torch.equal(cap.fn(torch.ones(2)), torch.full((2,), 4.0))


# ---- scopes --------------------------------------------------------------------------------
def _break_of(fn, *args) -> GraphBreak:
    with pytest.raises(GraphBreak) as info:
        capture(fn, args, _backend, fullgraph=True)
    return info.value


def test_scope_refuses_write_to_outer_list_naming_it_and_the_line():
    def f(xs, x):
        def body():
            xs.append(1)  # MARK-outer-list
        _in_scope(body)
        return x

    brk = _break_of(f, [1], torch.ones(1))
    line = next(i for i, l in enumerate(open(__file__), 1) if "MARK-outer-list" in l and "next(" not in l)
    assert "xs" in brk.reason and f"test_speculation.py:{line}" in brk.reason
    assert "the body of test_op" in brk.reason and brk.category == "side effect in higher-order op"


@pytest.mark.parametrize("statement", [
    "o.a0 = 5", "G_COUNT = 3", "c = 2", "d['k'] = 1", "s.add(3)", "fresh.append(1)", "next(it)",
    "y.add_(1)", "y[0] = 1", "y.unsqueeze_(0)", "torch.nn.functional.relu(y, inplace=True)", "G_MODULE.extra = 1",
])
def test_scope_refuses_every_kind_of_outer_write(statement):
    src = f'''
def factory():
    c = 0

    def f(o, d, s, x):
        fresh = []
        it = iter([1, 2])
        y = x + 1
        def body():
            global G_COUNT
            nonlocal c
            {statement}
        _in_scope(body)
        return x
    return f
'''
    namespace = dict(globals())
    exec(compile(src, "<scope>", "exec"), namespace)
    brk = _break_of(namespace["factory"](), Box(), {}, {1}, torch.ones(1))
    assert brk.category == "side effect in higher-order op", brk.reason


def test_scope_allows_writes_to_what_the_body_creates():
    def f(x):
        def body():
            mine = [x]
            mine.append(x + 1)
            d = {"a": 1}
            d["b"] = 2
            p = Point()
            p.v = mine
            t = x * 2
            t.add_(1)
            t[0] = x[1]
            t += x
            for i in iter(mine):
                pass
            return mine
        _in_scope(body)
        return x + 1

    cap = _capture(f, (torch.ones(2),), _backend, fullgraph=True)
    assert torch.equal(cap.fn(torch.ones(2)), torch.full((2,), 2.0))


def test_nested_scope_refuses_writes_to_the_enclosing_body():
    def f(x):
        def body():
            mine = []

            def inner():
                mine.append(1)
            _in_scope(inner)
        _in_scope(body)
        return x

    assert "mine" in _break_of(f, torch.ones(1)).reason or "list" in _break_of(f, torch.ones(1)).reason


# ---- subgraph ------------------------------------------------------------------------------
def test_subgraph_lifts_outer_tensors_inputs_and_parameters():
    weight = torch.nn.Parameter(torch.randn(3, 3))

    def f(x, w):
        a = x + 1

        def body():
            return torch.mm(a, w) + G_TENSOR + a
        _in_subgraph(body)
        return a * 2

    cap = _capture(f, (torch.randn(3, 3), weight), _backend)
    (sub,) = _SEEN
    outer = [o.name for o, _ in sub.lifted]
    assert outer[0] == "add" and len(outer) == 3  # `a` once, then `w`, then the new input G_TENSOR
    inner_ops = [n.op for n in sub.graph.nodes]
    assert inner_ops.count("placeholder") == 3 and inner_ops[-1] == "output"
    assert all(p.graph is sub.graph for _, p in sub.lifted)
    assert all(o.graph is not sub.graph for o, _ in sub.lifted)
    root_ops = [n.target for n in cap.graph_module.graph.nodes if n.op == "call_function"]
    assert torch.mm not in root_ops  # the body's ops are only in the child graph
    gm = torch.fx.GraphModule(torch.nn.Module(), sub.graph)
    x = torch.randn(3, 3)
    assert torch.allclose(gm(x + 1, weight, G_TENSOR), torch.mm(x + 1, weight) + G_TENSOR + x + 1)


def test_subgraph_nested_lifts_through_every_level():
    def f(x):
        a = x + 1

        def outer_body():
            b = a * 2

            def inner_body():
                return a + b
            _in_subgraph(inner_body)
            return b
        _in_subgraph(outer_body)
        return a

    _capture(f, (torch.ones(2),), _backend)
    inner, outer = _SEEN
    assert [o.name for o, _ in outer.lifted] == ["add"]
    assert [o.graph for o, _ in inner.lifted] == [outer.graph, outer.graph]


# ---- speculation log ------------------------------------------------------------------------
def test_capture_restarts_more_than_once_through_the_speculation_log():
    def f(xs, x):
        xs.append(1)
        _probe("first")
        y = x + 1
        _probe("second")
        xs.append(2)
        return y * 2

    cap = _capture(f, ([], torch.ones(2)), _backend)
    logs = {id(log): log for log in _SEEN}
    (log,) = logs.values()  # one log for the capture, kept across attempts
    assert log.restarts == 2 and sorted(log.decisions.values()) == ["first", "second"]
    xs = []
    assert torch.equal(cap.fn(xs, torch.ones(2)), torch.full((2,), 4.0)) and xs == [1, 2]


def test_nested_break_restart_is_per_capture():
    def inner(x):
        try:
            print("eager")
            return x + 1
        finally:
            pass

    def outer(x):
        return inner(x) * 2

    compiled = bytegraph.compile(outer)
    assert torch.equal(compiled(torch.ones(2)), torch.full((2,), 4.0))
    from bytegraph.translate import translator
    assert not hasattr(translator, "BREAK_MARKERS")


# ---- the barrier is the only way to change tracker state --------------------------------------
_BARRIER_CALLS = {"mutate", "touch", "_check_mutable", "_mutating_keys", "set_contents", "_write", "store_global"}
_MUTATING_METHODS = {"append", "extend", "insert", "pop", "remove", "clear", "update", "setdefault",
                     "popitem", "add", "discard", "sort", "reverse", "__setitem__", "__delitem__"}


def _state_attribute_names() -> set:
    import bytegraph.translate.translator  # noqa: F401  (every tracker kind is imported)

    names, todo = set(), [VariableTracker]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.startswith("bytegraph."):
            names.update(_state_slots(cls))
    return names


def _writes(func, state_names):
    """(line, attribute, object expression) of every in-place change of
    `<object>.<state attribute>` in `func`."""
    def state_attr(node):
        while isinstance(node, ast.Subscript):
            node = node.value
        if isinstance(node, ast.Attribute) and node.attr in state_names:
            return node.attr, node.value
        return None

    for node in ast.walk(func):
        if isinstance(node, (ast.Assign, ast.Delete)):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr in _MUTATING_METHODS:
            targets = [node.func.value]
        else:
            continue
        for target in targets:
            for t in (target.elts if isinstance(target, ast.Tuple) else [target]):
                found = state_attr(t)
                if found is not None:
                    yield (node.lineno, *found)


def _barrier_lines(func) -> list:
    return [n.lineno for n in ast.walk(func) if isinstance(n, ast.Call) and (
        (isinstance(n.func, ast.Attribute) and n.func.attr in _BARRIER_CALLS)
        or (isinstance(n.func, ast.Name) and n.func.id in _BARRIER_CALLS))]


def _mutator_rows(tree) -> set:
    """The functions a module passes to `mutator(...)`: method-table rows that `dispatch` runs
    after the barrier (vars/method_table.py)."""
    return {node.args[0].id for node in ast.walk(tree) if isinstance(node, ast.Call) and node.args
            and isinstance(node.func, ast.Name) and node.func.id == "mutator" and isinstance(node.args[0], ast.Name)}


def _tracker_classes(tree) -> set:
    return {node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
            and (node.name.endswith("Variable") or node.name in ("VariableTracker",))}


def test_no_tracker_state_changes_without_the_barrier():
    state_names = _state_attribute_names()
    offenders = []
    for layer in ("vars", "graph", "translate", "runtime"):  # the layers that hold trackers
        root = os.path.join(_PACKAGE, layer)
        for name in os.listdir(root):
            if not name.endswith(".py"):
                continue
            path = os.path.join(root, name)
            rel = os.path.relpath(path, _PACKAGE).replace(os.sep, "/")
            tree = ast.parse(open(path).read())
            tracker_classes = _tracker_classes(tree)
            for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
                for func in [n for n in cls.body if isinstance(n, ast.FunctionDef)]:
                    if func.name in ("__init__", "_restore_state"):
                        continue
                    barriers = _barrier_lines(func)
                    fresh = _fresh_names(func)
                    for line, attr, obj in _writes(func, state_names):
                        if cls.name not in tracker_classes and not _may_be_tracker(obj, fresh):
                            continue
                        if not any(b <= line for b in barriers):
                            offenders.append(f"{rel}:{line} {cls.name}.{func.name} changes .{attr}")
            rows = _mutator_rows(tree)
            for func in [n for n in tree.body if isinstance(n, ast.FunctionDef)]:
                barriers = [func.lineno] if func.name in rows else _barrier_lines(func)
                fresh = _fresh_names(func)
                for line, attr, obj in _writes(func, state_names):
                    if _may_be_tracker(obj, fresh) and not any(b <= line for b in barriers):
                        offenders.append(f"{rel}:{line} {func.name} changes .{attr}")
    assert offenders == []


def _fresh_names(func) -> set:
    """Names bound to a tracker made right there (`it = SequenceIteratorVariable(...)`): setting
    up a new tracker is not a change of state."""
    return {t.id for node in ast.walk(func) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id.endswith("Variable")
            for t in node.targets if isinstance(t, ast.Name)}


_OTHER_OBJECTS = {"self", "cg", "output", "brk", "e", "node", "inst", "entry", "child"}


def _may_be_tracker(obj, fresh: set) -> bool:
    """Outside tracker classes, whether the object written may be a tracker: anything but
    a name of the project's vocabulary for other objects (`self` of a non-tracker class,
    `cg`, `output`, ...) or a name bound to a tracker made in the same function."""
    return not (isinstance(obj, ast.Name) and (obj.id in _OTHER_OBJECTS or obj.id in fresh))


def test_barrier_scan_catches_a_direct_write(tmp_path):
    src = '''
class SneakyVariable:
    def poke(self, tx, value):
        self.items.append(value)
    def fine(self, tx, value):
        tx.output.side_effects.mutate(self)
        self.items.append(value)
'''
    tree = ast.parse(src)
    cls = tree.body[0]
    poke, fine = cls.body
    names = {"items"}
    assert [(line, attr) for line, attr, _ in _writes(poke, names)] == [(4, "items")]
    assert not [line for line, _, _ in _writes(poke, names) if any(b <= line for b in _barrier_lines(poke))]
    assert all(any(b <= line for b in _barrier_lines(fine)) for line, _, _ in _writes(fine, names))


def test_barrier_scan_takes_mutator_rows_as_behind_the_barrier():
    tree = ast.parse('''
def _row(tx, vt, name, args, kwargs):
    vt.items.append(args[0])
def _helper(tx, vt):
    vt.items.append(None)
METHODS = {"append": mutator(_row), "other": row(_helper)}
''')
    assert _mutator_rows(tree) == {"_row"}
