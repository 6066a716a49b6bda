"""`UNSUPPORTED_OPCODES`: every opcode of the running interpreter that the translator does not
handle, with why (the table lists those of 3.11 to 3.13; only the running version's are kept).

A test checks that handled opcodes and this table together cover `dis.opmap`.
"""
from __future__ import annotations

import dis

_EXCEPTION_GROUPS = "`except*` (exception groups) is not traced"
_GENERATOR = "`await` and async iteration are not traced; such frames run eagerly"
_MODULE_LEVEL = "only appears in module or class bodies, which are not compiled"

_ALL_VERSIONS = {
    "CHECK_EG_MATCH": _EXCEPTION_GROUPS,
    "PREP_RERAISE_STAR": _EXCEPTION_GROUPS,
    "ASYNC_GEN_WRAP": _GENERATOR,
    "GET_AWAITABLE": _GENERATOR,
    "GET_AITER": _GENERATOR,
    "GET_ANEXT": _GENERATOR,
    "END_ASYNC_FOR": _GENERATOR,
    "BEFORE_ASYNC_WITH": _GENERATOR,
    "LOAD_NAME": _MODULE_LEVEL,
    "STORE_NAME": _MODULE_LEVEL,
    "DELETE_NAME": _MODULE_LEVEL,
    "SETUP_ANNOTATIONS": _MODULE_LEVEL,
    "IMPORT_STAR": _MODULE_LEVEL,
    "LOAD_BUILD_CLASS": "defining a class inside a compiled function is not captured",
    "PRINT_EXPR": "only used by the interactive interpreter",
    "MATCH_CLASS": "structural pattern matching is not captured",
    "MATCH_MAPPING": "structural pattern matching is not captured",
    "MATCH_SEQUENCE": "structural pattern matching is not captured",
    "MATCH_KEYS": "structural pattern matching is not captured",
    "GET_LEN": "structural pattern matching is not captured",
}

# Opcodes of CPython 3.12 and 3.13 (docs/python-versions.md) not traced yet.
_INSTRUMENTED = "instrumented code (sys.monitoring, a debugger or profiler) is not traced"
_NOT_YET = "not traced on this Python version yet (issue 38)"
_ALL_VERSIONS.update({
    **{name: _INSTRUMENTED for name in (
        "INSTRUMENTED_CALL", "INSTRUMENTED_CALL_FUNCTION_EX", "INSTRUMENTED_CALL_KW", "INSTRUMENTED_END_FOR",
        "INSTRUMENTED_END_SEND", "INSTRUMENTED_FOR_ITER", "INSTRUMENTED_INSTRUCTION", "INSTRUMENTED_JUMP_BACKWARD",
        "INSTRUMENTED_JUMP_FORWARD", "INSTRUMENTED_LINE", "INSTRUMENTED_LOAD_SUPER_ATTR",
        "INSTRUMENTED_POP_JUMP_IF_FALSE", "INSTRUMENTED_POP_JUMP_IF_NONE", "INSTRUMENTED_POP_JUMP_IF_NOT_NONE",
        "INSTRUMENTED_POP_JUMP_IF_TRUE", "INSTRUMENTED_RESUME", "INSTRUMENTED_RETURN_CONST",
        "INSTRUMENTED_RETURN_VALUE", "INSTRUMENTED_YIELD_VALUE", "ENTER_EXECUTOR")},
    "INTERPRETER_EXIT": "only ends the interpreter's own entry frames",
    "RESERVED": "never emitted",
    **dict.fromkeys(("LOAD_FROM_DICT_OR_DEREF", "LOAD_FROM_DICT_OR_GLOBALS", "LOAD_LOCALS"),
                    "only appears in class bodies and PEP 695 annotation scopes, which are not compiled"),
    "CALL_INTRINSIC_2": "PEP 695 type parameters and `except*` (its two-argument intrinsics) are not traced",
    "EXIT_INIT_CHECK": "only in the interpreter's own frame that runs a class's __init__ (never in a function's code)",
})

UNSUPPORTED_OPCODES = {name: why for name, why in _ALL_VERSIONS.items() if name in dis.opmap}
