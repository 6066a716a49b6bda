"""The builder registry: which function turns a real value into its tracker, keyed by type.

Each tracker kind's module registers a builder for the types it models, next to its
tracker class:

    @register(torch.Tensor)
    def build_tensor(tx, value, source, do_guard: bool) -> VariableTracker: ...

A builder gets the real value, its source (None: made during tracing) and whether to
install guards (`guard(...)` below); it builds nested values through `tx.wrap`.
`builder.wrap` resolves `type(value)` once per type, by walking its MRO: the first class
with an applicable entry wins (one class's entries are tried in registration order). An
entry made with `exact=True` applies to that class only, not to its subclasses (a `list`
subclass is a user object, not a list); `when` (a predicate of the type) narrows an entry
further (a tuple subclass counts as a tuple only if it is a named tuple). `object`'s
entry, a user object, catches the rest. Modules register when imported; `vars/builder.py`
imports every one of them before the first value is wrapped.
"""
from __future__ import annotations

from ..guards.guard import GuardKind

_ENTRIES: dict = {}  # class -> [(builder, exact, when), ...] in registration order


def register(*classes: type, exact: bool = False, when=None):
    """Register the decorated builder for values of `classes` (and of their subclasses,
    unless `exact`; only for types `when(type)` accepts, if given)."""
    def decorate(build):
        for cls in classes:
            _ENTRIES.setdefault(cls, []).append((build, exact, when))
        return build
    return decorate


def resolve(value_type: type):
    """The registered builder for values of exactly `value_type` (walks its MRO)."""
    for cls in value_type.__mro__:
        for build, exact, when in _ENTRIES.get(cls, ()):
            if (exact and cls is not value_type) or (when is not None and not when(value_type)):
                continue
            return build
    raise LookupError(f"no builder for {value_type!r} (object's entry is missing)")


HANDLERS: dict = {}  # builtin / operator / math / stdlib function -> handler(tx, fn, args, kwargs)


def handles(*fns):
    """Register the decorated handler for calls of the functions `fns` (a table row of
    vars/trace_rules.py: `BuiltinVariable` calls it)."""
    def decorate(handler):
        for fn in fns:
            HANDLERS[fn] = handler
        return handler
    return decorate


def guard(tx, do_guard: bool, kind: GuardKind, source, expected=None) -> None:
    """Install a guard on `source` if the builder was asked to."""
    if do_guard:
        tx.output.add_guard_at(tx, kind, source, expected)
