"""The polyfill table: `@polyfill(c_function)` registers a Python body as the stand-in of a C
function (`POLYFILLS`, with the C function's signature as the body states it),
`unsupported(reason)` is what a body calls on an input it does not model, and `@trace_time`
marks a helper a body calls on constants. See the package docstring for how to write one.
"""
from __future__ import annotations

import inspect
import types
from dataclasses import dataclass

from .. import factory
from ..registry import HANDLERS


@dataclass(frozen=True)
class Polyfill:
    target: object  # the C function (or C type) it stands in for
    body: object  # the Python function traced in its place
    returns: type | None = None  # the type of the C function's result, if the body is a generator
    may_break: bool = False  # whether the body calls `unsupported` (its calls take a checkpoint)
    signature: inspect.Signature | None = None  # the C function's, as the body states it (`public_signature`)

    def signature_mismatch(self, nargs: int, names) -> str | None:
        """Why `nargs` positional and keyword arguments `names` do not bind to the C
        function's signature (CPython's own words), or None."""
        try:
            self.signature.bind(*range(nargs), **dict.fromkeys(names))
        except TypeError as e:
            return str(e)
        return None


POLYFILLS: dict = {}


def public_signature(body) -> inspect.Signature:
    """The C function's signature as `body` states it: the body's, less its private
    keyword-only parameters (`_kind=...`: helpers bound as defaults, never passed)."""
    sig = inspect.signature(body)
    return sig.replace(parameters=[p for p in sig.parameters.values()
                                   if not (p.kind is p.KEYWORD_ONLY and p.name.startswith("_"))])


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
        signature = public_signature(body)
        for target in targets:
            POLYFILLS[target] = Polyfill(target, body, returns, may_break, signature)
        return body
    return register


def unsupported(reason: str, hint: str = ""):
    """Called by a polyfill body on an input it does not model: the graph breaks at the
    polyfilled call (`PolyfillBreakVariable`). Never runs for real."""
    raise AssertionError(f"bytegraph: polyfill break outside a trace: {reason}")


def trace_time(helper):
    """Mark `helper`, a pure function of constants, to run at trace time when a body calls it."""
    HANDLERS[helper] = factory.fold
    return helper
