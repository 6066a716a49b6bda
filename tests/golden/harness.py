"""The golden-file harness: a registry of small cases and the text each one produces.

A case is a user function plus fixed inputs (`@case(...)` in `cases_*.py`). `render(c)`
runs it eagerly and compiled (through `helpers.check`, `check_sequence` or, for
`fullgraph=True` failures, a direct call), so every case is also a differential test, and
records through `compiled_function.LISTENERS` every cache entry the calls created (the
function itself, callees compiled at breaks, resume functions, continuations). For each
entry the text holds: the FX graph code, every guard clause (with what it means and the
user line that installed it), the graph-break reason, and the `dis` of the transformed
code object; a resume function or continuation also shows its own generated code once.
The log lines of the topics `graph_breaks` and `recompiles` (why a frame runs eagerly,
which guard failed) and bytegraph's warnings come first.

Hooks a case registers are numbered from 0 (`_hook_ids_from_zero`). Only what is really
unstable is normalized in the text (`normalize`): absolute paths (the repo root,
torch's and the standard library's directories), object addresses (`0x7f...`), and two
process-global counters, renumbered in order of first appearance within the case:
`__bg_graph_N` (graph names come from one counter for the whole process, so they depend
on which cases ran before in the same worker) and `__bg_obj_N` (`ObjectSource` names
carry the object's `id`); likewise the FX file name `<eval_with_key>.N` of a compiled-autograd
graph's code (its guards' locations) and its capture number (`capturing backward graph N`).

A graph's higher-order-op bodies (its submodules that are graph modules: `cond_true_0`,
`map_body_0`, `wrap_body_0`) follow it, each as `-- subgraph NAME` and its code. Mode
"compiled_autograd" also runs the `backward()` of the compiled function's output under
`bytegraph.compiled_autograd.enable`, so the backward graph is an entry of its own.
"""
from __future__ import annotations

import contextlib
import dis
import inspect
import logging
import os
import re
import sys
import sysconfig
import warnings
from dataclasses import dataclass, field
from typing import Callable

import torch
from torch.utils.hooks import RemovableHandle

import bytegraph
from bytegraph.runtime.compiled_function import LISTENERS
from bytegraph.translate.continuation import is_continuation_code
from bytegraph.translate.resume import is_resume_code
from helpers import _compare_runs as compare_runs
from helpers import _run as run_once
from helpers import _tensors as tensors_of
from helpers import assert_same, check, check_sequence, clone_inputs

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_STDLIB_DIR = sysconfig.get_paths()["stdlib"]


@dataclass
class Case:
    """One golden case: `fn` (or `make()` returning it) called on `args()`.

    mode: "check" (`helpers.check`: eager vs compiled, grads, a second call), "closure"
    (`make=True`: eager and compiled each get their own closure from `make()`, called twice),
    "sequence" (`helpers.check_sequence` over `calls()`, a list of argument tuples: guards
    and recompiles), "unsupported" (`fullgraph=True` must raise `bytegraph.Unsupported`,
    eager must not), or "compiled_autograd" (a compiled call, then `backward()` of its
    output under compiled autograd, twice: outputs and gradients against eager).
    """

    name: str
    module: str
    fn: Callable
    args: Callable = tuple
    calls: Callable | None = None
    mode: str = "check"
    make: bool = False
    xfail: str = ""  # a known bytegraph bug this case shows (the test is a strict xfail)
    config: dict = field(default_factory=dict)  # `bytegraph.config` values set for this case
    options: dict = field(default_factory=dict)

    @property
    def id(self) -> str:
        return f"{self.module.removeprefix('cases_')}.{self.name}"

    def target(self):
        return self.fn() if self.make else self.fn


CASES: dict[str, Case] = {}


def case(args: Callable = tuple, *, calls: Callable | None = None, mode: str | None = None,
         make: bool = False, xfail: str = "", config: dict | None = None, **options):
    """Register the decorated function as a golden case (its name is the case name).

    `args`/`calls` are factories (called under `torch.manual_seed(0)`), so inputs are fixed
    and fresh per run. `make=True`: the decorated function returns the function to compile
    (a closure with state: eager and compiled get one each, called twice). `xfail`: the
    known bug that makes compiled differ from eager (no golden file until it is fixed).
    `config`: `bytegraph.config` values for the case. `options` go to `helpers.check` or
    `helpers.check_sequence` (`setup=`, `state=`, `grads=`, ...).
    """
    def register(fn):
        module = fn.__module__.rsplit(".", 1)[-1]
        c = Case(fn.__name__, module, fn, args, calls,
                 mode or ("closure" if make else "sequence" if calls is not None else "check"),
                 make, xfail, dict(config or {}), options)
        assert c.id not in CASES, f"duplicate golden case {c.id}"
        CASES[c.id] = c
        return fn

    return register


# ----------------------------------------------------------------------------- rendering


