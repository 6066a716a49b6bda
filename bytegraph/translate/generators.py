"""Generators made during tracing (Note [Traced generators]): the tracker, `yield from`
(GET_YIELD_FROM_ITER, SEND), the generator methods (`send`, `throw`, `close`) and the
finalization of generators the traced program drops while they are suspended.

# Note [Traced generators]
Calling a generator function inlines nothing yet: it makes a `GeneratorVariable`, a child
translator of the body suspended before its first instruction. Each `next`/`send`
resumes the child with the consumer as its parent (as CPython links the generator's
frame to the frame resuming it), so its body runs interleaved with the consumer exactly
like eager, in the same graph. YIELD_VALUE suspends it (the sent value replaces the
`None` it pushes); RETURN_VALUE finishes it (`returned` is the return value, the
`StopIteration.value`); an exception escaping the body finishes it and propagates to the
consumer (a `StopIteration` becomes `RuntimeError("generator raised StopIteration")`).
`throw`/`close` raise at the suspended YIELD_VALUE through the body's exception table,
delegating first to the sub-iterator of a `yield from` as `gen_throw`/`gen_close` do.

Finalization: CPython closes a suspended generator when its last reference goes, which
runs its `finally`/`with` exits at that moment (a `break` out of a `for` over it, a
temporary consumed by `any()`, a local reassigned or dying with its frame). A generator
suspended inside a `try`/`with` block (`is_open`) is put in `output.open_generators`;
while that list is not empty, each run loop calls `close_dropped` after every
instruction, which closes (traced) the open generators no frame, live object or
side-effect write still reaches, at the instruction that dropped them (re-checking each
one's last holder first, Note [Holders of open generators]). A generator
suspended outside any block is dropped silently: closing it has no observable effect.

At a graph break or as a returned value, a generator that has not started is rebuilt as
a call of its function with the same arguments (eager semantics: the body runs when the
caller consumes it), a finished one as such a call closed before it starts (exhausted,
same name and code). One suspended at a yield is rebuilt as a *primed resume generator*
(translate/resume.py, `primed=True`): a generator function whose prologue pushes the
stack back, yields None once, then jumps to the instruction after the user's yield; the
residual code calls it with the stack and live locals (cells as themselves, Note [Resumed
cells]) and advances it past the priming yield, so the next `next`/`send` resumes the
user's code exactly where the traced one stopped, with the sent value. Not rebuilt (a
break with the reason): a generator suspended inside try/with or in a `yield from` (its
close/throw would run code the primed prologue is not covered by), or whose cells forbid
resuming (`breaks.cells_reason`).
"""
from __future__ import annotations

from .._bytecode.analysis import block_handler
from .._bytecode.versions import SEND_POPS_RECEIVER
from ..errors import TracedRaise
from ..vars.base import MethodOfVariable
from ..vars.constant import ConstantVariable
from ..vars.dict_keys import reconstruct_map
from ..vars.exceptions import ExceptionVariable, as_exception
from ..vars.iterators import IteratorVariable, iterator_of
from . import speculation
from .resume import make_resume_function
from .ops_stack import NULL
from .breaks import cells_reason, live_values

_CREATED, _SUSPENDED, _RUNNING, _DONE = range(4)
_NONE = ConstantVariable(None)
_CONTINUE = object()  # `resume` without a sent value: the body continues after a `yield from`
_GENERATOR_METHODS = frozenset({"send", "throw", "close", "__next__", "__iter__"})


