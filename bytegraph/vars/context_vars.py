"""`contextvars`: `ContextVar.get/set/reset` and their `Token`s, `copy_context()`, `Context()`
and `Context.run(fn, ...)`, traced; the caller's context is written back after the graph.

Note [Context variables in a trace]
A `ContextVar` read from outside (a global, an attribute) is one `ContextVarVariable` per
real variable (however many paths reach it: identity-tracked, as containers are), guarded
by type; its name and default are read through sources and guarded as any value, and its
identity is guarded only where the trace depends on it (an error message that names it, a
dict key), so a variable made per call and handed to a resume function is not a new
entry per call. What it holds in a context is `ORIGINAL` (whatever it holds in the caller's
context at call time, not read yet), `MISSING` (unset) or a tracker. The caller's value is
read lazily, once, through `ContextVarSource` (`var.get(<unset>)` evaluated at call time)
and guarded on what the trace used: `wrap` guards it as it guards any value read from
outside (a constant by value, an object by type or identity, a tensor by its metadata), an
unset variable by identity with the sentinel; a trace that only sets and resets reads
nothing. `get()` of an unset variable answers its argument, else its own default (read
from an empty context, `ContextVarSource(default=True)`, and guarded), else raises the
user's LookupError. `set(v)` returns a `TokenVariable` remembering the value it replaced, `reset`
checks what CPython checks (in its order: a token used twice, a token of another variable,
a token of another Context) and puts that value back. Nothing real changes while tracing:
a write in the caller's context changes the tracker (through the mutation barrier) and is
appended to its `history`.

Replay (Note [Replay records] in vars/base.py): after the graph the variable is `set` to its
final value; a final value that is the caller's own (a `set` undone by its `reset`)
replays nothing. A Token made in the trace that residual code needs (returned, stored, live
at a graph break) must be the real object eager makes, with its old value and its used
state: the first one rebuilt replays the caller-context history of its variable in order
(`replay_history`, once per variable: `ContextVarHistoryVariable` is built once), the
values no token can give back replaced by None, and puts back the value the variable had
before, if it had one, so that operands loaded after it still see the pre-call world
(Note [Side-effect replay]); the final `set` follows as above. At a graph break the replay
runs before the breaking instruction, so the eager code sees the state the trace reached.

Contexts: `copy_context()` and `Context()` called in the trace are `ContextVariable`s holding
the values that differ from their base (the caller's values for a copy, unset for an empty
one). `ctx.run(fn, *args, **kwargs)` traces `fn` with the context pushed on
`output.contexts`, so `get`/`set`/`reset` inside read and write that context and its
tokens belong to it; the caller's context never sees them, as eager. A Context made in the
trace that reaches residual code (returned, live at a graph break: a break inside `run`
breaks at the outermost call, `ctx.run(...)` itself) is rebuilt by `rebuild_context`: a
new empty one or a copy of the real current context, with the trace's values set in it;
that needs the real context to be what the copy was made of (no variable written in the
caller's context) and no variable reset to unset in it. Graph breaks, with their reason:
a Context made in the trace that cannot be rebuilt so, its tokens reaching residual code,
iterating a Context (its variables include every one the caller set, which the trace does
not know), a Context from outside, a `reset` with a Token from outside the trace (whether it
was used, and in which Context it was made, is not visible), and creating a ContextVar in
the compiled function (each call would make a new variable).
"""
from __future__ import annotations

import contextvars

from ..guards.guard import GuardKind
from ..guards.sources import CONTEXT_VAR_UNSET, AttrSource, ContextVarSource, ObjectSource, context_var_default, \
    context_var_value
from .base import REPLAY_OBJECT, MethodOfVariable, VariableTracker
from .registry import handles
from .constant import ConstantVariable
from .method_table import dispatch, read_attr, row
from .registry import guard, register

ContextVar, Context, Token = contextvars.ContextVar, contextvars.Context, contextvars.Token


class _Value:
    """A value of a variable in a context that is not a tracker (its `repr` names it)."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name

    def __repr__(self) -> str:
        return self.name


ORIGINAL = _Value("<the caller's value>")
MISSING = _Value("<unset>")


def current_context(tx):
    """The `ContextVariable` whose `run` is being traced, or None: the caller's context."""
    contexts = tx.output.contexts
    return contexts[-1] if contexts else None


