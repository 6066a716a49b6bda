"""The output graph of one capture: the FX graph, its inputs by source, fake example
values, the guards collected, and the grad mode and autocast state (`vars/autocast/`)
the traced code is in.

Graph inputs are placeholders, one per distinct real tensor (two sources reaching the
same tensor share a placeholder). Every op is run once on fake tensors to get its
example value; errors from that run are classified into graph breaks (data-dependent
output, op without a fake kernel) and errors of the user's own program.

Speculation (Note [Checkpoints]): `checkpoint()` captures the position of everything a
speculation can change, `restore(cp)` puts it back exactly, `release(cp)` keeps the
changes; `subgraph()` records ops into a child FX graph, lifting the outer values used
inside it to the child's placeholders.
"""
from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import itertools
import logging
import operator
import re
import sys

import torch
import torch.fx
from torch._subclasses.fake_tensor import (DataDependentOutputException, DynamicOutputShapeException,
                                           UnsupportedOperatorException)
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

from . import fake_memo
from .backends import LIVES_ACROSS_CALLS
from .fake_inputs import fake_input
from .fake_mode import make_fake_mode
from .fx_nodes import op_node
from .shapes import DynamicState, Shapes
from .side_effects import SideEffects
from .. import config
from ..errors import UserCodeRaisesError
from ..guards.guard import Guard, GuardKind, TensorSpec
from ..guards.sources import ObjectSource, SizeSource
from ..vars import requires_grad
from ..vars.autocast import state as autocast
from ..vars.base import VariableTracker
from ..vars.builder import wrap_op_result
from ..vars.containers import NamedTupleVariable, TupleVariable
from ..vars.symbolic import SYM_TYPES, SymNodeVariable
from ..vars.torch_op_rule import written_arguments
from ..vars.tensor import TensorVariable

_FAKE_TENSOR_LOG = logging.getLogger("torch._subclasses.fake_tensor")
# Note [Data-dependent capture] (graph/shapes.py): the config field that captures each kind of error
_DATA_DEPENDENT_ERRORS = {DataDependentOutputException: "capture_scalar_outputs",
                          DynamicOutputShapeException: "capture_dynamic_output_shape_ops"}