class GeneratorVariable(IteratorVariable):
    """A generator made during tracing: a suspended child translator (Note [Traced generators])."""

    __slots__ = ("child", "state", "returned", "fn", "args", "kwargs")
    rebuilt_as_new_object = True

    def __init__(self, child, fn, args: list, kwargs: dict):
        super().__init__(None)
        self.child = child
        self.state = _CREATED
        self.returned = None  # the return value once finished normally
        self.fn, self.args, self.kwargs = fn, list(args), dict(kwargs)

    @property
    def done(self) -> bool:
        return self.state == _DONE

    def python_type(self) -> type:
        return type(x for x in ())

    def describe(self) -> str:
        return f"generator {self.child.code.co_qualname}"

    # ---- resuming ------------------------------------------------------------------------
    def next_item(self, tx):
        return self.resume(tx, _NONE)

    def next_or_raise(self, tx):
        return self.call_method(tx, "__next__", [], {})

    def resume(self, tx, value, exc=None):
        """Resume with `value` sent (or exception tracker `exc` thrown at the yield); the
        yielded tracker, or None when the body returned (`returned` is set)."""
        state = self.state
        if state == _RUNNING:
            tx.raise_user_error(ValueError("generator already executing"))
        if state == _DONE:
            if exc is not None:
                tx.raise_exception(exc)
            return None
        if state == _CREATED and exc is None and value is not _CONTINUE and not value.is_none():
            tx.raise_user_error(TypeError("can't send non-None value to a just-started generator"))
        tx.output.side_effects.mutate(self)
        child = self.child
        child.parent, child.depth, child.caller_frames = tx, tx.depth + 1, None
        child.yielded = None
        if state == _CREATED and exc is not None:
            self.state = _DONE
            tx.raise_exception(exc)
        self.state = _RUNNING
        try:
            if exc is not None:
                self._raise_at_yield(tx, exc)
            elif state == _SUSPENDED and value is not _CONTINUE:
                child.stack[-1] = value
            child.run()
        except TracedRaise as raised:
            self.state = _DONE
            if issubclass(raised.exc.cls, StopIteration):
                error = ExceptionVariable(RuntimeError, [ConstantVariable("generator raised StopIteration")])
                error.set_cause(tx, raised.exc)
                error.set_context(tx, raised.exc)
                tx.reraise(error)
            raise
        if child.return_value is not None:
            self.state = _DONE
            self.returned = child.return_value
            return None
        self.state = _SUSPENDED
        if self.is_open():
            open_generators = tx.output.open_generators
            if self not in open_generators:
                open_generators.append(self)
        return child.yielded

    def _raise_at_yield(self, tx, exc) -> None:
        """Raise `exc` in the suspended body at its YIELD_VALUE (the child's current
        instruction): continue at the handler or let it propagate."""
        child = self.child
        child.snapshot_stack = list(child.stack)
        child.unwind(TracedRaise(exc, child.location()))

    def is_open(self) -> bool:
        """Suspended where closing runs code: inside a `try`/`with` block, or delegating by
        `yield from` to an open generator."""
        if self.state != _SUSPENDED:
            return False
        child = self.child
        if block_handler(child.code, child.ip - 1) is not None:
            return True
        sub = self.delegate()
        return sub is not None and getattr(sub, "is_open", _closed)()

    def delegate(self):
        """The sub-iterator of the `yield from` the body is suspended in, or None."""
        child = self.child
        nxt = child.instructions[child.ip]
        if nxt.opname == "RESUME" and nxt.arg & 3 >= 2:  # 3.13 adds a depth bit (4)
            return child.stack[-2]
        return None

    def _leave_delegation(self, returned) -> None:
        """The sub-iterator of the `yield from` finished (`returned`: its result) or raised
        (None) during a throw: pop it and move after the SEND loop, as CPython does."""
        child = self.child
        send = child.instructions[child.ip - 2]
        if returned is None:
            child.stack[-2:] = []
        elif SEND_POPS_RECEIVER:
            child.stack[-2:] = [returned]
        else:  # 3.12: the END_SEND at SEND's target pops the sub-iterator below the result
            child.stack[-1] = returned
        child.ip = send.target
        child.inst = child.instructions[send.target - 1]

    # ---- methods -------------------------------------------------------------------------
    def var_getattr(self, tx, name: str):
        if name in _GENERATOR_METHODS:
            return MethodOfVariable(self, name)
        if name == "gi_running":
            return ConstantVariable(self.state == _RUNNING)
        return super().var_getattr(tx, name)

    def hasattr_impl(self, tx, name: str) -> bool:
        return name in _GENERATOR_METHODS or name == "gi_running" or super().hasattr_impl(tx, name)

    def call_method(self, tx, name: str, args: list, kwargs: dict):
        if kwargs:
            tx.unsupported(f"keyword arguments to generator.{name}()", category="unsupported call")
        was_done = self.state == _DONE
        if name == "__iter__" and not args:
            return self
        if name == "__next__" and not args:
            item = self.resume(tx, _NONE)
        elif name == "send" and len(args) == 1:
            item = self.send(tx, args[0])
        elif name == "throw" and 1 <= len(args) <= 3:  # throw(exc) or throw(typ, value, tb)
            value = args[1] if len(args) > 1 and not args[1].is_none() else args[0]
            item = self.throw(tx, as_exception(tx, value))
        elif name == "close" and not args:
            self.close(tx)
            return _NONE
        else:
            return super().call_method(tx, name, args, kwargs)
        if item is None:  # StopIteration(value) when it returns now, plain StopIteration later
            returned = None if was_done else self.returned
            stop_args = [] if returned is None or returned.is_none() else [returned]
            tx.raise_exception(ExceptionVariable(StopIteration, stop_args))
        return item

    def send(self, tx, value):
        """`gen.send(value)` (and SEND of `yield from` with a value): delegates to the
        sub-iterator of a `yield from` through the body's own SEND loop."""
        return self.resume(tx, value)

    def throw(self, tx, exc):
        """`gen.throw(exc)`: thrown into the sub-iterator of a `yield from` first."""
        sub = self.delegate() if self.state == _SUSPENDED else None
        if sub is None or getattr(sub, "throw", None) is None:
            return self.resume(tx, _NONE, exc)
        try:
            item = sub.throw(tx, exc)
        except TracedRaise as raised:
            if issubclass(raised.exc.cls, StopIteration) and raised.exc.args is not None:
                self._leave_delegation(raised.exc.args[0] if raised.exc.args else ConstantVariable(None))
                return self.resume(tx, _CONTINUE)
            self._leave_delegation(None)
            return self.resume(tx, _NONE, raised.exc)
        if item is not None:
            return item
        self._leave_delegation(sub.returned if sub.returned is not None else ConstantVariable(None))
        return self.resume(tx, _CONTINUE)

    def close(self, tx) -> None:
        """`gen.close()`: GeneratorExit at the yield (the `yield from` sub-iterator closed
        first); a body that yields again raises RuntimeError, as CPython's `gen_close`."""
        if self.state == _CREATED:
            tx.output.side_effects.mutate(self)
            self.state = _DONE
            return
        if self.state != _SUSPENDED:
            if self.state == _RUNNING:
                tx.raise_user_error(ValueError("generator already executing"))
            return
        exit_exc = ExceptionVariable(GeneratorExit, [])
        sub = self.delegate()
        if sub is not None and getattr(sub, "close", None) is not None:
            try:
                sub.close(tx)
            except TracedRaise as raised:
                exit_exc = raised.exc
        try:
            item = self.resume(tx, _NONE, exit_exc)
        except TracedRaise as raised:
            if issubclass(raised.exc.cls, GeneratorExit):  # a StopIteration became RuntimeError
                return
            raise
        if item is not None:
            tx.raise_user_error(RuntimeError("generator ignored GeneratorExit"))

    def _reconstruct_suspended(self, cg) -> None:
        """A generator suspended at a yield, rebuilt as a resume generator at the
        instruction after it, primed (its prologue yields once, then jumps there)."""
        child = self.child
        index = child.ip
        if self.is_open() or self.delegate() is not None:
            where = "inside try/with" if self.is_open() else "in a `yield from`"
            reason = f"suspended {where}, where closing or throwing into it runs its own code"
        else:
            reason = cells_reason(child, index)
        if reason is not None:
            cg.tx.unsupported(f"{self.describe()} made during tracing is live after the trace (returned or at a "
                              f"graph break) but cannot be rebuilt: {reason}", category="unsupported output",
                              hint="consume the generator inside the compiled function, or create it outside")
        stack = child.stack[:-1]  # the top is the value the next `send` replaces
        live = live_values(child, index)
        resume = make_resume_function(_Globals(child.f_globals), child.code, index,
                                      tuple(vt is NULL for vt in stack), tuple(name for name, _ in live), primed=True)
        cg.push_callable_const(_resumed)
        cg.load_const(resume)
        values = [vt for vt in stack if vt is not NULL] + [vt for _, vt in live]
        cg.reconstruct_items(values, "BUILD_TUPLE")
        cg.load_const(child.code.co_name)
        cg.load_const(child.code.co_qualname)
        cg.call(4)

    # ---- speculation, rebuilding ------------------------------------------------------------
    def _save_state(self):
        return self.state, self.returned, speculation.frame_state(self.child)

    def _restore_state(self, state) -> None:
        self.state, self.returned, frame = state
        speculation.set_frame_state(self.child, frame)

    def children(self):
        if self.state == _CREATED:
            return [self.fn, *self.args, *self.kwargs.values()]
        return frame_referents(self.child)

    def reconstruct(self, cg) -> None:
        if self.state == _SUSPENDED:
            return self._reconstruct_suspended(cg)
        if self.state == _RUNNING:
            cg.tx.unsupported(f"{self.describe()} is running at the graph break", category="unsupported output")
        cg.push_callable_const(_remake)
        cg.reconstruct(self.fn)
        cg.reconstruct_items(self.args, "BUILD_TUPLE")
        reconstruct_map(cg, self.kwargs)
        cg.load_const(self.state == _DONE)
        cg.call(4)


