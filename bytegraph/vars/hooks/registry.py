"""Hook registries: the dicts torch keys by `RemovableHandle` id, read from outside.

Note [Hook registries]
Every hook registration makes a new handle whose id (a process-wide counter) keys the
hook in its dict and its flags in the companion dicts: a module's `_forward_hooks` and
`_forward_hooks_with_kwargs`/`_forward_hooks_always_called`, `_forward_pre_hooks`, ...
(the dicts `nn.Module.__init__` makes besides its slot dicts), and torch's `_global_*`
ones. `Module._call_impl` uses an id only to find the hook's flags (`hook_id in
self._forward_hooks_with_kwargs`), so a hook removed and registered again with the same
function and flags runs the same code under a new id. Guarding the keys by value (as any
dict's) recompiled at every registration; a registry is guarded up to a renaming of the
ids instead:
- its type, and its length when no earlier registry of the capture holds an id; else the
  position of each of its ids in the registries read before it (`id_positions`, one
  clause), so every equality between ids the trace can see is guarded, and nothing else;
- its values by position (`NthEntrySource`), a hook function as any function read from
  outside (by its code: a new closure of the same code does not recompile);
- its keys are unpinned ints at their positions (`wrap_int`), one tracker per id in a
  capture, so a lookup of an id of one registry in another answers from the positions
  the guard pins; an id used as a value (compared with a constant, printed, stored in a
  dict made in the trace, a lookup in any other dict) is guarded by value there. A set
  made in the trace holds ids by tracker (`RegistryIdKey`, vars/dict_keys.py) while it
  holds nothing else and is only added to, discarded from, tested for membership of an
  id and measured, so the set `_call_impl` makes for the `always_call` hooks that ran
  leaves their ids unguarded; anything else on it (a constant member, iteration, set
  algebra, its value, rebuilding it in residual code) guards their values first.
A registry is read-only in the trace: a method that changes it is a graph break (torch
changes them through `register_*hook` and `RemovableHandle.remove`, which break already).
"""
from __future__ import annotations

import torch
from torch.nn.modules import module as _module_mod

from ...guards.guard import Guard, GuardKind
from ...guards.sources import GuardExpressionSource, ModuleDictItemSource, NthEntrySource, ObjectSource
from ..base import MethodOfVariable, VariableTracker
from ..constant import ConstantVariable
from ..lazy_int import UnpinnedIntVariable, wrap_int
from ..method_table import dispatch, no_arguments, row
from .. import factory

_SLOT_DICTS = ("_parameters", "_buffers", "_modules")
# the dicts nn.Module.__init__ makes besides its slot dicts: every one is keyed by handle id
MODULE_REGISTRIES = frozenset(name for name, value in vars(torch.nn.Module()).items()
                              if isinstance(value, dict) and name not in _SLOT_DICTS)
_GLOBAL_REGISTRIES = {id(value): value for name, value in vars(_module_mod).items()
                      if name.startswith("_global_") and isinstance(value, dict)}


def is_registry(value, source) -> bool:
    """Whether dict `value` read at `source` is a hook registry: one of torch's global ones,
    or a module's, read from its `__dict__` under one of `MODULE_REGISTRIES`."""
    if _GLOBAL_REGISTRIES.get(id(value)) is not value and not (
            isinstance(source, ModuleDictItemSource) and source.key in MODULE_REGISTRIES):
        return False
    return all(type(key) is int for key in value)  # else changed by hand: a dict like any other


def id_positions(registry, earlier: tuple) -> tuple:
    """For each key of `registry`, (index in `earlier`, position there) of its first
    occurrence in the dicts `earlier`, or None: the relation guard of a registry."""
    found = {}
    for r, other in enumerate(earlier):
        for p, key in enumerate(other):
            found.setdefault(key, (r, p))
    return tuple(found.get(key) for key in registry)


class HookRegistryVariable(VariableTracker):
    """A hook registry read from outside (Note [Hook registries]): `keys` are unpinned ints
    (shared with the registries read before it), `values` the trackers of its values."""

    __slots__ = ("value", "keys", "values")
    identity_tracked = True

    def __init__(self, value, source, keys: list, values: list):
        super().__init__(source)
        self.value = value
        self.keys = keys
        self.values = values

    def python_type(self) -> type:
        return type(self.value)

    def describe(self) -> str:
        return f"hook registry {self.source.describe()}"

    def children(self):
        return (*self.keys, *self.values)

    def truth(self, tx) -> bool:
        return bool(self.keys)

    def len_impl(self, tx) -> VariableTracker:
        return ConstantVariable(len(self.keys))

    def unpack(self, tx) -> list:
        return list(self.keys)

    def hasattr_impl(self, tx, name: str) -> bool:
        return hasattr(self.python_type(), name)

    def position(self, tx, key_vt) -> int | None:
        """Where `key_vt` is among the keys, or None: an id of a registry by tracker (the
        guard pins the relation), any other key by value (guarded by value, or absent)."""
        for i, key in enumerate(self.keys):
            if key is key_vt:
                return i
        if isinstance(key_vt, UnpinnedIntVariable) and key_vt.source is not None and any(
                key_vt is key for other in _registries(tx) for key in other.keys):
            return None  # an id of another registry: the relation guards say it is not here
        if not key_vt.is_python_constant():
            tx.unsupported(f"looking up {key_vt.describe()} in {self.describe()}", category="unsupported dict key")
        wanted = key_vt.as_python_constant()
        for i, key in enumerate(self.keys):
            if key.value == wanted:
                key.as_python_constant()  # pinned: the answer rests on its value
                return i
        tx.output.add_guard(Guard(GuardKind.CONSTANT_MATCH, GuardExpressionSource(
            f"({wanted!r} in {{0}})", (self.source,), f"{wanted!r} in {self.source.describe()}"),
            False, tx.guard_location()))
        return None

    def contains_impl(self, tx, item) -> VariableTracker:
        return ConstantVariable(self.position(tx, item) is not None)

    def getitem_impl(self, tx, key_vt) -> VariableTracker:
        i = self.position(tx, key_vt)
        if i is None:
            tx.raise_user_error(KeyError(key_vt.as_python_constant()))
        return self.values[i]

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if callable(getattr(self.python_type(), name, None)):
            return MethodOfVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        result = dispatch(tx, self, METHODS, name, args, kwargs)
        if result is None:
            tx.unsupported(f"{self.describe()}.{name}(): a hook registry is read-only in the compiled region "
                           "(iteration, lookups and len are modelled)", category="unsupported call",
                           hint="register and remove module hooks outside the compiled function")
        return result


