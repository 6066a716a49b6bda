"""Fault injection for tests: one internal bytegraph step raises `InjectedFault` on its Nth call.

`POINTS` is the table of injection points (documented in docs/architecture.md, "Fault
injection"). Each point names the steps it covers by dotted path:

* `"pkg.module.name"` or `"pkg.module.Class.method"`: the attribute is replaced, for the
  duration of `inject(...)`, by a wrapper that counts calls and raises on the Nth. A
  function imported by name into another module is patched where it is *looked up*
  (`bytegraph.translate.breaks.make_resume_function`, not `...resume.make_resume_function`).
* `"dispatch:pkg.module.FamilyClass"`: every entry of the translator's dispatch table
  (`translate/translator.py::DISPATCH`, a list built at import) whose handler is defined
  in that opcode-handler family; the entries are replaced in place (the run loop reads
  the same list), and the count is over the whole family.
* `"backend"`: the backend call; a backend made by `backend(inner)` calls `step("backend")`
  before delegating, so it counts and raises like the others.

`inject(point, n)` is a context manager yielding a `Probe` (`.calls` so far, `.fired`);
`n=None` only counts (used to learn how many calls a program makes). Test-only: bytegraph
itself has no hook for this.
"""
from __future__ import annotations

import contextlib
import functools
import importlib
from dataclasses import dataclass


class InjectedFault(Exception):
    """The distinctive error an injection point raises (not a subclass of any error that
    bytegraph catches on purpose, such as AttributeError or TypeError)."""


@dataclass(frozen=True)
class InjectionPoint:
    name: str
    covers: str
    targets: tuple[str, ...]


POINTS = (
    InjectionPoint("stack ops", "opcode handlers of `translate/ops_stack.py` (NOP, POP_TOP, COPY, "
                   "RETURN_VALUE, ...)", ("dispatch:bytegraph.translate.ops_stack.StackOps",)),
    InjectionPoint("load/store ops", "opcode handlers of `translate/ops_load_store.py` (LOAD_FAST, "
                   "LOAD_GLOBAL, STORE_ATTR, BINARY_SUBSCR, ...)",
                   ("dispatch:bytegraph.translate.ops_load_store.LoadStoreOps",)),
    InjectionPoint("operator ops", "opcode handlers of `translate/ops_operators.py` (BINARY_OP, "
                   "COMPARE_OP, ...)", ("dispatch:bytegraph.translate.ops_operators.OperatorOps",)),
    InjectionPoint("build ops", "opcode handlers of `translate/ops_build.py` (BUILD_*, UNPACK_*, "
                   "FORMAT_VALUE, MAKE_FUNCTION, ...)", ("dispatch:bytegraph.translate.ops_build.BuildOps",)),
    InjectionPoint("call ops", "opcode handlers of `translate/ops_calls.py` (PRECALL, CALL, KW_NAMES, ...)",
                   ("dispatch:bytegraph.translate.ops_calls.CallOps",)),
    InjectionPoint("jump ops", "opcode handlers of `translate/ops_jumps.py` (jumps, GET_ITER, FOR_ITER, ...)",
                   ("dispatch:bytegraph.translate.ops_jumps.JumpOps",)),
    InjectionPoint("variable building", "`vars/builder.py::wrap` (trackers and guards for real values)",
                   ("bytegraph.vars.builder.wrap",)),
    InjectionPoint("guard building", "`OutputGraph.add_guard` and `add_guard_at` (every guard the trace "
                   "installs)", ("bytegraph.graph.output_graph.OutputGraph.add_guard",
                                 "bytegraph.graph.output_graph.OutputGraph.add_guard_at")),
    InjectionPoint("guard finishing", "`OutputGraph.finish_guards` (the capture's guard list, shape clauses "
                   "rendered)", ("bytegraph.graph.output_graph.OutputGraph.finish_guards",)),
    InjectionPoint("guard compilation", "`guards/compile.py::CompiledGuards` (the generated guard function "
                   "of a compiled or an eager entry)", ("bytegraph.guards.compile.CompiledGuards.__init__",)),
    InjectionPoint("fake-tensor op execution", "`OutputGraph.call_op` (an op run on fake tensors, its FX node)",
                   ("bytegraph.graph.output_graph.OutputGraph.call_op",)),
    InjectionPoint("fake-tensor memo", "`graph/fake_memo.py::remember` (called while the fake op's "
                   "errors are classified)", ("bytegraph.graph.fake_memo.remember",)),
    InjectionPoint("graph input fakes", "`graph/fake_inputs.py::fake_input` (the fake of a graph input)",
                   ("bytegraph.graph.output_graph.fake_input",)),
    InjectionPoint("residual codegen", "`graph/codegen.py` (every instruction `PyCodegen` emits)",
                   ("bytegraph.graph.codegen.PyCodegen._emit",)),
    InjectionPoint("backend", "the backend call on the finished `GraphModule`", ("backend",)),
    InjectionPoint("resume-function creation", "`translate/resume.py::make_resume_function` at a break",
                   ("bytegraph.translate.breaks.make_resume_function",)),
    InjectionPoint("continuation creation", "`translate/continuation.py::make_continuation` at a nested break",
                   ("bytegraph.translate.breaks.make_continuation",)),
    InjectionPoint("side-effect replay", "`SideEffects.replay` (residual code of the logged mutations)",
                   ("bytegraph.graph.side_effects.SideEffects.replay",)),
    InjectionPoint("break handling", "`translate/breaks.py`: `emit_break`, `nested_break`, `resumable_reason`",
                   ("bytegraph.translate.capture.emit_break", "bytegraph.translate.capture.nested_break",
                    "bytegraph.translate.capture.resumable_reason")),
    InjectionPoint("callee compilation", "`CompiledFunction.compile_callee` (the wrapper of a resume "
                   "function or a graph-broken callee)",
                   ("bytegraph.runtime.compiled_function.CompiledFunction.compile_callee",)),
    InjectionPoint("cache install", "`CompiledFunction._compile_wrapper_code` (the wrapper's code with "
                   "one more entry)", ("bytegraph.runtime.compiled_function.CompiledFunction._compile_wrapper_code",)),
)
BY_NAME = {p.name: p for p in POINTS}


