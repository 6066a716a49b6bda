"""Assembly of CPython 3.11 code objects from `bytecode` library instructions.

Owns: turning a body (a list of `bytecode.Instr`, `Label`, `TryBegin`/`TryEnd`,
`SetLineno`) into a code object whose *signature* equals an existing code object
`like` (argument counts, varnames order, flags, freevars, cellvars, filename),
and wrapping code objects into functions.

Invariants:
- The body never contains the 3.11 prologue; `make_code` prepends it:
  `COPY_FREE_VARS n` (if `like` has freevars), `MAKE_CELL` per cellvar,
  `RETURN_GENERATOR; POP_TOP` (generator/coroutine flags only), then `RESUME 0`.
  Positions are exactly CPython's: the copy/cell instructions carry no line,
  `RETURN_GENERATOR`/`POP_TOP` carry `(firstlineno, firstlineno, None, None)` and
  `RESUME` carries `(firstlineno, firstlineno, 0, 0)`.
- Body instructions without a location inherit the previous instruction's
  location (the first one inherits `RESUME`'s). `Instr(..., lineno=None)` means
  "explicitly no line", as CPython emits for cleanup code.
- `co_varnames` starts with `like.co_varnames` in order; locals the body uses
  that `like` lacks are appended after them. `co_consts[0]` is `like`'s
  docstring, or None, so a generated function never gets a stray `__doc__`.
- Stack size, exception table and line table are computed by the `bytecode`
  library, handler depths too unless `given_handler_depths`: then each `TryBegin`
  carries its own (copied from the user's code with
  `conserve_exception_block_stackdepth`, or set by whoever emits it). Code that
  enters a user's body in the middle (resume functions, residual code at a break)
  needs that: the library's flow analysis would start from the wrong stack.

Emitting instructions with the `bytecode` library (see the module tests); the sequences
that differ by version are built by `sequences.py` (a call's callable and NULL, the call,
attribute and method loads), never by hand:
- `Instr("LOAD_GLOBAL", (push_null, name))`: with the flag the interpreter places the NULL
  a call takes itself. Another callable is pushed with `sequences.push_callable` (or
  `PyCodegen.push_callable`): `PUSH_NULL` below the callable on 3.11 and 3.12, above it
  on 3.13; then the args, then `sequences.call(n)` (3.11: `PRECALL n; CALL n`).
- 3.11's `Instr("LOAD_METHOD", name)` pushes `meth, self` or `NULL, callable`; follow
  with a call. `LOAD_ATTR` takes a plain name on 3.11 (`sequences.load_attr`).
- 3.11's `Instr("KW_NAMES", ("a", "b"))` takes the tuple itself (the library stores the
  constant); it goes right before `PRECALL n`, n counting keyword args too.
- Closure ops take `CellVar(name)` / `FreeVar(name)`, not strings.
- `BINARY_OP` takes an int (or `bytecode.BinaryOp`); `COMPARE_OP` a `Compare`.

Timing: `make_code` on a 100-instruction straight-line body took about 0.56 ms on
the development machine (Python 3.11.7, bytecode 0.19.1), nearly all of it the
library's stack-size and exception-depth pass; a body without jumps or exception
blocks now gets its stack size from `straight_line_stacksize` instead.
"""
from __future__ import annotations

import itertools
import types
from collections.abc import Sequence

from bytecode import Bytecode, CompilerFlags, Instr, SetLineno, TryBegin
from bytecode.instr import CellVar, InstrLocation

from .versions import GENERATOR_BODY_GUARD, GENERATOR_POP_TOP_UNLOCATED

_GENERATOR_FLAGS = (
    CompilerFlags.GENERATOR | CompilerFlags.COROUTINE | CompilerFlags.ASYNC_GENERATOR
)
_NO_LOCATION = InstrLocation(None, None, None, None)


