"""Residual code for a graph break.

At a break before instruction `i` of the breaking frame the transformed code: calls the
graph captured so far, replays pending side effects, loads the breaking frame's stack
and live locals as eager would have them, then either
- runs instruction `i` itself eagerly and calls the resume function(s) for the rest
  (Note [Resume function signature]); a jump on a tensor gets one resume function per
  branch; or,
- when `i` lies inside a `try`/`with` block of the root frame that cannot resume (Note
  [Breaks inside blocks]), jumps into a copy of the original body at `i` so the user's
  handlers stay in force (the rest of that frame then runs eagerly).
When the breaking frame was inlined into calls (a nested break), the calls waiting for
its result continue in a continuation (Note [Continuations]) that the residual code
calls with the breaking frame's resume arguments and every waiting call's arguments.
A user function called by the breaking CALL is replaced by its bytegraph-compiled
wrapper, so its own prefix and suffix are captured too.

Note [Breaks inside blocks]
A break inside a `try`/`with` block of the root frame resumes like any other when the
stack slots the innermost handler keeps (its depth) are for-loop iterators, grad-mode
`with` exits (`WithExitVariable`, rebuilt as `RestoreGradMode`), autocast ones
(`AutocastExit`, Note [Autocast in the trace] in vars/autocast/__init__.py) or a user manager's
bound `__exit__` (`BoundMethodVariable`, rebuilt as `types.MethodType(<class's
__exit__>, <the manager>)`, the manager rebuilt or reloaded from its source): the kinds
whose `kept_in_block` is set. The residual code
pushes those slots, and runs the breaking instruction under an exception-table entry
whose handler is the original one in a copy of the body appended after the residual
code: if the instruction raises, the user's handler runs (and the rest of the frame
eagerly), as in eager. Otherwise the slots are dropped and the resume function is
called; it keeps the user's exception table (with the user's handler depths, see
`make_code(given_handler_depths=True)`), so the handlers stay in force for the rest,
and a grad-mode block's exit slot is wrapped back into a `WithExitVariable` by the
tracer, so the block's end restores the mode inside the next graph; a user manager's
exit slot is the real bound method, whose `__exit__` the resume function traces where
the block ends (once, with eager's arguments). A break at BEFORE_WITH itself (inside
`__enter__`, after the capture restarted there) runs it eagerly and resumes inside the
block with its two results. A block kept by a manager of another kind (or a break
inside an `except` body, whose kept slots hold the exception) keeps the body-copy path.

Note [Nested breaks inside grad-mode blocks]
A nested break resumes in the innermost frame also when the breaking frame or frames waiting
for it are inside `with` blocks, if every `try`/`with` block open at their current
instruction is a grad-mode `with` (`no_grad()`, `enable_grad()`, `set_grad_enabled(b)`,
whose exit on the stack has a `restored_grad_mode`; `_grad_block_priors` walks the handler
chain: a `with` block's handler starts PUSH_EXC_INFO, WITH_EXCEPT_START, and the handler of
that code leads to the next block out). Each frame's resume function starts inside its
blocks with their exits as arguments (`RestoreGradMode`), like a break in a block of the
root frame, so on the normal path every block exits where eager's does, inside the next
graph. On the exception path eager would run every open exit from the innermost out, and
their only effect is the grad mode, the last (outermost) one's prior winning: the residual
code runs the breaking instruction and the resumed calls under a handler that sets that
mode and re-raises. Any other block (an `except` that could catch the exception, a user's
context manager) makes the capture break at an outer call instead (`call_depth`: the
deepest frame outside such blocks; torch.compile's nested graph breaks skip a frame in a
`try` block).

Note [Breaks inside inlined comprehensions]
From 3.12 a comprehension runs in the frame (PEP 709) inside an exception-table entry of its
own, whose handler keeps two slots above the enclosing blocks' ones: the value of the local
the loop variable shadows, saved by LOAD_FAST_AND_CLEAR (NULL when it was unbound), and the
container being built; it only restores the local and re-raises
(`analysis.is_comprehension_cleanup`). A break inside one resumes inside it like a break in
any block: the residual code pushes the kept slots (a NULL with PUSH_NULL), runs the breaking
instruction under a copy of the handler, drops them (a NULL by storing it, which unbinds
`_NULL_SINK`) and passes them to the resume function, whose prologue pushes them back (a NULL
again with PUSH_NULL) and which keeps the handler, so the local is restored whether the rest
of the comprehension finishes or raises.

Note [Frame cells at a break]
The root frame's own cell variables (its `co_cellvars`, made by MAKE_CELL) are trackers
made during tracing; the real frame has the cells too, but nothing wrote them. At a break
the residual code uses those real cells, not new ones: every tracker of such a cell is
rebuilt as `LOAD_CLOSURE <name>` (`PyCodegen.load_frame_cell`, from
`CellVariable.reconstruct`), its traced contents are loaded into `__bg_cell_<name>` with
the other values and stored with `STORE_DEREF <name>` after the side-effect replay
(`write_frame_cells`). So a closure made before the break, the resume function (which
takes the cell itself, Note [Resumed cells]), the user's handler run in a copy of the
body when the breaking instruction raises, and a body copy that runs the rest of the
frame (a break in an `except` body, or in another kind of manager's block) all share one
cell, as in eager. Only cells something rebuilt reaches are written (a live cell, or one a
rebuilt closure holds); the others nobody after the break can read. The frame's free
variables and a resume function's cells are real cells already (their writes are replayed).

Note [Handlers at a break]
Inside an `except` body (or a `finally`/`with` handler on the exception path) CPython runs
with the handled exception as the thread's exception being handled, and the one handled
before it saved in a stack slot: PUSH_EXC_INFO put them there and the handler's POP_EXCEPT
restores the saved one (CPython's Objects/exception_handling_notes.txt). The trace handled
the exception only in the tracer (`tx.handled`), so the residual code, running the rest of
the frame in a copy of the body, re-enters each active handler (a `HandlerSlotVariable`
on the stack, outermost first): the handled exception, rebuilt into the slot's temporary,
gets one traceback entry (`_handled_here`: the residual frame, at the line of the frame the
trace caught it at, as raising it there would have added), then PUSH_EXC_INFO makes it the
exception being handled and leaves the real previous one (the next outer handler's, or the
caller's) in the slot, where POP_EXCEPT finds it. So bare `raise`, `raise ... from`, the
`__context__` of a new exception, `sys.exc_info()` and the state after the handler are
eager's. A handled exception that cannot be rebuilt is a live value that cannot be, so the
frame runs eagerly. A break inside a handler never resumes in a resume function (the slot
is not `kept_in_block`), and a nested one breaks at an outer call site (`call_depth`).

Note [Breaks that read locals]
A break at a call of `locals()`, `vars()`, `dir()`, or `eval`/`exec` without a locals
mapping cannot run that call in the residual code, nor resume after it: the frame
running it holds the residual code's temporaries (`__bg_break_*`, `__bg_tmp_*`, ...) and,
in a resume function, its `__bg_stack_<k>` parameters, which the call would see. The
residual code instead unbinds every local the user's code does not have and jumps into a
copy of the body at the call, so the call and the rest of the frame run eagerly and see
exactly the user's locals. At a nested break the capture breaks at the outermost call
site instead (Note [Speculation log] in translate/speculation.py), and the callee breaks as a root frame.
"""
from __future__ import annotations