class Probe:
    """Counts the calls of one injection point and raises on call number `n`."""

    def __init__(self, point: InjectionPoint, n: int | None):
        self.point = point
        self.n = n
        self.calls = 0
        self.fired = False

    def hit(self) -> None:
        self.calls += 1
        if self.calls == self.n:
            self.fired = True
            raise InjectedFault(f"injected fault #{self.n} in {self.point.name}")


_active: dict[str, Probe] = {}


def step(name: str) -> None:
    """Count a call of point `name` (raise if it is the one chosen); no-op when not injected."""
    probe = _active.get(name)
    if probe is not None:
        probe.hit()


def backend(inner):
    """A backend that is the "backend" injection point, delegating to `inner`."""

    def call(gm, example_inputs):
        step("backend")
        return inner(gm, example_inputs)

    return call


@contextlib.contextmanager
def inject(point: InjectionPoint | str, n: int | None):
    """Make `point` raise `InjectedFault` on its `n`th call inside the block (None: count only)."""
    if isinstance(point, str):
        point = BY_NAME[point]
    probe = Probe(point, n)
    undo = []
    try:
        for target in point.targets:
            if target == "backend":
                continue
            if target.startswith("dispatch:"):
                undo += _patch_dispatch(target.removeprefix("dispatch:"), probe)
            else:
                undo.append(_patch_attribute(target, probe))
        _active[point.name] = probe
        yield probe
    finally:
        _active.pop(point.name, None)
        for restore in reversed(undo):
            restore()


def _counted(fn, probe: Probe):
    @functools.wraps(fn)
    def faulty(*args, **kwargs):
        probe.hit()
        return fn(*args, **kwargs)

    return faulty


def _resolve(path: str):
    """(owner object, attribute name) for a dotted path: the longest importable module
    prefix, then attribute lookups."""
    parts = path.split(".")
    for i in range(len(parts) - 1, 0, -1):
        try:
            owner = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for part in parts[i:-1]:
            owner = getattr(owner, part)
        return owner, parts[-1]
    raise ValueError(f"cannot resolve {path}")


def _patch_attribute(path: str, probe: Probe):
    owner, name = _resolve(path)
    original = owner.__dict__[name] if isinstance(owner, type) else getattr(owner, name)
    setattr(owner, name, _counted(original, probe))
    return lambda: setattr(owner, name, original)


def _patch_dispatch(family_path: str, probe: Probe) -> list:
    from bytegraph.translate import translator

    owner, name = _resolve(family_path)
    family = getattr(owner, name)
    handlers = {id(f) for f in vars(family).values() if callable(f)}
    table = translator.DISPATCH
    undo = []
    for opcode, handler in enumerate(table):
        if handler is not None and id(handler) in handlers:
            table[opcode] = _counted(handler, probe)
            undo.append(functools.partial(table.__setitem__, opcode, handler))
    assert undo, f"no dispatch entry is handled by {family_path}"
    return undo
