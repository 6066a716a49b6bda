"""Functions wrapped by `functools.lru_cache` / `functools.cache` (`_lru_cache_wrapper`).

A wrapper with a cache hashes its key first: an argument with no hash (a list, a dict, a
set, an instance of a class defining `__eq__` alone, a tuple holding one of those) raises
eager's TypeError (`unhashable type: 'list'`) in the trace, before the body would run, so a
handler in the traced code catches it as eagerly (`_hash_key`).

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

Note [Cached calls made at trace time]
A call with hashable constant arguments whose body cannot be folded that way is made for
real, through the wrapper itself, while tracing, and its result (an immutable constant) is
folded, when
- the wrapped function is marked constant (`torch.compiler.assume_constant_result`, the
  `_dynamo_marked_constant` attribute transformers' `is_torch_available`,
  `is_torch_greater_or_equal`, ... carry; Note [Constant results] in
  vars/constant_results.py): the body is not traced at all, as torch.compile does; or
- the body's trace stopped at something bytegraph cannot trace (a library's file reads in
  `importlib.metadata`, a C function nothing models, a write it does not model such as
  one on an object the body made), not at an effect it knows (a write to state outside the
  body, which the speculation scope refuses; a builtin bytegraph refuses, such as `print`:
  those calls still break and the real wrapper runs eagerly), nor at a tensor operation or
  a mutable result, and the trace has no write or call pending replay (which the body
  could read, or which it would overtake).
Why that is safe: a cached function's result is cacheable by contract (the cache returns it
for these arguments without running the body, for the rest of the process), so the value
the trace-time call returns is what every later eager call returns while the cache holds
it; calling the wrapper, not the function, fills the cache as eager's first call does, so
the body runs once in both (a later eager run of the frame finds the entry). What differs:
the body runs at trace time, at the start of the first compiled call, instead of at its
call; its result is not guarded (no guard sees the cache), so `cache_clear()` followed by a
change of what the body reads is seen by eager and not by the compiled code; the cache's
statistics count the trace-time call only; a body that raises (errors are not cached) is
raised as the user's error, and runs again when the frame then runs eagerly.
"""
from __future__ import annotations

import functools
import types

from .._bytecode.instructions import instructions_of
from ..errors import GraphBreak, TracedRaise
from ..guards.guard import GuardKind
from .constant import ConstantVariable, is_constant_value
from .constant_results import call_now, is_marked_constant
from .objects import UserObjectVariable
from .registry import guard, register

_HINT = "call the cached function outside the compiled function, or drop the cache decorator"