import builtins
import sys
import types

from bytecode import Instr, Label, TryBegin, TryEnd

from .._bytecode import sequences
from .._bytecode.versions import HAS_PRECALL, LOAD_ATTR_METHOD_BIT, NULL_BEFORE_CALLABLE, TRUTH_JUMPS
from .._bytecode.analysis import (block_handler, cells_read_before_written, handlers, is_comprehension_cleanup,
                                  live_locals)
from .._bytecode.instructions import instructions_of
from ..errors import GraphBreak
from ..vars.containers import TupleVariable
from .continuation import make_continuation, waiting_calls
from .ops_stack import NULL
from .resume import body_with_label, jump_into, make_resume_function, origin, original_instr

# opname -> (values popped, values pushed) for instructions that can run eagerly at a break.
_EFFECTS = {
    "BINARY_SUBSCR": (2, 1), "BINARY_OP": (2, 1), "COMPARE_OP": (2, 1), "CONTAINS_OP": (2, 1),
    "IS_OP": (2, 1), "UNARY_NEGATIVE": (1, 1), "UNARY_POSITIVE": (1, 1), "UNARY_INVERT": (1, 1),
    "UNARY_NOT": (1, 1), "GET_ITER": (1, 1), "LOAD_ATTR": (1, 1), "STORE_ATTR": (2, 0),
    "STORE_SUBSCR": (3, 0), "DELETE_SUBSCR": (2, 0), "STORE_GLOBAL": (1, 0), "DELETE_ATTR": (1, 0),
    "BEFORE_WITH": (1, 2), "TO_BOOL": (1, 1), "CONVERT_VALUE": (1, 1), "FORMAT_SIMPLE": (1, 1),
    "FORMAT_WITH_SPEC": (2, 1),
}
_CONDITIONAL_JUMPS = TRUTH_JUMPS
_NOT_RESUMED_FLAGS = 0x20 | 0x80 | 0x100 | 0x200  # generators and coroutines
_NULL_SINK = "__bg_break_null"  # where the residual code drops a NULL slot it kept for a block
_READ_LOCALS = frozenset({"locals", "vars", "eval", "exec", "super"})
_CELL_BREAKING = frozenset({"DELETE_DEREF", "LOAD_CLASSDEREF"})