class _Recorder:
    """The backend of one case, and the listener of the cache entries it creates."""

    def __init__(self):
        self.entries: list = []

    def __call__(self, gm, example_inputs):
        return gm.forward

    def listen(self, compiled, entry, graph_break) -> None:
        if compiled.backend is self:
            self.entries.append((compiled, entry, graph_break))


class _Lines(logging.Handler):
    def __init__(self):
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record):
        self.lines.append(f"[{record.name.rsplit('.', 1)[-1]}] {record.getMessage()}")


_LOG_TOPICS = ("graph_breaks", "recompiles")


@contextlib.contextmanager
def _log_lines():
    """The user-facing log lines of the topics `graph_breaks` and `recompiles`, in order."""
    handler = _Lines()
    saved = []
    for topic in _LOG_TOPICS:
        lg = logging.getLogger(f"bytegraph.{topic}")
        saved.append((lg, lg.level))
        lg.addHandler(handler)
        lg.setLevel(logging.DEBUG)
    try:
        yield handler.lines
    finally:
        for lg, level in saved:
            lg.removeHandler(handler)
            lg.setLevel(level)


@contextlib.contextmanager
def _hook_ids_from_zero():
    """Hooks registered by the case get ids 0, 1, ... (torch numbers them from one process-wide
    counter, so `m._forward_hooks` keys, which guards name, would depend on earlier tests).
    The counter is restored past every id handed out, so ids stay unique per hook dict."""
    saved = RemovableHandle.next_id
    RemovableHandle.next_id = 0
    try:
        yield
    finally:
        RemovableHandle.next_id = max(saved, RemovableHandle.next_id)


