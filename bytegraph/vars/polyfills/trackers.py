"""The trackers of polyfilled calls: the C function (`PolyfillVariable`, whose call inlines
the body; arguments its signature does not take break the graph at the call, as under
torch.compile, and the C function raises its own TypeError there), the body being inlined,
the iterator a generator body returns, and the `unsupported` a body reads (a graph break at
the polyfilled call).
"""
from __future__ import annotations

from ..base import CallableValueVariable
from ..classes import ClassVariable
from ..functions import UserFunctionVariable
from ..iterators import IteratorVariable
from .registry import POLYFILLS


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
        mismatch = polyfill.signature_mismatch(len(args), kwargs)
        if mismatch is not None:  # as torch.compile: the C function raises its own TypeError, eagerly
            tx.unsupported(f"{self._name()}() called with arguments its signature does not take ({mismatch})",
                           category="unsupported call",
                           hint="the call runs eagerly at the graph break, where it raises eager's TypeError")
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
            tx.unsupported(f"{self._name()}() {e.reason}", category="unsupported call", hint=e.hint)
        tx.release(cp)
        return result

    def _name(self) -> str:
        name = f"{getattr(self.fn, '__module__', None) or ''}.{getattr(self.fn, '__qualname__', self.fn)}"
        return name.lstrip(".")

    def var_getattr(self, tx, name):
        if isinstance(self.fn, type):
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
