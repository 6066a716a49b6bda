"""Reads of `os.environ` (`os.environ[k]`, `.get(k)`, `k in os.environ`): folded, guarded.

All of them reach `os._Environ.__getitem__` (the `Mapping` methods `get` and
`__contains__` are inlined and call it). It is a function of `os`, which the trace rules
do not inline (it does I/O), so this table gives it a rule of its own: a read with a
constant key runs at trace time, and the answer is guarded per call: the value by
`os.environ[k] == v`, a missing key by `k not in os.environ` (then the read raises the
user's KeyError, which `get` and `in` catch). Writes (`__setitem__`, `__delitem__`)
keep the rule of `os`: a graph break.

The Python functions of `os` that are only reads over its environment mappings
(`os.getenv`, `os.getenvb`: `environ.get(key, default)`) are inlined although `os` is not
(`ENVIRON_FUNCTIONS`, a table of `vars/trace_rules.py`): every effect such a body can
have goes through `os._Environ`'s methods, which keep their rules (reads: the one above;
writes: a break). The class is derived from the runtime: a function of `os` whose global
names are only `environ`/`environb`, which imports nothing and writes no global.
"""
from __future__ import annotations

import dis
import os
import types

from ..guards.guard import Guard, GuardKind
from ..guards.sources import ItemSource
from .base import CallableValueVariable


class EnvironReadVariable(CallableValueVariable):
    """`os._Environ.__getitem__`, called as `environ[key]`."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs):
        if kwargs or len(args) != 2 or args[0].source is None or not args[1].is_python_constant():
            tx.unsupported("reading os.environ other than with a constant key from an environ read from "
                           "outside", category="unsupported call")
        environ, key = args[0], args[1].as_python_constant()
        try:
            value = environ.value[key]
        except KeyError as e:
            tx.output.add_guard(Guard(GuardKind.NOT_PRESENT, environ.source, key, tx.guard_location()))
            tx.raise_user_error(e)
        return tx.wrap(value, ItemSource(environ.source, key))

    def describe(self) -> str:
        return "os.environ.__getitem__"


ENVIRON_READS = {os._Environ.__getitem__: EnvironReadVariable}


_ENVIRON_GLOBALS = frozenset(name for name in ("environ", "environb") if name in vars(os))
_GLOBAL_ACCESS = frozenset({"LOAD_GLOBAL", "STORE_GLOBAL", "DELETE_GLOBAL", "IMPORT_NAME"})


def _reads_only_environ(fn: types.FunctionType) -> bool:
    uses = {(i.opname, i.argval) for i in dis.get_instructions(fn) if i.opname in _GLOBAL_ACCESS}
    return bool(uses) and all(op == "LOAD_GLOBAL" and name in _ENVIRON_GLOBALS for op, name in uses)


# The code objects of os's Python functions over its environment mappings (os.getenv, os.getenvb).
ENVIRON_FUNCTIONS = frozenset(fn.__code__ for fn in vars(os).values()
                              if type(fn) is types.FunctionType and fn.__module__ == "os" and _reads_only_environ(fn))