def _set_value(var, value) -> None:
    """Residual helper: the replay of a variable's final value."""
    var.set(value)


def replay_history(var, plan: tuple, values: tuple) -> list:
    """Residual helper: make the real Tokens of `var`'s caller-context history. `plan` has
    one step per call: None for a `set` (of the next of `values`), k for a `reset` with the
    token of the k-th `set`. The value `var` had before is put back."""
    before = var.get(CONTEXT_VAR_UNSET)
    restore = None if before is CONTEXT_VAR_UNSET else var.set(before)
    tokens = []
    pending = iter(values)
    for step in plan:
        if step is None:
            tokens.append(var.set(next(pending)))
        else:
            var.reset(tokens[step])
    if restore is not None:
        var.reset(restore)
    return tokens


def rebuild_context(empty: bool, pairs: tuple):
    """Residual helper: a Context made in the trace, rebuilt: an empty one or a copy of the
    current one, with variable, value `pairs` (flat) set in it."""
    ctx = contextvars.Context() if empty else contextvars.copy_context()
    for i in range(0, len(pairs), 2):
        ctx.run(pairs[i].set, pairs[i + 1])
    return ctx


def _arity(tx, what: str, args, kwargs, low: int, high: int) -> None:
    """CPython's TypeErrors for a C method taking `low`..`high` positional arguments only."""
    if kwargs:
        tx.raise_user_error(TypeError(f"{what}() takes no keyword arguments"))
    if not low <= len(args) <= high:
        if high == 0:
            tx.raise_user_error(TypeError(f"{what}() takes no arguments ({len(args)} given)"))
        if low == high:
            tx.raise_user_error(TypeError(f"{what}() takes exactly one argument ({len(args)} given)"))
        bound, n = ("least", low) if len(args) < low else ("most", high)
        tx.raise_user_error(TypeError(f"{what.split('.')[-1]} expected at {bound} {n} argument"
                                      f"{'s' if n > 1 else ''}, got {len(args)}"))


