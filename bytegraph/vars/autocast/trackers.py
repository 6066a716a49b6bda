"""The trackers of `torch.autocast` objects, their blocks' exits and autocast-wrapped
functions, and the autocast state queries as trace rules (`SPECIAL`).
"""
from __future__ import annotations

import re
import warnings
from dataclasses import replace

import torch
from torch.amp.autocast_mode import _enter_autocast, _exit_autocast

from ...errors import TracedRaise
from ...guards.guard import Guard, GuardKind
from ...guards.sources import AttrSource, ObjectSource, StateQuerySource
from ..base import VariableTracker
from ..constant import ConstantVariable
from ..registry import guard, register
from .state import AutocastExit, AutocastState, other_devices_enabled, set_trace, start

_AUTOCAST = torch.amp.autocast_mode.autocast


class AutocastVariable(VariableTracker):
    """A `torch.autocast("cpu", ...)` object: its arguments resolved as its constructor
    resolves them (dtype and cache flag default to the state at construction)."""

    __slots__ = ("device", "dtype", "enabled", "cache")
    rebuilt_as_new_object = True

    def __init__(self, device: str, dtype, enabled: bool, cache: bool, source=None):
        super().__init__(source)
        self.device, self.dtype, self.enabled, self.cache = device, dtype, enabled, cache

    def python_type(self) -> type:
        return _AUTOCAST

    def describe(self) -> str:
        return f"torch.autocast({self.device!r}, dtype={self.dtype}, enabled={self.enabled})"

    def enter_with(self, tx) -> tuple:
        return self.enter(tx), self

    def enter(self, tx) -> "AutocastExitVariable":
        if self.device != "cpu":
            tx.unsupported(f"an autocast block for device {self.device!r} (only 'cpu' is traced)",
                           category="unsupported call")
        if tx.output.graph is not tx.output.root_graph:
            tx.unsupported("an autocast block inside the body of a higher-order op", category="unsupported call")
        trace = start(tx.output, tx.guard_location())
        state = AutocastState(self.enabled, self.dtype, self.cache)
        node = tx.output.graph.call_function(_enter_autocast, ("cpu", self.dtype, self.enabled, self.cache))
        exit_ = AutocastExit(state, trace.state)
        set_trace(tx.output, replace(trace, state=state, graph_open=trace.graph_open + (node,),
                                     entered=trace.entered + ((node, exit_),)))
        return AutocastExitVariable(exit_, node)

    def call_function(self, tx, args, kwargs):
        """`torch.autocast(...)(fn)`: `fn` called inside the block."""
        if len(args) != 1 or kwargs or args[0].inlined_function() is None:
            tx.unsupported(f"calling {self.describe()} with other than one function", category="unsupported call")
        return AutocastWrappedFunction(self, args[0])

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            return super().reconstruct(cg)
        cg.push_callable_const(torch.autocast)
        for value in (self.device, self.dtype, self.enabled, self.cache):
            cg.load_const(value)
        cg.call(4)


class AutocastExitVariable(VariableTracker):
    """The exit callable BEFORE_WITH leaves on the stack for an autocast block: `node` is
    its `_enter_autocast` node, None for a block entered before the capture (an
    `AutocastExit` handed to a resume function)."""

    __slots__ = ("exit", "node")
    kept_in_block = True

    def __init__(self, exit_: AutocastExit, node, source=None):
        super().__init__(source)
        self.exit = exit_
        self.node = node

    def python_type(self) -> type:
        return AutocastExit

    def call_function(self, tx, args, kwargs):
        output = tx.output
        trace = start(output, tx.guard_location())
        if self.node is not None:
            if not trace.entered or trace.entered[-1][0] is not self.node:
                tx.unsupported("autocast blocks exited out of order", category="unsupported call")
            output.graph.call_function(_exit_autocast, (self.node,))
            set_trace(output, replace(trace, state=self.exit.prior, graph_open=trace.graph_open[:-1],
                                      entered=trace.entered[:-1]))
        else:
            if trace.entered or trace.state != self.exit.state or self.exit in trace.popped:
                tx.unsupported("an autocast block entered before the capture exited out of order",
                               category="unsupported call")
            prior = self.exit.prior
            node = output.graph.call_function(_enter_autocast, ("cpu", prior.dtype, prior.enabled, prior.cache))
            # The block's weight casts are stale now (eager drops them when its outermost block ends;
            # this graph's nodes keep the nesting above zero): drop them here, so a later block
            # of another dtype makes its own.
            output.graph.call_function(torch.clear_autocast_cache, ())
            set_trace(output, replace(trace, state=prior, graph_open=trace.graph_open + (node,),
                                      popped=trace.popped + (self.exit,)))
        return ConstantVariable(False)

    def reconstruct(self, cg) -> None:
        cg.load_const(self.exit)


