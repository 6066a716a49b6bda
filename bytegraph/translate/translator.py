"""The instruction translator: symbolic execution of one code object over trackers.

A `Translator` owns a stack, the fast locals and the cells of one frame, and walks
the frame's decoded instructions through a dispatch table indexed by opcode (built
from the `ops_*` families). Calls to user Python functions are inlined by running a
child translator that shares the parent's `OutputGraph`; a generator function's
body is a child translator suspended at each yield (translate/generators.py).

`checkpoint()`/`restore(cp)`/`release(cp)` speculate over the frames and the output
graph (translate/speculation.py); the root frame breaks where the capture's speculation
log says an earlier attempt found a break (Note [Speculation log]).
"""
from __future__ import annotations

import dis
import functools
import os

import torch

from .. import config
from .._bytecode.instructions import instructions_of
from .._bytecode.analysis import handlers
from ..errors import GraphBreak, TracedRaise
from ..guards.guard import GuardKind
from ..guards.sources import AttrSource, global_source
from ..vars import builder
from ..vars.constant import ConstantVariable
from ..vars.exceptions import ExceptionVariable
from ..vars.functions import CellVariable
from ..vars.trace_rules import Kind, elided_call, function_rule
from .ops_build import BuildOps
from .ops_calls import CallOps
from .generators import GeneratorOps, GeneratorVariable, close_dropped, refuse_dropping_by_exception
from .ops_exceptions import ExceptionOps
from .ops_jumps import JumpOps
from .ops_load_store import LoadStoreOps
from .ops_operators import OperatorOps
from .ops_stack import StackOps
from . import speculation
from .unsupported import UNSUPPORTED_OPCODES
from .version_ops import VERSION_HANDLERS
from .._bytecode.versions import FIRST_PSEUDO_OPCODE


