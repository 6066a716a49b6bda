"""Every opcode of the running CPython (3.11 to 3.13) is either handled by the translator or
listed, with a reason, in UNSUPPORTED_OPCODES."""
import dis
import subprocess
import sys

import pytest

import bytegraph
import bytegraph.translate as translate
from bytegraph._bytecode.versions import FIRST_PSEUDO_OPCODE, SUPPORTED

# the opcodes of code objects (pseudo-instructions of the compiler, listed from 3.12, never are)
OPCODES = {name for name, op in dis.opmap.items() if op < FIRST_PSEUDO_OPCODE}


def test_running_on_a_supported_python():
    assert sys.version_info[:2] in SUPPORTED


def test_handled_and_unsupported_partition_all_opcodes():
    handled = set(translate.HANDLED_OPCODES)
    unsupported = set(translate.UNSUPPORTED_OPCODES)
    assert isinstance(translate.HANDLED_OPCODES, frozenset)
    assert not handled & unsupported, sorted(handled & unsupported)
    missing = OPCODES - handled - unsupported
    assert not missing, f"opcodes neither handled nor listed unsupported: {sorted(missing)}"
    extra = (handled | unsupported) - OPCODES
    assert not extra, f"names that are not opcodes of this Python: {sorted(extra)}"


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
     "LIST_APPEND", "BEFORE_WITH", "RESUME", "COPY_FREE_VARS", "MAKE_CELL", "KW_NAMES",
     # 3.12
     "LOAD_SUPER_ATTR", "RETURN_CONST", "END_FOR", "END_SEND", "BINARY_SLICE", "STORE_SLICE", "CALL_INTRINSIC_1",
     "LOAD_FAST_CHECK", "LOAD_FAST_AND_CLEAR", "POP_JUMP_IF_FALSE",
     # 3.13
     "CALL_KW", "TO_BOOL", "LOAD_FAST_LOAD_FAST", "STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST",
     "FORMAT_SIMPLE", "FORMAT_WITH_SPEC", "CONVERT_VALUE", "SET_FUNCTION_ATTRIBUTE"],
)
def test_core_opcode_is_handled(opname):
    # opcodes the differential tests rely on: each one the running Python has must be handled
    assert opname in translate.HANDLED_OPCODES or opname not in OPCODES


def test_the_import_check_admits_the_supported_versions():
    assert bytegraph._SUPPORTED == SUPPORTED


def test_an_unsupported_python_gets_an_import_error_naming_the_supported_ones():
    code = "import sys; sys.version_info = (3, 14, 0, 'final', 0); import bytegraph"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    supported = ", ".join("%d.%d" % v for v in SUPPORTED)
    assert result.returncode != 0
    assert f"ImportError: bytegraph supports CPython {supported}" in result.stderr
    assert "this is Python 3.14" in result.stderr
