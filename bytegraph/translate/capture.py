"""Capture of one frame: trace the root function, compile its graph with the backend,
and generate the transformed code object that calls the graph and rebuilds the return
value. The result is everything a cache entry needs.
"""
from __future__ import annotations

import functools
import itertools
import time
import types
from dataclasses import dataclass, field

import torch.fx
from torch.fx.experimental.symbolic_shapes import ConstraintViolationError

from .. import config
from .._bytecode.assemble import make_code
from ..errors import GraphBreak, InternalTracerError, TracedRaise, UserCodeRaisesError
from ..graph import ddp_split
from ..graph.codegen import PyCodegen
from ..graph.output_graph import OutputGraph, add_stack_traces
from ..guards.guard import Guard, GuardKind
from ..guards.sources import ClosureSource, GlobalsDictSource, LocalCellContentsSource, LocalSource
from ..vars import requires_grad
from ..vars.autocast import emit as autocast
from ..vars.functions import CellVariable
from ..vars.lazy_int import wrap_int
from ..vars.symbolic import is_unbacked
from . import gc_pause
from .breaks import call_depth, emit_break, nested_break, resumable_reason
from .continuation import is_continuation_code
from .lazy_arguments import ArgumentLocals
from .resume import is_resume_code
from .speculation import RestartCapture, SpeculationLog
from .translator import Translator

_graph_ids = itertools.count()


@dataclass
class Capture:
    """What one successful trace produced, and where its time went (tooling reads the
    phases: `seconds` = tracing and codegen + `backend_seconds` + `guard_seconds`)."""

    fn: types.FunctionType           # transformed function, same signature as the original
    graph_module: torch.fx.GraphModule | None
    graph: tuple | None              # (global name, compiled graph) for the runtime to install
    graph_break: GraphBreak | None = None  # set when the capture ended at a resumable break
    side_effects: tuple = ()         # what the residual code replays, in words (SideEffects.summary)
    guards: list = field(default_factory=list)  # Guard objects, in the order they were installed
    started: float = 0.0             # time.perf_counter() when the capture began
    seconds: float = 0.0             # the whole capture, restarts included
    backend_seconds: float = 0.0     # the backend compiling the graph
    guard_seconds: float = 0.0       # finishing the guards (the runtime compiles them after)
    traced_files: frozenset = frozenset()  # the files of every code object the trace translated
    static: bool = True              # no symbolic size: the graph's inputs are the real tensors


def argument_names(code: types.CodeType) -> tuple[str, ...]:
    """Names of all argument locals in `co_varnames` order (incl. *args and **kwargs)."""
    n = code.co_argcount + code.co_kwonlyargcount
    n += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)
    return code.co_varnames[:n]


def capture(fn: types.FunctionType, values: tuple, backend, fullgraph: bool = False,
            compile_fn=None, dynamic=None, spellings: dict | None = None) -> Capture:
    """Trace `fn` called with argument locals `values`.

    Returns a `Capture`; at a resumable graph break (not under `fullgraph`) the capture
    ends there and `Capture.graph_break` says why. Raises GraphBreak (nothing could be
    captured), UserCodeRaisesError or InternalTracerError. A break inside inlined calls
    ends the capture there too, the callers continuing in a continuation (Note
    [Continuations]); where that is impossible the capture restarts, breaking at the call
    of the deepest frame that can resume after it (`breaks.call_depth`; the root's at
    worst). Every restart keeps what earlier attempts learned in the capture's
    speculation log (Note [Speculation log]). `dynamic` is the function's DynamicState
    (Note [Symbolic sizes]), None for static shapes. `spellings`: how torch.compile spells
    the frame's arguments, where it traces another frame (Note [Graph input names]).
    """
    start = time.perf_counter()
    log = SpeculationLog()
    ddp_modules = ddp_split.candidates(values)  # Note [DDP bucket splits]: DDP's marker is set now
    while True:
        output = None
        try:
            output = OutputGraph(dynamic, log, spellings)
            result = _trace_and_codegen(fn, values, backend, output, fullgraph, compile_fn, ddp_modules)
        except RestartCapture as e:
            if not e.counted or log.restart():
                continue
            raise InternalTracerError(AssertionError(f"{fn.__qualname__}: the capture restarted "
                                                     "too often"), _finished_guards(output)) from None
        except GraphBreak as e:
            if len(e.chain) > 1 and not fullgraph and log.break_at_call(e) and log.restart():
                continue
            e.guards = _finished_guards(output)
            raise
        except UserCodeRaisesError as e:
            e.guards = _finished_guards(output)
            raise
        except Exception as e:  # a tracer bug: reported with the guards seen so far
            raise InternalTracerError(e, _finished_guards(output) if output is not None else []) from e
        traced = time.perf_counter()
        result.guards = _finished_guards(output, result.graph is not None)
        result.traced_files, result.static = frozenset(output.traced_files), output.shapes is None
        end = time.perf_counter()
        result.started, result.seconds, result.guard_seconds = start, end - start, end - traced
        return result


