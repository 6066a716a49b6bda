"""Control-flow facts about CPython 3.11 code objects: stack depths and liveness.

Owns: the instruction graph of a code object (fall-through, jump and
exception-handler edges over the indices of `instructions_of(code)`), the real
stack effect of each instruction, `stack_depths` and `live_locals`. Every result
is cached per code object (code objects are immutable).

Exception edges follow `Objects/exception_handling_notes.txt`: an instruction
covered by a table entry may jump to the entry's handler, which starts with the
stack cut to the entry's depth, plus the offset of the raising instruction if
the entry has `lasti`, plus the exception itself.
"""
from __future__ import annotations

import dis
import opcode
import types
from collections.abc import Iterator
from dataclasses import dataclass

from bytegraph._bytecode.code_map import CodeMap
from bytegraph._bytecode.instructions import Inst, instructions_of
from bytegraph._bytecode.versions import INTRINSIC_STOPITERATION_ERROR

UNCONDITIONAL_JUMPS = frozenset({"JUMP_FORWARD", "JUMP_BACKWARD", "JUMP_BACKWARD_NO_INTERRUPT"})
TERMINATORS = frozenset({"RETURN_VALUE", "RETURN_CONST", "RAISE_VARARGS", "RERAISE"}) | UNCONDITIONAL_JUMPS
UNREACHABLE = -1

# Note [Implicit reads of locals]
# Some calls read fast locals without a LOAD_FAST: zero-argument `super()` reads
# the first argument of the frame, and `locals()`, `vars()`, `dir()`, `eval()`
# and `exec()` may read all of them. For liveness, such a read happens at every
# instruction from the LOAD_GLOBAL of the name up to and including the CALL that
# consumes it (found by stack depth), so a graph break at that CALL keeps them. From 3.12
# `super().name` is one LOAD_SUPER_ATTR over `super`, the class cell and the first argument.
_READS_ALL_LOCALS = frozenset({"locals", "vars", "dir", "eval", "exec"})


@dataclass(frozen=True, slots=True)
class Handler:
    """An exception-table entry, as instruction indices."""

    start: int
    end: int  # exclusive
    target: int
    depth: int
    lasti: bool

    @property
    def entry_depth(self) -> int:
        """Stack depth at the first instruction of the handler."""
        return self.depth + self.lasti + 1


def stack_effect(inst: Inst, jump: bool) -> int:
    """Net stack effect of `inst` along the jump (or fall-through) edge.

    Unlike `dis.stack_effect`, `PRECALL` is 0 and `CALL n` is `-(n + 1)` (what
    the interpreter really does), and `RETURN_GENERATOR` pushes the value sent
    on the first resume, which the following `POP_TOP` discards.
    """
    if inst.opname == "PRECALL":
        return 0
    if inst.opname == "CALL":
        return -(inst.arg + 1)
    if inst.opname == "RETURN_GENERATOR":
        return 1
    arg = inst.arg if inst.opcode >= opcode.HAVE_ARGUMENT else None
    return dis.stack_effect(inst.opcode, arg, jump=jump)


_handlers_cache = CodeMap()  # code -> tuple[Handler | None, ...]


def handlers(code: types.CodeType) -> tuple[Handler | None, ...]:
    """The innermost exception handler covering each instruction, or None."""
    result = _handlers_cache.get(code)
    if result is not None:
        return result
    insts = instructions_of(code)
    index_of_offset = {inst.offset: i for i, inst in enumerate(insts)}
    end = len(code.co_code)
    index_of_offset[end] = len(insts)
    covering: list[Handler | None] = [None] * len(insts)
    for entry in dis._parse_exception_table(code):
        handler = Handler(
            start=_index_at_or_after(index_of_offset, min(entry.start, end)),
            end=_index_at_or_after(index_of_offset, min(entry.end, end)),
            target=_index_at_or_after(index_of_offset, min(entry.target, end)),
            depth=entry.depth,
            lasti=entry.lasti,
        )
        for i in range(handler.start, handler.end):
            covering[i] = handler
    result = tuple(covering)
    _handlers_cache[code] = result
    return result


def block_handler(code: types.CodeType, index: int) -> Handler | None:
    """The innermost handler of a `try`/`with` block covering instruction `index`, or None:
    from 3.12, the handler CPython wraps a generator's whole body in (it turns a StopIteration
    escaping the body into RuntimeError, PEP 479) belongs to no block of the user's."""
    handler = handlers(code)[index]
    if handler is not None and is_generator_guard(code, handler):
        return None
    return handler


def is_generator_guard(code: types.CodeType, handler: Handler) -> bool:
    """Whether `handler` is the PEP 479 guard of a 3.12+ generator's body."""
    first = instructions_of(code)[handler.target]
    return first.opname == "CALL_INTRINSIC_1" and first.arg == INTRINSIC_STOPITERATION_ERROR


