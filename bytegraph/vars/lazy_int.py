"""Ints read from the caller's world whose value is pinned only when tracing uses it.

`self.calls += 1` or `global step; step += 1` read an int, add to it and write it back.
Pinning the value read (a CONSTANT_MATCH guard) would recompile on every call. Instead,
an int instance attribute or module global becomes an `UnpinnedIntVariable`: its type is
guarded at once, its value only when something needs it as a Python constant (a graph
op argument, a branch, a comparison, an index, formatting...). `+`, `-`, `*` and unary
`-`/`+` between unpinned ints and int constants build an expression instead of folding,
and residual code recomputes it from the sources (loaded before any replayed write, see
Note [Side-effect replay] in graph/side_effects.py). So a counter that only flows back
into Python state is never pinned and the entry is reused on the next call.

Invariant: every path that looks at the value goes through `as_python_constant()` or
`truth()`, which install the value guards of every leaf first.

A leaf whose value changed between captures of the function (or under `dynamic=True`,
Note [Symbolic sizes] in graph/shapes.py) is *dynamic*: passed to a graph op, it is a
SymInt (SymFloat) graph input instead of a pinned constant (`symbolic`), so a counter
that reaches tensor arithmetic stops recompiling after its first change.
"""
from __future__ import annotations

import operator

from ..guards.guard import Guard, GuardKind
from ..guards.sources import LengthSource
from .factory import provides
from .base import VariableTracker
from .constant import ConstantVariable
from .symbolic import symbolic_operator

UNPINNED_OPS = frozenset({operator.add, operator.sub, operator.mul, operator.neg, operator.pos})


class UnpinnedIntVariable(VariableTracker):
    """An int from `source` (leaf), or `fn(*args)` over unpinned ints and int constants."""

    __slots__ = ("value", "output", "fn", "args", "pinned", "dynamic", "registry_id")

    def __init__(self, value: int, output, source=None, fn=None, args=(), dynamic: bool = False):
        super().__init__(source)
        self.value = value
        self.output = output
        self.fn = fn
        self.args = tuple(args)
        self.pinned = False
        self.dynamic = dynamic or any(isinstance(a, UnpinnedIntVariable) and a.dynamic for a in self.args)
        self.registry_id = False  # a hook registry's key: Note [Hook registries] (vars/hooks/registry.py)

    def is_symbolic(self) -> bool:
        return self.dynamic

    def symbolic(self, tx):
        """This value as a symbolic number over its dynamic leaves (the others pinned)."""
        if self.source is not None:
            return tx.output.int_input(self.source, self.value)

        args = [a if isinstance(a, UnpinnedIntVariable) and a.dynamic else ConstantVariable(
            a.as_python_constant() if isinstance(a, VariableTracker) else a) for a in self.args]
        return symbolic_operator(tx, self.fn, args)

    def as_fx_arg(self, tx):
        if self.dynamic:
            return self.symbolic(tx).as_fx_arg(tx)
        return self.as_python_constant()

    def python_type(self) -> type:
        return type(self.value)

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self):
        self.pin()
        return self.value

    def pin(self) -> None:
        """Install the value guards this value depends on (once)."""
        if self.pinned:
            return
        self.output.side_effects.touch(self)
        self.pinned = True
        if self.source is not None:
            self.output.add_guard(_value_guard(self.source, self.value, _location(self.output)))
        for arg in self.args:
            if isinstance(arg, UnpinnedIntVariable):
                arg.pin()

    def truth(self, tx) -> bool:
        return bool(self.as_python_constant())

    def var_getattr(self, tx, name: str) -> VariableTracker:
        return ConstantVariable(self.as_python_constant()).var_getattr(tx, name)

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        cg.push_callable_const(self.fn)
        for arg in self.args:
            cg.reconstruct(arg)
        cg.call(len(self.args))

    def describe(self) -> str:
        kind = type(self.value).__name__
        return (f"{kind} {self.source.describe()}" if self.source is not None
                else f"a {kind} computed from outside state")


def _location(output) -> str:
    tx = getattr(output, "current_tx", None)
    return tx.guard_location() if tx is not None else ""


def _value_guard(source, value, location: str) -> Guard:
    """The guard pinning `value` read at `source`: a length read as a number (`len(log)`,
    `LengthSource`) is pinned as its container's length guard, which says so on a miss."""
    if isinstance(source, LengthSource):
        return Guard(GuardKind.LEN_MATCH, source.base, value, location)
    return Guard(GuardKind.CONSTANT_MATCH, source, value, location)


def wrap_int(tx, value, source, guard_type: bool = True, static: bool = False) -> VariableTracker:
    """The tracker for int (or float) `value` read at `source`: unpinned, memoized, and
    type-guarded unless the source's type is certain (`guard_type`: a `len()` is an int);
    `static`: never symbolic (an attribute of a `mark_static` module)."""
    cached = tx.output.tracked.get(source)
    if cached is not None:
        return cached
    if guard_type:
        tx.output.add_guard(Guard(GuardKind.TYPE_MATCH, source, type(value), tx.guard_location()))
    dynamic = tx.output.dynamic is not None and tx.output.dynamic.dynamic_int(source, value, static)
    vt = UnpinnedIntVariable(value, tx.output, source, dynamic=dynamic)
    tx.output.tracked[source] = vt
    return vt


def unpinned_operator(tx, fn, args):
    """`fn(*args)` as an unpinned expression, or None when it must fold on constants."""
    if fn not in UNPINNED_OPS or not any(isinstance(a, UnpinnedIntVariable) for a in args):
        return None
    for a in args:
        if not isinstance(a, UnpinnedIntVariable) and not (
                isinstance(a, ConstantVariable) and type(a.value) in (int, float)):
            return None
    value = fn(*[a.value for a in args])
    return UnpinnedIntVariable(value, tx.output, None, fn, args)


provides("wrap_int")(wrap_int)