def _finished_guards(output, runs_graph: bool = False) -> list:
    """`output.finish_guards()`; failing to make them is a tracer bug, an InternalTracerError
    without guards (its eager fallback is then not cached: the next call captures again), but
    for a `mark_dynamic` dimension the trace specialized (raised to the user, as torch.compile).
    `runs_graph`: the entry calls a graph (its ops' dtypes depend on the ambient autocast state)."""
    try:
        return output.finish_guards(runs_graph)
    except ConstraintViolationError:  # the user's `mark_dynamic` asked for what the code cannot be
        raise
    except Exception as e:
        raise InternalTracerError(e, None) from e


def _trace_and_codegen(fn, values, backend, output, fullgraph, compile_fn, ddp_modules):
    code = fn.__code__
    resumed = is_resume_code(code) or is_continuation_code(code)
    # Note [Arguments wrapped when read]: each argument is wrapped, and guarded, at its first read
    arguments = ArgumentLocals(dict(zip(argument_names(code), values)), None)
    tx = Translator(code, fn.__globals__, GlobalsDictSource(), arguments, {}, output)
    arguments.wrap = functools.partial(_wrap_argument, tx, resumed)
    output.globals_sources[id(fn.__globals__)] = tx.globals_source
    output.set_current_tx(tx)
    with output.tracing():
        for i, (name, cell) in enumerate(zip(code.co_freevars, fn.__closure__ or ())):
            tx.cells[name] = CellVariable.real_cell(name, cell, ClosureSource(i, name), output)
            output.side_effects.remember(cell, tx.cells[name])
        brk = None
        try:
            result = tx.run()
        except GraphBreak as e:
            for name in list(arguments.not_read):  # the rest of the frame may read them: wrapped as before
                arguments[name]
            frames, e.frames = e.frames, ()
            if fullgraph or compile_fn is None:
                raise
            if len(frames) > 1:
                nested = nested_break(frames, fn)
                if nested is None:
                    e.call_depth = call_depth(frames, fn)
                    raise  # capture() restarts, breaking at that frame's call
            else:
                why_not = resumable_reason(tx)
                if why_not is not None:
                    e.reason = f"{e.reason} (and {why_not}, so the frame runs eagerly)"
                    raise
                nested = ([], fn, None)
            brk = e
        except TracedRaise as e:  # Note [Traced exceptions]: it escapes the compiled function
            raise UserCodeRaisesError(e.exc.message(), e.location) from None
    output.set_current_tx(tx)
    cg = PyCodegen(tx, code, tx.inst.lineno or code.co_firstlineno)
    if brk is not None:
        outputs = []

        def emit_graph_call(cg, values):
            outputs.extend(_graph_outputs(cg, output, values))

        def restore_world(cg):
            output.side_effects.replay(cg)
            if output.grad_enabled != output.initial_grad_enabled:  # eager code runs next: set the mode
                cg.set_grad_mode(output.grad_enabled)
            autocast.emit_real_transitions(cg, output, at_break=True)

        waiting, breaking_fn, restore_on_raise = nested
        try:
            emit_break(cg, frames[-1], breaking_fn, waiting, compile_fn, emit_graph_call, restore_world,
                       restore_on_raise)
        except GraphBreak as e:
            if len(frames) == 1:  # the break's own reason comes first: it is where the frame stops
                brk.reason = f"{brk.reason} (and a live value cannot be rebuilt there: {e.reason}; " \
                             "the frame runs eagerly)"
            raise brk from None  # nested: capture() restarts, breaking at the root's call
        # The graph is compiled only now that the residual code is known to be possible.
        residual, cg.instructions = cg.instructions, []
        graph, backend_seconds = _emit_graph_call(cg, output, outputs, backend, ddp_modules, at_break=True)
        cg.instructions += residual
        return Capture(_transformed_function(cg, fn), cg.graph_module, graph, brk, output.side_effects.summary(),
                       backend_seconds=backend_seconds)
    graph, backend_seconds = _emit_graph_call(cg, output, _graph_outputs(cg, output, result), backend,
                                              ddp_modules)
    cg.reconstruct(result)
    output.side_effects.replay(cg)  # Note [Side-effect replay]: after the return value is loaded
    autocast.emit_real_transitions(cg, output, at_break=False)
    cg.return_value()
    return Capture(_transformed_function(cg, fn), cg.graph_module, graph, None, output.side_effects.summary(),
                   backend_seconds=backend_seconds)


