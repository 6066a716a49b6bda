"""Test helpers: a counting backend and the differential checker.

``check(fn, *args, graphs=N)`` runs ``fn`` eagerly and compiled by bytegraph on
independent deep copies of every argument and compares, in full:

* the return values (nested containers; tensors by ``torch.testing.assert_close``
  with exact dtype/shape/device/requires_grad; Python values by type and ``==``),
* ``is``-identity: an output that is (a tensor/mutable object of) an argument in
  eager must be the corresponding argument object in the compiled run, an output
  that is not an argument must not be one, and repeated output tensors must be
  repeated in both,
* everything printed to stdout,
* the arguments after the call (in-place mutation of tensors, lists, dicts, objects),
* gradients of every argument tensor that requires grad, after ``backward()`` of the
  sum of all floating outputs that require grad,
* an exception raised by ``fn`` (same type, same message, same observable side effects),
* the number of graphs compiled (``graphs=``) and that a second call with fresh
  copies does not recompile and still agrees with eager.

Globals are not copied: a test that mutates module state passes ``setup=`` (called
before every run) and ``state=`` (a snapshot compared after every run).
"""
from __future__ import annotations

import collections
import contextlib
import copy
import functools
import io
import logging
import math
import types
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.fx

import bytegraph
from bytegraph.graph.backends import lookup_backend

_CALL_OPS = ("call_function", "call_method", "call_module")


class CompileCounter:
    """A torch.compile-protocol backend that counts graphs and ops and runs the graph as is,
    or compiles it with the named `backend` ("aot_eager", "inductor", ...) if given."""

    def __init__(self, backend: str | None = None):
        self.inner = lookup_backend(backend) if backend is not None else None
        self.frame_count = 0
        self.op_count = 0
        self.graphs: list[torch.fx.GraphModule] = []
        self.example_inputs: list[list] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs):
        self.frame_count += 1
        self.op_count += sum(1 for n in gm.graph.nodes if n.op in _CALL_OPS)
        self.graphs.append(gm)
        self.example_inputs.append(list(example_inputs))
        return self.inner(gm, example_inputs) if self.inner is not None else gm.forward

    def ops(self, graph_index: int = -1) -> list:
        """Targets of the call nodes of one graph (for assertions on what was captured)."""
        gm = self.graphs[graph_index]
        return [n.target for n in gm.graph.nodes if n.op in _CALL_OPS]

    def __repr__(self):
        return f"CompileCounter(frame_count={self.frame_count}, op_count={self.op_count})"


def compile_counted(fn, **kwargs):
    """``bytegraph.compile(fn, backend=CompileCounter())`` -> (compiled, counter)."""
    counter = CompileCounter()
    return bytegraph.compile(fn, backend=counter, **kwargs), counter


# ----------------------------------------------------------------------------- copying


def clone_inputs(value, memo=None):
    """Deep copy; tensors become fresh leaves with the same values and requires_grad.

    Aliasing inside the value (the same object twice) is preserved through ``memo``.
    """
    if memo is None:
        memo = {}
    if id(value) in memo:
        return memo[id(value)]
    if isinstance(value, torch.Tensor) and not isinstance(value, torch.nn.Parameter):
        if value.is_leaf:
            out = copy.deepcopy(value, memo)
        else:
            out = value.detach().clone().requires_grad_(value.requires_grad)
    elif type(value) in (list, tuple, set, frozenset, dict) or _is_namedtuple(value):
        if isinstance(value, dict):
            out = {}
            memo[id(value)] = out
            for k, v in value.items():
                out[clone_inputs(k, memo)] = clone_inputs(v, memo)
            return out
        if type(value) is list:
            out = []
            memo[id(value)] = out
            out.extend(clone_inputs(v, memo) for v in value)
            return out
        items = [clone_inputs(v, memo) for v in value]
        out = type(value)(*items) if _is_namedtuple(value) else type(value)(items)
    else:
        out = copy.deepcopy(value, memo)
    memo[id(value)] = out
    return out


