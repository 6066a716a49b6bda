"""Functions wrapped by `functools.lru_cache` / `functools.cache` (`_lru_cache_wrapper`).

A cached call in eager either runs the wrapped function or returns an earlier result
without running it. Tracing the body through `__wrapped__` is sound only when both give
the same observable outcome: the call's arguments are hashable constants, the body
writes nothing outside itself (it runs in a speculation scope, so any such write is
refused), records no tensor operation (so its result depends on guarded Python values
alone) and returns an immutable constant (a cache hit returns the same object, which
only an immutable value cannot tell apart). Then the result is folded into the trace,
under the guards the body installed, and reused for a second call with the same arguments
in the same trace (so a recursive cached function is traced once per argument). Anything
else rolls the body back and breaks the
graph at the call, naming the wrapper and why, so that the real wrapper runs (with its
real cache). A call that raises raises as in eager (exceptions are never cached). The
cache's statistics (`cache_info()`) do not count folded calls.
"""
from __future__ import annotations

import functools

from ..errors import GraphBreak
from ..guards.guard import GuardKind
from .constant import is_constant_value
from .objects import UserObjectVariable
from .registry import guard, register

_HINT = "call the cached function outside the compiled function, or drop the cache decorator"


class LruCacheWrapperVariable(UserObjectVariable):
    """A `functools.lru_cache` wrapper read from the caller's world (identity-guarded, so
    its cache and wrapped function are fixed)."""

    __slots__ = ("folded",)

    def __init__(self, value, source=None):
        super().__init__(value, source)
        self.folded = {}  # (args, kwargs) -> result folded earlier in this trace

    def call_function(self, tx, args, kwargs):
        if not all(a.is_python_constant() and is_constant_value(a.as_python_constant())
                   for a in (*args, *kwargs.values())):
            self._refuse(tx, "with arguments that are not hashable constants")
        key = (tuple(a.as_python_constant() for a in args),
               tuple((k, v.as_python_constant()) for k, v in kwargs.items()))
        if key in self.folded:
            return self.folded[key]
        wrapped = self.var_getattr(tx, "__wrapped__")
        graph = tx.output.graph
        nodes = len(graph.nodes)
        cp = tx.checkpoint()
        try:
            with tx.output.side_effects.scope(f"the body of {self._name()}"):
                result = wrapped.call_function(tx, args, kwargs)
        except GraphBreak as brk:
            why = f"whose body breaks the graph ({brk.reason})"
        else:
            if len(graph.nodes) != nodes:
                why = "whose body records tensor operations"
            elif not (result.is_python_constant() and is_constant_value(result.as_python_constant())):
                why = f"whose result ({result.describe()}) is not an immutable constant"
            else:
                tx.release(cp)
                self._remember(tx, key, result)
                return result
        tx.restore(cp)
        tx.release(cp)
        self._refuse(tx, why)

    def _remember(self, tx, key, result) -> None:
        """Keep a folded result for later calls with the same arguments in this trace; a
        restore of an enclosing checkpoint forgets it (with the guards its body installed)."""
        tx.output.side_effects.touch(self)
        self.folded[key] = result

    def _refuse(self, tx, why: str):
        tx.unsupported(f"calling {self._name()}, a functools.lru_cache wrapper, {why}: a cache hit "
                       "would not run its body", category="unsupported call", hint=_HINT)

    def _name(self) -> str:
        return getattr(self.value, "__qualname__", "?")

    def describe(self) -> str:
        return f"lru_cache wrapper {self._name()}"


@register(functools._lru_cache_wrapper)
def build_lru_cache_wrapper(tx, value, source, do_guard: bool):
    if source is None:
        tx.unsupported(f"an lru_cache wrapper of {getattr(value, '__qualname__', '?')} without a source",
                       category="unsupported value")
    guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
    return LruCacheWrapperVariable(value, source)