def _wrap_argument(tx, resumed: bool, name: str, value):
    """The tracker of argument `name` of the root frame, made at its first read (its guards
    are located at the first LOAD_FAST/LOAD_DEREF of `name`: one made by MAKE_CELL moves there)."""
    with tx.output.guards_located_at_first_use(name):
        if resumed and type(value) in (int, float):  # e.g. a timestamp carried across a break
            return wrap_int(tx, value, LocalSource(name))
        if resumed and type(value) is types.CellType:  # Note [Resumed cells]
            return _cell_argument(tx.output, name, value)
        return tx.wrap(value, LocalSource(name))


def _cell_argument(output: OutputGraph, name: str, cell: types.CellType) -> CellVariable:
    """The tracker of a real cell passed in argument `name` (one tracker per real cell)."""
    vt = CellVariable.real_cell(name, cell, LocalCellContentsSource(name), output)
    known = output.side_effects.tracker_for(cell)
    if known is not None:  # the same cell passed twice: it must stay shared
        output.add_guard(Guard(GuardKind.SAME_OBJECT, vt.source.cell(), known.source.cell()))
        return known
    output.side_effects.remember(cell, vt)
    return vt


def _transformed_function(cg: PyCodegen, fn: types.FunctionType) -> types.FunctionType:
    """The residual code in `cg` as a function with `fn`'s signature, globals and closure."""
    code = fn.__code__
    new_code = make_code(cg.finish(), like=code, name=code.co_name, given_handler_depths=True)
    new_fn = types.FunctionType(new_code, fn.__globals__, code.co_name, fn.__defaults__, fn.__closure__)
    new_fn.__kwdefaults__ = fn.__kwdefaults__
    return new_fn


def _graph_outputs(cg: PyCodegen, output: OutputGraph, result) -> list:
    """The graph-computed tensors residual code needs (`result`'s, then those the side-effect
    replay writes), each given its slot in the graph's output tuple (`cg.graph_outputs`)."""
    outputs = []
    _collect_graph_tensors(result, outputs, cg.graph_outputs)
    for vt in output.side_effects.values():
        _collect_graph_tensors(vt, outputs, cg.graph_outputs)
    return outputs


