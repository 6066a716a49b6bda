"""The instruction sequences bytegraph emits that differ between CPython versions, as
`bytecode.Instr` lists (docs/python-versions.md): a call and its callable, an attribute or
method load. The
residual-code emitter (`graph/codegen.PyCodegen`), resume functions and continuations build
calls and loads only through these, so a version's conventions live here alone.
"""
from __future__ import annotations

from bytecode import Instr

from .versions import (HAS_KW_NAMES, HAS_LOAD_CLOSURE, HAS_PRECALL, JUMPS_TAKE_BOOLS, NULL_BEFORE_CALLABLE, PY,
                       TRUTH_JUMPS)


def push_callable(load: list, **location) -> list:
    """The instructions `load` that push a callable, with the NULL a call of it takes: below
    the callable (3.11, 3.12) or above it (3.13)."""
    null = Instr("PUSH_NULL", **location)
    return [null, *load] if NULL_BEFORE_CALLABLE else [*load, null]


def call(nargs: int, kw_names: tuple = (), **location) -> list:
    """Call the callable below `nargs` arguments, the last `len(kw_names)` of them passed by
    those keywords (3.11: `KW_NAMES names; PRECALL n; CALL n`; 3.13: `LOAD_CONST names;
    CALL_KW n`)."""
    if not HAS_KW_NAMES and kw_names:
        return [Instr("LOAD_CONST", kw_names, **location), Instr("CALL_KW", nargs, **location)]
    out = [Instr("KW_NAMES", kw_names, **location)] if kw_names else []
    if HAS_PRECALL:
        out.append(Instr("PRECALL", nargs, **location))
    return [*out, Instr("CALL", nargs, **location)]


def load_attr(name: str, **location) -> Instr:
    """`obj.name` (3.12 takes the method flag in LOAD_ATTR's argument)."""
    return Instr("LOAD_ATTR", name if PY < (3, 12) else (False, name), **location)


def load_method(name: str, **location) -> Instr:
    """`obj.name` loaded for a call: `meth, self` or `NULL, attribute` (3.11's LOAD_METHOD)."""
    if PY < (3, 12):
        return Instr("LOAD_METHOD", name, **location)
    return Instr("LOAD_ATTR", (True, name), **location)


def yield_value(**location) -> Instr:
    """A yield at the top of a generator's body, outside any block (3.12's argument is the
    exception-stack depth, 1 inside the body's PEP 479 guard; 3.13's says "not in a yield from")."""
    if PY < (3, 12):
        return Instr("YIELD_VALUE", **location)
    return Instr("YIELD_VALUE", 1 if PY == (3, 12) else 0, **location)


def truth_jump(opname: str, target, **location) -> list:
    """Jump to `target` on the truth of the top of the stack, as the conditional jump `opname` of
    the user's code (`versions.TRUTH_JUMPS`: a backward one becomes forward; 3.13 converts the
    value with `TO_BOOL` first)."""
    return [*to_bool(**location), Instr(TRUTH_JUMPS[opname], target, **location)]


def to_bool(**location) -> list:
    """What converts the top of the stack to a bool before a conditional jump or UNARY_NOT
    (3.13's `TO_BOOL`; nothing before 3.13, whose jumps take any value)."""
    return [Instr("TO_BOOL", **location)] if JUMPS_TAKE_BOOLS else []


def load_closure(var, **location) -> Instr:
    """Push the cell itself of the cell or free variable `var` (a `CellVar`/`FreeVar`; 3.13:
    `LOAD_FAST` of its slot)."""
    return Instr("LOAD_CLOSURE" if HAS_LOAD_CLOSURE else "LOAD_FAST", var, **location)