class ContextVarVariable(VariableTracker):
    """A real `contextvars.ContextVar` from outside (guarded by type): its value in the
    caller's context (`value`), the caller's value once read (`original`), and the calls
    that wrote it in the caller's context (`history`: ("set", value, token) / ("reset", token))."""

    __slots__ = ("var", "value", "original", "history", "history_vt")
    identity_tracked = True
    replay_phase = REPLAY_OBJECT

    def __init__(self, var, source):
        super().__init__(source)
        self.var = var
        self.value = ORIGINAL
        self.original = None
        self.history = []
        self.history_vt = ContextVarHistoryVariable(self)

    def python_type(self) -> type:
        return ContextVar

    def describe(self) -> str:
        return f"ContextVar {self.var.name!r} ({self.source.describe()})"

    def pin(self, tx):
        """The real variable, guarded by identity: for what depends on which object it is
        (an error message naming it, a dict key)."""
        tx.output.add_guard_at(tx, GuardKind.ID_MATCH, self.source, self.var)
        return self.var

    def key_impl(self, tx):
        return self.pin(tx)

    # ---- values -------------------------------------------------------------------------
    def read_original(self, tx):
        """The caller's value (a tracker, or MISSING), read and guarded once."""
        if self.original is None:
            tx.output.side_effects.touch(self)
            source = ContextVarSource(self.source)
            value = context_var_value(self.var)
            if value is CONTEXT_VAR_UNSET:
                tx.output.add_guard_at(tx, GuardKind.ID_MATCH, source, CONTEXT_VAR_UNSET)
                self.original = MISSING
            else:
                self.original = tx.wrap(value, source)
        return self.original

    def resolve(self, tx, value):
        """`value` (ORIGINAL, MISSING or a tracker) as MISSING or a tracker."""
        return self.read_original(tx) if value is ORIGINAL else value

    def value_in(self, ctx):
        """What this variable holds in context `ctx` (None: the caller's)."""
        return self.value if ctx is None else ctx.lookup(self)

    def default(self, tx):
        """The default it was made with (guarded as any value read), or None."""
        source = ContextVarSource(self.source, default=True)
        default = context_var_default(self.var)
        if default is CONTEXT_VAR_UNSET:
            tx.output.add_guard_at(tx, GuardKind.ID_MATCH, source, CONTEXT_VAR_UNSET)
            return None
        return tx.wrap(default, source)

    # ---- methods ------------------------------------------------------------------------
    def var_getattr(self, tx, name: str):
        if name == "name":
            return tx.wrap(self.var.name, AttrSource(self.source, name))
        if name in _CONTEXT_VAR_METHODS:
            return MethodOfVariable(self, name)
        try:
            getattr(self.var, name)
        except AttributeError as e:
            tx.raise_user_error(e)
        tx.unsupported(f"attribute {name!r} of {self.describe()}", category="unsupported attribute")

    def hasattr_impl(self, tx, name: str) -> bool:
        return hasattr(self.var, name)

    def call_method(self, tx, name, args, kwargs):
        result = dispatch(tx, self, _CONTEXT_VAR_METHODS, name, args, kwargs)
        return result if result is not None else super().call_method(tx, name, args, kwargs)

    def get(self, tx, args):
        value = self.resolve(tx, self.value_in(current_context(tx)))
        if value is not MISSING:
            return value
        if args:
            return args[0]
        default = self.default(tx)
        if default is None:
            tx.raise_user_error(LookupError(self.pin(tx)))
        return default

    def set(self, tx, value):
        ctx = current_context(tx)
        token = TokenVariable(self, self.value_in(ctx), ctx)
        if ctx is None:
            self._write(tx, value, ("set", value, token))
        else:
            ctx.write(tx, self, value)
        return token

    def reset(self, tx, token):
        if token.python_type() is not Token:
            if not token.is_python_constant():
                tx.unsupported(f"ContextVar.reset() with {token.describe()}", category="unsupported call")
            tx.raise_user_error(TypeError(f"expected an instance of Token, got {token.as_python_constant()!r}"))
        if token.source is not None:
            tx.unsupported(f"{self.describe()}.reset() with a Token from outside the compiled function: whether it "
                           "was used already, and in which Context it was made, is not visible to the trace",
                           category="unsupported call",
                           hint="set and reset the variable in the same compiled region, or the reset runs eagerly")
        if token.used:
            tx.raise_user_error(RuntimeError(f"{token.spelling(tx)} has already been used once"))
        if token.var_vt is not self:
            tx.raise_user_error(ValueError(f"{token.spelling(tx)} was created by a different ContextVar"))
        ctx = current_context(tx)
        if token.context is not ctx:
            tx.raise_user_error(ValueError(f"{token.spelling(tx)} was created in a different Context"))
        tx.output.side_effects.mutate(token)
        token.used = True
        if ctx is None:
            self._write(tx, token.old, ("reset", token))
        else:
            ctx.write(tx, self, token.old)
        return ConstantVariable(None)

    def _write(self, tx, value, call: tuple) -> None:
        """A write in the caller's context: recorded for the replay."""
        tx.output.side_effects.mutate(self)
        self.value = value
        self.history.append(call)

    # ---- replay -------------------------------------------------------------------------
    def _final(self):
        """The tracker the replay sets, or None when the caller's value is the final one."""
        value = self.value
        if value is ORIGINAL or value is MISSING or value is self.original:
            return None
        return value

    def replay_records(self, cg) -> list:
        final = self._final()
        if final is None:
            return []
        return [cg.helper_effect(_set_value, self.source, lambda: cg.reconstruct(final))]

    def replayed_values(self):
        final = self._final()
        return () if final is None else (final,)

    def children(self):
        return self.replayed_values()


class ContextVarHistoryVariable(VariableTracker):
    """The real Tokens of the caller-context history of `var_vt`, made by `replay_history`
    when residual code first needs one (Note [Context variables in a trace]): built once."""

    __slots__ = ("var_vt",)
    rebuilt_as_new_object = True

    def __init__(self, var_vt):
        super().__init__(None)
        self.var_vt = var_vt

    def python_type(self) -> type:
        return list

    def describe(self) -> str:
        return f"the Tokens of {self.var_vt.describe()}"

    def _sets(self) -> list:
        return [call for call in self.var_vt.history if call[0] == "set"]

    def index(self, token) -> int:
        return next(i for i, call in enumerate(self._sets()) if call[2] is token)

    def _values(self) -> list:
        """The values of the `set` calls, None for those that no token gives back and that are
        not the final value (nothing can observe them)."""
        observed = {id(call[2].old) for call in self._sets()} | {id(self.var_vt.value)}
        return [call[1] if id(call[1]) in observed else ConstantVariable(None) for call in self._sets()]

    def children(self):
        return self._values()

    def reconstruct(self, cg) -> None:
        sets = self._sets()
        plan = tuple(None if call[0] == "set" else next(i for i, s in enumerate(sets) if s[2] is call[1])
                     for call in self.var_vt.history)
        cg.push_callable_const(replay_history)
        cg.reconstruct(self.var_vt)
        cg.load_const(plan)
        cg.reconstruct_items(self._values(), "BUILD_TUPLE")
        cg.call(3)