class _Globals:
    """What `make_resume_function` reads of a function: its globals."""

    __slots__ = ("__globals__",)

    def __init__(self, f_globals: dict):
        self.__globals__ = f_globals


def _closed() -> bool:
    return False


def _resumed(resume, args: tuple, name: str, qualname: str):
    """Residual helper: a suspended generator made during tracing, rebuilt as its primed
    resume generator (Note [Traced generators])."""
    gen = resume(*args)
    next(gen)
    gen.__name__, gen.__qualname__ = name, qualname
    return gen


def _remake(fn, args, kwargs, finished: bool):
    """Residual helper: a generator made during tracing, never started or finished, made
    again (a finished one is closed before it starts: its body never runs)."""
    gen = fn(*args, **kwargs)
    if finished:
        gen.close()
    return gen


def frame_referents(tx) -> list:
    """The trackers one frame holds: its stack, locals, cells, pending results."""
    out = [*tx.stack, *tx.locals.values(), *tx.cells.values()]
    for vt in (tx.return_value, tx.yielded, tx.handled):
        if vt is not None:
            out.append(vt)
    return out


# ---- opcodes ---------------------------------------------------------------------------------
class GeneratorOps:
    def GET_YIELD_FROM_ITER(self, inst):
        vt = self.stack[-1]
        if getattr(vt, "delegate", None) is None:  # a generator delegates as itself
            self.stack[-1] = iterator_of(self, vt)

    def SEND(self, inst):
        value = self.stack.pop()
        receiver = self.stack[-1]
        if getattr(receiver, "send", None) is not None:
            item = receiver.send(self, value)
            returned = receiver.returned
        elif value.is_none():
            item = receiver.next_item(self)
            returned = None
        else:
            self.raise_user_error(AttributeError(f"'{receiver.python_type().__name__}' object has no attribute 'send'"))
        if item is None:
            if SEND_POPS_RECEIVER:  # from 3.12 the END_SEND at the target pops it
                self.stack.pop()
            self.stack.append(returned if returned is not None else ConstantVariable(None))
            self.ip = inst.target
        else:
            self.stack.append(item)


