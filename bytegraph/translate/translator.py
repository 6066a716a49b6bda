"""The instruction translator: symbolic execution of one code object over trackers.

A `Translator` owns a stack, the fast locals and the cells of one frame, and walks
the frame's decoded instructions through a dispatch table indexed by opcode (built
from the `ops_*` families). Calls to user Python functions are inlined by running a
child translator that shares the parent's `OutputGraph`.
"""
from __future__ import annotations

import dis
import functools
import os

import torch

from .. import config
from .._bytecode.instructions import instructions_of
from ..errors import GraphBreak, UserCodeRaisesError
from ..guards.guard import Guard, GuardKind
from ..guards.sources import ObjectSource, global_source
from ..vars import builder
from ..vars.functions import CellVariable
from ..vars.iterators import IteratorVariable
from .ops_build import BuildOps
from .ops_calls import CallOps
from .ops_jumps import JumpOps
from .ops_load_store import LoadStoreOps
from .ops_operators import OperatorOps
from .ops_stack import StackOps


class Translator(StackOps, LoadStoreOps, OperatorOps, BuildOps, CallOps, JumpOps):
    def __init__(self, code, f_globals: dict, globals_source, local_vars: dict, cells: dict,
                 output, parent: "Translator | None" = None):
        self.code = code
        self.break_at = BREAK_MARKERS.get(code)
        self.instructions = instructions_of(code)
        self.f_globals = f_globals
        self.globals_source = globals_source
        self.f_builtins = _builtins_of(f_globals)
        self.locals = local_vars
        self.cells = cells
        self.output = output
        self.parent = parent
        self.depth = 0 if parent is None else parent.depth + 1
        self.stack: list = []
        self.ip = 0
        self.inst = None
        self.kw_names: tuple = ()
        self.return_value = None
        self.yielded = None
        self.snapshot_stack: list = []  # the stack before the current instruction (for a break)
        self.snapshot_kw_names: tuple = ()

    # ---- running ---------------------------------------------------------------------
    def run(self):
        """Execute until RETURN_VALUE; returns the tracker of the returned value."""
        instructions = self.instructions
        dispatch = DISPATCH
        previous = self.output.current_tx
        self.output.current_tx = self
        break_at = self.break_at
        try:
            while self.return_value is None and self.yielded is None:
                inst = instructions[self.ip]
                self.inst = inst
                self.snapshot_stack = list(self.stack)
                self.snapshot_kw_names = self.kw_names
                if break_at is not None and inst.offset in break_at:
                    self.break_at_marker(*break_at[inst.offset])
                self.ip += 1
                dispatch[inst.opcode](self, inst)
        finally:
            self.output.current_tx = previous
        return self.return_value

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
        f_globals, globals_src = fn_vt.globals_and_source()
        globals_src = self.output.globals_sources.setdefault(id(f_globals), globals_src)
        module = f_globals.get("__name__", "") or ""
        if not _module_traceable(module):
            self.unsupported(f"call to {module}.{code.co_name}() is not traced (it does I/O or "
                             f"keeps global state)", category="unsupported call",
                             hint="the call runs eagerly at a graph break; move it outside the "
                                  "compiled function to avoid the break")
        bound = fn_vt.bind_args(self, args, kwargs)
        cells = dict(zip(code.co_freevars, fn_vt.closure_cells(self)))  # one cell may have several names
        child = Translator(code, f_globals, globals_src, bound, cells, self.output, parent=self)
        if code.co_flags & 0x20:
            return GeneratorVariable(child)
        return child.run()

    # ---- services for trackers ------------------------------------------------------
    def wrap(self, value, source=None, guard: bool = True):
        return builder.wrap(self, value, source, guard)

    def _lineno(self) -> int:
        return self.inst.lineno if self.inst is not None else self.code.co_firstlineno

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
        """(code, lineno) of this frame and its inlining parents, outermost first (cheap)."""
        return tuple(reversed([(tx.code, tx._lineno()) for tx in self._outward()]))

    def unsupported(self, reason: str, category: str = "unsupported", hint: str = ""):
        self._raise_break(GraphBreak(reason, self.location(), category, hint, self.user_stack()))

    def break_at_marker(self, reason, category, hint, location, user_stack):
        """Break at a call site known to lead to a break deeper down (Note [Break markers]);
        the break is reported where it really happens, with its inlined call stack."""
        self._raise_break(GraphBreak(reason, location, category, hint, user_stack))

    def _raise_break(self, brk: GraphBreak):
        brk.frames = tuple(reversed(list(self._outward())))
        brk.chain = tuple((tx.code, tx.inst.offset if tx.inst is not None else -1) for tx in brk.frames)
        raise brk

    def raise_user_error(self, exc: BaseException):
        raise UserCodeRaisesError(f"{type(exc).__name__}: {exc}", self.location()) from exc

    def guard_attr_presence(self, source, name: str, present: bool) -> None:
        """Guard that `name` stays in (`present`) or out of the instance `__dict__` of the
        object at `source` (trap: `getattr(obj, "n", 0)` before `obj.n = ...`)."""
        from ..guards.sources import AttrSource

        kind = GuardKind.PRESENT if present else GuardKind.NOT_PRESENT
        self.output.add_guard(Guard(kind, AttrSource(source, "__dict__"), name, self.guard_location()))

    def load_global_value(self, name: str):
        """The tracker for global `name` (module globals, then builtins)."""
        if name in self.f_globals:
            return self.wrap(self.f_globals[name], global_source(self.globals_source, name))
        if name in self.f_builtins:
            self.output.add_guard(Guard(GuardKind.NOT_PRESENT, self.globals_source, name, self.guard_location()))
            value = self.f_builtins[name]
            return self.wrap(value, ObjectSource(value), guard=False)
        self.raise_user_error(NameError(f"name '{name}' is not defined"))

    def new_cell(self, name: str, contents=None) -> CellVariable:
        return CellVariable(name, contents)