class TokenVariable(VariableTracker):
    """A `contextvars.Token`: made by `set` in the trace (its variable, the value it
    replaced, its context, whether it was used), or a real one from outside (`real`)."""

    __slots__ = ("var_vt", "old", "context", "used", "real")

    def __init__(self, var_vt, old, context, source=None, real=None):
        super().__init__(source)
        self.var_vt = var_vt
        self.old = old
        self.context = context
        self.used = False
        self.real = real

    def python_type(self) -> type:
        return Token

    def describe(self) -> str:
        if self.source is not None:
            return f"Token {self.source.describe()}"
        return f"a Token of {self.var_vt.describe()}"

    def spelling(self, tx) -> str:
        """How an error message names it (eager's repr, without its own address)."""
        return f"<Token{' used' if self.used else ''} var={self.var_vt.pin(tx)!r}>"

    def var_getattr(self, tx, name: str):
        value = read_attr(tx, self, _TOKEN_ATTRS, name)
        if value is not None:
            return value
        try:
            getattr(Token, name)
        except AttributeError:
            tx.raise_user_error(AttributeError(f"'_contextvars.Token' object has no attribute {name!r}"))
        tx.unsupported(f"attribute {name!r} of {self.describe()}", category="unsupported attribute")

    def hasattr_impl(self, tx, name: str) -> bool:
        return hasattr(Token, name)

    def children(self):
        if self.source is not None or self.context is not None:
            return ()
        return (self.var_vt.history_vt,)

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        if self.context is not None:
            cg.tx.unsupported(f"{self.describe()} made inside Context.run() reaching code outside the graph: its "
                              "Context is made in the compiled function", category="unsupported output")
        history = self.var_vt.history_vt
        cg.reconstruct(history)
        cg.load_const(history.index(self))
        cg.binary_subscr()


def _missing(tx):
    """`Token.MISSING`."""
    return tx.wrap(Token.MISSING, ObjectSource(Token.MISSING))


def _real_token_attr(tx, token, name):
    """Attribute `name` of a Token from outside: the real one's, through its source."""
    return tx.wrap(getattr(token.real, name), AttrSource(token.source, name))


def _token_var(tx, token, name):
    if token.source is not None:
        return _real_token_attr(tx, token, name)
    return token.var_vt


def _token_old_value(tx, token, name):
    if token.source is not None:
        return _real_token_attr(tx, token, name)
    old = token.var_vt.resolve(tx, token.old)
    return _missing(tx) if old is MISSING else old


_TOKEN_ATTRS = {"MISSING": lambda tx, token, name: _missing(tx), "var": _token_var, "old_value": _token_old_value}


