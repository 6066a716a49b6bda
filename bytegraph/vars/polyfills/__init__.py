"""Polyfills: plain Python bodies traced in place of C functions.

A C function (`functools.reduce`, `math.prod`, `itertools.chain`) has no bytecode for the
translator to follow. When its semantics are simple Python over other operations the
tracer already models, a polyfill states them as a Python function, and a call of the C
function inlines that body instead (`PolyfillVariable.call_function` -> `tx.inline_call`):
the tensor work inside lands in the same graph, user callbacks run in eager's order, and
anything the body cannot trace breaks the graph with the usual reason.

Writing one: a module here named after the C function's module (`polyfills/functools.py`)
defines the stand-in with the C function's signature and decorates it with
`@polyfill(the_c_function)`. Its body must behave exactly like the C function on every
input that reaches it, including the exceptions it raises (a `raise` in the body reports
the user's error and the call runs eagerly). Keep bodies free of module globals, builtins
and defaults on the paths that run: the body is traced like any inlined function, so
every global it reads becomes a guard of the compiled entry. The result keeps the C
function's type when a body is a generator (`returns=itertools.chain`), so `isinstance`
and `type()` answer as in eager.

Breaking cleanly: on an input the body does not model (a type whose C behaviour cannot be
stated in Python, such as `PyNumber_Check`), the call-time part of a body calls
`unsupported("reason"[, "hint"])`. The trace is put back to just before the C function's
call (a checkpoint is taken for bodies that use `unsupported`, read as a global or bound
as a default) and the graph breaks there, in the caller's frame, with the reason: the C
function then runs eagerly, once. Only the call-time part may call it, not a nested
generator run later. `@trace_time` helpers run on the constant values of their arguments
while tracing (a class's copy protocol, looked up once; the class is identity-guarded,
its protocol taken as fixed) and return a constant.

Registering: importing this package imports every polyfill module, filling `POLYFILLS`
(`polyfills/registry.py`; the trackers are in `polyfills/trackers.py`)
(C function -> `Polyfill`); `vars/trace_rules.py` makes each a POLYFILL rule, so the
builder wraps the C function as a `PolyfillVariable`. A C function has one rule: a
polyfill replaces any builtin handler it had.
"""
from __future__ import annotations

from . import collections, copy, distributed, functools, itertools, math, operator  # noqa: F401  (each fills POLYFILLS)