# Note [Globals sources]
# Every inlined function reads its globals through one source per globals dict: the
# first that reached the dict (the root frame's `G` for its own module). A function is
# guarded by its code and the identity of its `__globals__`, so once the guards hold,
# every path to the same dict reaches the same dict: guards and residual code then spell
# `G['helper']` instead of `G['f'].__globals__['g'].__globals__['helper']`, and a global
# read at several depths is one guard.

# Library modules whose functions do I/O, threading or keep global state: calling them
# is a graph break (the call runs eagerly) instead of an attempt to inline them.
NOT_INLINED_MODULES = frozenset({
    "logging", "warnings", "threading", "random", "time", "os", "sys", "io", "pdb", "traceback",
    "inspect", "pickle", "subprocess", "socket", "numpy", "tqdm", "copy", "gc", "weakref", "abc",
    "contextlib", "atexit", "signal", "shutil", "tempfile", "pathlib", "json", "csv", "datetime",
})

# torch's own compiler plumbing and profiler hooks (decorators around optimizer methods).
NOT_INLINED_PREFIXES = ("torch._dynamo", "torch._compile", "torch.autograd.profiler", "torch.profiler",
                        "typing")


def _module_traceable(module: str) -> bool:
    return module.split(".", 1)[0] not in NOT_INLINED_MODULES and not module.startswith(NOT_INLINED_PREFIXES)


def is_traceable(fn) -> bool:
    """Whether bytegraph traces calls of Python function `fn` (not an I/O or stdlib-state module)."""
    return _module_traceable(fn.__globals__.get("__name__", "") or "")


# Note [Break markers]
# A graph break inside an inlined call that cannot be resumed where it happens (Note
# [Continuations]: a caller inside `try`, a call through a `partial` or a hooked module,
# a value that cannot be rebuilt...) restarts the capture, which then breaks at the
# outermost call site. The (code, offset) of every frame on the way is remembered here
# with the reason, so the restarted capture and the later captures of the callees (run
# through bytegraph by the residual code) break at their call sites at once instead of
# rediscovering the break. Cleared by `reset()`.
BREAK_MARKERS: dict = {}


@functools.lru_cache(maxsize=None)
def is_library_file(filename: str) -> bool:
    return filename.startswith(_LIBRARY_DIRS) or filename.startswith("<")


_LIBRARY_DIRS = tuple(os.path.dirname(m.__file__) + os.sep for m in (torch, os)) + (
    os.path.dirname(os.path.dirname(__file__)) + os.sep,)


def mark_breaks(brk: GraphBreak) -> None:
    """Remember the call sites of an inlined break (all frames but the innermost)."""
    for code, offset in brk.chain[:-1]:
        BREAK_MARKERS.setdefault(code, {})[offset] = (brk.reason, brk.category, brk.hint, brk.location,
                                                      brk.user_stack)


class GeneratorVariable(IteratorVariable):
    """A generator made during tracing: a suspended child translator, resumed lazily by
    `next_item` so its body runs interleaved with the consumer exactly like eager."""

    __slots__ = ("child", "done")

    def __init__(self, child: Translator):
        super().__init__(None)
        self.child = child
        self.done = False

    def python_type(self) -> type:
        return type(x for x in ())

    def next_item(self, tx):
        if self.done:
            return None
        child = self.child
        child.yielded = None
        child.run()
        if child.return_value is not None:
            self.done = True
            return None
        return child.yielded


def _builtins_of(f_globals: dict) -> dict:
    b = f_globals.get("__builtins__", __builtins__)
    return b if isinstance(b, dict) else b.__dict__


def _build_dispatch():
    from .unsupported import UNSUPPORTED_OPCODES

    table = [None] * 256
    for name, opcode in dis.opmap.items():
        handler = getattr(Translator, name, None)
        if handler is None:
            reason = UNSUPPORTED_OPCODES[name]
            handler = _unsupported_handler(name, reason)
        table[opcode] = handler
    return table


def _unsupported_handler(name: str, reason: str):
    def handler(tx, inst):
        tx.unsupported(f"{name}: {reason}", category="unsupported bytecode")
    handler.__name__ = name
    return handler


HANDLED_OPCODES = frozenset(name for name in dis.opmap if hasattr(Translator, name))
DISPATCH = _build_dispatch()
