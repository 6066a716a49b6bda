"""Resume functions: the rest of a frame after a graph break, as a new function.

Note [Resume function signature]
A resume function for code `c` at instruction index `i` takes, positionally, the values
of the non-NULL stack slots at `i` (named `__bg_stack_<k>`) followed by the locals live
at `i`, in sorted order. Its body is the whole original body of `c`, preceded by a
prologue that pushes the stack slots back (PUSH_NULL for a NULL slot) and jumps to
instruction `i`; the exception table and line numbers of `c` are kept, so handlers
that cover `i` stay in force and tracebacks show the user's lines. Its name is
`__bg_resume_<co_name>_at_line_<line>` so logs and tracebacks say where it came from.

Note [Resumed cells]
A frame with cell variables (locals captured by inner functions) resumes with its *cell
objects* as arguments, in the place of those locals (the root frame's own real cells,
Note [Frame cells at a break] in translate/breaks.py), so closures made before the break
and the code after it keep sharing them; so do its free variables (a closure's own
cells), so one resume function serves every closure made from the same code. In the
resume function's code a cell or free variable `c` is a plain local holding the cell:
`LOAD_DEREF c` becomes `LOAD_FAST c; LOAD_ATTR cell_contents`, `STORE_DEREF c` becomes
`LOAD_FAST c; STORE_ATTR cell_contents` and `LOAD_CLOSURE c` (3.13: `LOAD_FAST` of the cell)
becomes `LOAD_FAST c`. The tracer wraps such an argument as the real cell (`LocalCellContentsSource`), so reads are
guarded and writes replayed into it. An empty cell read this way raises ValueError where
eager raises NameError, so a break resumes only where that cannot happen
(`breaks.cells_reason`): no cell the code after the break may read before assigning it is
empty at the break, and the frame never deletes one (`del c`; another function deleting a
variable of an enclosing scope after the break would still turn the NameError of a later
read into a ValueError). Nor does a frame resume if it may read its locals through
`locals()`, `vars()`, `eval` or `exec` (they would see the cells) or call zero-argument
`super()` (it needs the `__class__` free variable and `self` as the first local).
"""
from __future__ import annotations

import types
import weakref

from bytecode import Bytecode, Instr, Label, TryBegin, TryEnd
from bytecode.instr import CellVar, FreeVar

from .._bytecode.analysis import past_jumps
from .._bytecode.assemble import make_code, strip_prologue
from .._bytecode import sequences
from .._bytecode.code_map import CodeMap
from .._bytecode.instructions import instructions_of

_VARARGS_FLAGS = 0x04 | 0x08


def stack_arg_name(slot: int) -> str:
    return f"__bg_stack_{slot}"


_bodies = weakref.WeakKeyDictionary()  # user code -> its body as `bytecode` instructions; goes with the code


def _body(code: types.CodeType) -> tuple[list, list[int], int]:
    """(body without prologue, position in it of each real instruction, prologue length)."""
    cached = _bodies.get(code)
    if cached is None:
        body = strip_prologue(list(Bytecode.from_code(code, conserve_exception_block_stackdepth=True)))
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


def jump_into(body: list, label: Label, lineno=None) -> list:
    """`JUMP_FORWARD label` into `body`. A label inside a `try` region is entered inside
    the same exception-table entry (Note [Entering a try region]), which covers the jump."""
    active = None
    for item in body:
        if item is label:
            break
        if isinstance(item, TryBegin):
            active = item
        elif isinstance(item, TryEnd) and item.entry is active:
            active = None
    jump = Instr("JUMP_FORWARD", label, lineno=lineno)
    if active is None:
        return [jump]
    begin = TryBegin(active.target, active.push_lasti, active.stack_depth)
    return [begin, jump, TryEnd(begin)]


# Note [Entering a try region]
# The `bytecode` library computes the stack size by walking the code from its start, and
# when a `raise` ends a try region it sizes the handler from the smallest stack seen since
# the region's TryBegin. A jump from generated code into the middle of the region skips
# that TryBegin, so the smallest size seen is that of the generated code's start (0), less
# than the handler's depth: the handler's cleanup code then seems to underflow the stack
# ("Failed to compute stacksize, got negative size"). Entering under a copy of the
# region's TryBegin starts the count at the jump.


def resume_name(code: types.CodeType, index: int) -> str:
    lineno = instructions_of(code)[index].lineno or code.co_firstlineno
    return f"__bg_resume_{code.co_name}_at_line_{lineno}"


# A resume function's code -> (the user's code it resumes, the index there of each of its
# instructions, -1 in its prologue). A break inside a resume function resumes the
# *user's* code again, so a loop with a break reuses one resume function instead of
# nesting new ones. By identity (`CodeMap`): the entry goes with the resume function's code.
_ORIGIN = CodeMap()
_cache: dict = {}  # (user code, index, stack layout, live locals, globals) -> resume function


def forget_resume_functions() -> None:
    """Drop the cache of resume functions (`bytegraph.reset()`): each holds its user
    code and globals, and every entry made for any function would stay alive otherwise."""
    _cache.clear()


