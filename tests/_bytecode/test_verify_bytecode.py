"""`verify` rejects broken code objects and accepts what CPython compiles."""
from __future__ import annotations

import opcode

import pytest
from bytecode import Instr, Label, TryBegin, TryEnd

from bytegraph._bytecode.assemble import make_code
from bytegraph._bytecode.sequences import to_bool
from bytegraph._bytecode.verify import BytecodeVerifyError, verify
from bytegraph._bytecode.versions import INLINE_CACHE_ENTRIES, TRUTH_JUMPS


def template(a):
    return a


def identity_code():
    return template.__code__


def patched(code, *ops):
    """`code` with its co_code replaced by `ops` ((opname, arg) pairs, caches added)."""
    raw = bytearray()
    for name, arg in ops:
        op = opcode.opmap[name]
        raw += bytes([op, arg]) + bytes(2 * INLINE_CACHE_ENTRIES.get(op, 0))
    return code.replace(co_code=bytes(raw), co_linetable=b"", co_exceptiontable=b"")


def rejects(code, message):
    with pytest.raises(BytecodeVerifyError, match=message):
        verify(code)


def test_accepts_compiled_and_assembled_code():
    verify(identity_code())
    verify(make_code([Instr("LOAD_FAST", "a"), Instr("RETURN_VALUE")], like=identity_code()))


def test_rejects_inconsistent_depth_at_a_join():
    join = Label()
    body = [
        Instr("LOAD_FAST", "a"),
        *to_bool(),
        Instr(TRUTH_JUMPS.get("POP_JUMP_IF_TRUE", "POP_JUMP_FORWARD_IF_TRUE"), join),
        Instr("LOAD_CONST", 1),
        join,
        Instr("LOAD_CONST", 2),
        Instr("RETURN_VALUE"),
    ]
    rejects(make_code(body, like=identity_code()), "inconsistent stack depth at join: 0 and 1")


def test_rejects_stack_underflow():
    code = patched(identity_code(), ("RESUME", 0), ("RETURN_VALUE", 0))
    rejects(code, "RETURN_VALUE needs 1 stack items, has 0")
    code = patched(identity_code(), ("RESUME", 0), ("LOAD_FAST", 0), ("BINARY_OP", 0), ("RETURN_VALUE", 0))
    rejects(code, "BINARY_OP needs 2")


def two_operands(a, b):
    return a + b


def test_rejects_depth_above_stacksize():
    # depth 2 over a stack size of 1 (3.13 raises a stack size of 0 to 1 itself)
    rejects(two_operands.__code__.replace(co_stacksize=1), "exceeds co_stacksize")


def test_rejects_jump_to_a_non_instruction():
    # BINARY_OP has one cache entry: offset 8 is inside it.
    code = patched(
        identity_code(),
        ("RESUME", 0), ("LOAD_FAST", 0), ("JUMP_FORWARD", 1), ("BINARY_OP", 0), ("RETURN_VALUE", 0),
    )
    rejects(code, "JUMP_FORWARD targets offset 8, not an instruction")
    past_end = patched(identity_code(), ("RESUME", 0), ("JUMP_FORWARD", 40))
    rejects(past_end, "not an instruction")


def test_rejects_unknown_locals():
    rejects(make_code([Instr("LOAD_FAST", "typo"), Instr("RETURN_VALUE")], like=identity_code()),
            "LOAD_FAST of unknown local 'typo'")
    rejects(patched(identity_code(), ("RESUME", 0), ("LOAD_FAST", 3), ("RETURN_VALUE", 0)),
            "LOAD_FAST operand 3 out of range")


def test_rejects_other_operands_out_of_range():
    for load, arg, message in [("LOAD_CONST", 9, "LOAD_CONST operand 9"), ("LOAD_DEREF", 4, "LOAD_DEREF operand 4"),
                               ("LOAD_GLOBAL", 3, "LOAD_GLOBAL operand 1")]:
        rejects(patched(identity_code(), ("RESUME", 0), (load, arg), ("RETURN_VALUE", 0)), message)


def test_rejects_falling_off_the_end():
    rejects(make_code([Instr("LOAD_FAST", "a"), Instr("POP_TOP")], like=identity_code()), "falls off the end")


def test_rejects_invalid_opcodes():
    bad = identity_code().replace(co_code=bytes([opcode.opmap["RESUME"], 0, 0, 0]))
    rejects(bad, "invalid opcode 0")


def _guarded_code():
    handler = Label()
    try_begin = TryBegin(handler, push_lasti=False)
    body = [
        try_begin,
        Instr("LOAD_FAST", "a"),
        Instr("RETURN_VALUE"),
        TryEnd(try_begin),
        handler,
        Instr("RERAISE", 0),
    ]
    return make_code(body, like=identity_code())


def test_rejects_bad_exception_table_entries():
    code = _guarded_code()
    verify(code)
    # One entry, in code units: start 1 (0x80 marks an entry start), length 2, target 3, depth 0.
    assert code.co_exceptiontable == bytes([0x81, 2, 3, 0])
    rejects(code.replace(co_exceptiontable=bytes([0x81, 2, 40, 0])), "handler is not an instruction")
    rejects(code.replace(co_exceptiontable=bytes([0x81, 60, 3, 0])), "range outside the code")
    rejects(code.replace(co_exceptiontable=bytes([0x81, 2, 3, 2 << 1])), "handler depth exceeds co_stacksize")
    deep = code.replace(co_exceptiontable=bytes([0x81, 2, 3, 2 << 1]), co_stacksize=5)
    rejects(deep, "stack depth 0 below handler depth 2")


def test_error_names_the_code_object_and_offset():
    with pytest.raises(BytecodeVerifyError) as info:
        body = [Instr("LOAD_FAST", "a"), Instr("POP_TOP")]
        verify(make_code(body, like=identity_code(), name="__bg_x", qualname="q"))
    assert str(info.value).startswith(f"q ({__file__}:{template.__code__.co_firstlineno}) offset 4:")
