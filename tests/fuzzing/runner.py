"""Differential runner: one fuzz program, eager vs `bytegraph.compile`, compared in full.

The program's source is executed twice, into two fresh module namespaces (so each side has
its own globals, classes, modules and mutable defaults); each is
`sys.modules["fuzz_program"]` while its side loads or runs a call, so
`sys.modules[__name__].__dict__` is the program's globals. `fuzzed` is called `calls` times
on both sides, each call on fresh inputs from `make_inputs(call)` (the same values on both
sides; the torch RNG is seeded before every call), and after every call the runner compares:
the return value (tensors with `torch.testing.assert_close`, exact
dtype/shape/requires_grad; containers and user objects structurally, classes by qualified
name since each side has its own), stdout, the exception (type, message, args, attributes,
cause and context), the arguments (mutated tensors, the `st` object), the whole module
namespace (globals, containers, objects' `__dict__`, modules' parameters and buffers,
functions' defaults), the grad mode, and after `backward()` of the outputs the gradients of
the inputs and of every parameter.

Verdicts (`CLASSES`): ok, mismatch (both returned or raised alike, but something observable
differs), raises_compiled, raises_eager, diff_exception, timeout (the compiled side hung),
invalid (the eager side hung: a generator bug). A bytegraph internal error is not a verdict
by itself: bytegraph runs such frames eagerly; it is counted in the run's statistics.
"""
from __future__ import annotations

import collections
import contextlib
import gc
import itertools
import io
import re
import linecache
import logging
import math
import signal
import sys
import types
import warnings
from dataclasses import dataclass, field

import torch

import bytegraph
from bytegraph.runtime import compiled_function

CLASSES = ("ok", "mismatch", "raises_compiled", "raises_eager", "diff_exception", "timeout", "invalid")
FAILURES = CLASSES[1:]


class FuzzTimeout(BaseException):
    """Raised by the alarm inside a call that runs too long (a BaseException: `except Exception`
    in the program cannot swallow it)."""


class CountingBackend:
    """Counts graphs and runs each as is."""

    def __init__(self):
        self.graphs = 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        return gm.forward


@dataclass
class Stats:
    graphs: int = 0
    breaks: int = 0
    eager_entries: int = 0
    internal_errors: int = 0
    reasons: list = field(default_factory=list)


@dataclass
class Verdict:
    kind: str
    detail: str = ""
    call: int = -1
    stats: Stats = field(default_factory=Stats)

    @property
    def signature(self) -> str:
        """What a shrunk program must keep reproducing: the class and the detail's first word
        (the exception type, or where the mismatch is: output, stdout, globals, grad...), and
        for a mismatch the first word of what differs (values, requires_grad, type, length...)."""
        words = [(re.match(r"[A-Za-z_]+", part.strip()) or re.match("", "")).group() or "value"
                 for part in self.detail.split(": ", 2)]
        return ":".join([self.kind] + words[:2 if self.kind == "mismatch" else 1])


@dataclass
class CallResult:
    out: object = None
    exc: BaseException | None = None
    stdout: str = ""
    args: tuple = ()
    grad_mode: bool = True


class Mismatch(AssertionError):
    pass


# ----------------------------------------------------------------------------- loading and calling

MODULE_NAME = "fuzz_program"


@contextlib.contextmanager
def as_module(ns: dict):
    """`sys.modules[__name__]` is the module of `ns` while its side loads or runs a call, so a
    program reads its globals through `sys.modules[__name__].__dict__` / `vars(module)` (both
    sides share the name `fuzz_program`, so their classes compare equal by qualified name)."""
    old = sys.modules.get(MODULE_NAME)
    sys.modules[MODULE_NAME] = ns["__fuzz_module__"]
    try:
        yield
    finally:
        if old is None:
            sys.modules.pop(MODULE_NAME, None)
        else:
            sys.modules[MODULE_NAME] = old


def load(src: str, filename: str, seed: int) -> dict:
    """A fresh module namespace with the program run in it (the torch RNG seeded first, so both
    sides build equal nn.Modules)."""
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)
    module = types.ModuleType(MODULE_NAME)
    ns = module.__dict__
    ns["__fuzz_module__"] = module
    torch.manual_seed(seed)
    with as_module(ns):
        exec(compile(src, filename, "exec"), ns)
    return ns