class OutputGraph:
    def __init__(self, dynamic: DynamicState | None = None, speculation_log=None, spellings: dict | None = None):
        self.graph = torch.fx.Graph()
        # the root frame's arguments as torch.compile spells them (Note [Graph input names])
        self._respell = _respelling(spellings)
        self.fake_mode = make_fake_mode()
        self.dynamic = dynamic  # the compiled function's DynamicState (Note [Symbolic sizes])
        self.shapes = None      # its Shapes (the ShapeEnv), once a value is symbolic
        self.tracked: dict = {}
        # source -> the real object wrapped from it (`id()` of it is a constant: vars/builtins.py)
        self.source_objects: dict = {}
        self.guards: dict = {}
        self.first_use: dict = {}  # root argument/cell name -> keys of guards made when wrapping it
        self.inputs: list = []  # (source, TensorVariable, real tensor), in placeholder order
        # id(globals dict) -> the first source that reached it (Note [Globals sources])
        self.globals_sources: dict = {}
        # the files of the code objects the capture translated (the capture cache re-hashes them)
        self.traced_files: set = set()
        # id(obj) -> (obj, its ObjectSource): `object_source`
        self._object_sources: dict = {}
        self._input_by_id: dict = {}
        self.grad_enabled = torch.is_grad_enabled()
        self.initial_grad_enabled = self.grad_enabled
        # whether the compiled function's caller handles an exception (Note [The caller's exception])
        self.caller_exception = sys.exc_info()[1] is not None
        self.autocast = None  # the capture's AutocastTrace, once used (Note [Autocast in the trace])
        self.current_tx = None
        self.side_effects = SideEffects(self)
        self.speculation_log = speculation_log  # the capture's SpeculationLog (translate/speculation.py)
        self.guard_aliases = 0   # guard-local alias numbers (`next_guard_alias`)
        self.open_generators: list = []  # generators suspended inside try/with (translate/generators.py)
        self.generator_holders: dict = {}  # id(open generator) -> its last witness (translate/generators.py)
        self.intermediate_hooks = None  # the slot of hooks on graph tensors (vars/hooks/intermediate.py)
        self.grad_flags: dict = {}  # id(fake) -> fake whose requires_grad the trace set (vars/requires_grad.py)
        self.contexts: list = []  # the contextvars Contexts being run, innermost last (vars/context_vars.py)
        self._unguarded: set = set()  # sources of inputs the residual code makes (never guarded)
        self.root_graph = self.graph
        self._subgraphs: list = []   # the open `subgraph()` scopes, innermost last
        self.submodules: dict = {}   # name -> FX graph of a higher-order op's body (vars/hops)
        # (module class, forward) -> the BlockRecord of its latest recorded call (vars/repeated_blocks.py)
        self.block_records: dict = {}
        self.block_counts = collections.Counter()  # "recorded"/"reused"/"traced": counters["blocks"]
        self.add_guard(Guard(GuardKind.GRAD_MODE, None, self.grad_enabled))

    # ---- state set by the trackers and the translator ---------------------------------
    def set_current_tx(self, tx):
        """Make `tx` the translator whose frame is being traced; returns the previous one."""
        previous = self.current_tx
        self.current_tx = tx
        return previous

    def next_guard_alias(self) -> int:
        """A fresh number for a guard-local alias (`__bg_m<n>`, `__bg_s<n>`): small and stable
        across runs, restored by checkpoints."""
        index = self.guard_aliases
        self.guard_aliases = index + 1
        return index

    def set_autocast(self, trace) -> None:
        """Make `trace` (an `AutocastTrace`, or None) the capture's autocast record
        (Note [Autocast in the trace])."""
        self.autocast = trace

    def set_intermediate_hooks(self, slot) -> None:
        """Make `slot` the capture's intermediate-hook slot tracker (vars/hooks/intermediate.py)."""
        self.intermediate_hooks = slot

    # ---- speculation (Note [Checkpoints]) ----------------------------------------------
    def checkpoint(self) -> "GraphCheckpoint":
        """The position of everything a speculation can change in the output graph."""
        graphs = [self.root_graph] + [sub.graph for sub in self._subgraphs]
        return GraphCheckpoint(
            self.graph, tuple(_graph_position(g) for g in graphs), tuple(len(s.lifted) for s in self._subgraphs),
            len(self.guards), dict(self.first_use), len(self.inputs), len(self.tracked),
            len(self.globals_sources), self.grad_enabled, torch.is_grad_enabled(), self.current_tx,
            self.guard_aliases, self.side_effects.checkpoint(), self.autocast, len(self.submodules))

    def restore(self, cp: "GraphCheckpoint") -> None:
        """Undo everything since `cp` (which stays active; `release` it when done)."""
        self.side_effects.restore(cp.side_effects)
        del self._subgraphs[len(cp.lifted):]
        self.graph = cp.graph
        for position in cp.graphs:
            _erase_after(*position)
        for sub, lifted in zip(self._subgraphs, cp.lifted):
            for outer, _ in sub.lifted[lifted:]:
                del sub._by_outer[outer]
            del sub.lifted[lifted:]
        _truncate(self.guards, cp.guards)
        self.first_use.clear()
        self.first_use.update(cp.first_use)
        for _, vt, real in self.inputs[cp.inputs:]:
            del self._input_by_id[id(real)]
        del self.inputs[cp.inputs:]
        _truncate(self.tracked, cp.tracked)
        _truncate(self.globals_sources, cp.globals_sources)
        _truncate(self.submodules, cp.submodules)
        self.grad_enabled = cp.grad_enabled
        torch._C._set_grad_enabled(cp.real_grad_enabled)
        self.current_tx = cp.current_tx
        self.guard_aliases = cp.guard_aliases
        if self.autocast is not cp.autocast:
            autocast.set_trace(self, cp.autocast)

    def release(self, cp: "GraphCheckpoint") -> None:
        """Keep everything since `cp` (the speculation succeeded)."""
        self.side_effects.release(cp.side_effects)

    @contextlib.contextmanager
    def subgraph(self):
        """Record the ops of this block into a child FX graph (`Subgraph.graph`). A value of
        an enclosing graph used inside (a tensor computed outside, a graph input such as a
        parameter, a symbolic value) becomes a placeholder of the child, in first-use order
        (`Subgraph.lifted`: (outer node, child placeholder)). New graph inputs read inside
        are inputs of the root graph, lifted like any outer value."""
        sub = Subgraph(torch.fx.Graph(), self.graph)
        self._subgraphs.append(sub)
        self.graph = sub.graph
        try:
            yield sub
        finally:
            if sub in self._subgraphs:  # a restore inside may have closed it already
                self._subgraphs.remove(sub)
            self.graph = sub.parent

    def add_submodule(self, prefix: str, graph: torch.fx.Graph) -> str:
        """Register a higher-order op's body graph as `<prefix>_<n>` (n counts that prefix's
        bodies, so a restore hands the same names out again) and return the name."""
        n = sum(1 for name in self.submodules if name.rpartition("_")[0] == prefix)
        name = f"{prefix}_{n}"
        self.submodules[name] = graph
        return name

    def graph_module(self, graph: torch.fx.Graph) -> torch.fx.GraphModule:
        """`graph` as a GraphModule holding, as GraphModules, the bodies its nodes name
        (nested bodies too). Each is made with an empty stand-in for its own bodies, which
        are attached afterwards: a GraphModule recompiles its children when it is made, and
        so every body is compiled once."""
        root = torch.nn.Module()
        if not self.submodules:
            return torch.fx.GraphModule(root, graph)
        bodies = {}
        for node in graph.nodes:
            if node.op in ("get_attr", "call_module") and node.target in self.submodules and node.target not in bodies:
                bodies[node.target] = self.graph_module(self.submodules[node.target])
                root.add_module(node.target, torch.nn.Module())
        gm = torch.fx.GraphModule(root, graph)
        for name, body in bodies.items():
            setattr(gm, name, body)
        return gm

    def in_subgraph(self) -> bool:
        """Whether a `subgraph()` (a higher-order op's body) is being traced."""
        return bool(self._subgraphs)

    def lift(self, node: torch.fx.Node) -> torch.fx.Node:
        """`node` of an enclosing graph as seen from the current one: lifted through every
        open subgraph below the graph that owns it."""
        subgraphs = self._subgraphs
        start = 0
        for i, sub in enumerate(subgraphs):
            if sub.graph is node.graph:
                start = i + 1
        for sub in subgraphs[start:]:
            node = sub.lift(node)
        return node

    # ---- guards and inputs -----------------------------------------------------------
    def add_guard(self, guard: Guard) -> None:
        self.guards.setdefault(_guard_key(guard.kind, guard.source, guard.expected), guard)

    def add_guard_at(self, tx, kind: GuardKind, source, expected=None) -> None:
        """`add_guard(Guard(kind, source, expected, tx.guard_location()))`, without making the
        guard and its location when an equal one is installed (the first one stays anyway): a
        model's trace asks for the same guard again and again (each builtin it reads is absent
        from its module's globals)."""
        key = _guard_key(kind, source, expected)
        if key not in self.guards:
            self.guards[key] = Guard(kind, source, expected, tx.guard_location())

    @contextlib.contextmanager
    def guards_located_at_first_use(self, name: str):
        """Guards added in this block (wrapping root argument or closure variable `name` before
        the first instruction) get, as their user location, the line that first reads `name`."""
        before = len(self.guards)
        yield
        if len(self.guards) > before:
            self.first_use[name] = list(itertools.islice(self.guards, before, None))

    def locate_first_use(self, name: str, location: str) -> None:
        for key in self.first_use.pop(name, ()):
            self.side_effects.record_undo(self._put_guard, (key, self.guards[key]))
            self.guards[key] = dataclasses.replace(self.guards[key], user_location=location)

    def _put_guard(self, arg) -> None:
        key, guard = arg
        if key in self.guards:
            self.guards[key] = guard

    def real_input(self, vt: TensorVariable) -> torch.Tensor | None:
        """The real tensor behind graph input `vt` (None if `vt` is not an input)."""
        for _, input_vt, real in self.inputs:
            if input_vt is vt:
                return real
        return None

    def add_input(self, source, real: torch.Tensor, guarded: bool = True,
                  static: bool = False, module_state: bool = False) -> TensorVariable:
        """The graph input read from `source` (`real` now); `guarded=False` for an input
        the residual code makes per call (its source names no value of the frame). Its
        placeholder is named as torch.compile names it (Note [Graph input names]).
        `static`: its sizes stay static whatever the dynamic policy (Note [Symbolic sizes]).
        `module_state`: a module's parameter, buffer or tensor attribute, which lives across
        calls (Note [Inputs that live across calls] in graph/backends.py), as a Parameter does."""
        existing = self._input_by_id.get(id(real))
        if existing is not None:
            self.add_guard(Guard(GuardKind.SAME_OBJECT, source, existing.source))
            return existing
        node = self._placeholder(source)
        dynamic = self.dynamic.dynamic_dims(source, real, static) if self.dynamic is not None and guarded else None
        if dynamic is None:
            example = fake_input(self.fake_mode, real)
        else:
            example = self.symbolic_shapes().fake_tensor(self.fake_mode, real, source, dynamic)
        node.meta["example_value"] = example
        if module_state or isinstance(real, torch.nn.Parameter):
            node.meta[LIVES_ACROSS_CALLS] = True
        vt = TensorVariable(node, example, source, cls=type(real))
        self.inputs.append((source, vt, real))
        self._input_by_id[id(real)] = vt
        if not guarded:
            self._unguarded.add(source)
            return vt
        symbolic = dynamic is not None and any(type(s) is torch.SymInt for s in example.shape)
        self.add_guard(Guard(GuardKind.DYNAMIC_TENSOR if symbolic else GuardKind.TENSOR_MATCH, source,
                             TensorSpec.of(real), self.current_tx.guard_location() if self.current_tx else ""))
        return vt

    # ---- symbolic values (Note [Symbolic sizes] in graph/shapes.py) ---------------------
    def symbolic_shapes(self) -> Shapes:
        """The capture's ShapeEnv, made on first need."""
        if self.shapes is None:
            self.shapes = Shapes(self.fake_mode)
        return self.shapes

    def symbol_input(self, symbol) -> torch.fx.Node | None:
        """The graph input standing for `symbol`: an int input's, or a placeholder made now
        for the size of an input tensor that carries it (None: no input carries it)."""
        for _, vt, _ in self.inputs:
            if not vt.is_tensor and vt.example.node.expr == symbol:
                return vt.node
        for source, vt, real in list(self.inputs):
            if vt.is_tensor and self.shapes is not None:
                for i, size in enumerate(vt.example.shape):
                    if type(size) is torch.SymInt and size.node.expr == symbol:
                        return self._symbol_placeholder(SizeSource(source, i), size, real.size(i))
        return None

    def int_input(self, source, value) -> SymNodeVariable:
        """The symbolic graph input for the dynamic int (float) `value` read at `source`."""
        for src, vt, _ in self.inputs:
            if src == source:
                return vt
        example = self.symbolic_shapes().symbol_for(value, source)
        self._symbol_placeholder(source, example, value)
        return self.inputs[-1][1]

    def _symbol_placeholder(self, source, example, value) -> torch.fx.Node:
        node = self._placeholder(source)
        node.meta["example_value"] = example
        self.inputs.append((source, SymNodeVariable(example, self, node, source=source), value))
        return node

    def _placeholder(self, source) -> torch.fx.Node:
        """A new placeholder of the root graph for the input read from `source`, its target
        (the graph function's parameter) `input_target(source)` made unique among the
        graph's names (Note [Graph input names])."""
        graph = self.root_graph
        used = graph._graph_namespace._used_names
        target = base = input_target(source, self._respell)
        suffix = itertools.count()
        while target in used:
            target = f"{base}_{next(suffix)}"
        node = graph.placeholder(target)
        used.add(target)  # as torch.compile records it: no later input or node takes it
        return node

    def finish_guards(self, runs_graph: bool = False) -> list:
        """All guards, with a no-aliasing guard when several distinct tensors are inputs, and,
        for an entry that calls a graph (`runs_graph`) traced without reading the autocast
        state, the guard that autocast is off (Note [Autocast in the trace]). Raises torch's
        `ConstraintViolationError` when the trace specialized a `mark_dynamic` dimension."""
        guards = list(self.guards.values())
        if runs_graph and self.autocast is None:
            guards.insert(1, autocast.ambient_off_guard())  # after the grad mode's: global state first
        tensors = tuple(src for src, vt, _ in self.inputs if vt.is_tensor and src not in self._unguarded)
        if len(tensors) > 1:
            guards.append(Guard(GuardKind.NO_ALIASING, None, tensors))
        if self.shapes is not None:
            self.shapes.check_marks(self.inputs)
            guards = self.shapes.render(guards, self.inputs)
        return guards

    # ---- ops -------------------------------------------------------------------------
    @contextlib.contextmanager
    def tracing(self):
        """Scope of the symbolic run: the fake mode is active (entered once, not per op)
        and the real grad mode follows the traced one; both are restored on exit.

        torch's fake-tensor module logs a traceback at ERROR level when an op's meta kernel
        rejects its inputs; here that is the user's own error (e.g. mismatched shapes), which
        the eager run then raises with the user's traceback, so that log is silenced."""
        prior = torch.is_grad_enabled()
        prior_disabled = _FAKE_TENSOR_LOG.disabled
        _FAKE_TENSOR_LOG.disabled = True  # not setLevel: that clears the caches of all ~200 loggers
        try:
            if torch._C._is_any_autocast_enabled():  # op dtypes follow the ambient autocast state
                autocast.start(self, self.current_tx.guard_location())
            with self.fake_mode:
                yield
        finally:
            torch._C._set_grad_enabled(prior)
            autocast.end_tracing(self)
            _FAKE_TENSOR_LOG.disabled = prior_disabled

    def set_grad_enabled(self, mode: bool) -> None:
        """The traced grad mode (global torch state: saved by `checkpoint`)."""
        if mode != self.grad_enabled:
            self.graph.call_function(torch._C._set_grad_enabled, (mode,))
            self.grad_enabled = mode
            torch._C._set_grad_enabled(mode)

    @contextlib.contextmanager
    def grad_mode_set_by_caller(self, mode: bool):
        """Trace this block in grad mode `mode` without recording the switch: for the body of
        an op that runs it in that mode itself (autograd runs a custom Function's forward
        with grad off, its backward in the mode of the backward pass)."""
        prior = self.grad_enabled
        self.grad_enabled = mode
        torch._C._set_grad_enabled(mode)
        try:
            yield
        finally:
            self.grad_enabled = prior
            torch._C._set_grad_enabled(prior)

    def call_op(self, kind: str, target, args: list, kwargs: dict) -> VariableTracker:
        tx = self.current_tx
        written = _written(kind, target, args, kwargs)
        if written:
            self._before_inplace(written)
        fx_args = tuple([a.as_fx_arg(tx) for a in args])
        fx_kwargs = {k: v.as_fx_arg(tx) for k, v in kwargs.items()} if kwargs else {}
        fake_args = tuple([_example_of(a) for a in fx_args])
        fake_kwargs = {k: _example_of(v) for k, v in fx_kwargs.items()} if kwargs else {}
        example = self._run_fake(tx, kind, target, fake_args, fake_kwargs)
        if self.grad_flags:  # Note [requires_grad_ in the trace]
            requires_grad.after_op(tx, _op_name(kind, target), (fake_args, fake_kwargs), example)
        if kwargs and fake_kwargs.get("requires_grad") is True:
            requires_grad.made_leaf(self, example)
        returned = next((a for a in (*args, *kwargs.values()) if a.is_tensor and a.example is example), None)
        if returned is not None and not written:
            return returned  # Note [Ops returning their input]: nothing to record
        if not written and not _holds(fx_args, torch.fx.Node) and not _holds(fx_kwargs, torch.fx.Node) \
                and not _holds(example, (torch.Tensor, *SYM_TYPES)):
            # A torch op of constants with no tensor in its result (`torch._C._nn._parse_to(dtype)`,
            # `torch.result_type(1, 2.0)`): its value, the node would compute it again.
            return wrap_op_result(tx, None, example)
        node = self.add_node(kind, target, fx_args, fx_kwargs)
        node.meta["example_value"] = example
        node.meta["bg_frames"] = tx.frames()
        if self.shapes is not None:  # Note [Data-dependent capture]: the op's new unbacked symbols
            self.shapes.bind_unbacked(node, example)
        if returned is not None:
            return returned  # an in-place op (or `out=`) returns its input: keep one tracker (and `is`)
        out = kwargs.get("out") if kwargs else None
        items = out.sequence_items() if out is not None else None
        if items is not None and isinstance(example, tuple) and len(items) == len(example) \
                and all(o.is_tensor and o.example is e for o, e in zip(items, example)):
            return _structure_like(example, list(items))  # `out=(v, i)`: the result holds v and i
        return wrap_op_result(tx, node, example)

    def object_source(self, obj) -> ObjectSource:
        """The one `ObjectSource` of `obj` in this capture: a builtin read (`super` is read twice
        per transformers config read) finds its tracker by identity, and a guard made at every
        module call (the global hook dicts) is made of the same sources."""
        known = self._object_sources.get(id(obj))  # (obj, source): the entry keeps the id taken
        if known is None:
            known = self._object_sources[id(obj)] = (obj, ObjectSource(obj))
        return known[1]

    def add_node(self, kind: str, target, args: tuple, kwargs: dict | None = None) -> torch.fx.Node:
        """A node of the current graph, as `create_node` makes it (Note [Op nodes])."""
        return op_node(self.graph, kind, target, args, kwargs)

    def _run_fake(self, tx, kind, target, args, kwargs):
        """Run the op on fake values (inside `tracing()`, so the fake mode is active)."""
        trace = self.autocast
        shapes = self.shapes
        key = fake_memo.memo_key(kind, target, args, kwargs, shapes) \
            if (trace is None or not trace.state.enabled) and not fake_memo.static_view(target, args, shapes) else None
        before = len(shapes.env.guards) if shapes is not None else 0
        if shapes is not None:
            shapes.env.pending_fresh_unbacked_symbols.clear()  # those of a run that did not make a node
        if key is not None:
            cached = fake_memo.lookup(self.fake_mode, key, args, kwargs, shapes)
            if cached is not None:
                self._locate_shape_guards(tx, before)  # an answer replays its call's guards
                return cached
        mark = shapes.mark() if shapes is not None and key is not None else None
        try:
            if kind == "call_method":
                result = getattr(args[0], target)(*args[1:], **kwargs)
            else:
                result = target(*args, **kwargs)
        except (DataDependentOutputException, DynamicOutputShapeException) as e:
            field = next(f for cls, f in _DATA_DEPENDENT_ERRORS.items() if isinstance(e, cls))
            if getattr(config, field) and shapes is None:  # captured with unbacked symbols: a ShapeEnv now
                self.symbolic_shapes()
                return self._run_fake(tx, kind, target, args, kwargs)
            tx.unsupported(f"{_op_name(kind, target)} has an output that depends on tensor data "
                           f"({type(e).__name__}: {getattr(e, 'func', '?')})",
                           category="data-dependent",
                           hint=f"set bytegraph.config.{field} = True to capture it")
        except GuardOnDataDependentSymNode as e:
            tx.unsupported(f"{_op_name(kind, target)} needs the value of a data-dependent expression "
                           f"({e.cond})", category="data-dependent",
                           hint="torch._check() the fact the op needs, or move this line outside the compiled function")
        except UnsupportedOperatorException as e:
            tx.unsupported(f"{_op_name(kind, target)} has no fake-tensor kernel ({e})", category="unsupported op")
        except Exception as e:  # the user's program raises here (bad shapes, bad arguments)
            # Not raised into the trace: a fake tensor's error need not be the real one, so
            # no traced handler may catch it; the frame runs eagerly instead.
            raise UserCodeRaisesError(f"{_op_name(kind, target)} raises {type(e).__name__}: {e}",
                                      tx.location()) from e
        # Outside the `try`: an error here is bytegraph's, not the user's. A run that taught the
        # ShapeEnv more than guards is not remembered (Note [Symbolic memo]).
        lesson = () if mark is None else shapes.lesson_since(mark)
        if key is not None and lesson is not None:
            fake_memo.remember(key, args, kwargs, result, lesson)
        self._locate_shape_guards(tx, before)
        return result

    def _locate_shape_guards(self, tx, before: int) -> None:
        """The ShapeEnv guards added since it had `before` come from the current user line."""
        shapes = self.shapes
        if shapes is not None and len(shapes.env.guards) > before:
            shapes.locate(before, tx.guard_location())


    # ---- replaying a recorded block (Note [Repeated blocks] in vars/repeated_blocks.py) ----
    def last_node(self) -> torch.fx.Node:
        """The newest node of the root graph (a window of the capture starts after it)."""
        return self.root_graph._root.prev

    def nodes_after(self, last: torch.fx.Node) -> list:
        """The root graph's nodes added after `last`, oldest first."""
        out = []
        node = last.next
        root = self.root_graph._root
        while node is not root:
            out.append(node)
            node = node.next
        return out

    def is_input(self, real) -> bool:
        """Whether the real tensor `real` is already a graph input."""
        return id(real) in self._input_by_id

    def replayable_node(self, node: torch.fx.Node) -> bool:
        """Whether `node` is an op a block's body may hold: a call that writes none of its
        arguments in place and changes no global state (the grad mode), or the call of a
        block body (a replay inside the window)."""
        if node.op == "call_module":
            return self.is_block_body(node.target)
        if node.op not in ("call_function", "call_method") or node.target is torch._C._set_grad_enabled \
                or "out" in node.kwargs:
            return False
        if node.op == "call_method":
            return not _writes_first_argument(node.op, node.target, None)
        by_schema = written_arguments(node.target)
        if by_schema is not None:
            return not (by_schema[0] or by_schema[1])
        if node.kwargs.get("inplace") is True or node.target in _INPLACE_FUNCTIONS:
            return False
        name = getattr(node.target, "__name__", "")
        return not (name[-1:] == "_" and name[:2] != "__")

    def add_block_body(self, graph: torch.fx.Graph) -> str:
        """Register a recorded block's body graph (`block_<n>`) and return its name."""
        return self.add_submodule(_BLOCK_PREFIX, graph)

    def is_block_body(self, name: str) -> bool:
        return name.rpartition("_")[0] == _BLOCK_PREFIX and name in self.submodules

    def hop_bodies(self) -> int:
        """How many higher-order-op bodies the capture made (block bodies not counted)."""
        return sum(1 for name in self.submodules if name.rpartition("_")[0] != _BLOCK_PREFIX)

    @staticmethod
    def block_result_spec(example) -> tuple | None:
        """What `call_block` needs to make a block result like `example` anew (None: it cannot)."""
        return fake_memo.result_spec(example)

    def call_block(self, tx, name: str, args: tuple, specs: list) -> list:
        """The call of block body `name` on `args` (nodes and constants), its results made
        from `block_result_spec`s `specs` (not by running the body on fake values): one
        `call_module` node and a `getitem` node per result, which this returns."""
        grad_input = next((e for e in (n.meta.get("example_value") for n in args if type(n) is torch.fx.Node)
                           if isinstance(e, torch.Tensor) and e.requires_grad), None)
        examples = [fake_memo.refresh(self.fake_mode, spec, grad_input) for spec in specs]
        frames = tx.frames()
        call = self.add_node("call_module", name, args)
        call.meta["example_value"] = tuple(examples)
        call.meta["bg_frames"] = frames
        results = []
        for i, example in enumerate(examples):
            node = self.add_node("call_function", operator.getitem, (call, i))
            node.meta["example_value"] = example
            node.meta["bg_frames"] = frames
            results.append(node)
        return results

    def _before_inplace(self, written: list) -> None:
        """An in-place method (`x.add_()`, `x.unsqueeze_()`, `torch._foreach_mul_(xs, 2)`), `out=` op or
        dispatcher op writing arguments by its schema changes tensors the trace holds: the
        barrier (scope check; their fake metadata saved for restore)."""
        for vt in written:
            if vt.is_tensor:
                self.side_effects.mutate(vt, replay=False)