# the handler CPython 3.12 gives an inlined comprehension (PEP 709): `SWAP 2; POP_TOP` drops
# the container being built, `SWAP 2; STORE_FAST x` restores the shadowed local, and the
# exception is raised again
_COMPREHENSION_CLEANUP = ("SWAP", "POP_TOP", "SWAP", "STORE_FAST", "RERAISE")


def is_comprehension_cleanup(code: types.CodeType, handler: Handler) -> bool:
    """Whether `handler` is the one of an inlined comprehension (3.12+, PEP 709), which keeps
    the saved value of the local the loop variable shadows (NULL when unbound) and the
    container being built above the enclosing blocks' slots, and only restores the local."""
    insts = instructions_of(code)[handler.target:handler.target + len(_COMPREHENSION_CLEANUP)]
    return tuple(inst.opname for inst in insts) == _COMPREHENSION_CLEANUP and handler.depth >= 2


def past_jumps(code: types.CodeType, index: int) -> int:
    """Where control goes from instruction `index`: past any unconditional jumps there (3.12
    ends a `while` loop with `POP_JUMP_IF_FALSE` over a `JUMP_BACKWARD` to the body, so code
    resumed after the test starts where the loop's first test goes)."""
    insts = instructions_of(code)
    seen = set()
    while index < len(insts) and insts[index].opname in UNCONDITIONAL_JUMPS and index not in seen:
        seen.add(index)
        index = insts[index].target
    return index


def _index_at_or_after(index_of_offset: dict[int, int], offset: int) -> int:
    """Index of the first instruction at or after `offset` (skips EXTENDED_ARG and CACHE);
    `index_of_offset` maps `len(co_code)` to the instruction count."""
    while offset not in index_of_offset:
        offset += 2
    return index_of_offset[offset]


def edges(code: types.CodeType, index: int, depth: int) -> Iterator[tuple[int, int]]:
    """`(successor index, stack depth there)` for each way control can leave `index`.

    `depth` is the stack depth before the instruction. A successor index equal
    to the instruction count means control falls off the end of the code.
    """
    inst = instructions_of(code)[index]
    if inst.opname not in TERMINATORS:
        yield index + 1, depth + stack_effect(inst, jump=False)
    if inst.target is not None:
        yield inst.target, depth + stack_effect(inst, jump=True)
    handler = handlers(code)[index]
    if handler is not None:
        yield handler.target, handler.entry_depth


_depths_cache = CodeMap()  # code -> list[int]


def stack_depths(code: types.CodeType) -> list[int]:
    """Stack depth before each instruction of `instructions_of(code)`.

    Unreachable instructions get `UNREACHABLE` (-1). Where two paths disagree
    the first one found wins; `verify` reports such code.
    """
    depths = _depths_cache.get(code)
    if depths is None:
        depths = _compute_depths(code)
        _depths_cache[code] = depths
    return list(depths)


def _compute_depths(code: types.CodeType) -> list[int]:
    count = len(instructions_of(code))
    depths = [UNREACHABLE] * count
    if count == 0:
        return depths
    depths[0] = 0
    work = [0]
    while work:
        index = work.pop()
        for succ, depth in edges(code, index, depths[index]):
            if succ < count and depths[succ] == UNREACHABLE:
                depths[succ] = depth
                work.append(succ)
    return depths


# Note [Liveness of cells]
# A cellvar is live wherever any later instruction refers to it: STORE_DEREF
# does not kill it, because a closure made earlier may share the cell, so the
# cell object itself (not only its contents) must survive. DELETE_FAST counts as
# a read: it raises if the local is unbound, so whether it is bound matters.

# 3.12's LOAD_FAST_CHECK reads a local that may be unbound, and LOAD_FAST_AND_CLEAR saves an
# inlined comprehension's shadowed local to restore it after (a read); the STORE_FAST that
# restores it writes.
_FAST_READS = frozenset({"LOAD_FAST", "DELETE_FAST", "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR"})
_FAST_WRITES = frozenset({"STORE_FAST", "STORE_FAST_MAYBE_NULL"})
# 3.13's superinstructions: what each does to the two locals `dis` names in its argval, in order
_FAST_PAIRS = {"LOAD_FAST_LOAD_FAST": ("read", "read"), "STORE_FAST_STORE_FAST": ("write", "write"),
               "STORE_FAST_LOAD_FAST": ("write", "read")}
_CELL_REFS = frozenset({"LOAD_DEREF", "STORE_DEREF", "DELETE_DEREF", "LOAD_CLOSURE", "LOAD_CLASSDEREF"})


@dataclass(slots=True)
class _Liveness:
    names: tuple[str, ...]
    live_in: list[int]  # bit i set: names[i] may be read before written
    frozen: dict[int, frozenset[str]]


_liveness_cache = CodeMap()  # code -> _Liveness