def _effect(inst) -> tuple[int, int] | None:
    """(values popped, values pushed) of an instruction that can run eagerly at a break;
    None for the others (a break there cannot be resumed)."""
    name = inst.opname
    if name in _CONDITIONAL_JUMPS:
        return (1, 0)
    if name == "CALL":
        return (inst.arg + 2, 1)
    if name == "CALL_KW":  # the keyword names' tuple on top
        return (inst.arg + 3, 1)
    if name == "CALL_FUNCTION_EX":
        return (3 + (inst.arg & 1), 1)
    if name == "BUILD_STRING":
        return (inst.arg, 1)
    if name == "FORMAT_VALUE":
        return (2 if inst.arg & 0x04 else 1, 1)
    if name == "UNPACK_SEQUENCE":
        return (1, inst.arg)
    if name == "LOAD_ATTR" and LOAD_ATTR_METHOD_BIT and inst.arg & 1:
        return None  # a method load, as 3.11's LOAD_METHOD: it may push a NULL
    return _EFFECTS.get(name)


def resumable_reason(tx) -> str | None:
    """Why a break at the root frame's current instruction cannot be resumed (None: it can)."""
    if _effect(tx.inst) is None:
        return f"a break at {tx.inst.opname} cannot be resumed"
    return cells_reason(tx, _index(tx))


def cells_reason(tx, index: int) -> str | None:
    """Why the frame's cell and free variables keep it from resuming after instruction
    `index` (Note [Resumed cells]); None when they do not."""
    code, at = origin(tx.code, index)
    if not code.co_cellvars and not code.co_freevars:
        return None
    if any(inst.opname in _CELL_BREAKING for inst in instructions_of(code)):
        return "the frame deletes a variable captured by inner functions"
    if _READ_LOCALS.intersection(code.co_names):
        return "the frame has closure cells and may read its locals as a dict or call super()"
    for name in sorted(cells_read_before_written(code, at)):
        try:
            empty = _cell(tx, name).contents is None  # a cell the trace never read is wrapped now
        except GraphBreak as e:
            return f"the closure variable {name} holds a value the tracer cannot follow ({e.reason})"
        if empty:
            return f"the closure variable {name} may be read after the break before it is assigned"
    return None