_BLOCK_PREFIX = "block"  # the names of recorded blocks' bodies (vars/repeated_blocks.py)


def _guard_key(kind: GuardKind, source, expected) -> tuple:
    """Guards are deduplicated by kind and source (and name, for names absent from or
    present in a dict: one dict, many names)."""
    return (kind, source, expected) if kind is GuardKind.NOT_PRESENT or kind is GuardKind.PRESENT else (kind, source)


# Note [Checkpoints]
# A checkpoint is a set of positions, not a copy: the last node of the current graph,
# the lengths of the insertion-ordered guards/inputs/tracked/globals-sources tables, the
# side-effect log's position (whose undo log puts back every tracker written since,
# Note [Mutation barrier]), the traced and the real grad mode, the autocast record
# (immutable; restoring it sets the real autocast state again), and the small FX name
# tables (so names made after a restore are the ones a capture that never ran the
# speculation makes), and the number of higher-order-op bodies (`submodules`, whose
# names count per prefix). `restore` erases the nodes added since (placeholders of new graph
# inputs included), truncates the tables and undoes the log; the translator's frames are
# restored by `Translator.restore` (translate/speculation.py).


@dataclasses.dataclass(frozen=True)
class GraphCheckpoint:
    """What `OutputGraph.checkpoint` captured (positions and small copies, not the graph)."""

    graph: torch.fx.Graph   # the graph ops were recorded into
    graphs: tuple           # (graph, last node, FX used names, FX base counts): root, then open subgraphs
    lifted: tuple           # len(Subgraph.lifted) of each open subgraph
    guards: int
    first_use: dict
    inputs: int
    tracked: int
    globals_sources: int
    grad_enabled: bool
    real_grad_enabled: bool
    current_tx: object
    guard_aliases: int
    side_effects: tuple
    autocast: object        # the AutocastTrace (vars/autocast/state.py)
    submodules: int         # len(OutputGraph.submodules)