@contextlib.contextmanager
def _config(values: dict):
    saved = {name: getattr(bytegraph.config, name) for name in values}
    for name, value in values.items():
        setattr(bytegraph.config, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(bytegraph.config, name, value)


def render(c: Case) -> str:
    """Run case `c` (checking compiled against eager) and return its normalized golden text."""
    bytegraph.reset()
    recorder = _Recorder()
    LISTENERS.append(recorder.listen)
    try:
        with _log_lines() as log, _hook_ids_from_zero(), _config(c.config), \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            outcome = _run(c, recorder)
    finally:
        LISTENERS.remove(recorder.listen)
        bytegraph.reset()
    fn = c.target()
    lines = [f"# golden case {c.id}: {fn.__qualname__} "
             f"({_relpath(inspect.getsourcefile(c.fn))}:{c.fn.__code__.co_firstlineno}), mode {c.mode}"]
    lines += outcome
    graphs = sum(1 for _, e, _ in recorder.entries if e.graph_module is not None)
    breaks = sum(1 for _, _, b in recorder.entries if b is not None)
    lines.append(f"entries: {len(recorder.entries)}, graphs: {graphs}, graph breaks: {breaks}")
    if log:
        lines.append("log (graph_breaks, recompiles):")
        lines += [f"  {line}" for line in log]
    shown_warnings = [w for w in caught if w.category.__module__.startswith("bytegraph")]
    if shown_warnings:
        lines.append("warnings:")
        lines += [f"  {w.category.__name__}: {w.message}" for w in shown_warnings]
    shown: set = set()
    for i, (compiled, entry, brk) in enumerate(recorder.entries):
        lines += _render_entry(i + 1, compiled, entry, brk, shown)
    return normalize("\n".join(lines) + "\n")


def _run(c: Case, recorder: _Recorder) -> list[str]:
    torch.manual_seed(0)
    if c.mode == "closure":  # a closure keeps state between calls: eager and compiled get one each
        eager_fn, compiled_fn = c.fn(), bytegraph.compile(c.fn(), backend=recorder)
        for i in range(2):
            args = c.args()
            eager = run_once(eager_fn, clone_inputs(args), {}, 0, None, None)
            compiled = run_once(compiled_fn, clone_inputs(args), {}, 0, None, None)
            compare_runs(eager, compiled, f"call #{i + 1}", None, None)
        return []
    if c.mode == "check":
        check(c.target(), *c.args(), backend=recorder, **c.options)
        return []
    if c.mode == "sequence":
        check_sequence(c.target(), c.calls(), backend=recorder, **c.options)
        return []
    if c.mode == "compiled_autograd":
        return _run_compiled_autograd(c, recorder)
    assert c.mode == "unsupported", c.mode
    fn = c.target()
    fn(*c.args())  # eager runs fine
    bytegraph.reset()
    try:
        bytegraph.compile(fn, backend=recorder, fullgraph=True)(*c.args())
    except bytegraph.Unsupported as e:
        return ["Unsupported:", *(f"  {line}" for line in str(e).splitlines())]
    raise AssertionError(f"{c.id}: fullgraph=True did not raise bytegraph.Unsupported")


def _run_compiled_autograd(c: Case, recorder: _Recorder) -> list[str]:
    """The forward compiled and the `backward()` of its output captured by compiled autograd
    (`bytegraph.compiled_autograd.enable`), both with the case's backend, twice (the second
    backward reuses the graph), against eager: outputs, arguments, then their gradients."""
    fn = c.target()
    compiled_fn = bytegraph.compile(fn, backend=recorder)
    for i in range(2):
        args = c.args()
        label = f"call #{i + 1}"
        eager = run_once(fn, clone_inputs(args), {}, 0, None, None)
        compiled = run_once(compiled_fn, clone_inputs(args), {}, 0, None, None)
        compare_runs(eager, compiled, label, None, None)
        eager.out.backward()
        with bytegraph.compiled_autograd.enable(recorder):
            compiled.out.backward()
        grads = [t for t in tensors_of(eager.args) if t.requires_grad]
        compiled_grads = [t for t in tensors_of(compiled.args) if t.requires_grad]
        assert len(grads) == len(compiled_grads), f"{label}: argument tensors requiring grad differ"
        for j, (te, tc) in enumerate(zip(grads, compiled_grads)):
            assert te.grad is not None and tc.grad is not None, f"{label}: grad of argument tensor #{j} missing"
            assert_same(te.grad, tc.grad, f"{label} grad of argument tensor #{j}")
    return []


def _render_entry(index: int, compiled, entry, brk, shown: set) -> list[str]:
    code = compiled.code
    head = f"== entry {index}: {code.co_qualname} [{entry.kind}]"
    if entry.graph_name:
        head += f" calls {entry.graph_name}"
    lines = ["", head]
    if (is_resume_code(code) or is_continuation_code(code)) and code not in shown:
        shown.add(code)
        lines += ["-- generated code of " + code.co_qualname, _dis(code)]
    if entry.graph_module is not None:
        lines += ["-- graph", entry.graph_module.code.strip()]
        for name, sub in _subgraphs(entry.graph_module):
            lines += [f"-- subgraph {name}", sub.code.strip()]
    lines.append("-- guards")
    for guard, clause in zip(entry.guards.guards, entry.guards.clauses):
        lines.append(f"{clause}")
        where = f"  @ {guard.user_location}" if guard.user_location else ""
        lines.append(f"    # {guard.describe()}{where}")
    if brk is not None:
        lines += ["-- graph break", f"[{brk.category}] {brk.reason}", f"at {brk.location}"]
        lines += [f"  in {frame}" for frame in brk.user_stack]
        if brk.hint:
            lines.append(f"hint: {brk.hint}")
    elif entry.reason:
        lines += ["-- runs eagerly", entry.reason]
    if entry.kind == "compiled":
        lines += ["-- residual bytecode", _dis(entry.fn.__code__)]
    return lines


def _subgraphs(gm) -> list:
    """The graph modules inside `gm` (a higher-order op's bodies: `cond_true_0`, `map_body_0`,
    `wrap_body_0`, ...), nested ones as `outer.inner`, in the order they were added."""
    return [(name, m) for name, m in gm.named_modules() if name and isinstance(m, torch.fx.GraphModule)]


class _Shown:
    """A constant as `dis` shows it in golden text (see `_dis`)."""

    def __init__(self, text: str):
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _dis(code) -> str:
    """`dis` of `code`, except that a module's globals dict loaded as a constant (residual code
    building a function made during tracing) shows as `<globals of NAME>`: its repr lists
    every global, including the `__bg_graph_N` installed by earlier cases."""
    consts = tuple(_Shown(f"<globals of {c['__name__']}>") if _is_module_dict(c) else c
                   for c in code.co_consts)
    return dis.Bytecode(code.replace(co_consts=consts)).dis().rstrip()


def _is_module_dict(value) -> bool:
    if type(value) is not dict or not isinstance(value.get("__name__"), str):
        return False
    module = sys.modules.get(value["__name__"])
    return module is not None and module.__dict__ is value


# ----------------------------------------------------------------------------- normalizing


def _relpath(path: str) -> str:
    return os.path.relpath(path, ROOT)


_ADDRESS = re.compile(r"\b0x[0-9a-fA-F]{4,}\b")
_COUNTED = re.compile(r"(\b__bg_graph_|\b__bg_obj_|<eval_with_key>\.|\bcapturing backward graph )(\d+)\b")


def normalize(text: str) -> str:
    """Paths relative to the repo (torch and stdlib as `<torch>`/`<stdlib>`), no object
    addresses, process-global counters renumbered by first appearance in `text` (per counter)."""
    text = text.replace(_TORCH_DIR + os.sep, "<torch>/").replace(_STDLIB_DIR + os.sep, "<stdlib>/")
    text = text.replace(ROOT + os.sep, "")
    text = _ADDRESS.sub("0x?", text)
    numbers: dict = {}

    def renumber(m: re.Match) -> str:
        key = (m.group(1), m.group(2))
        if key not in numbers:
            numbers[key] = sum(1 for prefix, _ in numbers if prefix == m.group(1))
        return f"{m.group(1)}{numbers[key]}"

    return _COUNTED.sub(renumber, text)