def _emit_graph_call(cg: PyCodegen, output: OutputGraph, outputs: list, backend, ddp_modules: tuple,
                     at_break: bool = False) -> tuple:
    """Compile the graph (if it has any op) and emit the call to it; returns ((its global
    name, the compiled graph) or None, the backend's seconds). The runtime installs it with
    the cache entry, so a capture that fails later leaves nothing in the function's globals.
    At a break, grad-mode switches alone are no graph: the residual code sets the mode the
    eager code runs in anyway (`restore_world`), so a `with torch.no_grad():` entered just
    before a break costs no graph call, as in torch.compile. A graph of a DDP module of
    `ddp_modules` may go to the backend in pieces (Note [DDP bucket splits])."""
    graph = output.graph
    _drop_cancelling_grad_switches(graph)
    if not any(node.op != "placeholder" and not (at_break and _is_grad_switch(node)) for node in graph.nodes):
        return None, 0.0
    autocast.close_graph(output)  # Note [Autocast in the trace]: the graph is balanced
    tx = output.current_tx
    graph.output(tuple(vt.node if vt.is_tensor else vt.as_fx_arg(tx) for vt in outputs))
    add_stack_traces(graph)
    if config.debug:
        graph.lint()
    gm = output.graph_module(graph)
    if output.block_counts:  # counted in bytegraph.counters["blocks"] (runtime/counters.py)
        gm.meta["bg_blocks"] = dict(output.block_counts)
    if output.shapes is not None:
        output.shapes.insert_runtime_asserts(gm)
    # As torch.compile's: real tensors, or fakes with symbolic sizes and SymInts when dynamic
    example_inputs = [real for _, _, real in output.inputs] if output.shapes is None else \
        [vt.example for _, vt, _ in output.inputs]
    grad_mode = torch.is_grad_enabled()
    reals = [real for _, _, real in output.inputs]
    with gc_pause.resumed():  # Note [GC paused during a capture]
        started = time.perf_counter()
        try:
            compiled = ddp_split.compile_graph(gm, example_inputs, reals, backend, ddp_modules)
        finally:  # a backend that runs the graph (AOT autograd traces it) may leave its grad mode set
            torch._C._set_grad_enabled(grad_mode)
        backend_seconds = time.perf_counter() - started
    name = new_graph_name()
    cg.graph_module = gm
    cg.call_graph(name, [src for src, _, _ in output.inputs])
    if output.grad_flags:
        requires_grad.replay_flags(cg, output, outputs)
    return (name, compiled), backend_seconds


def _is_grad_switch(node) -> bool:
    return node.op == "call_function" and node.target is torch._C._set_grad_enabled


def _drop_cancelling_grad_switches(graph: torch.fx.Graph) -> None:
    """Erase each grad-mode switch that the next node switches back (`with torch.no_grad():`
    around code that recorded no op), as torch.compile does: every recorded switch changes
    the mode, so a pair with nothing between leaves it as it was, and erasing one may make
    the switches around it a pair."""
    kept: list = []
    for node in list(graph.nodes):
        if _is_grad_switch(node) and kept and _is_grad_switch(kept[-1]) and kept[-1].args != node.args \
                and not node.users and not kept[-1].users:
            graph.erase_node(node)
            graph.erase_node(kept.pop())
        else:
            kept.append(node)


def new_graph_name() -> str:
    """A global name for a compiled graph that no other graph of this process has."""
    return f"__bg_graph_{next(_graph_ids)}"


def _collect_graph_tensors(vt, outputs: list, index: dict, seen: set | None = None) -> None:
    """Assign an output slot to every graph-computed tensor reachable from `vt` (the return
    value, or a value the side-effect replay writes: containers, closures, cells) through
    the trackers each holds (`children()`)."""
    if vt.is_tensor or is_unbacked(vt):  # a number from tensor data is known only to the graph
        if vt.source is None and id(vt) not in index:
            index[id(vt)] = len(outputs)
            outputs.append(vt)
        return
    if seen is None:
        seen = set()
    if id(vt) in seen:
        return
    seen.add(id(vt))
    for child in vt.children():
        _collect_graph_tensors(child, outputs, index, seen)