@contextlib.contextmanager
def alarm(seconds: float):
    def on_alarm(signum, frame):
        raise FuzzTimeout(f"call took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def call(fn, inputs, seed: int, timeout: float, ns: dict) -> CallResult:
    args, kwargs = inputs
    res = CallResult(args=(args, kwargs))
    buf = io.StringIO()
    torch.manual_seed(seed)
    torch.set_grad_enabled(True)
    with contextlib.redirect_stdout(buf), as_module(ns), alarm(timeout):
        try:
            res.out = fn(*args, **kwargs)
        except Exception as e:
            res.exc = e
    res.stdout = buf.getvalue()
    res.grad_mode = torch.is_grad_enabled()
    torch.set_grad_enabled(True)
    return res


# ----------------------------------------------------------------------------- comparing

def same(e, c, where: str, seen=None) -> None:
    """Deep equality of an eager value and a compiled one from the other namespace."""
    if seen is None:
        seen = set()
    if (id(e), id(c)) in seen:
        return
    seen.add((id(e), id(c)))
    if isinstance(e, torch.Tensor):
        if not isinstance(c, torch.Tensor):
            raise Mismatch(f"{where}: tensor expected, got {type(c).__name__}")
        for attr in ("shape", "dtype", "requires_grad"):
            if getattr(e, attr) != getattr(c, attr):
                raise Mismatch(f"{where}: {attr} {getattr(c, attr)} != eager {getattr(e, attr)}")
        try:
            torch.testing.assert_close(c.detach(), e.detach(), equal_nan=True)
        except AssertionError as err:
            raise Mismatch(f"{where}: values differ: {str(err).splitlines()[0]}") from None
        return
    te, tc = type(e), type(c)
    if te.__qualname__ != tc.__qualname__ or te.__module__ != tc.__module__:
        raise Mismatch(f"{where}: type {tc.__qualname__} ({c!r:.80}) != eager {te.__qualname__} ({e!r:.80})")
    if isinstance(e, (list, tuple, collections.deque)):
        if len(e) != len(c):
            raise Mismatch(f"{where}: length {len(c)} != eager {len(e)}")
        for i, (a, b) in enumerate(zip(e, c)):
            same(a, b, f"{where}[{i}]", seen)
        return
    if isinstance(e, dict):
        if list(e) != list(c):
            raise Mismatch(f"{where}: keys {list(c)} != eager {list(e)}")
        for k in e:
            same(e[k], c[k], f"{where}[{k!r}]", seen)
        _compare_attrs(e, c, where, seen)
        return
    if isinstance(e, (types.FunctionType, type)):
        _compare_definition(e, c, where, seen)
        return
    if isinstance(e, float) and math.isnan(e):
        if not math.isnan(c):
            raise Mismatch(f"{where}: {c!r} != eager nan")
        return
    if isinstance(e, torch.nn.Module):
        same(dict(e.named_parameters()), dict(c.named_parameters()), f"{where}.<params>", seen)
        same(dict(e.named_buffers()), dict(c.named_buffers()), f"{where}.<buffers>", seen)
        same({k: v for k, v in vars(e).items() if not k.startswith("_")},
             {k: v for k, v in vars(c).items() if not k.startswith("_")}, f"{where}.__dict__", seen)
        return
    if isinstance(e, (types.GeneratorType, types.MethodType, types.BuiltinFunctionType)) or _is_iterator(e):
        return  # compared by type: reading its state would change it
    if isinstance(e, (type({}.keys()), type({}.values()), type({}.items()))):
        same(list(e), list(c), f"{where}.<view>", seen)
        return
    if isinstance(e, (int, float, str, bool, bytes, type(None), set, frozenset, torch.dtype, torch.Size)):
        if e != c:
            raise Mismatch(f"{where}: {c!r} != eager {e!r}")
        return
    if hasattr(e, "__dict__"):
        same(vars(e), vars(c), f"{where}.__dict__", seen)
        return
    if e != c:
        raise Mismatch(f"{where}: {c!r} != eager {e!r}")


def _is_iterator(v) -> bool:
    return hasattr(type(v), "__next__") and not hasattr(v, "__dict__")


def _compare_attrs(e, c, where, seen):
    if hasattr(e, "__dict__"):
        same(vars(e), vars(c), f"{where}.__dict__", seen)


def _compare_definition(e, c, where, seen):
    """Functions and classes of the program: their mutable parts (defaults, class data)."""
    if isinstance(e, types.FunctionType):
        same(e.__defaults__, c.__defaults__, f"{where}.__defaults__", seen)
        same(e.__kwdefaults__, c.__kwdefaults__, f"{where}.__kwdefaults__", seen)
        return
    data = {k: v for k, v in vars(e).items() if not k.startswith("__") and not callable(v)
            and not isinstance(v, (property, staticmethod, classmethod))}
    data_c = {k: v for k, v in vars(c).items() if k in data or (not k.startswith("__") and not callable(v)
              and not isinstance(v, (property, staticmethod, classmethod)))}
    same(data, data_c, f"{where}.<class data>", seen)


def namespace_state(ns: dict) -> dict:
    """The program's module globals a program can observe (not bytegraph's `__bg_*` names)."""
    return {k: v for k, v in ns.items() if not k.startswith("__") and not isinstance(v, types.ModuleType)}


def exception_state(exc: BaseException) -> dict:
    """What a handler or a traceback can see of an exception besides its type and message: its
    args, its attributes (`e.code` of a custom exception) and what it was raised from/during."""
    chained = {k: None if v is None else (type(v).__name__, str(v))
               for k, v in (("cause", exc.__cause__), ("context", exc.__context__))}
    return {"args": exc.args, "attrs": dict(vars(exc)) if hasattr(exc, "__dict__") else {}, **chained}


def compare_call(e: CallResult, c: CallResult, ens: dict, cns: dict) -> str | None:
    """None when the two calls agree, else the verdict class (detail in the raised Mismatch)."""
    if e.exc is not None or c.exc is not None:
        if c.exc is None:
            raise _Verdict("raises_eager", f"eager raised {type(e.exc).__name__}: {e.exc}, compiled returned")
        if e.exc is None:
            raise _Verdict("raises_compiled", f"{type(c.exc).__name__}: {c.exc}")
        if type(e.exc).__name__ != type(c.exc).__name__ or str(e.exc) != str(c.exc):
            raise _Verdict("diff_exception", f"compiled {type(c.exc).__name__}: {c.exc}; eager "
                                             f"{type(e.exc).__name__}: {e.exc}")
        same(exception_state(e.exc), exception_state(c.exc), "exception")
    else:
        same(e.out, c.out, "output")
    if e.stdout != c.stdout:
        raise Mismatch(f"stdout: compiled {c.stdout!r:.200} eager {e.stdout!r:.200}")
    if e.grad_mode != c.grad_mode:
        raise Mismatch(f"grad mode after the call: compiled {c.grad_mode}, eager {e.grad_mode}")
    same(e.args, c.args, "arguments after the call")
    same(namespace_state(ens), namespace_state(cns), "globals")
    if e.exc is None:
        _compare_backward(e, c, ens, cns)
    return None


def _leaves(value, out, seen):
    if id(value) in seen:
        return
    seen.add(id(value))
    if isinstance(value, torch.Tensor):
        if value.requires_grad:
            out.append(value)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _leaves(v, out, seen)
    elif isinstance(value, dict):
        for v in value.values():
            _leaves(v, out, seen)
    elif isinstance(value, torch.nn.Module):
        out.extend(value.parameters())
    elif hasattr(value, "__dict__") and not isinstance(value, (type, types.FunctionType, types.ModuleType)):
        _leaves(vars(value), out, seen)


def _loss(out):
    ts = []
    _leaves(out, ts, set())
    ts = [t for t in ts if t.is_floating_point()]
    return sum((t.sum() for t in ts), torch.zeros(())) if ts else None


def _compare_backward(e: CallResult, c: CallResult, ens, cns):
    le, lc = _loss(e.out), _loss(c.out)
    if (le is None) != (lc is None):
        raise Mismatch("outputs requiring grad differ")
    if le is None:
        return
    errs = []
    for loss in (le, lc):
        try:
            loss.backward()
            errs.append(None)
        except Exception as err:  # the program's backward raising (autograd's errors, a hook's own): compared by type
            errs.append(type(err).__name__)
    if errs[0] != errs[1]:
        raise Mismatch(f"backward: compiled {errs[1]}, eager {errs[0]}")
    ge, gc = [], []
    _leaves((e.args, namespace_state(ens)), ge, set())
    _leaves((c.args, namespace_state(cns)), gc, set())
    ge, gc = [t for t in ge if t.is_leaf], [t for t in gc if t.is_leaf]
    if len(ge) != len(gc):
        raise Mismatch("leaf tensors requiring grad differ")
    for i, (a, b) in enumerate(zip(ge, gc)):
        if (a.grad is None) != (b.grad is None):
            raise Mismatch(f"grad of leaf #{i}: compiled {'None' if b.grad is None else 'set'}, eager "
                           f"{'None' if a.grad is None else 'set'}")
        if a.grad is not None:
            same(a.grad, b.grad, f"grad of leaf #{i}")


class _Verdict(Exception):
    def __init__(self, kind, detail):
        super().__init__(detail)
        self.kind = kind


# ----------------------------------------------------------------------------- one program

@contextlib.contextmanager
def _watch(stats: Stats):
    def listener(cf, entry, graph_break):
        if entry.kind == "eager":
            stats.eager_entries += 1
            if entry.reason.startswith("internal error"):
                stats.internal_errors += 1
                stats.reasons.append(entry.reason[:200])
        if graph_break is not None:
            stats.breaks += 1

    compiled_function.LISTENERS.append(listener)
    quiet = logging.getLogger("bytegraph.graph_breaks")
    level = quiet.level
    quiet.setLevel(logging.ERROR)  # internal errors are counted, not printed
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        quiet.setLevel(level)
        compiled_function.LISTENERS.remove(listener)


# bytegraph.reset() walks every compiled function still alive, and resume functions stay
# alive after it (cached per user code object), so one reset costs more with every program
# run. Programs never share code objects (each exec makes new ones), so their cache entries
# cannot meet: reset, and collect the cycles, once per RESET_EVERY programs (and after a
# timeout, which may have interrupted a capture).
RESET_EVERY = 50
_runs = itertools.count()


def _reset(force: bool = False) -> None:
    if force or next(_runs) % RESET_EVERY == 0:
        gc.collect()
        bytegraph.reset()


def run_source(src: str, seed: int = 0, calls: int = 3, backend=None, timeout: float = 10.0) -> Verdict:
    """Run one program eager and compiled; the verdict of the first call that differs."""
    _reset()
    counter = backend if backend is not None else CountingBackend()
    stats = Stats()
    try:
        ens = load(src, f"<fuzz-{seed}-eager>", seed)
        cns = load(src, f"<fuzz-{seed}>", seed)
        ens["fuzzed"], cns["fuzzed"]
    except Exception as e:  # a broken (shrunk) program: not a reproduction of anything
        return Verdict("invalid", f"load: {type(e).__name__}: {e}")
    compiled = bytegraph.compile(cns["fuzzed"], backend=counter)
    try:
        with _watch(stats):
            for i in range(calls):
                try:
                    inputs = ens["make_inputs"](i), cns["make_inputs"](i)
                except Exception as err:
                    return Verdict("invalid", f"make_inputs: {type(err).__name__}: {err}", i, stats)
                try:
                    e = call(ens["fuzzed"], inputs[0], seed, timeout, ens)
                except FuzzTimeout as err:
                    return Verdict("invalid", f"eager: {err}", i, stats)
                try:
                    c = call(compiled, inputs[1], seed, timeout, cns)
                except FuzzTimeout as err:
                    _reset(force=True)
                    return Verdict("timeout", str(err), i, stats)
                try:
                    compare_call(e, c, ens, cns)
                except _Verdict as v:
                    return Verdict(v.kind, str(v), i, stats)
                except Mismatch as m:
                    return Verdict("mismatch", str(m), i, stats)
        return Verdict("ok", "", calls - 1, stats)
    finally:
        stats.graphs = getattr(counter, "graphs", 0)