def _view(tx, registry, kind, args, kwargs):
    if kind == "keys":
        items = list(registry.keys)
    elif kind == "values":
        items = list(registry.values)
    else:
        items = [factory.tuple_of([k, v]) for k, v in zip(registry.keys, registry.values)]
    return RegistryViewVariable(registry, kind, items)


def _get(tx, registry, name, args, kwargs):
    i = registry.position(tx, args[0])
    if i is not None:
        return registry.values[i]
    return args[1] if len(args) > 1 else ConstantVariable(None)


METHODS = {
    **dict.fromkeys(("keys", "values", "items"), row(_view, when=no_arguments)),
    "get": row(_get, when=lambda vt, args, kwargs: 1 <= len(args) <= 2 and not kwargs),
    "__contains__": row(lambda tx, r, name, args, kwargs: r.contains_impl(tx, args[0]),
                        when=lambda vt, args, kwargs: len(args) == 1 and not kwargs),
    "__getitem__": row(lambda tx, r, name, args, kwargs: r.getitem_impl(tx, args[0]),
                       when=lambda vt, args, kwargs: len(args) == 1 and not kwargs),
    "__len__": row(lambda tx, r, name, args, kwargs: r.len_impl(tx), when=no_arguments),
    "__iter__": row(lambda tx, r, name, args, kwargs: factory.iterator_over(list(r.keys)), when=no_arguments),
}


class RegistryViewVariable(VariableTracker):
    """`registry.keys()`, `.values()` or `.items()` (a registry does not change in the trace)."""

    __slots__ = ("registry", "kind", "entries")

    def __init__(self, registry: HookRegistryVariable, kind: str, entries: list):
        super().__init__(None)
        self.registry = registry
        self.kind = kind
        self.entries = entries

    def python_type(self) -> type:
        return type(getattr(self.registry.python_type()(), self.kind)())

    def describe(self) -> str:
        return f"{self.registry.describe()}.{self.kind}()"

    def children(self):
        return (self.registry, *self.entries)

    def unpack(self, tx) -> list:
        return list(self.entries)

    def truth(self, tx) -> bool:
        return bool(self.entries)

    def len_impl(self, tx) -> VariableTracker:
        return ConstantVariable(len(self.entries))

    def contains_impl(self, tx, item) -> VariableTracker:
        if self.kind == "keys":
            return self.registry.contains_impl(tx, item)
        return super().contains_impl(tx, item)

    def reconstruct(self, cg) -> None:
        cg.reconstruct(self.registry)
        cg.call_method0(self.kind)


def _registries(tx) -> list:
    """The hook registries read so far in this capture, in the order they were read."""
    out, seen = [], set()
    for vt in tx.output.tracked.values():
        if isinstance(vt, HookRegistryVariable) and id(vt) not in seen:
            seen.add(id(vt))
            out.append(vt)
    return out


def build_registry(tx, value, source, do_guard: bool) -> HookRegistryVariable:
    """The tracker of hook registry `value` at `source`, guarded up to a renaming of its ids
    (Note [Hook registries])."""
    earlier = [r for r in _registries(tx) if r.keys]
    location = tx.guard_location()
    if do_guard:
        tx.output.add_guard(Guard(GuardKind.TYPE_MATCH, source, type(value), location))
        if value and earlier:
            parts = tuple(r.source for r in earlier)
            names = ", ".join(f"{{{i + 2}}}" for i in range(len(parts)))
            relation = GuardExpressionSource(
                f"{{0}}({{1}}, ({names},))", (ObjectSource(id_positions), source, *parts),
                f"positions of the ids of {source.describe()} in "
                f"({', '.join(p.describe() for p in parts)},)")
            tx.output.add_guard(Guard(GuardKind.CONSTANT_MATCH, relation,
                                      id_positions(value, tuple(r.value for r in earlier)), location))
        else:
            tx.output.add_guard(Guard(GuardKind.LEN_MATCH, source, len(value), location))
    known = {key.value: key for r in earlier for key in r.keys}
    keys, values = [], []
    for i, (key, item) in enumerate(value.items()):
        key_vt = known.get(key) or wrap_int(tx, key, NthEntrySource(source, i), guard_type=False)
        if isinstance(key_vt, UnpinnedIntVariable):
            key_vt.registry_id = True
        keys.append(key_vt)
        values.append(tx.wrap(item, NthEntrySource(source, i, values=True), do_guard))
    return HookRegistryVariable(value, source, keys, values)