# ---- finalization of dropped generators ------------------------------------------------------
# Note [Holders of open generators]
# Whether an open generator is still reachable is asked after every instruction while one is
# open, so the answer is cached as a *witness*: where the generator was last found, `(frame,
# slot, key, path)`, with `path` the trackers from the root held in `frame.slot[key]` (or
# `frame.slot` itself when `key` is None) down to the generator, each a child of the one before.
# A witness is never trusted, only re-checked (`_holds`): the frame still on the live chain
# (`tx` or one of its parents), the root still in that slot by identity and counted as a root
# there (a returned frame's locals and cells are not; only the callers' `snapshot_stack` is),
# and every link of the path still in its parent's `children()`. Each of those is exactly one
# step of the walk below, so a witness that holds proves the generator reachable now, and
# close_dropped decides the same as a full walk after every instruction: a reachable
# generator is never closed, and an unreachable one has no holding witness and is closed at
# the instruction that dropped it, as before. A change that breaks the path (an index popped,
# a local rebound, a container emptied, a frame returned, a speculation restored to before the
# holder) fails the check and falls back to the walk, which records a new witness. Generators reached only through a
# side-effect write get none (those writes change without the frames seeing it): they take
# the whole walk each time, as before this cache.
def close_dropped(tx) -> None:
    """Close the open generators nothing reaches any more (Note [Traced generators]);
    `tx` just finished an instruction, its callers are in the middle of theirs. Cheap
    while each open generator's last witness still holds (Note [Holders of open
    generators]); the walk from the frames, then from the side-effect writes, only runs
    otherwise."""
    output = tx.output
    open_generators = output.open_generators
    open_generators[:] = [g for g in open_generators if g.is_open()]
    if not open_generators:
        return
    holders = output.generator_holders
    pending = [g for g in open_generators if not _holds(tx, holders.get(id(g)), g)]
    if not pending:
        return
    found = _find_holders(tx, pending)
    holders.update(found)
    pending = [g for g in pending if id(g) not in found]
    if not pending:
        return
    reached = _reachable(list(output.side_effects.values()))
    dropped = [g for g in pending if id(g) not in reached]
    for gen in dropped:
        open_generators.remove(gen)
        holders.pop(id(gen), None)
    for gen in dropped:
        try:
            gen.close(tx)
        except TracedRaise as raised:
            tx.unsupported(f"{gen.describe()} raised {raised.exc.message()} while being finalized (CPython "
                           "reports it as unraisable)", category="unsupported generator")