def _cell(tx, name: str):
    """The tracker of the frame's cell or free variable `name` (Note [Resumed cells]: a
    resume function holds it in a local)."""
    return tx.cells[name] if name in tx.cells else tx.locals[name]


def live_values(tx, index: int) -> list:
    """(name, tracker) of each local live at instruction `index` and bound, and of each
    cell and free variable (Note [Resumed cells]), sorted by name: what a resume function
    there takes after the stack.

    Liveness is that of the user's code (`origin`): in a resume function's own code the
    locals also hold its parameters, which a read of all locals (`vars()`) would count."""
    code, at = origin(tx.code, index)
    out = []
    for name in sorted(live_locals(code, at) | set(code.co_freevars)):
        if name in tx.cells:
            out.append((name, tx.cells[name]))
            continue
        try:
            out.append((name, tx.locals[name]))  # an argument not read yet is wrapped now
        except KeyError:
            pass
    return out


def nested_break(frames, fn) -> tuple[list, types.FunctionType, bool | None] | None:
    """For a break in `frames[-1]` inside calls inlined from `frames[:-1]` (root first;
    `fn` is the root's function): the calls waiting for the breaking frame's result, as
    (resume function, trackers passed before the result, trackers after it), outermost
    first, the breaking frame's own function, and the grad mode the residual code restores
    if the rest raises (Note [Nested breaks inside grad-mode blocks]; None: no frame is
    inside a block). None when the break cannot be resumed there (the capture then breaks
    at an outer call site, `call_depth`, Note [Speculation log])."""
    calls = []
    priors_by_frame = []  # each resumed frame's open grad-mode blocks' priors, outermost first
    for depth, (tx, callee_tx) in enumerate(zip(frames, frames[1:])):
        index = _index(tx)
        keep = _call_operands_start(tx)
        callee = None if keep is None else _inlined_function(tx, tx.snapshot_stack[keep:], callee_tx.code)
        if callee is None:
            return None
        waiting = waiting_calls(tx.code, index, tx.locals) if depth == 0 else None
        if waiting is not None:  # the root is a continuation: its own waiting calls go on
            calls += waiting
            continue
        priors = _grad_block_priors(tx, index, tx.snapshot_stack[:keep])
        if priors is None or cells_reason(tx, index) is not None:
            return None
        priors_by_frame.append(priors)
        kept = tx.snapshot_stack[:keep]
        live = live_values(tx, index + 1)
        resume = make_resume_function(fn, tx.code, index + 1, tuple(vt is NULL for vt in kept) + (False,),
                                      tuple(n for n, _ in live))
        calls.append((resume, [vt for vt in kept if vt is not NULL], [vt for _, vt in live]))
        fn = callee
    tx = frames[-1]
    index = _index(tx)
    pops = (_effect(tx.inst) or (0, 0))[0]
    priors = _grad_block_priors(tx, index, tx.snapshot_stack[:len(tx.snapshot_stack) - pops])
    if (priors is None or resumable_reason(tx) is not None or _reads_frame_locals(tx)
            or (tx.inst.opname == "STORE_GLOBAL" and tx.f_globals is not frames[0].f_globals)):
        return None
    priors_by_frame.append(priors)
    return calls, fn, next((priors[0] for priors in priors_by_frame if priors), None)


def call_depth(frames, fn) -> int:
    """For a nested break that cannot resume where it is (`nested_break` said None): the
    deepest frame among `frames[:-1]` whose current call the capture can break at and
    resume after (its callee then runs compiled on its own), 0 (the root) if none can."""
    for depth in range(len(frames) - 2, 0, -1):
        if nested_break(frames[:depth + 1], fn) is not None:
            return depth
    return 0