class Subgraph:
    """A child FX graph being recorded (`OutputGraph.subgraph`) and the outer values it lifted."""

    __slots__ = ("graph", "parent", "lifted", "_by_outer")

    def __init__(self, graph: torch.fx.Graph, parent: torch.fx.Graph):
        self.graph = graph
        self.parent = parent
        self.lifted: list = []     # (outer node, child placeholder), in first-use order
        self._by_outer: dict = {}

    def lift(self, outer: torch.fx.Node) -> torch.fx.Node:
        """The placeholder standing for `outer` (a node of the parent graph) in this one."""
        inner = self._by_outer.get(outer)
        if inner is None:
            inner = self.graph.placeholder(outer.name)
            inner.meta.update(outer.meta)
            self._by_outer[outer] = inner
            self.lifted.append((outer, inner))
        return inner


_INPLACE_FUNCTIONS = frozenset({operator.setitem, operator.iadd, operator.isub, operator.imul, operator.itruediv,
                                operator.ifloordiv, operator.imod, operator.ipow, operator.imatmul, operator.iand,
                                operator.ior, operator.ixor, operator.ilshift, operator.irshift})


_INPLACE_DUNDERS = frozenset({"__setitem__"} | {f"__i{op}__" for op in (
    "add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or", "xor", "lshift", "rshift")})