def make_code(
    body: Sequence,
    *,
    like: types.CodeType,
    name: str | None = None,
    qualname: str | None = None,
    firstlineno: int | None = None,
    given_handler_depths: bool = False,
) -> types.CodeType:
    """Assemble `body` into a code object with `like`'s signature (see module docstring)."""
    if firstlineno is None:
        firstlineno = like.co_firstlineno
    bc = Bytecode(prologue(like, firstlineno))
    if GENERATOR_BODY_GUARD and like.co_flags & _GENERATOR_FLAGS:
        guards = [item for item in itertools.takewhile(lambda item: isinstance(item, TryBegin), body)]
        bc[-1:-1] = guards  # the body's PEP 479 guard covers the RESUME, as CPython's does
        body = body[len(guards):]
    bc.extend(body)
    bc.argcount = like.co_argcount
    bc.posonlyargcount = like.co_posonlyargcount
    bc.kwonlyargcount = like.co_kwonlyargcount
    bc.argnames = list(like.co_varnames)
    bc.cellvars = list(like.co_cellvars)
    bc.freevars = list(like.co_freevars)
    bc.flags = CompilerFlags(like.co_flags)
    bc.filename = like.co_filename
    bc.name = like.co_name if name is None else name
    bc.qualname = like.co_qualname if qualname is None else qualname
    bc.first_lineno = firstlineno
    first = like.co_consts[0] if like.co_consts else None
    bc.docstring = first if isinstance(first, str) else None
    stacksize = straight_line_stacksize(bc)
    if stacksize is not None:
        return bc.to_code(stacksize=stacksize, compute_exception_stack_depths=False)
    return bc.to_code(compute_exception_stack_depths=not given_handler_depths)


def straight_line_stacksize(body) -> int | None:
    """The stack size of a body without jumps or exception blocks: the deepest point of its
    instructions' stack effects summed in order, as the library's flow analysis finds it
    on a body with one block; None for any other body (or one whose stack would go below
    empty, for the library to report), which the library analyses. The residual code
    around a graph is straight-line, and the analysis (building its control-flow graph and
    converting back) was most of assembling it: hf_t5's 615 instructions, 19 -> ~8 ms."""
    depth = peak = 0
    for inst in body:
        if type(inst) is not Instr:
            if type(inst) is SetLineno:
                continue
            return None  # a Label, TryBegin or TryEnd
        if inst.has_jump():
            return None
        pre, post = inst.pre_and_post_stack_effect(jump=False)
        if depth + pre < 0:
            return None
        depth += pre + post
        if depth > peak:
            peak = depth
        if inst.is_final():  # what follows is dead code, which the library does not count either
            break
    return peak


def prologue(like: types.CodeType, firstlineno: int) -> list[Instr]:
    """The 3.11 instructions CPython places before the first `RESUME` of `like`."""
    insts = []
    if like.co_freevars:
        insts.append(Instr("COPY_FREE_VARS", len(like.co_freevars), location=_NO_LOCATION))
    insts.extend(Instr("MAKE_CELL", CellVar(n), location=_NO_LOCATION) for n in like.co_cellvars)
    if like.co_flags & _GENERATOR_FLAGS:
        gen_location = InstrLocation(firstlineno, firstlineno, None, None)
        insts.append(Instr("RETURN_GENERATOR", location=gen_location))
        insts.append(Instr("POP_TOP", location=_NO_LOCATION if GENERATOR_POP_TOP_UNLOCATED else gen_location))
    insts.append(Instr("RESUME", 0, location=InstrLocation(firstlineno, firstlineno, 0, 0)))
    return insts


def strip_prologue(instructions: Sequence) -> list:
    """Drop everything up to and including the first `RESUME 0` (the inverse of `prologue`),
    keeping the start of a 3.12 generator body's guard (`make_code` puts it back before RESUME)."""
    for i, inst in enumerate(instructions):
        if isinstance(inst, Instr) and inst.name == "RESUME" and inst.arg == 0:
            guards = [item for item in instructions[:i] if isinstance(item, TryBegin)]
            return guards + list(instructions[i + 1 :])
    raise ValueError("no RESUME 0 in instructions: not a 3.11 function body")


def make_function(
    code: types.CodeType,
    globals: dict,
    closure: tuple[types.CellType, ...] | None = None,
    defaults: tuple | None = None,
    kwdefaults: dict | None = None,
    name: str | None = None,
) -> types.FunctionType:
    """Wrap `code` into a function; `closure` must match `code.co_freevars` in length."""
    fn = types.FunctionType(code, globals, name, defaults, closure)
    if kwdefaults:
        fn.__kwdefaults__ = dict(kwdefaults)
    return fn
