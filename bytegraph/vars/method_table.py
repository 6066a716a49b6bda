"""Method tables: what a tracker kind does for a method or attribute name, as data.

A kind lists the methods it models as a dict `name -> Row`, usually its class attribute
`METHODS`, which a subclass kind extends (`METHODS = {**Parent.METHODS, "numel": ...}`), so
a method a kind adds is one row. A row is a small function `run(tx, vt, name, args, kwargs)`
returning the call's result tracker; `when(vt, args, kwargs)`, if given, narrows it to the
calls it models. A row made by `mutator` changes the receiver in place: `dispatch` passes the
mutation barrier (Note [Mutation barrier] in graph/side_effects.py) once before it runs, so
the row itself never does. A row whose change depends on what it finds (`d.pop(k, default)`
of a missing key changes nothing) is an ordinary row that passes the barrier itself when it
writes. `dispatch` returns None when no row applies; the kind then does what follows its
table (the Python method of its class, a fallback, or a graph break naming the method).

Attribute reads are tables too: `name -> reader(tx, vt, name)`, read by `read_attr`; a
reader returns the attribute's tracker, or None to leave the name to what follows the table.

This module owns the row type and the two lookups; the tables live next to their kinds.
"""
from __future__ import annotations

from typing import Callable, NamedTuple


class Row(NamedTuple):
    run: Callable  # (tx, vt, name, args, kwargs) -> the result tracker
    mutates: bool = False  # the barrier is passed before `run`
    when: Callable | None = None  # (vt, args, kwargs) -> whether the row models this call


def row(run: Callable, when: Callable | None = None) -> Row:
    """A row that reads its receiver (or passes the barrier itself, where it writes)."""
    return Row(run, False, when)


def mutator(run: Callable, when: Callable | None = None) -> Row:
    """A row that changes its receiver: `dispatch` passes the barrier before it."""
    return Row(run, True, when)


def mutate(tx, vt) -> None:
    """The mutation barrier: `vt`'s state is about to change in place."""
    tx.output.side_effects.mutate(vt)


def dispatch(tx, vt, table: dict, name: str, args: list, kwargs: dict, barrier: Callable = mutate):
    """The result of `vt.<name>(*args, **kwargs)` by its row in `table` (`barrier(tx, vt)`
    first for a mutator), or None when no row applies."""
    entry = table.get(name)
    if entry is None or (entry.when is not None and not entry.when(vt, args, kwargs)):
        return None
    if entry.mutates:
        barrier(tx, vt)
    return entry.run(tx, vt, name, args, kwargs)


def read_attr(tx, vt, table: dict, name: str):
    """Attribute `name` of `vt` by its reader in `table`, or None (no reader, or it declined)."""
    reader = table.get(name)
    return None if reader is None else reader(tx, vt, name)


# The argument shapes that rows are most often narrowed to.
def no_args(vt, args, kwargs) -> bool:
    return not args


def no_arguments(vt, args, kwargs) -> bool:
    return not args and not kwargs


def no_kwargs(vt, args, kwargs) -> bool:
    return not kwargs


def one_arg(vt, args, kwargs) -> bool:
    return len(args) == 1