class ContextVariable(VariableTracker):
    """A `contextvars.Context` made in the trace: the values that differ from its base
    (`values`: id(variable tracker) -> (tracker, value)), the base being the caller's
    values (a copy) or none (`empty`: `Context()`); `entered` while its `run` is traced."""

    __slots__ = ("values", "empty", "entered")
    rebuilt_as_new_object = True

    def __init__(self, values: dict, empty: bool):
        super().__init__(None)
        self.values = values
        self.empty = empty
        self.entered = False

    def python_type(self) -> type:
        return Context

    def describe(self) -> str:
        return "a contextvars.Context made in the compiled function"

    def lookup(self, var_vt):
        entry = self.values.get(id(var_vt))
        if entry is not None:
            return entry[1]
        return MISSING if self.empty else ORIGINAL

    def write(self, tx, var_vt, value) -> None:
        tx.output.side_effects.mutate(self)
        self.values[id(var_vt)] = (var_vt, value)

    def copy(self) -> "ContextVariable":
        return ContextVariable(dict(self.values), self.empty)

    def children(self):
        return [item for var_vt, value in self.values.values() if isinstance(value, VariableTracker)
                for item in (var_vt, value)]

    def var_getattr(self, tx, name: str):
        if name in _CONTEXT_METHODS:
            return MethodOfVariable(self, name)
        try:
            getattr(Context, name)
        except AttributeError:
            tx.raise_user_error(AttributeError(f"'_contextvars.Context' object has no attribute {name!r}"))
        tx.unsupported(f"attribute {name!r} of {self.describe()}", category="unsupported attribute")

    def hasattr_impl(self, tx, name: str) -> bool:
        return hasattr(Context, name)

    def call_method(self, tx, name, args, kwargs):
        result = dispatch(tx, self, _CONTEXT_ROWS, name, args, kwargs)
        if result is not None:
            return result
        tx.unsupported(f"Context.{name}() of {self.describe()}: iterating a Context is not traced (its variables "
                       "include every one the caller set, which the trace does not know)",
                       category="unsupported call")

    def _item(self, tx, name: str, args):
        var_vt = args[0]
        if var_vt.python_type() is not ContextVar:
            if not var_vt.is_python_constant():
                tx.unsupported(f"Context.{name}() with {var_vt.describe()}", category="unsupported call")
            tx.raise_user_error(TypeError(f"a ContextVar key was expected, got {var_vt.as_python_constant()!r}"))
        value = var_vt.resolve(tx, self.lookup(var_vt))
        if name == "__contains__":
            return ConstantVariable(value is not MISSING)
        if value is not MISSING:
            return value
        if name == "get":
            return args[1] if len(args) > 1 else ConstantVariable(None)
        tx.raise_user_error(KeyError(var_vt.pin(tx)))

    def getitem_impl(self, tx, key):
        return self._item(tx, "__getitem__", [key])

    def contains_impl(self, tx, item):
        return self._item(tx, "__contains__", [item])

    def len_impl(self, tx):
        return self.call_method(tx, "__len__", [], {})

    def iterate(self, tx):
        return self.call_method(tx, "__iter__", [], {})

    def run(self, tx, fn, args, kwargs):
        """`ctx.run(fn, *args, **kwargs)`: `fn` traced in this context."""
        if self.entered:
            tx.raise_user_error(RuntimeError("cannot enter context: <_contextvars.Context object> is already entered"))
        side_effects = tx.output.side_effects
        side_effects.mutate(self)
        self.entered = True
        contexts = tx.output.contexts
        contexts.append(self)
        try:
            return fn.call_function(tx, list(args), kwargs)
        finally:
            contexts.pop()
            side_effects.mutate(self)
            self.entered = False

    def reconstruct(self, cg) -> None:
        """A new real Context with this one's values: `Context()`, or `copy_context()` when
        no variable was written in the caller's context (then the real one still holds what
        the copy was made of), each written value then set in it by its `run`."""
        written = [(var_vt, value) for var_vt, value in self.values.values() if value is not ORIGINAL]
        if any(value is MISSING for _, value in written) or not self.empty and any(
                isinstance(vt, ContextVarVariable) for vt in cg.tx.output.side_effects.mutated.values()):
            cg.tx.unsupported(f"{self.describe()} reaching code outside the graph, after variables it holds "
                              "were reset or the caller's were written", category="unsupported output",
                              hint="copy the context and run it inside the compiled function, or outside it")
        cg.push_callable_const(rebuild_context)
        cg.load_const(self.empty)
        for var_vt, value in written:
            cg.reconstruct(var_vt)
            cg.reconstruct(value)
        cg.build("BUILD_TUPLE", 2 * len(written))
        cg.call(2)


_CONTEXT_METHODS = frozenset({"run", "copy", "get", "keys", "values", "items", "__getitem__", "__contains__",
                              "__iter__", "__len__"})


def _var_get(tx, var, name, args, kwargs):
    _arity(tx, "ContextVar.get", args, kwargs, 0, 1)
    return var.get(tx, args)


def _var_set(tx, var, name, args, kwargs):
    _arity(tx, "ContextVar.set", args, kwargs, 1, 1)
    return var.set(tx, args[0])


def _var_reset(tx, var, name, args, kwargs):
    _arity(tx, "ContextVar.reset", args, kwargs, 1, 1)
    return var.reset(tx, args[0])


_CONTEXT_VAR_METHODS = {"get": row(_var_get), "set": row(_var_set), "reset": row(_var_reset)}


def _context_run(tx, ctx, name, args, kwargs):
    if not args:
        tx.raise_user_error(TypeError("run() missing 1 required positional argument"))
    return ctx.run(tx, args[0], args[1:], kwargs)