def _grad_block_priors(tx, index: int, kept: list) -> list | None:
    """The grad modes that the `with` blocks open at instruction `index` of frame `tx`
    restore when they exit, outermost first, if every `try`/`with` block open there is a
    grad-mode `with` whose exit (`restored_grad_mode`) is among the stack slots `kept`
    (Note [Nested breaks inside grad-mode blocks]); None if another kind of block is open."""
    table = handlers(tx.code)
    instructions = instructions_of(tx.code)
    priors = []
    handler = block_handler(tx.code, index)
    while handler is not None:
        start = instructions[handler.target:handler.target + 2]
        if [i.opname for i in start] != ["PUSH_EXC_INFO", "WITH_EXCEPT_START"] or not 0 < handler.depth <= len(kept):
            return None
        exit_slot = kept[handler.depth - 1]
        prior = None if exit_slot is NULL else exit_slot.restored_grad_mode
        if prior is None:
            return None
        priors.append(prior)
        cleanup = table[handler.target]  # the handler of the exit call: it re-raises to the next block out
        handler = table[cleanup.target] if cleanup is not None else None
    priors.reverse()
    return priors


def _call_operands_start(tx) -> int | None:
    """Where the operands of the frame's current call start on its stack (its callable and
    NULL slots, `_callable_and_null`); None if the current instruction is not a call."""
    inst, stack = tx.inst, tx.snapshot_stack
    start = _operands_start(inst, stack)
    if inst.opname == "CALL_FUNCTION_EX" and stack[_callable_and_null(start)[1]] is not NULL:
        return None
    return start


def _operands_start(inst, stack) -> int | None:
    """Where a call instruction's operands start on `stack`: its two callable slots, then
    the arguments; None if `inst` is not a call."""
    if inst.opname == "CALL":
        return len(stack) - inst.arg - 2
    if inst.opname == "CALL_KW":
        return len(stack) - inst.arg - 3
    if inst.opname == "CALL_FUNCTION_EX":
        return len(stack) - 3 - (inst.arg & 1)
    return None


def _callable_and_null(start: int) -> tuple[int, int]:
    """The slots of a call's callable and of the NULL beside it, its operands starting at
    `start` (a method call has its method and `self` there): `NULL, callable` on 3.11 and
    3.12, `callable, NULL` on 3.13 (`versions.NULL_BEFORE_CALLABLE`)."""
    return (start + 1, start) if NULL_BEFORE_CALLABLE else (start, start + 1)


def _inlined_function(tx, operands: list, code) -> types.FunctionType | None:
    """The function (or a function made in the trace's stand-in, `resumed_function`) whose
    frame, with code `code`, the call with `operands` (its callable slots,
    `_callable_and_null`, then its arguments) inlined directly, so the frame's result is
    the call's result; None if there is none, or its frame cannot be resumed on its own."""
    fn_slot, null_slot = _callable_and_null(0)
    vt = operands[fn_slot] if operands[null_slot] is NULL else operands[0]
    fn = vt.resumed_function()
    if not isinstance(fn, types.FunctionType) or fn.__code__ is not code or code.co_flags & _NOT_RESUMED_FLAGS:
        return None
    return fn


def _index(tx) -> int:
    """Index of the frame's current instruction."""
    inst = tx.inst
    return tx.ip - 1 if tx.instructions[tx.ip - 1] is inst else tx.instructions.index(inst)


