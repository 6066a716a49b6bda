"""The CPython versions bytegraph reads, and the facts about their bytecode that the rest of
the package asks instead of testing `sys.version_info` itself (docs/python-versions.md).

One fact per difference that more than one module needs: how a call lays out its callable
on the stack, which opcodes jump, how a conditional jump reads its operand. The handlers a
version adds or changes are in `translate/ops_py312.py` / `ops_py313.py`, stacked over the
3.11 families by `translate.translator._build_dispatch`.
"""
from __future__ import annotations

import dis
import opcode
import sys

SUPPORTED = ((3, 11), (3, 12), (3, 13))  # bytegraph/__init__.py's import check says the same
PY = sys.version_info[:2]

#: 3.11 and 3.12 push `NULL, callable` (or `method, self`) below a call's arguments; 3.13
#: pushes `callable, NULL` (or `method, self`): `LOAD_GLOBAL (range + NULL)`.
NULL_BEFORE_CALLABLE = PY < (3, 13)

#: 3.11 calls are `PRECALL n; CALL n`; from 3.12 `CALL n` alone.
HAS_PRECALL = PY < (3, 12)

#: 3.13 makes LOAD_CLOSURE a pseudo-instruction: code objects push a cell itself with
#: `LOAD_FAST` of the cell's slot
HAS_LOAD_CLOSURE = PY < (3, 13)

#: 3.11 and 3.12 name a call's keyword arguments with `KW_NAMES names` before it; 3.13 pushes
#: the names tuple after the arguments and calls with `CALL_KW n`
HAS_KW_NAMES = PY < (3, 13)

#: the opcodes whose argument is a jump target (3.13 lists them in `dis.hasjump`)
JUMPS = frozenset(getattr(dis, "hasjump", ())) | frozenset(dis.hasjrel) | frozenset(dis.hasjabs)

#: 3.13's `dis.Instruction.line_number` is the line of every instruction; before it,
#: `starts_line` names the line only where one starts
LINE_NUMBER_ON_EVERY_INSTRUCTION = PY >= (3, 13)

#: opcode -> the CACHE entries that follow it in `co_code` (`opcode._inline_cache_entries` is a
#: list indexed by opcode before 3.13, a dict keyed by the names that have any on 3.13)
INLINE_CACHE_ENTRIES = (
    {opcode.opmap[name]: n for name, n in opcode._inline_cache_entries.items() if name in opcode.opmap}
    if PY >= (3, 13) else dict(enumerate(opcode._inline_cache_entries)))

#: opcodes numbered 256 and up are pseudo-instructions of the compiler (`SETUP_FINALLY`,
#: `JUMP`, ...): `dis.opmap` lists them from 3.12 on, code objects never hold them
FIRST_PSEUDO_OPCODE = 256

#: the conditional jumps on a value's truth, and the forward jump that residual code emits for
#: each when it runs one eagerly at a graph break (3.12 has no backward conditional jumps)
_TRUTH_JUMPS_312 = {"POP_JUMP_IF_TRUE": "POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE": "POP_JUMP_IF_FALSE"}
_TRUTH_JUMPS_311 = {
    "POP_JUMP_FORWARD_IF_TRUE": "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_BACKWARD_IF_TRUE": "POP_JUMP_FORWARD_IF_TRUE",
    "POP_JUMP_FORWARD_IF_FALSE": "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_FALSE": "POP_JUMP_FORWARD_IF_FALSE"}
TRUTH_JUMPS = _TRUTH_JUMPS_312 if PY >= (3, 12) else _TRUTH_JUMPS_311

#: 3.13's conditional jumps on truth take a bool only: the compiler puts `TO_BOOL` before them,
#: and residual code that runs one eagerly must too
JUMPS_TAKE_BOOLS = PY >= (3, 13)

#: CALL_INTRINSIC_1's argument for the PEP 479 guard of a generator's body (3.12+: dis shows
#: `INTRINSIC_STOPITERATION_ERROR`)
INTRINSIC_STOPITERATION_ERROR = 3

#: 3.13's `list.sort` finds its first run further (gh-116554): a descending run goes on through
#: equal items, and a reversed run through a rising suffix; the comparisons differ from 3.11's
LIST_SORT_LONGER_RUNS = PY >= (3, 13)

#: SEND at the end of a `yield from`: 3.11 pops the receiver with the sent value, 3.12 leaves it
#: for the END_SEND at the jump target
SEND_POPS_RECEIVER = PY < (3, 12)

#: from 3.12 a generator's body is wrapped in a PEP 479 handler (CALL_INTRINSIC_1
#: STOPITERATION_ERROR) whose range starts at the first RESUME, before the body
GENERATOR_BODY_GUARD = PY >= (3, 12)

#: the POP_TOP after RETURN_GENERATOR has no location on 3.12; 3.11 and 3.13 give it the
#: function's first line, as RETURN_GENERATOR
GENERATOR_POP_TOP_UNLOCATED = PY == (3, 12)

#: from 3.12 LOAD_ATTR's low oparg bit asks for a method load (3.11's LOAD_METHOD)
LOAD_ATTR_METHOD_BIT = PY >= (3, 12)

#: how many instructions at FOR_ITER's target an exhausted loop jumps past: 3.12's END_FOR,
#: 3.13's END_FOR and POP_TOP (CPython pops the iterator itself); 3.11 has neither
FOR_ITER_EXIT_SKIPS = 2 if PY >= (3, 13) else 1 if PY >= (3, 12) else 0