class AutocastWrappedFunction(VariableTracker):
    """A function decorated in the trace with an autocast object (`torch.autocast("cpu")(f)`)."""

    __slots__ = ("ctx", "fn")
    rebuilt_as_new_object = True

    def __init__(self, ctx: AutocastVariable, fn: VariableTracker):
        super().__init__(None)
        self.ctx = ctx
        self.fn = fn

    def python_type(self) -> type:
        return type(self.fn.inlined_function())

    def children(self):
        return (self.ctx, self.fn)

    def call_function(self, tx, args, kwargs):
        exit_ = self.ctx.enter(tx)
        none = ConstantVariable(None)
        try:
            result = self.fn.call_function(tx, args, kwargs)
        except TracedRaise:  # the exception leaves the block: exit first, as `with` does
            exit_.call_function(tx, [none, none, none], {})
            raise
        exit_.call_function(tx, [none, none, none], {})
        return result

    def reconstruct(self, cg) -> None:
        cg.push_callable(lambda: cg.reconstruct(self.ctx))
        cg.reconstruct(self.fn)
        cg.call(1)


@register(AutocastExit, exact=True)
def build_autocast_exit(tx, value, source, do_guard: bool) -> VariableTracker:
    """An autocast block's exit handed to a resume function (Note [Autocast in the trace])."""
    guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
    return AutocastExitVariable(value, None, source)


@register(_AUTOCAST, exact=True)
def build_autocast(tx, value, source, do_guard: bool) -> VariableTracker:
    """A real `torch.autocast` object (a global, a closure cell of `@torch.autocast(...)`)."""
    guard(tx, do_guard, GuardKind.TYPE_MATCH, source, _AUTOCAST)
    attrs = {}
    for name in ("device", "fast_dtype", "_enabled", "_cache_enabled"):
        attrs[name] = getattr(value, name)
        guard(tx, do_guard, GuardKind.CONSTANT_MATCH, AttrSource(source, name), attrs[name])
    return AutocastVariable(attrs["device"], attrs["fast_dtype"], attrs["_enabled"], attrs["_cache_enabled"], source)


def autocast_call(tx, args, kwargs):
    """`torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)` on constants."""
    values = _bind_constants(tx, args, kwargs)
    device = values.get("device_type")
    if device != "cpu":
        tx.unsupported(f"torch.autocast for device {device!r} (only 'cpu' is traced)", category="unsupported call")
    trace = start(tx.output, tx.guard_location())
    dtype = values.get("dtype")
    cache = values.get("cache_enabled")
    resolved = dict(device_type="cpu", dtype=trace.state.dtype if dtype is None else dtype,
                    enabled=values.get("enabled", True), cache_enabled=trace.state.cache if cache is None else cache)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            _AUTOCAST(**resolved)
        except (TypeError, ValueError, RuntimeError) as e:
            tx.unsupported(f"torch.autocast({_render(values)}) raises {type(e).__name__}: {e}",
                           category="unsupported call")
    if caught:
        tx.unsupported(f"torch.autocast({_render(values)}) warns: {caught[0].message}", category="unsupported call")
    return AutocastVariable("cpu", resolved["dtype"], bool(resolved["enabled"]), bool(resolved["cache_enabled"]))


_PARAMETERS = ("device_type", "dtype", "enabled", "cache_enabled")


def _bind_constants(tx, args, kwargs) -> dict:
    if len(args) > len(_PARAMETERS) or set(kwargs) - set(_PARAMETERS[len(args):]):
        tx.unsupported("torch.autocast() with unexpected arguments", category="unsupported call")
    bound = dict(zip(_PARAMETERS, args))
    bound.update(kwargs)
    for name, vt in bound.items():
        if not vt.is_python_constant():
            tx.unsupported(f"torch.autocast() with a non-constant {name}", category="unsupported call")
    return {name: vt.as_python_constant() for name, vt in bound.items()}


