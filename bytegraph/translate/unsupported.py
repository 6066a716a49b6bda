"""`UNSUPPORTED_OPCODES`: every 3.11 opcode the translator does not handle, with why.

A test checks that handled opcodes and this table together cover `dis.opmap`.
"""
from __future__ import annotations

_EXCEPTION_GROUPS = "`except*` (exception groups) is not traced"
_GENERATOR = "`await` and async iteration are not traced; such frames run eagerly"
_MODULE_LEVEL = "only appears in module or class bodies, which are not compiled"

UNSUPPORTED_OPCODES = {
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