def _is_namedtuple(value) -> bool:
    return isinstance(value, tuple) and hasattr(type(value), "_fields")


# ----------------------------------------------------------------------------- walking

_ATOMIC = (int, float, complex, bool, str, bytes, type(None), type(Ellipsis), torch.dtype, torch.device)


# compared with ==; deep copy returns these unchanged, so identity-equality is right for them
_BY_EQUALITY = _ATOMIC + (
    set, frozenset, type, torch.Size, types.FunctionType, types.BuiltinFunctionType,
    types.MethodType, types.ModuleType, types.CodeType,
)


def _tracked(obj) -> bool:
    """Objects whose identity is observable and meaningful (not interned immutables)."""
    return not isinstance(obj, _ATOMIC) and not isinstance(obj, (tuple, frozenset, torch.Size))


def _children(obj):
    """(step, child) pairs of a value, in a deterministic order."""
    if isinstance(obj, torch.Tensor):
        return []
    if isinstance(obj, (list, tuple)):
        return [(("item", i), v) for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        return [(("key", i), v) for i, v in enumerate(obj.values())]
    if isinstance(obj, torch.nn.Module):
        return [(("param", n), p) for n, p in obj.named_parameters()] + [
            (("buffer", n), b) for n, b in obj.named_buffers()
        ]
    if isinstance(obj, types.MethodType):
        return [(("attr", "__self__"), obj.__self__)]
    if isinstance(obj, _BY_EQUALITY) or isinstance(obj, functools.partial):
        return []
    d = getattr(obj, "__dict__", None)
    if isinstance(d, dict):
        return [(("attr", k), v) for k, v in d.items()]
    return []


def _walk(obj, path=(), out=None, seen=None):
    """{path: object} for every tracked object reachable from obj (first path wins)."""
    if out is None:
        out, seen = {}, set()
    if id(obj) in seen:
        out[path] = obj  # an alias: recorded, not walked again
        return out
    if _tracked(obj):
        seen.add(id(obj))
    out[path] = obj
    for step, child in _children(obj):
        _walk(child, path + (step,), out, seen)
    return out


def _tensors(obj):
    return [v for v in _walk(obj).values() if isinstance(v, torch.Tensor)]


def _fmt(path, root="out") -> str:
    s = root
    for kind, k in path:
        s += f".{k}" if kind in ("attr", "param", "buffer") else f"[{k!r}]"
    return s


def _fmt_arg(path) -> str:
    """Format a path into the (args, kwargs) pair as ``args[0]`` / ``kwargs['x']``."""
    if not path:
        return "(args, kwargs)"
    return _fmt(path[1:], "args" if path[0] == ("item", 0) else "kwargs")


# ----------------------------------------------------------------------------- comparing


def assert_same(expected, actual, where="value", rtol=None, atol=None, _seen=None):
    """Deep equality of an eager value and a compiled value; raises AssertionError with a path."""
    if _seen is None:
        _seen = set()
    key = (id(expected), id(actual))
    if key in _seen:
        return
    _seen.add(key)
    if isinstance(expected, torch.Tensor):
        assert isinstance(actual, torch.Tensor), f"{where}: expected a tensor, got {type(actual).__name__}: {actual!r}"
        assert type(actual) is type(expected), f"{where}: tensor type {type(actual)} != {type(expected)}"
        assert actual.shape == expected.shape, f"{where}: shape {tuple(actual.shape)} != eager {tuple(expected.shape)}"
        assert actual.dtype == expected.dtype, f"{where}: dtype {actual.dtype} != eager {expected.dtype}"
        assert actual.device == expected.device, f"{where}: device {actual.device} != eager {expected.device}"
        assert actual.requires_grad == expected.requires_grad, (
            f"{where}: requires_grad {actual.requires_grad} != eager {expected.requires_grad}"
        )
        torch.testing.assert_close(
            actual.detach(), expected.detach(), rtol=rtol, atol=atol, equal_nan=True,
            msg=lambda m: f"{where}: values differ from eager\n{m}",
        )
        if getattr(expected, "__dict__", None) or getattr(actual, "__dict__", None):
            assert_same(vars(expected), vars(actual), f"{where}.__dict__", rtol, atol, _seen)
        return
    assert type(actual) is type(expected), (
        f"{where}: type {type(actual).__name__} ({actual!r}) != eager {type(expected).__name__} ({expected!r})"
    )
    if isinstance(expected, (list, tuple)) and not isinstance(expected, torch.Size):
        assert len(actual) == len(expected), (
            f"{where}: length {len(actual)} != eager {len(expected)}: {actual!r} vs {expected!r}"
        )
        for i, (e, a) in enumerate(zip(expected, actual)):
            assert_same(e, a, f"{where}[{i}]", rtol, atol, _seen)
        return
    if isinstance(expected, collections.ChainMap):
        assert_same(expected.maps, actual.maps, f"{where}.maps", rtol, atol, _seen)
        return
    if isinstance(expected, collections.deque):
        assert actual.maxlen == expected.maxlen, f"{where}: maxlen {actual.maxlen} != eager {expected.maxlen}"
        assert_same(list(expected), list(actual), f"{where}.<items>", rtol, atol, _seen)
        return
    if isinstance(expected, dict):
        assert list(actual.keys()) == list(expected.keys()), f"{where}: keys {list(actual)} != eager {list(expected)}"
        for k in expected:
            assert_same(expected[k], actual[k], f"{where}[{k!r}]", rtol, atol, _seen)
        return
    if isinstance(expected, float) and isinstance(actual, float) and math.isnan(expected):
        assert math.isnan(actual), f"{where}: {actual!r} != eager nan"
        return
    if isinstance(expected, float) and isinstance(actual, float) and (rtol is not None or atol is not None):
        # a tensor's `.item()` under the same tolerance as the tensor (e.g. inductor's kernels)
        assert math.isclose(actual, expected, rel_tol=rtol or 0.0, abs_tol=atol or 0.0), (
            f"{where}: {actual!r} != eager {expected!r} (rtol={rtol}, atol={atol})")
        return
    if isinstance(expected, torch.nn.Module):
        assert_same(dict(expected.named_parameters()), dict(actual.named_parameters()), f"{where}.<params>",
                    rtol, atol, _seen)
        assert_same(dict(expected.named_buffers()), dict(actual.named_buffers()), f"{where}.<buffers>",
                    rtol, atol, _seen)
        assert expected.training == actual.training, f"{where}.training differs"
        return
    if isinstance(expected, functools.partial):
        assert_same(
            (expected.func, expected.args, expected.keywords), (actual.func, actual.args, actual.keywords),
            f"{where}.<partial>", rtol, atol, _seen,
        )
        return
    if isinstance(expected, types.MethodType):
        # a bound method of a (deep-copied) argument: same function, equal receivers
        assert actual.__func__ is expected.__func__, f"{where}: method {actual!r} != eager {expected!r}"
        assert_same(expected.__self__, actual.__self__, f"{where}.__self__", rtol, atol, _seen)
        return
    if not isinstance(expected, _BY_EQUALITY) and type(expected).__eq__ is object.__eq__:
        # a plain object (deep-copied, so never identical): compare its attributes
        if isinstance(getattr(expected, "__dict__", None), dict):
            assert_same(vars(expected), vars(actual), f"{where}.__dict__", rtol, atol, _seen)
        return
    assert actual == expected, f"{where}: {actual!r} != eager {expected!r}"


def _assert_identity(eager_out, comp_out, eager_in, comp_in):
    """Outputs that are argument objects in eager are the corresponding argument objects compiled."""
    in_eager, in_comp = {}, {}
    for p, o in _walk(eager_in).items():
        if _tracked(o):
            in_eager.setdefault(id(o), p)
    for p, o in _walk(comp_in).items():
        if _tracked(o):
            in_comp.setdefault(id(o), p)
    out_eager = _walk(eager_out)
    out_comp = _walk(comp_out)
    for path, e in out_eager.items():
        if not _tracked(e) or path not in out_comp:
            continue
        c = out_comp[path]
        pe, pc = in_eager.get(id(e)), in_comp.get(id(c))
        if pe != pc:
            if pe is None:
                raise AssertionError(f"{_fmt(path)}: compiled returned argument {_fmt_arg(pc)} itself, "
                                     "eager returned a new object")
            raise AssertionError(f"{_fmt(path)}: eager returned argument {_fmt_arg(pe)} itself, "
                                 "compiled returned a different object")
    # aliasing among outputs (tensors, lists, dicts, objects): `a is b` must agree
    e_paths = [(p, o) for p, o in out_eager.items() if _tracked(o)]
    for i, (p1, o1) in enumerate(e_paths):
        for p2, o2 in e_paths[i + 1 :]:
            if p1 in out_comp and p2 in out_comp:
                same_e, same_c = o1 is o2, out_comp[p1] is out_comp[p2]
                assert same_e == same_c, (
                    f"{_fmt(p1)} is {_fmt(p2)}: eager {same_e}, compiled {same_c}"
                )


# ----------------------------------------------------------------------------- running


class _LogCapture(logging.Handler):
    """Collects bytegraph's graph-break/recompile log lines so failures can show *why*."""

    TOPICS = ("graph_breaks", "recompiles")

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        try:
            self.lines.append(f"[{record.name}] {record.getMessage()}")
        except Exception:  # never let diagnostics break a test
            pass

    def __enter__(self):
        self._saved = []
        for topic in self.TOPICS:
            lg = logging.getLogger(f"bytegraph.{topic}")
            self._saved.append((lg, lg.level))
            lg.setLevel(logging.DEBUG)
            lg.addHandler(self)
        return self

    def __exit__(self, *exc):
        for lg, level in self._saved:
            lg.removeHandler(self)
            lg.setLevel(level)
        return False

    def text(self) -> str:
        return "".join(f"\n    {line}" for line in self.lines[-20:])


@dataclass
class Run:
    out: Any = None
    exc: BaseException | None = None
    stdout: str = ""
    state: Any = None
    args: Any = None


def _run(fn, args, kwargs, seed, setup, state) -> Run:
    if setup is not None:
        setup()
    if seed is not None:
        torch.manual_seed(seed)
    buf = io.StringIO()
    r = Run(args=(args, kwargs))
    with contextlib.redirect_stdout(buf):
        try:
            r.out = fn(*args, **kwargs)
        except Exception as e:  # compared against the other run
            r.exc = e
    r.stdout = buf.getvalue()
    if state is not None:
        r.state = state()
    return r


def _compare_runs(eager: Run, comp: Run, label: str, rtol, atol):
    if eager.exc is not None or comp.exc is not None:
        if comp.exc is None:
            raise AssertionError(f"{label}: eager raised {type(eager.exc).__name__}: {eager.exc}, "
                                 f"compiled returned {comp.out!r}")
        if eager.exc is None:
            raise AssertionError(f"{label}: compiled raised but eager returned {eager.out!r}") from comp.exc
        if type(comp.exc) is not type(eager.exc) or str(comp.exc) != str(eager.exc):
            raise AssertionError(
                f"{label}: compiled raised {type(comp.exc).__name__}: {comp.exc!s}\n"
                f"   eager raised {type(eager.exc).__name__}: {eager.exc!s}"
            ) from comp.exc
        if type(comp.exc.__cause__) is not type(eager.exc.__cause__):
            raise AssertionError(
                f"{label}: exception __cause__ is {comp.exc.__cause__!r}, eager {eager.exc.__cause__!r}"
            ) from comp.exc
    else:
        assert_same(eager.out, comp.out, f"{label} output", rtol, atol)
        _assert_identity(eager.out, comp.out, eager.args, comp.args)
    assert comp.stdout == eager.stdout, (
        f"{label}: printed output differs\ncompiled: {comp.stdout!r}\n   eager: {eager.stdout!r}"
    )
    assert_same(eager.args, comp.args, f"{label} arguments after the call", rtol, atol)
    if eager.state is not None or comp.state is not None:
        assert_same(eager.state, comp.state, f"{label} state()", rtol, atol)


def _backward_and_compare(eager: Run, comp: Run, label: str, rtol, atol):
    def loss_of(out):
        ts = [t for t in _tensors(out) if t.requires_grad and (t.is_floating_point() or t.is_complex())]
        ts = [t.real if t.is_complex() else t for t in ts]
        return sum((t.sum() for t in ts), torch.zeros(())) if ts else None

    le, lc = loss_of(eager.out), loss_of(comp.out)
    assert (le is None) == (lc is None), f"{label}: outputs requiring grad differ between eager and compiled"
    if le is None:
        return
    errs = []
    for loss in (le, lc):
        try:
            loss.backward()
            errs.append(None)
        except Exception as e:
            errs.append(e)
    if errs[0] is not None or errs[1] is not None:
        assert type(errs[0]) is type(errs[1]), f"{label}: backward raised {errs[1]!r}, eager {errs[0]!r}"
        return
    ge = [t for t in _tensors(eager.args) if t.requires_grad]
    gc = [t for t in _tensors(comp.args) if t.requires_grad]
    assert len(ge) == len(gc), f"{label}: argument tensors requiring grad differ"
    for i, (te, tc) in enumerate(zip(ge, gc)):
        if te.grad is None:
            assert tc.grad is None, f"{label}: grad of argument tensor #{i} is set compiled but None eager"
        else:
            assert tc.grad is not None, f"{label}: grad of argument tensor #{i} is None compiled but set eager"
            assert_same(te.grad, tc.grad, f"{label} grad of argument tensor #{i}", rtol, atol)


@dataclass
class CheckResult:
    counter: CompileCounter | None
    eager: Run
    compiled: Run
    compiled_fn: Callable = field(repr=False, default=None)


def check(
    fn,
    *args,
    graphs: int | None = None,
    backend=None,
    fullgraph: bool = False,
    grads: bool = True,
    rerun: bool = True,
    setup: Callable | None = None,
    state: Callable | None = None,
    seed: int | None = 0,
    rtol: float | None = None,
    atol: float | None = None,
    **kwargs,
) -> CheckResult:
    """Differential test of ``fn(*args, **kwargs)``: eager vs a fresh bytegraph compile.

    ``graphs``: expected number of compiled graphs (needs the default or a CompileCounter backend).
    ``rerun``: call the compiled function again on fresh copies; it must not recompile.
    ``seed``: torch.manual_seed(seed) before every run (so random ops agree), None to skip.
    """
    if backend is None:
        backend = CompileCounter()
    counter = backend if isinstance(backend, CompileCounter) else None
    if graphs is not None and counter is None:
        raise TypeError("check(graphs=...) needs the default backend or a CompileCounter")

    a1, k1 = clone_inputs((args, kwargs))
    a2, k2 = clone_inputs((args, kwargs))
    eager = _run(fn, a1, k1, seed, setup, state)

    bytegraph.reset()
    cfn = bytegraph.compile(fn, backend=backend, fullgraph=fullgraph)
    with _LogCapture() as logs:
        comp = _run(cfn, a2, k2, seed, setup, state)
    _compare_runs(eager, comp, "first call", rtol, atol)
    if graphs is not None:
        assert counter.frame_count == graphs, (
            f"expected {graphs} graph(s), bytegraph compiled {counter.frame_count}"
            + (f"\n  bytegraph log:{logs.text()}" if logs.lines else "")
            + "".join(f"\n--- graph {i}:\n{g.code}" for i, g in enumerate(counter.graphs))
        )
    if grads and eager.exc is None:
        _backward_and_compare(eager, comp, "first call", rtol, atol)

    if rerun:
        frames = counter.frame_count if counter is not None else None
        a3, k3 = clone_inputs((args, kwargs))
        a4, k4 = clone_inputs((args, kwargs))
        eager2 = _run(fn, a3, k3, seed, setup, state)
        with _LogCapture() as logs:
            comp2 = _run(cfn, a4, k4, seed, setup, state)
        _compare_runs(eager2, comp2, "second call", rtol, atol)
        if counter is not None:
            assert counter.frame_count == frames, (
                f"second call with equal inputs recompiled ({frames} -> {counter.frame_count} graphs)"
                + (f"\n  bytegraph log:{logs.text()}" if logs.lines else "")
            )
        if grads and eager2.exc is None:
            _backward_and_compare(eager2, comp2, "second call", rtol, atol)
    return CheckResult(counter, eager, comp, cfn)


def check_calls(fn, *args, calls: int = 3, backend=None, graphs: int | None = None, setup=None, state=None,
                seed: int | None = 0, **kwargs) -> CheckResult:
    """Call ``fn`` ``calls`` times on the *same* argument objects (one copy for eager, one for
    compiled) and compare after every call: for stateful code, where state carried from one
    call to the next (attributes created, iterators advanced) must steer the next call."""
    if backend is None:
        backend = CompileCounter()
    counter = backend if isinstance(backend, CompileCounter) else None
    a1, k1 = clone_inputs((args, kwargs))
    a2, k2 = clone_inputs((args, kwargs))
    bytegraph.reset()
    cfn = bytegraph.compile(fn, backend=backend)
    if setup is not None:
        setup()
    for i in range(calls):
        eager = _run(fn, a1, k1, seed, None, state)
        comp = _run(cfn, a2, k2, seed, None, state)
        _compare_runs(eager, comp, f"call #{i + 1}", None, None)
    if graphs is not None:
        assert counter.frame_count == graphs, f"expected {graphs} graph(s), bytegraph compiled {counter.frame_count}"
    return CheckResult(counter, eager, comp, cfn)


def check_sequence(fn, arg_tuples, backend=None, setup=None, state=None, seed: int | None = 0) -> CheckResult:
    """One compiled ``fn`` called with each tuple of ``arg_tuples`` in turn (fresh copies each
    time, no reset in between), compared with eager after every call; for guards/recompiles."""
    if backend is None:
        backend = CompileCounter()
    counter = backend if isinstance(backend, CompileCounter) else None
    bytegraph.reset()
    cfn = bytegraph.compile(fn, backend=backend)
    for i, args in enumerate(arg_tuples):
        a1 = clone_inputs((tuple(args), {}))
        a2 = clone_inputs((tuple(args), {}))
        eager = _run(fn, *a1, seed, setup, state)
        comp = _run(cfn, *a2, seed, setup, state)
        _compare_runs(eager, comp, f"call #{i + 1}", None, None)
    return CheckResult(counter, eager, comp, cfn)


def line_of(marker: str, path: str) -> int:
    """1-based number of the unique line of ``path`` that ends with the comment ``marker``."""
    with open(path) as f:
        hits = [i for i, line in enumerate(f, 1) if line.rstrip().endswith(marker)]
    assert len(hits) == 1, f"marker {marker!r} ends {len(hits)} lines of {path}"
    return hits[0]


def explain_counts(fn, *args):
    """(graphs, graph breaks, ops per graph) of one explained call of ``fn``."""
    out = bytegraph.explain(fn, *args)
    return out.graph_count, out.graph_break_count, [len(ops) for ops in out.ops_per_graph]


def eager_rests(fn, *args):
    """Why some frame (or the rest of one, after a break) ran eagerly in one explained call."""
    out = bytegraph.explain(fn, *args)
    frames = out.eager_frames  # a frame run eagerly at a break is listed there with the break's reason
    return [r.reason for r in out.break_reasons
            if "runs eagerly" in r.reason and not any(r.reason in f for f in frames)] + frames


class _PrintHandler(logging.Handler):
    """Prints each record to the current sys.stdout (which `check` captures)."""

    def emit(self, record):
        print(f"{record.levelname}:{record.name}:{record.getMessage()}")


def printing_logger(name: str) -> logging.Logger:
    """The logger `name` at DEBUG, printing its records to stdout (compared by `check`), not propagated."""
    log = logging.getLogger(name)
    log.addHandler(_PrintHandler())
    log.propagate = False
    log.setLevel(logging.DEBUG)
    return log