class Translator(StackOps, LoadStoreOps, OperatorOps, BuildOps, CallOps, JumpOps, ExceptionOps,
                 GeneratorOps):
    def __init__(self, code, f_globals: dict, globals_source, local_vars: dict, cells: dict,
                 output, parent: "Translator | None" = None):
        self.code = code
        self.instructions = instructions_of(code)
        self.f_globals = f_globals
        self.globals_source = globals_source
        self.f_builtins = parent.f_builtins if parent is not None and parent.f_globals is f_globals \
            else _builtins_of(f_globals)
        self.locals = local_vars
        self.cells = cells
        self.output = output
        output.traced_files.add(code.co_filename)
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        self.stack: list = []
        self.ip = 0
        self.inst = None
        self.kw_names: tuple = ()
        self.return_value = None
        self.yielded = None
        self.snapshot_stack: tuple = ()  # the stack before the current instruction (for a break)
        self.snapshot_kw_names: tuple = ()
        self.steps = 0  # instructions run so far (positions of the speculation log)
        self.handled = None  # the exception this frame's except block handles (None: the caller's)
        self.raised_at = 0  # the line of this frame the exception `unwind` last caught was raised at
        self.caller_frames = None  # `frames()` of the parent, made at the first op (None: not yet)

    # ---- running ---------------------------------------------------------------------
    def run(self):
        """Execute until RETURN_VALUE; returns the tracker of the returned value."""
        instructions = self.instructions
        dispatch = DISPATCH
        previous = self.output.set_current_tx(self)
        log = self.output.speculation_log
        breaks = log.call_breaks.get(self._caller_steps()) if log is not None and log.call_breaks else None
        open_generators = self.output.open_generators  # Note [Traced generators]: dropped ones are closed
        stack = self.stack  # changed in place only, never rebound
        try:
            while self.return_value is None and self.yielded is None:
                inst = instructions[self.ip]
                self.inst = inst
                self.snapshot_stack = tuple(stack)  # a tuple: an empty stack copies nothing
                self.snapshot_kw_names = self.kw_names
                self.steps += 1
                if breaks is not None and self.steps in breaks:
                    self.break_at_marker(*breaks[self.steps])
                self.ip += 1
                try:
                    dispatch[inst.opcode](self, inst)
                except TracedRaise as raised:
                    self.unwind(raised)
                if open_generators:
                    close_dropped(self)
        finally:
            self.output.set_current_tx(previous)
        return self.return_value

    def _caller_steps(self) -> tuple:
        """The steps of the frames that inlined this one, from the root inwards (Note
        [Speculation log]: with this frame's own step, its position)."""
        return tuple(reversed([tx.steps for tx in self._outward()][1:]))

    def unwind(self, raised: TracedRaise) -> None:
        """Continue at the handler of the current instruction for the exception `raised`,
        or let it propagate to the caller's frame (Note [Traced exceptions])."""
        raised.exc.unwound(self)
        inst = self.inst
        index = self.ip - 1 if self.instructions[self.ip - 1] is inst else self.instructions.index(inst)
        handler = handlers(self.code)[index]
        if handler is None:
            if self.output.open_generators:
                refuse_dropping_by_exception(self)
            raise raised
        self.stack[:] = self.snapshot_stack[:handler.depth]
        if handler.lasti:
            self.stack.append(ConstantVariable(inst.offset))
        self.stack.append(raised.exc)
        self.raised_at = inst.lineno or self.code.co_firstlineno  # read by the handler's PUSH_EXC_INFO
        self.kw_names = ()
        self.ip = handler.target

    def inline_call(self, fn_vt, args: list, kwargs: dict):
        """Trace a call of user function `fn_vt` in a child translator and return its result."""
        code = fn_vt.get_code()
        if code.co_flags & (0x80 | 0x100 | 0x200):
            self.unsupported(f"calling coroutine function {code.co_qualname}", category="unsupported call",
                             hint="async code is not traced; call it outside the compiled function")
        if self.depth + 1 > config.inline_depth_limit:
            self.unsupported(f"inlining depth limit ({config.inline_depth_limit}) reached calling "
                             f"{code.co_qualname}", category="inline depth",
                             hint="raise bytegraph.config.inline_depth_limit or reduce recursion")
        f_globals = fn_vt.globals_dict()
        globals_src = self.output.globals_sources.get(id(f_globals))
        if globals_src is None:
            globals_src = self.output.globals_sources[id(f_globals)] = fn_vt.globals_dict_source()
        module = f_globals.get("__name__", "") or ""
        rule = function_rule(module, code)
        if rule.kind is Kind.BREAK:
            if elided_call(module, code.co_name, self.code):
                return ConstantVariable(None)
            self.unsupported(f"call to {module}.{code.co_name}() is not traced ({rule.reason})",
                             category=rule.category, hint=rule.hint)
        bound = fn_vt.bind_args(self, args, kwargs)
        cells = dict(zip(code.co_freevars, fn_vt.closure_cells(self)))  # one cell may have several names
        child = Translator(code, f_globals, globals_src, bound, cells, self.output, parent=self)
        if code.co_flags & 0x20:
            return GeneratorVariable(child, fn_vt, args, kwargs)
        return child.run()

    # ---- services for trackers ------------------------------------------------------
    def wrap(self, value, source=None, guard: bool = True):
        return builder.wrap(self, value, source, guard)

    def _lineno(self) -> int:
        lineno = self.inst.lineno if self.inst is not None else None
        return lineno if lineno is not None else self.code.co_firstlineno  # the prologue (MAKE_CELL) has none

    def _outward(self):
        """This translator, then its inlining parents up to the root frame."""
        tx = self
        while tx is not None:
            yield tx
            tx = tx.parent

    def location(self) -> str:
        return f"{self.code.co_filename}:{self._lineno()}"

    def guard_location(self) -> str:
        """Where a guard made now comes from, for users: the innermost inlined frame of their
        own code (not torch's, bytegraph's or the standard library's)."""
        tx = self
        while tx.parent is not None and is_library_file(tx.code.co_filename):
            tx = tx.parent
        return tx.location()

    def user_stack(self) -> list[str]:
        return [f"{tx.location()} in {tx.code.co_name}" for tx in self._outward()]

    def frames(self) -> tuple:
        """(code, lineno) of this frame and its inlining parents, outermost first (cheap: the
        parents' part is made once per frame, as they stay at the call while this one runs; a
        generator's body gets a new parent at each resume, which resets it)."""
        callers = self.caller_frames
        if callers is None:
            callers = self.caller_frames = () if self.parent is None else self.parent.frames()
        return callers + ((self.code, self._lineno()),)

    def unsupported(self, reason: str, category: str = "unsupported", hint: str = ""):
        self._raise_break(GraphBreak(reason, self.location(), category, hint, self.user_stack()))

    def break_at_marker(self, reason, category, hint, location, user_stack):
        """Break at a call site known to lead to a break deeper down (Note [Speculation
        log]); the break is reported where it really happens, with its inlined call stack."""
        self._raise_break(GraphBreak(reason, location, category, hint, user_stack))

    def _raise_break(self, brk: GraphBreak):
        brk.frames = tuple(reversed(list(self._outward())))
        brk.chain = tuple((tx.code, tx.inst.offset if tx.inst is not None else -1) for tx in brk.frames)
        brk.steps = tuple(tx.steps for tx in brk.frames)  # its position (Note [Speculation log])
        brk.call_depth = 0  # where a restart breaks, if the break cannot resume where it is
        raise brk

    # ---- speculation (translate/speculation.py) ------------------------------------------
    def checkpoint(self) -> "speculation.TranslatorCheckpoint":
        """Everything a speculation from here can change: the output graph (graph, guards,
        inputs, side effects, grad mode) and the frames of this translator and its parents."""
        return speculation.checkpoint(self)

    def restore(self, cp) -> None:
        """Put back exactly what `cp` captured (it stays active; `release` it when done)."""
        speculation.restore(self, cp)

    def release(self, cp) -> None:
        """Keep everything done since `cp`."""
        self.output.release(cp.graph)

    def position(self) -> tuple:
        """Where this translator is, for the speculation log: steps from the root inwards."""
        return tuple(reversed([tx.steps for tx in self._outward()]))

    def speculation_decision(self, kind: str):
        """The decision of kind `kind` an earlier attempt of this capture made here, or None."""
        log = self.output.speculation_log
        return None if log is None else log.decision(kind, self.position())

    def restart_with(self, kind: str, value):
        """Record decision `value` for this position and restart the capture (Note
        [Speculation log]); the next attempt reads it with `speculation_decision`."""
        self.output.speculation_log.decide(kind, self.position(), value)
        raise speculation.RestartCapture(kind)

    def restart_capture(self, why: str):
        """Start the capture again from the first instruction: this attempt changed the real
        world it read (a lazy module initialized its parameters, vars/lazy_modules.py), so
        the next one reads it anew. Not counted against the restart limit (each makes progress)."""
        raise speculation.RestartCapture(why, counted=False)

    def raise_user_error(self, exc: BaseException):
        """The traced program raises `exc` here (a builtin or a lookup failed). A graph break
        raised while computing the call's arguments is not the program's exception."""
        if isinstance(exc, GraphBreak):
            raise exc
        self.raise_exception(ExceptionVariable.from_real(exc))

    def raise_exception(self, exc) -> None:
        """Raise exception tracker `exc` here; it records the exception being handled as its
        `__context__`, as CPython does."""
        active = self.active_exception()
        if active is not None:
            exc.set_context(self, active)
        raise TracedRaise(exc, self.location())

    def reraise(self, exc) -> None:
        """Raise `exc` again (bare `raise`, RERAISE): its chaining stays as it is."""
        raise TracedRaise(exc, self.location())

    def active_exception(self):
        """The exception being handled here (`sys.exc_info()[1]`), or None."""
        for tx in self._outward():
            if tx.handled is not None:
                return None if tx.handled.is_none() else tx.handled
        if self.output.caller_exception:  # Note [The caller's exception]
            self.unsupported("reading the exception the compiled function's caller is handling",
                             category="unsupported exception",
                             hint="call the compiled function outside the except block")
        self.output.add_guard_at(self, GuardKind.NO_CALLER_EXCEPTION, None)
        return None

    def guard_attr_presence(self, source, name: str, present: bool, dict_source=None) -> None:
        """Guard that `name` stays in (`present`) or out of the instance `__dict__` of the
        object at `source` (trap: `getattr(obj, "n", 0)` before `obj.n = ...`); the dict is
        read at `dict_source` if given (`GenericAttrSource`: past a Python `__getattribute__`)."""
        kind = GuardKind.PRESENT if present else GuardKind.NOT_PRESENT
        self.output.add_guard_at(self, kind, dict_source or AttrSource(source, "__dict__"), name)

    def load_global_value(self, name: str):
        """The tracker for global `name` (module globals, then builtins)."""
        if name in self.f_globals:
            return self.wrap(self.f_globals[name], global_source(self.globals_source, name))
        if name in self.f_builtins:
            self.output.add_guard_at(self, GuardKind.NOT_PRESENT, self.globals_source, name)
            value = self.f_builtins[name]
            return self.wrap(value, self.output.object_source(value), guard=False)
        self.raise_user_error(NameError(f"name '{name}' is not defined"))

    def new_cell(self, name: str, contents=None) -> CellVariable:
        return CellVariable(name, contents)