def emit_break(cg, tx, fn, waiting, compile_fn, emit_graph_call, restore_world, restore_on_raise=None) -> None:
    """Append to `cg` the residual code for a break before the current instruction of
    `tx`, the breaking frame (`fn` its function): the root frame, or a frame inlined into
    the `waiting` calls (`nested_break`), where the breaking instruction and the calls
    after it run under a handler that sets grad mode `restore_on_raise` and re-raises,
    unless it is None (Note [Nested breaks inside grad-mode blocks]).

    Every value the eager code needs is loaded into a temporary first, then the world is
    restored (side-effect replay, grad mode), then locals and stack are set: so no value
    computed from a source reads it after a replayed write (Note [Side-effect replay])."""
    code, inst = tx.code, tx.inst
    index = _index(tx)
    root = tx is cg.tx
    stack = list(tx.snapshot_stack)
    live = live_values(tx, index)
    waiting_values = [vt for _, before, after in waiting for vt in before + after]
    values = waiting_values + [vt for vt in stack if vt is not NULL] + [vt for _, vt in live]
    emit_graph_call(cg, TupleVariable(values))
    root_tx = cg.tx  # Note [Frame cells at a break]
    cg.frame_cells = {id(root_tx.cells[n]): n for n in root_tx.code.co_cellvars if n in root_tx.cells}
    for i, vt in enumerate(waiting_values):
        cg.reconstruct(vt)
        cg.store_fast(_waiting_temp(i))
    callable_slot = _callable_slot(inst, stack)
    for slot, vt in enumerate(stack):
        if vt is not NULL:
            if slot == callable_slot:
                _reconstruct_callee(cg, vt, compile_fn)
            else:
                handled = vt.handled_exception  # Note [Handlers at a break]
                cg.reconstruct(vt if handled is None else handled[0])
            cg.store_fast(_stack_temp(slot))
    for name, vt in live:
        cg.reconstruct(vt)
        cg.store_fast(_local_temp(name))
    restore_world(cg)
    cg.write_frame_cells()
    pops, pushes = _effect(inst)
    keep = len(stack) - pops
    handler = handlers(code)[index] if root else None
    if root:
        for name, _ in live:
            if name in tx.cells:  # passed as the cell itself (Note [Resumed cells])
                continue
            cg.load_fast(_local_temp(name))
            cg.store_fast(name)
        if handler is not None and not _resumes_in_block(stack[:keep], code, handler) or _reads_frame_locals(tx):
            _push_slots(cg, stack, 0)
            if inst.opname in _CONDITIONAL_JUMPS or inst.opname == "UNARY_NOT":
                # 3.13: the tracer left the operand as it was (TO_BOOL, COMPARE_OP's bool flag)
                cg.instructions += sequences.to_bool(lineno=cg.lineno)
            _delete_residual_locals(cg, tx)
            body, label = body_with_label(code, _call_sequence_start(tx.instructions, index))
            cg.instructions += jump_into(body, label, cg.lineno)
            cg.instructions.extend(body)
            return
    # The slots the instruction consumes are pushed; the others stay in their temporaries
    # (a NULL among them is re-pushed by the resume function: CPython cannot pop a NULL).
    on_raise = None
    if restore_on_raise is not None:
        on_raise = TryBegin(Label(), False, 0)
        cg.instructions.append(on_raise)
    block = handler and _enter_block(cg, stack, code, handler)
    _push_slots(cg, stack, keep)
    after = [vt is NULL for vt in stack[:keep]] + [False] * pushes
    if inst.opname in _CONDITIONAL_JUMPS:
        other = Label()
        cg.instructions += sequences.truth_jump(inst.opname, other, lineno=cg.lineno)
        _leave_block(cg, block, handler, stack)
        _call_rest(cg, tx, fn, index + 1, after, waiting, compile_fn)
        cg.instructions.append(other)
        _leave_block(cg, None, handler, stack)
        _call_rest(cg, tx, fn, inst.target, after, waiting, compile_fn)
    else:
        if inst.opname == "CALL":
            if tx.snapshot_kw_names:
                cg.instructions.append(Instr("KW_NAMES", tx.snapshot_kw_names, lineno=cg.lineno))
            if HAS_PRECALL:
                cg.instructions.append(Instr("PRECALL", inst.arg, lineno=cg.lineno))
        elif inst.opname == "UNARY_NOT":  # the tracer left its operand as it was (3.13's TO_BOOL)
            cg.instructions += sequences.to_bool(lineno=cg.lineno)
        instr = original_instr(code, index)
        cg.instructions.append(instr if root else Instr(instr.name, instr.arg, lineno=cg.lineno))
        for slot in reversed(range(keep, keep + pushes)):
            cg.store_fast(_stack_temp(slot))
        _leave_block(cg, block, handler, stack)
        _call_rest(cg, tx, fn, index + 1, after, waiting, compile_fn)
    if block:
        cg.instructions.extend(block[1])
    if on_raise is not None:
        cg.instructions += [TryEnd(on_raise), on_raise.target]
        cg.set_grad_mode(restore_on_raise)
        cg.instructions.append(Instr("RERAISE", 0, lineno=cg.lineno))


