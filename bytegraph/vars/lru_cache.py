"""Functions wrapped by `functools.lru_cache` / `functools.cache` (`_lru_cache_wrapper`).

A cached call in eager either runs the wrapped function or returns an earlier result,
possibly computed under other values of the globals the body reads, without running it.
A call is folded to a constant only when that is sound: the arguments are hashable
constants and the body, traced through `__wrapped__` in a speculation scope (so any write
outside it is refused), writes nothing outside itself, records no tensor operation and
returns an immutable constant (or raises); and the real wrapper, called at trace time,
answers the same (a cache holding another value was filled under other values of what
the body reads: what eager returns then depends on the cache's history, which no guard
sees). The value is folded under the guards the body installed: while they hold, a cache
hit and a fresh run agree; when they fail, the retrace asks again. An error of the body
is raised as the user's error (errors are not cached). The folded value is reused for a
second call with the same arguments in the same trace (so a recursive cached function is
traced once per argument). Anything else rolls the body back and breaks the graph at the
call, naming the wrapper and why, so that the real wrapper runs eagerly. The cache's
statistics (`cache_info()`) count the trace-time call, not the compiled calls.
"""
from __future__ import annotations

import functools

from ..errors import GraphBreak, TracedRaise
from ..guards.guard import GuardKind
from .constant import ConstantVariable, is_constant_value
from .objects import UserObjectVariable
from .registry import guard, register

_HINT = "call the cached function outside the compiled function, or drop the cache decorator"


_RAISES = object()  # the body raises for these arguments


def _same(value, traced) -> bool:
    """Whether the real call's outcome is the traced body's (same type and value)."""
    return value is traced or (type(value) is type(traced) and value == traced)


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
        why, traced = self._check_body(tx, args, kwargs)
        if why is not None:
            self._refuse(tx, why)
        try:  # the real wrapper: its cache answers as it would answer eager now
            value, error = self.value(*key[0], **dict(key[1])), None
        except Exception as e:  # the body's own error (errors are not cached)
            value, error = _RAISES, e
        if not _same(value, traced):
            self._refuse(tx, "whose cache holds a result the body does not compute now (it was cached "
                             "under other values of what the body reads)")
        if error is not None:
            tx.raise_user_error(error)
        result = ConstantVariable(value)
        self._remember(tx, key, result)
        return result

    def _check_body(self, tx, args, kwargs) -> tuple:
        """Trace the body through `__wrapped__`: (None, its constant result or `_RAISES`) if
        it is pure (its guards are kept, everything else it did is dropped), else (why not,
        None) with everything dropped."""
        wrapped = self.var_getattr(tx, "__wrapped__")
        graph = tx.output.graph
        nodes = len(graph.nodes)
        cp = tx.checkpoint()
        why = traced = None
        try:
            with tx.output.side_effects.scope(f"the body of {self._name()}"):
                result = wrapped.call_function(tx, args, kwargs)
        except GraphBreak as brk:
            why = f"whose body breaks the graph ({brk.reason})"
        except TracedRaise:
            traced = _RAISES
        else:
            if len(graph.nodes) != nodes:
                why = "whose body records tensor operations"
            elif result.is_python_constant() and is_constant_value(result.as_python_constant()):
                traced = result.as_python_constant()
            else:
                why = f"whose result ({result.describe()}) is not an immutable constant"
        if why is None and len(graph.nodes) != nodes:
            why = "whose body records tensor operations"
        if why is not None:
            tx.restore(cp)
        tx.release(cp)
        return why, traced

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