# Note [Ops returning their input]
# An op that neither writes in place nor takes `out=` and whose fake result is one of its own
# tensor arguments (`x.to(x.dtype)`, `x.contiguous()` of a contiguous `x`, `x.float()` of a
# float `x`, dropout in eval mode or with p=0) returns that very tensor, unchanged, in eager
# too: the op did nothing (no new tensor, no autograd node, no RNG draw; what made it return
# its input is guarded like any fact the fake run used: the dtype, device, strides, the
# `training` flag). It is not recorded: the trace goes on with the argument's tracker, so
# `y is x` holds as eagerly, and the graph has no node that nothing uses (hf_gpt2: 13 of 154).


def _writes_first_argument(kind: str, target, kwargs) -> bool:
    """Whether the op changes its first argument in place: `x.add_()`, `x.__setitem__`,
    `x += y`, `torch.relu_(x)`, `F.relu(x, inplace=True)`."""
    if kind == "call_method":
        return target[-1] == "_" and (target[:2] != "__" or target in _INPLACE_DUNDERS)
    if target in _INPLACE_FUNCTIONS:
        return True
    name = getattr(target, "__name__", "")
    if name[-1:] == "_" and name[:2] != "__":
        return True
    inplace = kwargs.get("inplace") if kwargs else None
    return inplace is not None and inplace.is_python_constant() and inplace.as_python_constant() is True