def _resumes_in_block(kept: list, code, handler) -> bool:
    """Whether a break inside a `try`/`with` block whose handler keeps `handler.depth` stack
    slots resumes (Note [Breaks inside blocks]): the slots the block keeps are for-loop
    iterators or grad-mode `with` exits, and the breaking instruction does not consume them;
    an inlined comprehension's own two (Note [Breaks inside inlined comprehensions]) are
    passed as they are."""
    depth = handler.depth
    own = 2 if is_comprehension_cleanup(code, handler) else 0
    return depth <= len(kept) and all(vt is not NULL and vt.kept_in_block for vt in kept[:depth - own])


def _enter_block(cg, stack: list, code, handler) -> tuple:
    """Push the slots the block keeps and open an exception-table entry whose handler is
    the original one in a copy of the body (appended after the residual code), so the
    breaking instruction runs with the user's handlers in force. Returns (TryBegin, body)."""
    for slot in range(handler.depth):
        if stack[slot] is NULL:
            cg.push_null()
        else:
            cg.load_fast(_stack_temp(slot))
    body, label = body_with_label(code, handler.target)
    begin = TryBegin(label, handler.lasti, handler.depth)
    cg.instructions.append(begin)
    return begin, body


def _leave_block(cg, block, handler, stack: list) -> None:
    """Close the entry opened by `_enter_block` (if `block`) and drop the kept slots (they
    stay in their temporaries for the resume function); a NULL is dropped by storing it in
    `_NULL_SINK` (POP_TOP cannot pop one; a store of NULL unbinds, as CPython's own
    comprehension handlers do)."""
    if block:
        cg.instructions.append(TryEnd(block[0]))
    for slot in reversed(range(handler.depth if handler else 0)):
        if stack[slot] is NULL:
            cg.store_fast(_NULL_SINK)
        else:
            cg.pop_top()


# Builtins that read the calling frame's locals as a dict when called with fewer positional
# arguments than this (`vars(obj)` does not; `eval(s, g)` reads `g`).
_FRAME_LOCALS_READERS = ((builtins.locals, 1), (builtins.vars, 1), (builtins.dir, 1),
                         (builtins.eval, 2), (builtins.exec, 2))


def _reads_frame_locals(tx) -> bool:
    """Whether the breaking instruction calls a builtin that reads the frame's locals
    (Note [Breaks that read locals])."""
    slot = _callable_slot(tx.inst, tx.snapshot_stack)
    callee = None if slot is None else tx.snapshot_stack[slot].fixed_callable()
    if callee is None:
        return False
    limit = next((n for fn, n in _FRAME_LOCALS_READERS if fn is callee), 0)
    if not limit:
        return False
    return tx.inst.opname == "CALL_FUNCTION_EX" or tx.inst.arg < limit  # *args: may be none


def _delete_residual_locals(cg, tx) -> None:
    """Unbind every local of the transformed frame that the user's code does not have (the
    residual code's temporaries, a resume function's parameters) before user code runs
    on in it (Note [Breaks that read locals])."""
    user_code = origin(tx.code, 0)[0]
    user = set(user_code.co_varnames + user_code.co_cellvars + user_code.co_freevars)
    for name in tx.code.co_varnames[:tx.code.co_argcount]:
        if name not in user:
            cg.instructions.append(Instr("DELETE_FAST", name, lineno=cg.lineno))
    cg.unbind_locals_except(user)


def _call_sequence_start(insts, index: int) -> int:
    """Where a copy of the body is entered to run instruction `index` eagerly: before the
    `KW_NAMES` and `PRECALL` of a CALL, which the tracer has consumed (a CALL entered on
    its own would take its keyword arguments as positional ones)."""
    if insts[index].opname == "CALL":
        while insts[index - 1].opname in ("PRECALL", "KW_NAMES"):
            index -= 1
    return index


