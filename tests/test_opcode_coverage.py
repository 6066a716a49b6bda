"""Every CPython 3.11 opcode is either handled by the translator or listed, with a reason,
in UNSUPPORTED_OPCODES."""
import dis
import sys

import pytest

import bytegraph.translate as translate


def test_running_on_python_311():
    assert sys.version_info[:2] == (3, 11)


def test_handled_and_unsupported_partition_all_opcodes():
    handled = set(translate.HANDLED_OPCODES)
    unsupported = set(translate.UNSUPPORTED_OPCODES)
    assert isinstance(translate.HANDLED_OPCODES, frozenset)
    assert not handled & unsupported, sorted(handled & unsupported)
    missing = set(dis.opmap) - handled - unsupported
    assert not missing, f"opcodes neither handled nor listed unsupported: {sorted(missing)}"
    extra = (handled | unsupported) - set(dis.opmap)
    assert not extra, f"names that are not 3.11 opcodes: {sorted(extra)}"


def test_unsupported_reasons_are_nonempty_strings():
    assert isinstance(translate.UNSUPPORTED_OPCODES, dict)
    bad = {k: v for k, v in translate.UNSUPPORTED_OPCODES.items() if not isinstance(v, str) or not v.strip()}
    assert not bad, bad


@pytest.mark.parametrize(
    "opname",
    ["LOAD_FAST", "STORE_FAST", "LOAD_GLOBAL", "LOAD_ATTR", "BINARY_OP", "COMPARE_OP", "CALL", "PRECALL",
     "RETURN_VALUE", "FOR_ITER", "GET_ITER", "BUILD_TUPLE", "BUILD_LIST", "BUILD_MAP", "UNPACK_SEQUENCE",
     "LOAD_DEREF", "MAKE_FUNCTION", "BINARY_SUBSCR", "STORE_SUBSCR", "POP_JUMP_FORWARD_IF_FALSE",
     "LOAD_METHOD", "IS_OP", "CONTAINS_OP", "UNPACK_EX", "CALL_FUNCTION_EX", "FORMAT_VALUE", "BUILD_STRING",
     "LIST_APPEND", "BEFORE_WITH", "RESUME", "COPY_FREE_VARS", "MAKE_CELL", "KW_NAMES"],
)
def test_core_opcode_is_handled(opname):
    # opcodes the differential tests rely on; each one must be in the handled set
    assert opname in translate.HANDLED_OPCODES
