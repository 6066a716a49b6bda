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

A call that cannot be folded that way is *replayed* instead (Note [Replayed calls] in
graph/side_effects.py) when the wrapped function returns None on every path (its code has
no other `return`), its body traced with these arguments writes nothing outside itself and
records no tensor operation (logging calls, which the body would replay, are allowed: a
log-once helper such as `@lru_cache def warning_once(logger, msg): logger.warning(msg)`), and
each argument is a hashable constant or a value with a source whose type hashes and
compares by identity (a logger, a module): the call's value is None, hit or miss, and the
real wrapper is called after the graph, so its cache decides, at run time, whether the body
runs (logs) or not, exactly as eagerly. The body's guards are kept; its recorded calls
are dropped.
"""
from __future__ import annotations

import functools
import types

from .._bytecode.instructions import instructions_of
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
            return self._replayed(tx, args, kwargs, "with arguments that are not hashable constants")
        key = (tuple(a.as_python_constant() for a in args),
               tuple((k, v.as_python_constant()) for k, v in kwargs.items()))
        if key in self.folded:
            return self.folded[key]
        calls = len(tx.output.side_effects.calls)
        why, traced = self._check_body(tx, args, kwargs)
        if why is None and len(tx.output.side_effects.calls) > calls:
            tx.output.side_effects.drop_calls(calls)
            return self._replayed(tx, args, kwargs, "whose body makes calls replayed after the graph", checked=True)
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

    def _replayed(self, tx, args, kwargs, why: str, checked: bool = False):
        """The call made by the residual code after the graph (see the module docstring), or
        a graph break saying `why` it is not folded and why it is not replayed either."""
        wrapped = getattr(self.value, "__wrapped__", None)
        if not _returns_none(wrapped):
            self._refuse(tx, f"{why}, and not replayed after the graph (its function may return a value)")
        for vt in (*args, *kwargs.values()):
            if not _identity_hashed(vt):
                self._refuse(tx, f"{why}, and not replayed after the graph (argument {vt.describe()} is neither "
                                 "a hashable constant nor a value from outside hashed by identity)")
        if not checked:
            calls = len(tx.output.side_effects.calls)
            body_why, traced = self._check_body(tx, args, kwargs)
            if body_why is not None or traced is _RAISES:
                self._refuse(tx, f"{why}, and not replayed after the graph ({body_why or 'its body raises'})")
            tx.output.side_effects.drop_calls(calls)
        tx.output.side_effects.record_call(self.value, args, kwargs)
        return ConstantVariable(None)

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
            with tx.output.side_effects.scope(f"the body of {self._name()}", calls=True):
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


def _returns_none(fn) -> bool:
    """Whether Python function `fn` returns None on every path (each RETURN_VALUE comes
    right after a LOAD_CONST None and is no jump target) and is a plain function (no
    generator or coroutine)."""
    if not isinstance(fn, types.FunctionType) or fn.__code__.co_flags & _NOT_PLAIN:
        return False
    insts = instructions_of(fn.__code__)
    targets = {inst.target for inst in insts if inst.target is not None}  # `return a or None` jumps to one
    return all(i not in targets and insts[i - 1].opname == "LOAD_CONST" and insts[i - 1].argval is None
               for i, inst in enumerate(insts) if inst.opname == "RETURN_VALUE")


_NOT_PLAIN = 0x20 | 0x80 | 0x100 | 0x200  # CO_GENERATOR, CO_COROUTINE, CO_ITERABLE_COROUTINE, CO_ASYNC_GENERATOR


def _identity_hashed(vt) -> bool:
    """A hashable constant, or a value from outside whose type hashes and compares by
    identity (so the cache key is the object itself, and hashing it runs no user code)."""
    if vt.is_python_constant():
        return is_constant_value(vt.as_python_constant())
    if vt.source is None:
        return False
    try:
        cls = vt.python_type()
    except NotImplementedError:
        return False
    return cls.__hash__ is object.__hash__ and cls.__eq__ is object.__eq__


@register(functools._lru_cache_wrapper)
def build_lru_cache_wrapper(tx, value, source, do_guard: bool):
    if source is None:
        tx.unsupported(f"an lru_cache wrapper of {getattr(value, '__qualname__', '?')} without a source",
                       category="unsupported value")
    guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
    return LruCacheWrapperVariable(value, source)