def _push_slots(cg, stack: list, start: int) -> None:
    for slot in range(start, len(stack)):
        vt = stack[slot]
        if vt is NULL:
            cg.push_null()
        elif vt.handled_exception is not None:  # Note [Handlers at a break]
            cg.push_callable_const(_handled_here)
            cg.load_fast(_stack_temp(slot))
            cg.load_const(vt.handled_exception[1])
            cg.call(2)
            cg.instructions.append(Instr("PUSH_EXC_INFO", lineno=cg.lineno))
            cg.pop_top()
        else:
            cg.load_fast(_stack_temp(slot))


def _handled_here(exc: BaseException, line: int) -> BaseException:
    """Residual helper (Note [Handlers at a break]): `exc` with one more traceback entry,
    the calling frame at `line`, as raising it there would have added."""
    frame = sys._getframe(1)
    # tb_lasti -1: no instruction of the residual code, so a traceback shows `line`
    exc.__traceback__ = types.TracebackType(exc.__traceback__, frame, -1, line)
    return exc


def _local_temp(name: str) -> str:
    return f"__bg_break_local_{name}"


def _waiting_temp(i: int) -> str:
    """Temporary of the `i`th argument of the calls waiting at a nested break."""
    return f"__bg_break_waiting_{i}"


def _stack_temp(slot: int) -> str:
    """Temporary of stack slot `slot` in the breaking frame. Distinct from the resume
    functions' `__bg_stack_<k>` parameters: the breaking frame may itself be a resume
    function whose parameters must not be overwritten before they are read."""
    return f"__bg_break_stack_{slot}"


def _callable_slot(inst, stack) -> int | None:
    """The stack slot of the callable of the call `inst` (None: not a call, or a method call)."""
    start = _operands_start(inst, stack)
    if start is None:
        return None
    slot, null_slot = _callable_and_null(start)
    return slot if null_slot >= 0 and stack[null_slot] is NULL else None


def _reconstruct_callee(cg, vt, compile_fn) -> None:
    """Push the callee of the breaking call, compiled by bytegraph if it is user Python code.

    The function is looked up at run time (`compile_fn(<the function from its source>)`),
    never baked in: the guards pin its code, not which function object it is."""
    callee = vt.compiled_callee(cg.tx)
    if callee is None:
        cg.reconstruct(vt)
    elif callee[1] is None:
        _compiled_at_runtime(cg, callee[0], compile_fn)
    else:
        _bound_compiled(cg, *callee[:2], compile_fn, *callee[2:])


def _bound_compiled(cg, fn_vt, obj_vt, compile_fn, binder=types.MethodType) -> None:
    """Push `binder(compile_fn(<fn>), <obj>)` (a method, unless the callee names its binder)."""
    cg.push_callable_const(binder)
    _compiled_at_runtime(cg, fn_vt, compile_fn)
    cg.reconstruct(obj_vt)
    cg.call(2)


def _compiled_at_runtime(cg, fn_vt, compile_fn) -> None:
    cg.push_callable_const(compile_fn)
    cg.reconstruct(fn_vt)
    cg.call(1)


def _call_rest(cg, tx, fn, index: int, null_slots: list, waiting: list, compile_fn) -> None:
    """`return resume(stack temporaries..., live locals...)` (Note [Resume function signature]),
    or at a nested break `return continuation(waiting calls' arguments..., the same...)`
    (Note [Continuations])."""
    code = tx.code
    live = tuple(n for n, _ in live_values(tx, index))
    resume = make_resume_function(fn, code, index, tuple(null_slots), live)
    args = [_stack_temp(s) for s, is_null in enumerate(null_slots) if not is_null]
    root = tx is cg.tx
    args += [n if root and n not in tx.cells else _local_temp(n) for n in live]
    if waiting:
        resume = make_continuation(tuple((r, len(before)) for r, before, _ in waiting), resume)
        args = [_waiting_temp(i) for i in range(sum(len(b) + len(a) for _, b, a in waiting))] + args
    cg.push_callable_const(compile_fn(resume))
    for name in args:
        cg.load_fast(name)
    cg.call(len(args))
    cg.return_value()