def is_resume_code(code: types.CodeType) -> bool:
    return code in _ORIGIN


def origin(code: types.CodeType, index: int) -> tuple[types.CodeType, int]:
    """The user's code and instruction index that instruction `index` of `code` stands
    for (`code` itself unless it is a resume function's code)."""
    entry = _ORIGIN.get(code)
    return (code, index) if entry is None else (entry[0], entry[1][index])


def make_resume_function(fn: types.FunctionType, code: types.CodeType, index: int,
                         null_slots: tuple[bool, ...], live: tuple[str, ...],
                         primed: bool = False) -> types.FunctionType:
    """The resume function of `fn` (whose code is `code`) at instruction `index` (cached).
    `primed` (a generator's code resumed after a YIELD_VALUE, Note [Traced generators]):
    the prologue yields None once before the jump, so the value sent by the first
    `next`/`send` after that is the value of the user's `yield`."""
    code, index = origin(code, index)
    index = past_jumps(code, index)
    key = (code, index, null_slots, live, id(fn.__globals__), primed)
    resume = _cache.get(key)
    if resume is None:
        resume = _build_resume_function(fn, code, index, null_slots, live, primed)
        _cache[key] = resume
    return resume


# How Note [Resumed cells] spells each instruction on a cell variable `c`, after `LOAD_FAST c`.
_CELL_ACCESS = {"LOAD_DEREF": sequences.load_attr, "STORE_DEREF": lambda name, **location: Instr(
    "STORE_ATTR", name, **location), "LOAD_CLOSURE": None, "LOAD_FAST": None}


# 3.13's superinstructions on two locals, and the two instructions each stands for. A resume
# function's locals are reordered (its parameters first), and the `bytecode` library (0.19.1)
# packs a local numbered 16 into the 4 bits of a superinstruction's half (it splits only
# above 16), so a resume function's body spells them as two instructions.
_SUPERINSTRUCTIONS = {"LOAD_FAST_LOAD_FAST": ("LOAD_FAST", "LOAD_FAST"),
                      "STORE_FAST_LOAD_FAST": ("STORE_FAST", "LOAD_FAST"),
                      "STORE_FAST_STORE_FAST": ("STORE_FAST", "STORE_FAST")}


def _cells_as_locals(body: list) -> tuple[list, list[int]]:
    """`body` with the cell and free variables accessed through locals holding the cells
    (Note [Resumed cells]) and superinstructions split (`_SUPERINSTRUCTIONS`), and how many
    instructions each instruction of `body` became."""
    out, sizes = [], []
    for item in body:
        if not isinstance(item, Instr):
            out.append(item)
            continue
        halves = _SUPERINSTRUCTIONS.get(item.name)
        if halves is not None:
            out += [Instr(name, arg, location=item.location) for name, arg in zip(halves, item.arg)]
            sizes.append(2)
            continue
        if not isinstance(item.arg, (CellVar, FreeVar)):
            out.append(item)
            sizes.append(1)
            continue
        if item.name not in _CELL_ACCESS:
            raise AssertionError(f"{item.name} of a cell variable in a resumed frame (breaks.cells_reason)")
        out.append(Instr("LOAD_FAST", item.arg.name, location=item.location))
        access = _CELL_ACCESS[item.name]
        if access is not None:
            out.append(access("cell_contents", location=item.location))
        sizes.append(1 + (access is not None))
    return out, sizes


def _build_resume_function(fn, code, index, null_slots, live, primed) -> types.FunctionType:
    stack_names = [stack_arg_name(i) for i, is_null in enumerate(null_slots) if not is_null]
    params = stack_names + list(live)
    others = [n for n in code.co_varnames if n not in live]
    body, label = body_with_label(code, index)
    body, sizes = _cells_as_locals(body)
    prologue = []
    for slot, is_null in enumerate(null_slots):
        prologue.append(Instr("PUSH_NULL") if is_null else Instr("LOAD_FAST", stack_arg_name(slot)))
    if primed:
        prologue += [Instr("LOAD_CONST", None), sequences.yield_value()]
    prologue += jump_into(body, label)
    name = resume_name(code, index)
    like = types.SimpleNamespace(
        co_argcount=len(params), co_posonlyargcount=0, co_kwonlyargcount=0,
        co_varnames=tuple(params + others), co_cellvars=(), co_freevars=(),
        co_flags=code.co_flags & ~_VARARGS_FLAGS, co_filename=code.co_filename, co_name=name,
        co_qualname=name, co_firstlineno=code.co_firstlineno, co_consts=(None,))
    new_code = make_code(prologue + body, like=like, given_handler_depths=True)
    new_insts = instructions_of(new_code)
    first_body = next(i for i, inst in enumerate(new_insts) if inst.opname == "RESUME") + 1 + sum(
        isinstance(item, Instr) for item in prologue)
    where = [-1] * first_body
    user_prologue = _body(code)[2]
    for i, size in enumerate(sizes):
        where += [user_prologue + i] * size
    assert len(where) == len(new_insts), (len(where), len(new_insts))
    _ORIGIN[new_code] = (code, tuple(where))
    return types.FunctionType(new_code, fn.__globals__, name)
