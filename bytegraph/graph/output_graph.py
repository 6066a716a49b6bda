"""The output graph of one capture: the FX graph, its inputs by source, fake example
values, the guards collected, and the grad mode the traced code is in.

Graph inputs are placeholders, one per distinct real tensor (two sources reaching the
same tensor share a placeholder). Every op is run once on fake tensors to get its
example value; errors from that run are classified into graph breaks (data-dependent
output, op without a fake kernel) and errors of the user's own program.
"""
from __future__ import annotations

import contextlib
import dataclasses
import itertools
import logging

import torch
import torch.fx
from torch._subclasses.fake_tensor import (DataDependentOutputException, DynamicOutputShapeException,
                                           FakeTensorMode, UnsupportedOperatorException)

from . import fake_memo
from .fake_inputs import fake_input
from ..guards.guard import Guard, GuardKind, TensorSpec
from ..vars.base import VariableTracker
from ..vars.builder import wrap_op_result
from ..vars.constant import ConstantVariable
from ..vars.containers import BaseListVariable, DictVariable, NamedTupleVariable, SizeVariable, TupleVariable
from ..vars.tensor import TensorVariable

_FAKE_TENSOR_LOG = logging.getLogger("torch._subclasses.fake_tensor")
_DATA_DEPENDENT_ERRORS = (DataDependentOutputException, DynamicOutputShapeException)


class OutputGraph:
    def __init__(self):
        self.graph = torch.fx.Graph()
        self.fake_mode = FakeTensorMode()
        self.tracked: dict = {}
        self.guards: dict = {}
        self.first_use: dict = {}  # root argument/cell name -> keys of guards made when wrapping it
        self.inputs: list = []  # (source, TensorVariable, real tensor), in placeholder order
        # id(globals dict) -> the first source that reached it (Note [Globals sources])
        self.globals_sources: dict = {}
        self._input_by_id: dict = {}
        self.grad_enabled = torch.is_grad_enabled()
        self.initial_grad_enabled = self.grad_enabled
        self.current_tx = None
        self.add_guard(Guard(GuardKind.GRAD_MODE, None, self.grad_enabled))

    # ---- guards and inputs -----------------------------------------------------------
    def add_guard(self, guard: Guard) -> None:
        key = (guard.kind, guard.source)
        if guard.kind is GuardKind.NOT_PRESENT:  # one dict, many absent names
            key += (guard.expected,)
        self.guards.setdefault(key, guard)

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
            self.guards[key] = dataclasses.replace(self.guards[key], user_location=location)

    def real_input(self, vt: TensorVariable) -> torch.Tensor | None:
        """The real tensor behind graph input `vt` (None if `vt` is not an input)."""
        for _, input_vt, real in self.inputs:
            if input_vt is vt:
                return real
        return None

    def add_input(self, source, real: torch.Tensor) -> TensorVariable:
        existing = self._input_by_id.get(id(real))
        if existing is not None:
            self.add_guard(Guard(GuardKind.SAME_OBJECT, source, existing.source))
            return existing
        name = _placeholder_name(source.name(), len(self.inputs))
        node = self.graph.placeholder(name)
        example = fake_input(self.fake_mode, real)
        node.meta["example_value"] = example
        vt = TensorVariable(node, example, source, cls=type(real))
        self.inputs.append((source, vt, real))
        self._input_by_id[id(real)] = vt
        self.add_guard(Guard(GuardKind.TENSOR_MATCH, source, TensorSpec.of(real),
                             self.current_tx.guard_location() if self.current_tx else ""))
        return vt

    def finish_guards(self) -> list:
        """All guards, with a no-aliasing guard when several distinct tensors are inputs."""
        guards = list(self.guards.values())
        if len(self.inputs) > 1:
            guards.append(Guard(GuardKind.NO_ALIASING, None, tuple(src for src, _, _ in self.inputs)))
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
            with self.fake_mode:
                yield
        finally:
            torch._C._set_grad_enabled(prior)
            _FAKE_TENSOR_LOG.disabled = prior_disabled

    def set_grad_enabled(self, mode: bool) -> None:
        if mode != self.grad_enabled:
            self.graph.call_function(torch._C._set_grad_enabled, (mode,))
            self.grad_enabled = mode
            torch._C._set_grad_enabled(mode)

    def call_op(self, kind: str, target, args: list, kwargs: dict) -> VariableTracker:
        tx = self.current_tx
        fx_args = tuple([_to_fx(tx, a) for a in args])
        fx_kwargs = {k: _to_fx(tx, v) for k, v in kwargs.items()} if kwargs else {}
        fake_args = tuple([_example_of(a) for a in fx_args])
        fake_kwargs = {k: _example_of(v) for k, v in fx_kwargs.items()} if kwargs else {}
        example = self._run_fake(tx, kind, target, fake_args, fake_kwargs)
        node = self.graph.create_node(kind, target, fx_args, fx_kwargs)
        node.meta["example_value"] = example
        node.meta["bg_frames"] = tx.frames()
        for arg in (*args, *kwargs.values()):
            if isinstance(arg, TensorVariable) and arg.example is example:
                return arg  # an in-place op (or `out=`) returns its input: keep one tracker (and `is`)
        out = kwargs.get("out") if kwargs else None
        if isinstance(out, BaseListVariable) and isinstance(example, tuple) and len(out.items) == len(example) \
                and all(isinstance(o, TensorVariable) and o.example is e for o, e in zip(out.items, example)):
            return _structure_like(example, list(out.items))  # `out=(v, i)`: the result holds v and i
        return wrap_op_result(tx, node, example)

    def _run_fake(self, tx, kind, target, args, kwargs):
        """Run the op on fake values (inside `tracing()`, so the fake mode is active)."""
        key = fake_memo.memo_key(kind, target, args, kwargs)
        if key is not None:
            cached = fake_memo.lookup(self.fake_mode, key, args, kwargs)
            if cached is not None:
                return cached
        try:
            if kind == "call_method":
                result = getattr(args[0], target)(*args[1:], **kwargs)
            else:
                result = target(*args, **kwargs)
        except _DATA_DEPENDENT_ERRORS as e:
            tx.unsupported(f"{_op_name(kind, target)} has an output that depends on tensor data ({type(e).__name__})",
                           category="data-dependent")
        except UnsupportedOperatorException as e:
            tx.unsupported(f"{_op_name(kind, target)} has no fake-tensor kernel ({e})", category="unsupported op")
        except Exception as e:  # the user's program raises here (bad shapes, bad arguments)
            tx.raise_user_error(e)
        if key is not None:  # outside the `try`: an error here is bytegraph's, not the user's
            fake_memo.remember(key, args, kwargs, result)
        return result


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
    return x