# Note [Traced exceptions]
# The traced program raises by `tx.raise_exception(exc_tracker)` (RAISE_VARARGS, RERAISE,
# and `tx.raise_user_error(real_exc)` for what a builtin or a lookup raises while traced):
# a `TracedRaise` Python exception. Each translator's run loop catches it around the
# instruction it runs and unwinds as CPython does (Objects/exception_handling_notes.txt):
# the frame's exception table names the handler covering the instruction; the stack is cut
# to the handler's depth (plus the instruction's offset if `lasti`), the exception pushed,
# and tracing continues at the handler. A frame with no handler lets it propagate out of
# `run()`, so the caller's run loop handles it at its CALL instruction, and so on. Only one
# that escapes the root frame makes the capture fail (`UserCodeRaisesError`): that call
# runs eagerly, cached as an eager entry under the guards the trace collected. What was
# traced before the raise (graph ops, side effects) stays in the trace, as eagerly.
# `handled` is the exception an except block of this frame is handling (PUSH_EXC_INFO /
# POP_EXCEPT); a frame that set none sees its caller's (CPython's per-thread exc_info).


# Note [The caller's exception]
# A frame whose handlers are not handling an exception sees the one its caller handles
# (`sys.exc_info()`, the `__context__` of a new exception, bare `raise`). The trace models
# none: when it reads that state (`active_exception` finding no handler in the traced
# frames), the entry is guarded on the caller handling no exception, and a capture made while
# the caller handles one breaks there instead (the rest runs eagerly, seeing the real one).


