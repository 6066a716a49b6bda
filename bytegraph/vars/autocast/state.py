"""The capture's autocast record (`AutocastTrace`, kept in `OutputGraph.autocast`), the real
thread-local state that follows it while tracing, and the exit of a block handed to a resume
function at a break (Note [Autocast in the trace] in `vars/autocast/__init__.py`).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ...guards.guard import Guard, GuardKind
from ...guards.sources import ObjectSource, StateQuerySource




@dataclass(frozen=True)
class AutocastState:
    """The CPU autocast state: enabled, the lower-precision dtype, the weight-cache flag."""

    enabled: bool
    dtype: torch.dtype
    cache: bool

    def describe(self) -> str:
        return f"{'on' if self.enabled else 'off'} {str(self.dtype).removeprefix('torch.')}"


@dataclass(frozen=True)
class AutocastTrace:
    """The capture's autocast record (Note [Autocast in the trace])."""

    ambient: AutocastState  # the real state when the capture started (guarded)
    state: AutocastState    # the traced state now
    graph_open: tuple = ()  # `_enter_autocast` nodes not exited in the graph yet, outermost first
    entered: tuple = ()     # (enter node, AutocastExit) of blocks the trace entered, still open
    popped: tuple = ()      # AutocastExit of blocks entered before the capture that the trace exited


def _real_state() -> AutocastState:
    return AutocastState(torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"),
                         torch.is_autocast_cache_enabled())


def _set_real(state: AutocastState, cache: bool) -> None:
    torch.set_autocast_enabled("cpu", state.enabled)
    torch.set_autocast_dtype("cpu", state.dtype)
    torch.set_autocast_cache_enabled(cache)


def other_devices_enabled() -> bool:
    """Whether autocast is on for a device other than the CPU: torch's own
    `torch._C._is_any_autocast_enabled()` with the CPU's state left out (the guard of a traced
    `_is_any_autocast_enabled()`, whose CPU part the trace answers)."""
    if not torch.is_autocast_enabled("cpu"):
        return torch._C._is_any_autocast_enabled()
    torch.set_autocast_enabled("cpu", False)
    try:
        return torch._C._is_any_autocast_enabled()
    finally:
        torch.set_autocast_enabled("cpu", True)


def start(output, location: str) -> AutocastTrace:
    """The capture's record, made on first use: reads and guards the ambient state (op
    dtypes and the queries' answers depend on it) and turns the real weight cache off."""
    trace = output.autocast
    if trace is None:
        ambient = _real_state()
        for fn, args, value in ((torch.is_autocast_enabled, ("cpu",), ambient.enabled),
                                (torch.get_autocast_dtype, ("cpu",), ambient.dtype),
                                (torch.is_autocast_cache_enabled, (), ambient.cache)):
            output.add_guard(Guard(GuardKind.CONSTANT_MATCH, StateQuerySource(ObjectSource(fn), args), value, location))
        torch.set_autocast_cache_enabled(False)
        trace = AutocastTrace(ambient, ambient)
        output.set_autocast(trace)
    return trace


def ambient_off_guard() -> Guard:
    """The guard of a capture whose graph was traced with autocast off and never read its state
    (Note [Autocast in the trace]): the graph's dtypes (and dtypes folded at trace time) are
    those of no autocast, so the entry must not run under one: `torch._C._is_any_autocast_enabled()`
    is False (one C call per hit, only in entries that call a graph)."""
    return Guard(GuardKind.CONSTANT_MATCH, StateQuerySource(ObjectSource(torch._C._is_any_autocast_enabled), ()), False)


def set_trace(output, trace: AutocastTrace | None) -> None:
    """Make `trace` the capture's record (a new state, or a checkpoint's) and the real
    state follow it; None puts the ambient state back."""
    previous = output.autocast
    output.set_autocast(trace)
    if trace is not None:
        _set_real(trace.state, False)
    elif previous is not None:
        _set_real(previous.ambient, previous.ambient.cache)


def end_tracing(output) -> None:
    """Put the real state back to the ambient one (the end of `OutputGraph.tracing()`)."""
    if output.autocast is not None:
        _set_real(output.autocast.ambient, output.autocast.ambient.cache)


class AutocastExit:
    """The `__exit__` of an autocast block, handed to a resume function at a graph break:
    leaves the block's `state` for `prior` (as `torch.autocast.__exit__` does)."""

    __slots__ = ("state", "prior")

    def __init__(self, state: AutocastState, prior: AutocastState):
        self.state = state
        self.prior = prior

    def __call__(self, *exc_info) -> bool:
        if torch.autocast_decrement_nesting() == 0:
            torch.clear_autocast_cache()
        _set_real(self.prior, self.prior.cache)
        return False

    def __repr__(self) -> str:
        return f"<exit of autocast cpu {self.state.describe()} to {self.prior.describe()}>"


def enter_autocast_block(exit_: AutocastExit) -> None:
    """Enter for real the block `exit_` leaves (residual code at a break inside it)."""
    torch.set_autocast_enabled("cpu", exit_.state.enabled)
    torch.set_autocast_dtype("cpu", exit_.state.dtype)
    torch.autocast_increment_nesting()
    torch.set_autocast_cache_enabled(exit_.state.cache)