def _written(kind: str, target, args: list, kwargs: dict) -> list:
    """The trackers the op writes: those its schema marks written (a dispatcher op), `out=`,
    or its first argument (a list's items for `torch._foreach_add_(xs, ...)`) by
    `_writes_first_argument`."""
    by_schema = written_arguments(target) if kind == "call_function" else None
    if by_schema is not None:
        positions, names = by_schema
        found = [a for i, a in enumerate(args) if i in positions]
        found += [v for k, v in kwargs.items() if k in names] if kwargs else []
    elif kwargs and "out" in kwargs:
        found = [kwargs["out"]]
    elif _writes_first_argument(kind, target, kwargs):
        found = [args[0]]
    else:
        return []
    written = []
    for vt in found:
        items = vt.sequence_items()
        written.extend(items if items is not None else [vt])
    return written


def _holds(x, types_: tuple) -> bool:
    """Whether value `x` (an FX argument or a fake result) holds an instance of `types_`."""
    if isinstance(x, types_):
        return True
    if type(x) in (list, tuple) or isinstance(x, tuple):
        return any(_holds(i, types_) for i in x)
    if type(x) is dict:
        return any(_holds(v, types_) for v in x.values())
    if type(x) is slice:
        return _holds((x.start, x.stop, x.step), types_)
    return False


