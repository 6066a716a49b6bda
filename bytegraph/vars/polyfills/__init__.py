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

A body asks the tracer two things through helpers defined here: `@trace_time` helpers
run on the constant values of their arguments while tracing (a class's copy protocol,
looked up once; the class is identity-guarded, its protocol taken as fixed) and return a
constant; `unsupported(reason, hint)` is a graph break with that reason, for inputs the
body does not model.

Registering: importing this package imports every polyfill module, filling `POLYFILLS`
(C function -> `Polyfill`); `vars/trace_rules.py` makes each a POLYFILL rule, so the
builder wraps the C function as a `PolyfillVariable`. A C function has one rule: a
polyfill replaces any builtin handler it had.
"""
from __future__ import annotations

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


POLYFILLS: dict = {}


def polyfill(*targets, returns: type | None = None):
    """Register the decorated Python function as the stand-in of every C callable in `targets`."""
    def register(body):
        for target in targets:
            POLYFILLS[target] = Polyfill(target, body, returns)
        return body
    return register


def trace_time(helper):
    """Mark `helper`, a pure function of constants, to run at trace time when a body calls it."""
    HANDLERS[helper] = fold
    return helper


def unsupported(reason: str, hint: str = ""):
    """Called by a polyfill body: a graph break with `reason` (never runs eagerly)."""
    raise AssertionError("bytegraph.vars.polyfills.unsupported() runs only in a trace")


def _unsupported(tx, fn, args, kwargs):
    reason, hint = [a.as_python_constant() for a in args] + [""] * (2 - len(args))
    tx.unsupported(reason, category="unsupported call", hint=hint)


HANDLERS[unsupported] = _unsupported


class PolyfillVariable(CallableValueVariable):
    """A C function with a polyfill: its value is the real C function (rebuilt from its
    source at a graph break), and calling it inlines the Python body."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs):
        polyfill = POLYFILLS[self.fn]
        result = tx.inline_call(PolyfillBodyVariable(polyfill.body), args, kwargs)
        if polyfill.returns is not None:
            return PolyfilledIteratorVariable(result, polyfill.returns)
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

    def next_item(self, tx):
        return self.generator.next_item(tx)

    def describe(self) -> str:
        return f"a {self.kind.__qualname__} iterator (polyfilled)"


from . import copy, functools, itertools, math, operator  # noqa: E402  (each fills POLYFILLS)
