"""A module's globals dict reached as a dict (`globals()`, `vars(module)`, `module.__dict__`,
a function's `__globals__`, or one left on the stack at a graph break).

Its items are the module's globals, which the traced code also reads and writes by name
(LOAD_GLOBAL / STORE_GLOBAL, module attributes): both ways go through the side-effect log's
global store (`SideEffects.pending_global` / `store_global`), so a write through the dict is
seen by a later read by name, and the other way round, and replayed once after the graph. A
key read from the real dict is guarded by its presence or absence (`globals().get("N", 0)`
before `N` exists must recompile once `N` exists). What would need every key (iteration, len,
copies, views) is a graph break: the dict there is the real one, eagerly.
"""
from __future__ import annotations

import sys

from ..guards.guard import GuardKind
from ..guards.sources import global_source
from .base import MethodOfVariable, VariableTracker
from .constant import ConstantVariable
from .method_table import dispatch, one_arg, row
from .objects import DELETED

_MISSING = object()


def _get(tx, g, name, args, kwargs):
    value = g._lookup(tx, g._name(tx, args[0]))
    if value is _MISSING:
        return args[1] if len(args) == 2 else ConstantVariable(None)
    return value


def _setitem(tx, g, name, args, kwargs):
    g.setitem_impl(tx, args[0], args[1])
    return ConstantVariable(None)


def _setdefault(tx, g, name, args, kwargs):
    key = g._name(tx, args[0])
    value = g._lookup(tx, key)
    if value is _MISSING:
        value = args[1] if len(args) == 2 else ConstantVariable(None)
        g._store(tx, key, value)
    return value


def _pop(tx, g, name, args, kwargs):
    """`pop(name[, default])`: the global's value, deleted (the default, or KeyError, if it has none)."""
    key = g._name(tx, args[0])
    value = g._lookup(tx, key)
    if value is _MISSING:
        if len(args) == 2:
            return args[1]
        tx.raise_user_error(KeyError(key))
    g._store(tx, key, DELETED)
    return value


def _delitem(tx, g, name, args, kwargs):
    _pop(tx, g, name, args, kwargs)
    return ConstantVariable(None)


def _at_most(n: int):
    return lambda g, args, kwargs: len(args) <= n


# the dict methods that read or write one global by its name (called with positional arguments)
_GLOBALS_METHODS = {
    "get": row(_get, when=_at_most(2)),
    "__getitem__": row(lambda tx, g, name, args, kwargs: g.getitem_impl(tx, args[0]), when=one_arg),
    "__contains__": row(lambda tx, g, name, args, kwargs: g.contains_impl(tx, args[0]), when=one_arg),
    "__setitem__": row(_setitem, when=lambda g, args, kwargs: len(args) == 2),
    "setdefault": row(_setdefault, when=_at_most(2)),
    "pop": row(_pop, when=_at_most(2)),
    "__delitem__": row(_delitem, when=_at_most(1)),
}


def is_module_namespace(tx, value: dict) -> bool:
    """Whether dict `value` is the globals of a module or of a traced frame."""
    if id(value) in tx.output.globals_sources:
        return True
    name = value.get("__name__")
    return type(name) is str and getattr(sys.modules.get(name), "__dict__", None) is value


class GlobalsDictVariable(VariableTracker):
    """The globals dict `namespace` at `source` (the canonical source of that dict in this
    trace, Note [Globals sources] in translate/translator.py)."""

    __slots__ = ("namespace",)

    def __init__(self, namespace: dict, source):
        super().__init__(source)
        self.namespace = namespace

    def python_type(self) -> type:
        return dict

    def describe(self) -> str:
        return f"the globals of module {self.namespace.get('__name__', '?')}"

    def var_getattr(self, tx, name: str):
        if not hasattr(dict, name):
            tx.raise_user_error(AttributeError(f"'dict' object has no attribute '{name}'"))
        return MethodOfVariable(self, name)

    def _name(self, tx, key) -> str:
        if not key.is_python_constant() or type(key.as_python_constant()) is not str:
            tx.unsupported(f"a key of {key.describe()} in {self.describe()}", category="unsupported call",
                           hint="index a module's globals by a constant name")
        return key.as_python_constant()

    def _lookup(self, tx, name: str):
        """The value of global `name` as the traced code sees it, or _MISSING (guarded)."""
        pending = tx.output.side_effects.pending_global(self.namespace, name)
        if pending is DELETED:
            return _MISSING
        if pending is not None:
            return pending
        present = name in self.namespace
        tx.output.add_guard_at(tx, GuardKind.PRESENT if present else GuardKind.NOT_PRESENT, self.source, name)
        if not present:
            return _MISSING
        return tx.wrap(self.namespace[name], global_source(self.source, name))

    def _store(self, tx, name: str, value) -> None:
        tx.output.side_effects.store_global(self.namespace, self.source, name, value)

    def getitem_impl(self, tx, key):
        name = self._name(tx, key)
        value = self._lookup(tx, name)
        if value is _MISSING:
            tx.raise_user_error(KeyError(name))
        return value

    def setitem_impl(self, tx, key, value) -> None:
        self._store(tx, self._name(tx, key), value)

    def contains_impl(self, tx, item):
        return ConstantVariable(self._lookup(tx, self._name(tx, item)) is not _MISSING)

    def call_method(self, tx, name, args, kwargs):
        if kwargs or not args:
            return self._whole_dict(tx, name)
        result = dispatch(tx, self, _GLOBALS_METHODS, name, args, kwargs)
        return result if result is not None else self._whole_dict(tx, name)

    def _whole_dict(self, tx, name: str):
        tx.unsupported(f"dict.{name} on {self.describe()}", category="unsupported call",
                       hint="only single names of a module's globals are traced (get, [], in, setdefault, "
                            "pop); what needs all of them runs eagerly at a graph break")