def _context_copy(tx, ctx, name, args, kwargs):
    _arity(tx, "Context.copy", args, kwargs, 0, 0)
    return ctx.copy()


def _context_get(tx, ctx, name, args, kwargs):
    _arity(tx, "Context.get", args, kwargs, 1, 2)
    return ctx._item(tx, name, args)


def _context_item(tx, ctx, name, args, kwargs):
    """`ctx[var]`, `var in ctx`."""
    if kwargs or len(args) != 1:
        tx.raise_user_error(TypeError(f"expected 1 argument, got {len(args) + len(kwargs)}"))
    return ctx._item(tx, name, args)


# the Context methods traced (the rest of _CONTEXT_METHODS iterate it: a graph break)
_CONTEXT_ROWS = {"run": row(_context_run), "copy": row(_context_copy), "get": row(_context_get),
                 "__getitem__": row(_context_item), "__contains__": row(_context_item)}


# ---- calls (builtins.HANDLERS) -----------------------------------------------------------

@handles(contextvars.copy_context)
def _copy_context(tx, fn, args, kwargs):
    if args or kwargs:
        tx.raise_user_error(TypeError(f"_contextvars.copy_context() takes no arguments ({len(args) + len(kwargs)} "
                                      "given)"))
    ctx = current_context(tx)
    if ctx is not None:
        return ctx.copy()
    written = {id(vt): (vt, vt.value) for vt in tx.output.side_effects.mutated.values()
               if isinstance(vt, ContextVarVariable) and vt.value is not ORIGINAL}
    return ContextVariable(written, empty=False)


@handles(Context)
def _new_context(tx, fn, args, kwargs):
    if args or kwargs:
        tx.raise_user_error(TypeError("Context() does not accept any arguments"))
    return ContextVariable({}, empty=True)


@handles(ContextVar)
def _new_context_var(tx, fn, args, kwargs):
    tx.unsupported("creating a contextvars.ContextVar in the compiled function (each call would make a new "
                   "variable)", category="unsupported call",
                   hint="create context variables once, at module level, as the contextvars documentation advises")


_UNBOUND = {ContextVar.get: (ContextVarVariable, "get"), ContextVar.set: (ContextVarVariable, "set"),
            ContextVar.reset: (ContextVarVariable, "reset"),
            **{getattr(Context, name): (ContextVariable, name) for name in _CONTEXT_METHODS}}


@handles(*_UNBOUND)
def _unbound_method(tx, fn, args, kwargs):
    """`ContextVar.get(var)`, `Context.run(ctx, fn)`, ...: the method of the tracker."""
    kind, name = _UNBOUND[fn]
    owner = fn.__objclass__
    if not args or args[0].python_type() is not owner:
        got = type(args[0].as_python_constant()).__name__ if args and args[0].is_python_constant() else None
        if args and got is None:
            tx.unsupported(f"{owner.__name__}.{name}() on {args[0].describe()}", category="unsupported call")
        what = f"a {got!r} object" if args else "no argument"
        tx.raise_user_error(TypeError(f"descriptor {name!r} for '_contextvars.{owner.__name__}' objects doesn't "
                                      f"apply to {what}"))
    if not isinstance(args[0], kind):
        tx.unsupported(f"{owner.__name__}.{name}() of {args[0].describe()}: a contextvars.Context from outside the "
                       "compiled function is not traced", category="unsupported call",
                       hint="run it outside the compiled function, or copy the context inside it")
    return args[0].call_method(tx, name, args[1:], kwargs)


# ---- builders (vars/registry.py) ---------------------------------------------------------

@register(ContextVar, exact=True)
def build_context_var(tx, value, source, do_guard: bool) -> ContextVarVariable:
    if source is None:
        tx.unsupported(f"a ContextVar ({value.name!r}) without a source", category="unsupported value")
    guard(tx, do_guard, GuardKind.TYPE_MATCH, source, ContextVar)
    return ContextVarVariable(value, source)


@register(Token, exact=True)
def build_token(tx, value, source, do_guard: bool) -> TokenVariable:
    if source is None:
        tx.unsupported("a contextvars.Token without a source", category="unsupported value")
    guard(tx, do_guard, GuardKind.TYPE_MATCH, source, Token)
    return TokenVariable(None, None, None, source, real=value)