def _root_slots(tx):
    """(frame, slot, key, tracker) of what the live frames hold: `tx`'s stack (and its
    locals unless it returned: they die with it), its callers' values and what their
    current instruction popped (`snapshot_stack`)."""
    frame = tx
    while frame is not None:
        slots = ("stack", "locals", "cells") if frame is not tx or tx.return_value is None else ("stack",)
        if frame is not tx:
            slots += ("snapshot_stack",)
        for slot in slots:
            held = getattr(frame, slot)
            for key, vt in (held.items() if isinstance(held, dict) else enumerate(held)):
                yield frame, slot, key, vt
        for slot in ("return_value", "yielded", "handled"):
            vt = getattr(frame, slot)
            if vt is not None:
                yield frame, slot, None, vt
        frame = frame.parent


def _holds(tx, witness, gen) -> bool:
    """Whether `witness` (Note [Holders of open generators]) still proves `gen` reachable."""
    if witness is None:
        return False
    frame, slot, key, path = witness
    if path[-1] is not gen:
        return False
    live = tx
    while live is not frame:
        if live is None:
            return False
        live = live.parent
    if frame is tx and (slot == "snapshot_stack" or (tx.return_value is not None and slot in ("locals", "cells"))):
        return False
    held = getattr(frame, slot)
    if key is not None:
        if isinstance(held, dict):
            held = held.get(key)
        else:
            held = held[key] if key < len(held) else None
    if held is not path[0]:
        return False
    for parent, child in zip(path, path[1:]):
        if not any(c is child for c in parent.children()):
            return False
    return True


def _find_holders(tx, gens: list) -> dict:
    """id(generator) -> a witness, for each of `gens` reachable from the live frames,
    found breadth first (the shortest path); stops once all are found."""
    wanted = {id(g) for g in gens}
    found: dict = {}
    slot_of: dict = {}  # id(root) -> (frame, slot, key) where it was first found
    parent: dict = {}   # id(tracker) -> the tracker it was first reached from (None: a root)
    level = []
    for frame, slot, key, vt in _root_slots(tx):
        if vt is not None and id(vt) not in parent:
            parent[id(vt)] = None
            slot_of[id(vt)] = (frame, slot, key)
            level.append(vt)
    while level:
        for vt in level:
            if id(vt) in wanted:
                found[id(vt)] = _witness(vt, parent, slot_of)
                if len(found) == len(wanted):
                    return found
        following = []
        for vt in level:
            if getattr(vt, "is_tensor", True):  # a tensor, or the NULL below a callable
                continue
            for child in vt.children():
                if child is not None and id(child) not in parent:
                    parent[id(child)] = vt
                    following.append(child)
        level = following
    return found


def _witness(gen, parent: dict, slot_of: dict) -> tuple:
    path = [gen]
    while parent[id(path[-1])] is not None:
        path.append(parent[id(path[-1])])
    frame, slot, key = slot_of[id(path[-1])]
    return frame, slot, key, tuple(reversed(path))


def _reachable(roots: list) -> set:
    """ids of every tracker reachable from `roots` through `children()`."""
    seen: set = set()
    while roots:
        vt = roots.pop()
        if vt is None or id(vt) in seen:
            continue
        seen.add(id(vt))
        if getattr(vt, "is_tensor", True):  # a tensor, or the NULL below a callable
            continue
        roots.extend(vt.children())
    return seen


def refuse_dropping_by_exception(tx) -> None:
    """An exception leaves frame `tx` while an open generator lives in its locals: CPython
    closes it when the exception's traceback (which holds the frame) dies, later than the
    frame's exit; that moment is not followed."""
    held = set()
    for vt in [*tx.locals.values(), *tx.cells.values()]:
        held.add(id(vt))
    for gen in tx.output.open_generators:
        if id(gen) in held and gen.is_open():
            tx.unsupported(f"an exception leaves {tx.code.co_qualname} while {gen.describe()} is suspended "
                           "inside try/with in its locals (closed when the traceback dies)",
                           category="unsupported generator",
                           hint="close the generator (or finish it) before raising")
