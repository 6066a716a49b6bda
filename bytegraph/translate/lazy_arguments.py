"""The root frame's locals, whose arguments are wrapped (and guarded) when the trace first reads
them (`ArgumentLocals`).

Note [Arguments wrapped when read]
torch.compile guards lazily: an argument the function never reads installs no guard, so a call
with another value for it reuses the entry. The root frame of a capture therefore starts with
its arguments unread: `ArgumentLocals` is the frame's locals dict, empty but for what the
trace stores, with the real argument values in `not_read`; reading a local the dict does not hold
(`locals[name]`: LOAD_FAST, MAKE_CELL, `super()`, the live locals of a graph break, ...) wraps
the argument then (`dict.__missing__`, so reads of present locals cost nothing more), with its
guards located at that read. A deleted argument leaves `not_read`; a stored one is in the dict
and shadows it. Code that only looks (`in`, `get`, iteration) sees the read locals: a tracker
for an unread argument does not exist yet. The graph's inputs come in the order the trace first
reads them, as torch.compile's do. Checkpoints copy `not_read` with the locals (translate/speculation.py).
At a graph break the arguments still unread are wrapped (`capture._trace_and_codegen`): the
residual code and the resume function may use them, so a frame that breaks guards them as before.
"""
from __future__ import annotations

_MISSING = object()


class ArgumentLocals(dict):
    """A root frame's locals; `not_read`: name -> the real argument value not wrapped yet;
    `wrap(name, value)`: the tracker of an argument, made (and guarded) at its first read."""

    __slots__ = ("not_read", "wrap")

    def __init__(self, not_read: dict, wrap):
        super().__init__()
        self.not_read = not_read
        self.wrap = wrap

    def __missing__(self, name):
        value = self.not_read.get(name, _MISSING)
        if value is _MISSING:
            raise KeyError(name)
        vt = self[name] = self.wrap(name, value)
        return vt

    def delete(self, name) -> bool:
        """`del name`: whether it was bound (read, stored, or an unread argument)."""
        bound = self.pop(name, _MISSING) is not _MISSING
        return self.not_read.pop(name, _MISSING) is not _MISSING or bound


def unbind(local_vars, name) -> bool:
    """`del name` from a frame's locals (`ArgumentLocals` or a dict): whether it was bound."""
    if type(local_vars) is ArgumentLocals:
        return local_vars.delete(name)
    return local_vars.pop(name, _MISSING) is not _MISSING


def unread_arguments(local_vars) -> dict | None:
    """The unread arguments of a frame's locals (a copy, for a checkpoint), or None."""
    return dict(local_vars.not_read) if type(local_vars) is ArgumentLocals else None


def set_unread_arguments(local_vars, not_read: dict | None) -> None:
    if not_read is not None:
        local_vars.not_read.clear()
        local_vars.not_read.update(not_read)