# Break categories where the body's trace stopped at an effect it knows (a write to state
# outside the body, a builtin bytegraph refuses such as print): not called at trace time.
_EFFECT_CATEGORIES = frozenset({"side effect in higher-order op", "unsupported builtin"})


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
        self._hash_key(tx, args, kwargs)
        if not all(a.is_python_constant() and is_constant_value(a.as_python_constant())
                   for a in (*args, *kwargs.values())):
            return self._replayed(tx, args, kwargs, "with arguments that are not hashable constants")
        key = (tuple(a.as_python_constant() for a in args),
               tuple((k, v.as_python_constant()) for k, v in kwargs.items()))
        if key in self.folded:
            return self.folded[key]
        if is_marked_constant(getattr(self.value, "__wrapped__", None)):
            return self._called_now(tx, key)  # Note [Cached calls made at trace time]
        calls = len(tx.output.side_effects.calls)
        why, traced, untraceable = self._check_body(tx, args, kwargs)
        if why is None and len(tx.output.side_effects.calls) > calls:
            tx.output.side_effects.drop_calls(calls)
            return self._replayed(tx, args, kwargs, "whose body makes calls replayed after the graph", checked=True)
        if why is not None:
            if not untraceable or tx.output.side_effects.pending():
                self._refuse(tx, why)
            return self._called_now(tx, key, why)
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

    def _hash_key(self, tx, args, kwargs) -> None:
        """What the wrapper does first with a cache (`maxsize` not 0): hash its key, the
        arguments then the keyword values, in order. An argument whose type has no hash (a
        list, a dict, a class defining `__eq__` alone; a tuple holding one) raises eager's
        TypeError here, before the body; the walk stops at the first argument whose hash
        would run Python code (the rules below decide that call)."""
        if self.value.cache_parameters()["maxsize"] == 0:
            return
        for vt in (*args, *kwargs.values()):
            error = _hash_error(vt)
            if error is _HASHED_BY_CODE:
                return
            if error is not None:
                tx.raise_user_error(error)

    def _called_now(self, tx, key, why: str = ""):
        """The wrapper called now, its immutable constant result folded (Note [Cached calls
        made at trace time]); `why`: why the body was not folded by its trace."""
        what = f"calling {self._name()}, a functools.lru_cache wrapper, {why + ', and ' if why else ''}called now"
        result = call_now(tx, self.value, key[0], dict(key[1]), what)  # Note [Constant results]
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
            body_why, traced, _ = self._check_body(tx, args, kwargs)
            if body_why is not None or traced is _RAISES:
                self._refuse(tx, f"{why}, and not replayed after the graph ({body_why or 'its body raises'})")
            tx.output.side_effects.drop_calls(calls)
        tx.output.side_effects.record_call(self.value, args, kwargs)
        return ConstantVariable(None)

    def _check_body(self, tx, args, kwargs) -> tuple:
        """Trace the body through `__wrapped__`: (None, its constant result or `_RAISES`,
        False) if it is pure (its guards are kept, everything else it did is dropped), else
        (why not, None, whether its trace stopped at something bytegraph cannot trace rather
        than at an effect it knows, a tensor operation or a mutable result) with everything
        dropped."""
        wrapped = self.var_getattr(tx, "__wrapped__")
        graph = tx.output.graph
        nodes = len(graph.nodes)
        cp = tx.checkpoint()
        why = traced = None
        untraceable = False
        try:
            with tx.output.side_effects.scope(f"the body of {self._name()}", calls=True):
                result = wrapped.call_function(tx, args, kwargs)
        except GraphBreak as brk:
            why = f"whose body breaks the graph ({brk.reason})"
            untraceable = brk.category not in _EFFECT_CATEGORIES
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
        return why, traced, untraceable

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


_HASHED_BY_CODE = object()  # an argument whose hash runs Python code (or is not known)
_HEAPTYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement or type()


def _hash_error(vt):
    """The TypeError `hash(value)` raises (the value's type, or that of an item of a tuple it
    is, has no hash), None if hashing it raises nothing and runs no Python code, or
    `_HASHED_BY_CODE`."""
    if vt.is_python_constant() and is_constant_value(vt.as_python_constant()):
        try:  # C hashes of constants (a slice has none)
            hash(vt.as_python_constant())
        except TypeError as e:
            return e
        return None
    try:
        cls = vt.python_type()
    except NotImplementedError:
        return _HASHED_BY_CODE
    if cls.__hash__ is None:
        return TypeError(f"unhashable type: '{_type_name(cls)}'")
    if cls.__hash__ is tuple.__hash__ and vt.sequence_items() is not None:
        for item in vt.sequence_items():
            error = _hash_error(item)
            if error is not None:
                return error
        return None
    if vt.is_tensor or not isinstance(cls.__hash__, types.FunctionType):  # Tensor.__hash__ is id()
        return None
    return _HASHED_BY_CODE


def _type_name(cls: type) -> str:
    """The name CPython's messages give a type (its `tp_name`): the bare name of a class made
    by a class statement, `module.name` for one written in C outside builtins."""
    if cls.__flags__ & _HEAPTYPE or cls.__module__ == "builtins":
        return cls.__name__
    return f"{cls.__module__}.{cls.__qualname__}"


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
