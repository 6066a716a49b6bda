"""Resume functions: the rest of a frame after a graph break, as a new function.

Note [Resume function signature]
A resume function for code `c` at instruction index `i` takes, positionally, the values
of the non-NULL stack slots at `i` (named `__bg_stack_<k>`) followed by the locals live
at `i`, in sorted order. Its body is the whole original body of `c`, preceded by a
prologue that pushes the stack slots back (PUSH_NULL for a NULL slot) and jumps to
instruction `i`; the exception table and line numbers of `c` are kept, so handlers
that cover `i` stay in force and tracebacks show the user's lines. Its name is
`__bg_resume_<co_name>_at_line_<line>` so logs and tracebacks say where it came from.
Frames with cell variables are not resumed (their cells would be split in two).
"""
from __future__ import annotations

import types

from bytecode import Bytecode, Instr, Label

from .._bytecode.assemble import make_code, strip_prologue
from .._bytecode.instructions import instructions_of

_VARARGS_FLAGS = 0x04 | 0x08


def stack_arg_name(slot: int) -> str:
    return f"__bg_stack_{slot}"


_bodies: dict = {}


def _body(code: types.CodeType) -> tuple[list, list[int], int]:
    """(body without prologue, position in it of each real instruction, prologue length)."""
    cached = _bodies.get(code)
    if cached is None:
        body = strip_prologue(list(Bytecode.from_code(code)))
        positions = [pos for pos, item in enumerate(body) if isinstance(item, Instr)]
        prologue_len = next(i for i, inst in enumerate(instructions_of(code)) if inst.opname == "RESUME") + 1
        cached = _bodies[code] = (body, positions, prologue_len)
    return cached


def original_instr(code: types.CodeType, index: int) -> Instr:
    """The `bytecode` library's Instr for instruction `index` of `code`."""
    body, positions, prologue_len = _body(code)
    return body[positions[index - prologue_len]]


def body_with_label(code: types.CodeType, index: int) -> tuple[list, Label]:
    """The original body of `code` (prologue stripped) with a Label before instruction `index`."""
    body, positions, prologue_len = _body(code)
    label = Label()
    pos = positions[index - prologue_len]
    return [*body[:pos], label, *body[pos:]], label


def resume_name(code: types.CodeType, index: int) -> str:
    lineno = instructions_of(code)[index].lineno or code.co_firstlineno
    return f"__bg_resume_{code.co_name}_at_line_{lineno}"


# A resume function's code -> (the user's code it resumes, how many instructions its
# prologue adds). A break inside a resume function resumes the *user's* code again, so
# a loop with a break reuses one resume function instead of nesting new ones.
_ORIGIN: dict = {}
_cache: dict = {}


def is_resume_code(code: types.CodeType) -> bool:
    return code in _ORIGIN


def make_resume_function(fn: types.FunctionType, code: types.CodeType, index: int,
                         null_slots: tuple[bool, ...], live: tuple[str, ...]) -> types.FunctionType:
    """The resume function of `fn` (whose code is `code`) at instruction `index` (cached)."""
    if code in _ORIGIN:
        code, shift = _ORIGIN[code]
        index -= shift
    # cells are unhashable: key by identity (the cached function keeps them alive)
    key = (code, index, null_slots, live, id(fn.__globals__), tuple(map(id, fn.__closure__ or ())))
    resume = _cache.get(key)
    if resume is None:
        resume = _build_resume_function(fn, code, index, null_slots, live)
        _cache[key] = resume
    return resume


def _build_resume_function(fn, code, index, null_slots, live) -> types.FunctionType:
    stack_names = [stack_arg_name(i) for i, is_null in enumerate(null_slots) if not is_null]
    params = stack_names + list(live)
    others = [n for n in code.co_varnames if n not in live]
    body, label = body_with_label(code, index)
    prologue = []
    for slot, is_null in enumerate(null_slots):
        prologue.append(Instr("PUSH_NULL") if is_null else Instr("LOAD_FAST", stack_arg_name(slot)))
    prologue.append(Instr("JUMP_FORWARD", label))
    name = resume_name(code, index)
    like = types.SimpleNamespace(
        co_argcount=len(params), co_posonlyargcount=0, co_kwonlyargcount=0,
        co_varnames=tuple(params + others), co_cellvars=code.co_cellvars, co_freevars=code.co_freevars,
        co_flags=code.co_flags & ~_VARARGS_FLAGS, co_filename=code.co_filename, co_name=name,
        co_qualname=name, co_firstlineno=code.co_firstlineno, co_consts=(None,))
    new_code = make_code(prologue + body, like=like)
    _ORIGIN[new_code] = (code, len(prologue))  # same 3.11 prologue, then our pushes and jump
    return types.FunctionType(new_code, fn.__globals__, name, None, fn.__closure__)