def add_stack_traces(graph: torch.fx.Graph) -> None:
    """Fill `node.meta["stack_trace"]` (user file/line of each op) from the recorded frames."""
    for node in graph.nodes:
        frames = node.meta.get("bg_frames")
        if frames is not None:
            node.meta["stack_trace"] = "".join(
                f'  File "{code.co_filename}", line {lineno}, in {code.co_name}\n' for code, lineno in frames)


def _to_fx(tx, vt):
    """The FX argument for a tracker: a node, a constant, or a structure of those."""
    if isinstance(vt, TensorVariable):
        return vt.node
    if isinstance(vt, SizeVariable):
        return torch.Size(vt.as_python_constant())
    if isinstance(vt, BaseListVariable):
        items = [_to_fx(tx, i) for i in vt.items]
        return list(items) if vt.python_type() is list else tuple(items)
    if isinstance(vt, DictVariable):
        return {k: _to_fx(tx, v) for k, v in vt.items.items()}
    if isinstance(vt, ConstantVariable) or vt.is_python_constant():
        return vt.as_python_constant()
    if isinstance(vt, VariableTracker):
        tx.unsupported(f"passing {vt.describe()} to a torch op", category="unsupported op argument")
    return vt


def _placeholder_name(source_name: str, index: int) -> str:
    cleaned = "".join(c if c.isalnum() else "_" for c in source_name).strip("_")
    return f"l_{cleaned}" if cleaned else f"input_{index}"


def warm_up() -> None:
    """Pay torch's one-time lazy imports and initialisation (fake tensors, FX codegen) at
    `import bytegraph` instead of inside the user's first compiled call."""
    mode = FakeTensorMode()
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
