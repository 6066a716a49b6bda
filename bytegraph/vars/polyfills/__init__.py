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
(C function -> `Polyfill`); `vars/trace_rules.py` makes each a POLYFILL rule, so the
builder wraps the C function as a `PolyfillVariable`. A C function has one rule: a
polyfill replaces any builtin handler it had.
"""
from __future__ import annotations

import types
from dataclasses import dataclass

from ..base import CallableValueVariable
from ..builtins import HANDLERS, fold
from ..functions import UserFunctionVariable
from ..iterators import IteratorVariable


@dataclass(frozen=True)
class Polyfill:
    target: object  # the C function (or C type) it stands in for
    body: object  # the Python function traced in its place
    returns: type | None = None  # the type of the C function's result, if the body is a generator
    may_break: bool = False  # whether the body calls `unsupported` (its calls take a checkpoint)


POLYFILLS: dict = {}


def _uses_unsupported(body) -> bool:
    """Whether `body` can call `unsupported`: bound as a default, or read as a global by it
    or a function nested in it."""
    defaults = (*(body.__defaults__ or ()), *(body.__kwdefaults__ or {}).values())
    if any(d is unsupported for d in defaults):
        return True
    codes = [body.__code__]
    while codes:
        code = codes.pop()
        if "unsupported" in code.co_names:
            return True
        codes.extend(c for c in code.co_consts if isinstance(c, types.CodeType))
    return False


def polyfill(*targets, returns: type | None = None):
    """Register the decorated Python function as the stand-in of every C callable in `targets`."""
    def register(body):
        may_break = _uses_unsupported(body)
        for target in targets:
            POLYFILLS[target] = Polyfill(target, body, returns, may_break)
        return body
    return register


def unsupported(reason: str, hint: str = ""):
    """Called by a polyfill body on an input it does not model: the graph breaks at the
    polyfilled call (`PolyfillBreakVariable`). Never runs for real."""
    raise AssertionError(f"bytegraph: polyfill break outside a trace: {reason}")


def trace_time(helper):
    """Mark `helper`, a pure function of constants, to run at trace time when a body calls it."""
    HANDLERS[helper] = fold
    return helper


class _PolyfillUnsupported(Exception):
    """Internal: a polyfill body called `unsupported(reason, hint)`; `PolyfillVariable` turns
    it into a graph break of the calling frame."""

    def __init__(self, reason: str, hint: str):
        super().__init__(reason)
        self.reason = reason
        self.hint = hint


class PolyfillBreakVariable(CallableValueVariable):
    """`unsupported` read by a polyfill body (a trace rule of `vars/trace_rules.py`)."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs):
        reason, hint = [a.as_python_constant() for a in args] + [""] * (2 - len(args))
        raise _PolyfillUnsupported(reason, hint)


class PolyfillVariable(CallableValueVariable):
    """A C function with a polyfill: its value is the real C function (rebuilt from its
    source at a graph break), and calling it inlines the Python body."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs):
        polyfill = POLYFILLS[self.fn]
        if polyfill.may_break:
            result = self._call_or_break(tx, polyfill, args, kwargs)
        else:
            result = tx.inline_call(PolyfillBodyVariable(polyfill.body), args, kwargs)
        if polyfill.returns is not None:
            return PolyfilledIteratorVariable(result, polyfill.returns)
        return result

    def _call_or_break(self, tx, polyfill, args, kwargs):
        """The call of a body that may call `unsupported`: on that call, everything the body
        traced is undone and the graph breaks at this call, which then runs eagerly."""
        cp = tx.checkpoint()
        try:
            result = tx.inline_call(PolyfillBodyVariable(polyfill.body), args, kwargs)
        except _PolyfillUnsupported as e:
            tx.restore(cp)
            tx.release(cp)
            name = f"{getattr(self.fn, '__module__', None) or ''}.{getattr(self.fn, '__qualname__', self.fn)}"
            tx.unsupported(f"{name.lstrip('.')}() {e.reason}", category="unsupported call", hint=e.hint)
        tx.release(cp)
        return result

    def var_getattr(self, tx, name):
        if isinstance(self.fn, type):
            from ..classes import ClassVariable

            return ClassVariable(self.fn, self.source).var_getattr(tx, name)
        return super().var_getattr(tx, name)

    def describe(self) -> str:
        return f"{getattr(self.fn, '__qualname__', self.fn)} (polyfilled)"


class PolyfillBodyVariable(UserFunctionVariable):
    """A polyfill's Python body being inlined. It is bytegraph's own function, fixed for the
    life of the process, so its (constant) defaults are used without guards."""

    __slots__ = ()

    def default_trackers(self, tx):
        fn = self.fn
        return ([tx.wrap(v) for v in fn.__defaults__ or ()],
                {name: tx.wrap(v) for name, v in (fn.__kwdefaults__ or {}).items()})


class PolyfilledIteratorVariable(IteratorVariable):
    """The generator a polyfill body returned, typed as the C function's result
    (`itertools.chain`), advanced lazily like the real iterator."""

    __slots__ = ("generator", "kind")

    def __init__(self, generator, kind: type):
        super().__init__(None)
        self.generator = generator
        self.kind = kind

    def python_type(self) -> type:
        return self.kind

    def children(self):
        return (self.generator,)

    def next_item(self, tx):
        return self.generator.next_item(tx)

    def describe(self) -> str:
        return f"a {self.kind.__qualname__} iterator (polyfilled)"


from . import collections, copy, functools, itertools, math, operator  # noqa: E402  (each fills POLYFILLS)
