"""Exceptions shared by every layer (imports nothing from bytegraph).

Two control-flow exceptions: the internal `GraphBreak` (the tracer met something it
cannot capture) and the public `Unsupported` (what a `fullgraph=True` user sees).
`TracedRaise` is the traced program raising an exception (a tracker) that the translator
unwinds to a handler; `UserCodeRaisesError` means one escaped the compiled function (or a
graph op failed): the frame is run eagerly so the user gets the real exception and
traceback, cached as an eager entry under the guards that decided it.
"""
from __future__ import annotations


class Unsupported(RuntimeError):
    """A construct bytegraph cannot capture, raised to the user under `fullgraph=True`."""

    def __init__(self, reason: str, location: str = "", hint: str = "", user_stack=()):
        self.reason = reason
        self.location = location
        self.hint = hint
        self.user_stack = tuple(user_stack)
        super().__init__(self._message())

    def _message(self) -> str:
        where = f"{self.location}: " if self.location else ""
        lines = [f"{where}{self.reason}"]
        if len(self.user_stack) > 1:
            lines.append("  inlined from:")
            lines.extend(f"    {frame}" for frame in self.user_stack)
        if self.hint:
            lines.append(f"  hint: {self.hint}")
        return "\n".join(lines)


class FailOnRecompileLimitHit(Exception):
    """A miss past `config.recompile_limit` under `fullgraph=True` or with
    `config.fail_on_recompile_limit_hit` (torch.compile's exception of the same name)."""


class GraphBreak(Exception):
    """Internal: tracing cannot continue at `location`; carries a category and a hint."""

    def __init__(self, reason: str, location: str = "", category: str = "unsupported",
                 hint: str = "", user_stack=()):
        super().__init__(reason)
        self.reason = reason
        self.location = location
        self.category = category
        self.hint = hint
        self.user_stack = tuple(user_stack)
        self.guards = None  # the guards collected before the break (set by the capture)
        self.chain = ()  # ((code, instruction offset), ...) from the root frame to the breaking one
        self.frames = ()  # the translators of `chain` (dropped once the capture has used them)

    def to_unsupported(self) -> Unsupported:
        return Unsupported(self.reason, self.location, self.hint, self.user_stack)


class TracedRaise(Exception):
    """Internal: the traced program raises exception tracker `exc` at `location`; each
    translator's run loop looks for a handler in its frame, then its caller's."""

    def __init__(self, exc, location: str):
        super().__init__(location)
        self.exc = exc
        self.location = location


class UserCodeRaisesError(Exception):
    """Internal: the traced program itself raises; run it eagerly to raise for real."""

    def __init__(self, reason: str, location: str = ""):
        super().__init__(f"{location}: {reason}" if location else reason)
        self.reason = reason
        self.location = location
        self.guards = None  # the guards that decided it (set by the capture)


class InternalTracerError(Exception):
    """Internal: the tracer itself failed (a bytegraph bug); the frame runs eagerly."""

    def __init__(self, cause: BaseException, guards):
        super().__init__(f"{type(cause).__name__}: {cause}")
        self.cause = cause
        self.guards = guards
