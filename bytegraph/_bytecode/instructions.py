"""Decoding of CPython code objects (3.11 to 3.13) into a flat list of `Inst`.

Owns: the instruction type the translator walks, jump-target resolution to
instruction indices, and a per-code-object cache (decoding is done once per code
object for the life of the process; code objects are immutable).
"""
from __future__ import annotations

import dis
import types
from dataclasses import dataclass

from .code_map import CodeMap
from .versions import JUMPS, LINE_NUMBER_ON_EVERY_INSTRUCTION


@dataclass(slots=True)
class Inst:
    """One decoded instruction. `target` is the index of the jump target, if any."""

    opname: str
    opcode: int
    arg: int | None
    argval: object
    offset: int
    lineno: int | None
    positions: object
    target: int | None = None

    def __repr__(self) -> str:
        return f"<{self.opname} {self.argval!r} @{self.offset} line {self.lineno}>"


_cache = CodeMap()  # code -> tuple[Inst, ...]; goes with the code


def instructions_of(code: types.CodeType) -> tuple[Inst, ...]:
    """Return the decoded instructions of `code` (cached; EXTENDED_ARG and CACHE folded)."""
    insts = _cache.get(code)
    if insts is not None:
        return insts
    decoded = []
    lineno = None
    index_of_offset = {}
    for d in dis.get_instructions(code):
        if LINE_NUMBER_ON_EVERY_INSTRUCTION:
            lineno = d.line_number
        elif d.starts_line is not None:
            lineno = d.starts_line
        if d.opname == "EXTENDED_ARG":
            continue
        index_of_offset[d.offset] = len(decoded)
        decoded.append(Inst(d.opname, d.opcode, d.arg, d.argval, d.offset, lineno, d.positions))
    for i, d in enumerate(decoded):
        if d.opcode in JUMPS:
            d.target = _resolve(index_of_offset, d.argval)
    insts = tuple(decoded)
    _cache[code] = insts
    return insts


def _resolve(index_of_offset: dict[int, int], offset: int) -> int:
    while offset not in index_of_offset:
        offset += 2  # a jump to a skipped EXTENDED_ARG lands on the real instruction
    return index_of_offset[offset]