def _graph_position(graph: torch.fx.Graph) -> tuple:
    namespace = graph._graph_namespace
    return graph, graph._root.prev, set(namespace._used_names), dict(namespace._base_count)


def _erase_after(graph: torch.fx.Graph, last_node, used_names: set, base_count: dict) -> None:
    """Erase the nodes `graph` got after `last_node` (newest first) and put its FX names back."""
    namespace = graph._graph_namespace
    while graph._root.prev is not last_node:
        node = graph._root.prev
        graph.erase_node(node)
        namespace._obj_to_name.pop(node, None)
    namespace._used_names.clear()
    namespace._used_names.update(used_names)
    namespace._base_count.clear()
    namespace._base_count.update(base_count)


def _truncate(d: dict, n: int) -> None:
    """Drop the entries added to insertion-ordered `d` after it had `n` (newest first)."""
    while len(d) > n:
        d.popitem()


def _op_name(kind: str, target) -> str:
    if kind == "call_method":
        return f"Tensor.{target}()"
    return f"{getattr(target, '__module__', '') or ''}.{getattr(target, '__name__', target)}()".lstrip(".")


def _example_of(x):
    """The fake value standing for an FX argument (nodes inside lists and tuples too)."""
    if isinstance(x, torch.fx.Node):
        return x.meta["example_value"]
    if isinstance(x, (list, tuple)) and type(x) in (list, tuple):
        return type(x)(_example_of(i) for i in x)
    if isinstance(x, dict):
        return {k: _example_of(v) for k, v in x.items()}
    if type(x) is slice:
        return slice(_example_of(x.start), _example_of(x.stop), _example_of(x.step))
    return x