def _render(values: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in values.items())


def _deprecated_cpu_autocast(tx, args, kwargs):
    tx.unsupported("torch.cpu.amp.autocast (deprecated: it warns on every construction)",
                   category="unsupported call", hint="use torch.autocast('cpu', ...)")


# ---- state queries ------------------------------------------------------------------
def _traced_query(read):
    """A handler answering a CPU-state query from the traced state."""
    def query(tx, args, kwargs):
        return ConstantVariable(read(start(tx.output, tx.guard_location()).state))
    return query


def _device_query(fn, read):
    """`fn(device)`: the traced state for 'cpu', else the real one, guarded."""
    def query(tx, args, kwargs):
        consts = [a.as_python_constant() for a in (*args, *kwargs.values())]
        if consts == ["cpu"]:
            return ConstantVariable(read(start(tx.output, tx.guard_location()).state))
        return state_query(tx, fn, consts)
    return query


def state_query(tx, fn, consts: list) -> VariableTracker:
    """A query of global torch state the trace does not change: its current value, guarded."""
    value = fn(*consts)
    source = StateQuerySource(ObjectSource(fn), tuple(consts))
    tx.output.add_guard(Guard(GuardKind.CONSTANT_MATCH, source, value, tx.guard_location()))
    return ConstantVariable(value)


def _fixed_device_query(generic, read, device: str):
    """A per-device spelling (`torch.get_autocast_gpu_dtype()`): `generic(device)`, the traced
    state for the CPU, else the real one, guarded through `generic` (the spellings warn)."""
    def query(tx, args, kwargs):
        if args or kwargs:  # eager raises TypeError: the call runs eagerly at the break
            tx.unsupported(f"torch.{generic.__name__}() of {device!r} called with arguments",
                           category="unsupported call")
        if device == "cpu":
            return ConstantVariable(read(start(tx.output, tx.guard_location()).state))
        return state_query(tx, generic, [device])
    return query


# The device a per-device spelling names, where its name is not the device's ('gpu': CUDA).
_DEVICE_ALIASES = {"gpu": "cuda"}
_PER_DEVICE = ((re.compile(r"is_autocast_(\w+)_enabled"), torch.is_autocast_enabled, lambda s: s.enabled),
               (re.compile(r"get_autocast_(\w+)_dtype"), torch.get_autocast_dtype, lambda s: s.dtype))


def _per_device_queries() -> dict:
    """torch's per-device spellings of the two queries (`is_autocast_<device>_enabled`,
    `get_autocast_<device>_dtype`: deprecated aliases of the generic ones), as torch's
    namespace has them, for the devices autocast supports (not `is_autocast_cache_enabled`)."""
    devices = set(torch._C._autocast_supported_devices())
    rows = {}
    for name in dir(torch):
        for pattern, generic, read in _PER_DEVICE:
            match = pattern.fullmatch(name)
            device = match and _DEVICE_ALIASES.get(match.group(1), match.group(1))
            if device in devices:
                rows[getattr(torch, name)] = _fixed_device_query(generic, read, device)
    return rows


def _any_enabled(tx, args, kwargs):
    """`torch._C._is_any_autocast_enabled()`: true when the traced CPU state is on, else the
    answer of the other devices' real state, guarded (`other_devices_enabled`)."""
    if args or kwargs:
        tx.unsupported("torch._C._is_any_autocast_enabled() called with arguments", category="unsupported call")
    if start(tx.output, tx.guard_location()).state.enabled:
        return ConstantVariable(True)
    return state_query(tx, other_devices_enabled, [])


SPECIAL = {
    torch.is_autocast_enabled: _device_query(torch.is_autocast_enabled, lambda s: s.enabled),
    torch.get_autocast_dtype: _device_query(torch.get_autocast_dtype, lambda s: s.dtype),
    **_per_device_queries(),  # torch.get_autocast_gpu_dtype(), torch.is_autocast_cpu_enabled(), ...
    torch._C._is_any_autocast_enabled: _any_enabled,
    torch.is_autocast_cache_enabled: _traced_query(lambda s: s.cache),
    torch.amp.is_autocast_available:
        lambda tx, args, kwargs: state_query(tx, torch.amp.is_autocast_available,
                                             [a.as_python_constant() for a in args]),
    torch.autocast: autocast_call,
    torch.cpu.amp.autocast: _deprecated_cpu_autocast,
}