# Note [Globals sources]
# Every inlined function reads its globals through one source per globals dict: the
# first that reached the dict (the root frame's `G` for its own module). A function is
# guarded by its code and the identity of its `__globals__`, so once the guards hold,
# every path to the same dict reaches the same dict: guards and residual code then spell
# `G['helper']` instead of `G['f'].__globals__['g'].__globals__['helper']`, and a global
# read at several depths is one guard.


@functools.lru_cache(maxsize=None)
def is_library_file(filename: str) -> bool:
    return filename.startswith(_LIBRARY_DIRS) or filename.startswith("<")


_LIBRARY_DIRS = tuple(os.path.dirname(m.__file__) + os.sep for m in (torch, os)) + (
    os.path.dirname(os.path.dirname(__file__)) + os.sep,)


def _builtins_of(f_globals: dict) -> dict:
    b = f_globals.get("__builtins__", __builtins__)
    return b if isinstance(b, dict) else b.__dict__


def _build_dispatch():
    """The handler of each opcode of the running interpreter: the version's own (its
    `ops_py3NN` module, `VERSION_HANDLERS`) over the 3.11 families' methods; an opcode with
    neither breaks with its reason from `UNSUPPORTED_OPCODES`."""
    table = [None] * FIRST_PSEUDO_OPCODE
    for name, opcode in dis.opmap.items():
        if opcode >= FIRST_PSEUDO_OPCODE:
            continue
        handler = VERSION_HANDLERS.get(name) or getattr(Translator, name, None)
        if handler is None:
            handler = _unsupported_handler(name, UNSUPPORTED_OPCODES[name])
        table[opcode] = handler
    return table


def _unsupported_handler(name: str, reason: str):
    def handler(tx, inst):
        tx.unsupported(f"{name}: {reason}", category="unsupported bytecode")
    handler.__name__ = name
    return handler


HANDLED_OPCODES = frozenset(name for name, opcode in dis.opmap.items() if opcode < FIRST_PSEUDO_OPCODE
                             and (name in VERSION_HANDLERS or hasattr(Translator, name)))
DISPATCH = _build_dispatch()