def add_stack_traces(graph: torch.fx.Graph) -> None:
    """Fill `node.meta["stack_trace"]` (user file/line of each op) from the recorded frames;
    the ops of a frame share its callers' lines, so each line is formatted once."""
    lines: dict = {}  # (id(code), lineno) -> its line (the graph's frames keep the codes alive)
    for node in graph.nodes:
        frames = node.meta.get("bg_frames")
        if frames is not None:
            text = []
            for code, lineno in frames:
                line = lines.get((id(code), lineno))
                if line is None:
                    line = lines[id(code), lineno] = f'  File "{code.co_filename}", line {lineno}, in {code.co_name}\n'
                text.append(line)
            node.meta["stack_trace"] = "".join(text)


# Note [Graph input names]
# A graph input is named as torch.compile names it: the placeholder's target, the graph
# function's parameter, is the source as torch.compile spells it (`Source.torch_name`:
# `L['x']`, `G['w']`, `L['self']._modules['fc']._parameters['weight']`) with every run of
# characters that are not ASCII letters or digits made one `_` (`L_x_`, `G_w_`,
# `L_self_modules_fc_parameters_weight_`); FX names the node after it in snake case (`l_x_`),
# so `gm.code` reads `def forward(self, L_x_):` then `l_x_ = L_x_`. A compiled module's root
# frame is `forward_call(self, *args, **kwargs)` where torch.compile traces `forward(self, x)`:
# its arguments are spelled as `forward`'s (`L['args'][0]` -> `L['x']`,
# runtime/root_frames.py::argument_spellings). Where two inputs would share a target the
# later one gets `_0`, `_1`, ... (torch.compile's `get_unique_name_wrt`).
# The names are names only: residual code loads inputs by source and position, HOP bodies
# and repeated-block bodies name their placeholders after the outer nodes. A symbolic size
# is named after its source (`L['x'].size()[0]` -> `L_x_size_0_`), where torch.compile
# names it after its symbol (`s77`).


def input_target(source, respell=None) -> str:
    """The placeholder target of the graph input read from `source` (Note [Graph input names]);
    `respell` (`_respelling`) spells the root frame's arguments as torch.compile does."""
    spelled = source.torch_name()
    target = _NOT_ASCII_ALNUM.sub("_", spelled if respell is None else respell(spelled))
    # a spelling without torch.compile's `L`/`G` root may be no identifier, or one FX reserves
    return target if target.isidentifier() and target not in torch.fx.graph._illegal_names else f"input_{target}"


_NOT_ASCII_ALNUM = re.compile(r"[^0-9A-Za-z]+")


def _respelling(spellings: dict | None):
    """A function of a spelled source that replaces each key of `spellings` in it (an
    argument of the root frame, `L['args'][0]`) by its value (`L['x']`); None without any."""
    if not spellings:
        return None
    pattern = re.compile("|".join(re.escape(key) for key in sorted(spellings, key=len, reverse=True)))
    return functools.partial(pattern.sub, lambda match: spellings[match.group(0)])


def warm_up() -> None:
    """Pay torch's one-time lazy imports and initialisation (fake tensors, FX codegen) at
    `import bytegraph` instead of inside the user's first compiled call."""
    mode = make_fake_mode()
    with mode:
        fake = mode.from_tensor(torch.zeros(1))
        _ = fake + 1
    graph = torch.fx.Graph()
    graph.output(graph.placeholder("x"))
    torch.fx.GraphModule(torch.nn.Module(), graph)


def _structure_like(example: tuple, items: list) -> VariableTracker:
    """A tuple tracker of `items` with the type of the op result `example` (a plain tuple,
    a named tuple or a torch.return_types structseq)."""
    cls = type(example)
    if hasattr(cls, "__match_args__") or hasattr(cls, "_fields"):
        return NamedTupleVariable(items, cls)
    return TupleVariable(items)