def live_locals(code: types.CodeType, index: int) -> frozenset[str]:
    """Fast locals (co_varnames and cellvars) that may be read at or after `index`
    before being written, following jumps and exception-handler edges."""
    liveness = _liveness_cache.get(code)
    if liveness is None:
        liveness = _compute_liveness(code)
        _liveness_cache[code] = liveness
    names = liveness.frozen.get(index)
    if names is None:
        mask = liveness.live_in[index]
        names = frozenset(n for bit, n in enumerate(liveness.names) if mask >> bit & 1)
        liveness.frozen[index] = names
    return names


def _compute_liveness(code: types.CodeType) -> _Liveness:
    names = tuple(dict.fromkeys(code.co_varnames + code.co_cellvars))
    bit = {name: 1 << i for i, name in enumerate(names)}
    gen_kill = [_gen_kill(inst, bit) for inst in instructions_of(code)]
    _add_implicit_reads(code, bit, gen_kill)
    return _backward(code, names, gen_kill)


def _backward(code: types.CodeType, names: tuple[str, ...], gen_kill: list[tuple[int, int]]) -> _Liveness:
    """Which `names` may be used (a `gen` bit) before being defined (a `kill` bit) at or
    after each instruction, following jumps and exception-handler edges."""
    insts = instructions_of(code)
    covering = handlers(code)
    count = len(insts)
    successors = [
        [s for s in (i + 1, inst.target) if s is not None and s < count]
        if inst.opname not in TERMINATORS
        else [s for s in (inst.target,) if s is not None and s < count]
        for i, inst in enumerate(insts)
    ]
    live_in = [0] * count
    changed = True
    while changed:
        changed = False
        for i in range(count - 1, -1, -1):
            live_out = 0
            for s in successors[i]:
                live_out |= live_in[s]
            gen, kill = gen_kill[i]
            new = gen | (live_out & ~kill)
            handler = covering[i]
            if handler is not None and handler.target < count:
                new |= live_in[handler.target]
            if new != live_in[i]:
                live_in[i] = new
                changed = True
    return _Liveness(names, live_in, {})


_cell_reads_cache = CodeMap()  # code -> _Liveness
_CELL_READS = frozenset({"LOAD_DEREF", "LOAD_CLASSDEREF", "DELETE_DEREF"})


def cells_read_before_written(code: types.CodeType, index: int) -> frozenset[str]:
    """Cell and free variables whose contents may be read (or deleted) at or after `index`
    before the frame stores into them. Reads by inner functions are not counted."""
    reads = _cell_reads_cache.get(code)
    if reads is None:
        names = code.co_cellvars + code.co_freevars
        bit = {name: 1 << i for i, name in enumerate(names)}
        gen_kill = [(bit.get(inst.argval, 0), 0) if inst.opname in _CELL_READS
                    else (0, bit.get(inst.argval, 0)) if inst.opname == "STORE_DEREF" else (0, 0)
                    for inst in instructions_of(code)]
        reads = _backward(code, names, gen_kill)
        _cell_reads_cache[code] = reads
    mask = reads.live_in[index]
    return frozenset(n for i, n in enumerate(reads.names) if mask >> i & 1)


def _gen_kill(inst: Inst, bit: dict[str, int]) -> tuple[int, int]:
    """Bits of locals `inst` reads and writes (see Note [Liveness of cells])."""
    if inst.opname in _FAST_READS or inst.opname in _CELL_REFS:
        return bit.get(inst.argval, 0), 0
    if inst.opname in _FAST_WRITES:
        return 0, bit.get(inst.argval, 0)
    pair = _FAST_PAIRS.get(inst.opname)
    if pair is None:
        return 0, 0
    gen = kill = 0
    for part, name in reversed(tuple(zip(pair, inst.argval))):  # the second part first
        if part == "read":
            gen |= bit.get(name, 0)
        else:
            gen &= ~bit.get(name, 0)
            kill |= bit.get(name, 0)
    return gen, kill


def _add_implicit_reads(code: types.CodeType, bit: dict[str, int], gen_kill: list[tuple[int, int]]) -> None:
    """Add the reads of Note [Implicit reads of locals] to `gen_kill`."""
    insts = instructions_of(code)
    depths = stack_depths(code)
    for i, inst in enumerate(insts):
        if inst.opname not in ("LOAD_GLOBAL", "LOAD_NAME") or depths[i] == UNREACHABLE:
            continue
        if inst.argval in _READS_ALL_LOCALS:
            reads = sum(bit.values())
        elif inst.argval == "super" and code.co_varnames:
            reads = bit[code.co_varnames[0]]
        else:
            continue
        result_depth = depths[i] + 1
        for j in range(i, len(insts)):
            gen, kill = gen_kill[j]
            gen_kill[j] = gen | reads, kill
            call = insts[j]
            is_call = call.opname in ("CALL", "CALL_KW", "CALL_FUNCTION_EX")
            if is_call and depths[j] + stack_effect(call, False) == result_depth:
                break
            if call.opname == "LOAD_SUPER_ATTR" and depths[j] == result_depth + 2:  # 3.12: super, class, self
                break
