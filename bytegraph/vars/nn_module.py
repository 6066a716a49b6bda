"""`torch.nn.Module` instances read from the caller's world: `NNModuleVariable`.

A module is traced through its own Python code (no per-layer special cases): a call
inlines `forward` (or, when hooks are registered, `Module.__call__` itself, so the
hooks run like eager); attribute reads follow Python's lookup order and then
`nn.Module.__getattr__`'s (`_parameters`, `_buffers`, `_modules`).

Sources and guards (see Note [Module guard aliases]):
- a module is guarded by identity once; every path below it (`training`, its
  submodules, parameters and buffers) is spelled through the dicts that hold them
  (`m._modules['3']._parameters['weight']`), never through the slow Python
  `Module.__getattr__`, and users see `self.layers.3.weight` in messages;
- parameters and buffers become graph inputs by source (TENSOR_MATCH);
- a call guards, in one clause per module, that the module has no hooks, no instance
  `forward` and no `_compiled_call_impl`; the global hook dicts are guarded empty once.

Note [Module guard aliases]
The guard function evaluates every clause from the frame's locals, so a parameter
three modules deep would re-walk the module path for every clause. The identity
guard of a (non-local) module therefore binds the module to a guard-local name with
`:=` (`ModuleBindSource`), and every source below it starts from that name
(`ModuleAliasSource`). This is sound because guards are evaluated in insertion order
and a module's identity guard is installed before anything is read from it; an
unguarded module (wrap(..., guard=False)) is never aliased.
"""
from __future__ import annotations

import itertools
import types
from dataclasses import dataclass

import torch
from torch.nn.modules import module as _module_mod

from ..guards.guard import Guard, GuardKind
from ..guards.sources import AttrSource, LocalSource, ObjectSource, Source
from .constant import ConstantVariable
from .containers import DictVariable
from .objects import UserObjectVariable, _class_attr

_alias_ids = itertools.count()

_SLOT_DICTS = ("_parameters", "_buffers", "_modules")
_GLOBAL_HOOK_DICTS = ("_global_backward_pre_hooks", "_global_backward_hooks", "_global_forward_hooks",
                      "_global_forward_pre_hooks")
_MODULE_HOOK_DICTS = ("_backward_hooks", "_backward_pre_hooks", "_forward_hooks", "_forward_pre_hooks")
_METHODS = (types.FunctionType, staticmethod, classmethod, property)
_CONTAINERS = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)
_INDEXABLE = {torch.nn.Sequential.__getitem__, torch.nn.ModuleList.__getitem__, torch.nn.ModuleDict.__getitem__}


# ---- sources ---------------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class ModuleSlotSource(Source):
    """`base.<dict_name>[key]`: a submodule, parameter or buffer, read from the dict
    nn.Module keeps it in (what `Module.__getattr__` would return, without its cost)."""

    base: Source
    dict_name: str
    key: str

    def name(self) -> str:
        return f"{self.base.name()}.{self.dict_name}[{self.key!r}]"

    def describe(self) -> str:
        if self.key.isidentifier():
            return f"{self.base.describe()}.{self.key}"
        return f"{self.base.describe()}[{self.key}]"

    def reconstruct(self, cg) -> None:
        self.base.reconstruct(cg)
        cg.load_attr(self.dict_name)
        cg.load_const(self.key)
        cg.binary_subscr()


@dataclass(frozen=True, slots=True)
class ModuleBindSource(Source):
    """The module at `inner`, bound to guard-local `__bg_m<index>` (Note [Module guard aliases])."""

    inner: Source
    index: int

    def name(self) -> str:
        return f"(__bg_m{self.index} := {self.inner.name()})"

    def describe(self) -> str:
        return self.inner.describe()

    def reconstruct(self, cg) -> None:
        self.inner.reconstruct(cg)


@dataclass(frozen=True, slots=True)
class ModuleAliasSource(Source):
    """The module bound by `ModuleBindSource(inner, index)` (Note [Module guard aliases])."""

    inner: Source
    index: int

    def name(self) -> str:
        return f"__bg_m{self.index}"

    def describe(self) -> str:
        return self.inner.describe()

    def reconstruct(self, cg) -> None:
        self.inner.reconstruct(cg)


@dataclass(frozen=True, slots=True)
class AnyOfSource(Source):
    """`(a or b or ... or None)`: None exactly when every part is falsy (guarded `is None`).
    Used to check several hook dicts (and flags) in one guard clause."""

    parts: tuple
    what: str

    def name(self) -> str:
        return "(" + " or ".join(p.name() for p in self.parts) + " or None)"

    def describe(self) -> str:
        return self.what

    def reconstruct(self, cg) -> None:
        raise NotImplementedError("AnyOfSource is a guard-only source")


@dataclass(frozen=True, slots=True)
class InstanceDictHasSource(Source):
    """`(key in base.__dict__)`: an instance attribute shadowing a class attribute."""

    base: Source
    key: str

    def name(self) -> str:
        return f"({self.key!r} in {self.base.name()}.__dict__)"

    def describe(self) -> str:
        return f"{self.base.describe()}.__dict__ has {self.key!r}"

    def reconstruct(self, cg) -> None:
        raise NotImplementedError("InstanceDictHasSource is a guard-only source")


@dataclass(frozen=True, slots=True)
class _Attr(Source):
    """`base.attr` for attributes of a module's instance dict (plain attribute access is
    a C-level dict hit for these, so it stays cheap in guards)."""

    base: Source
    attr: str

    def name(self) -> str:
        return f"{self.base.name()}.{self.attr}"

    def describe(self) -> str:
        return f"{self.base.describe()}.{self.attr}"

    def reconstruct(self, cg) -> None:
        self.base.reconstruct(cg)
        cg.load_attr(self.attr)


# ---- the tracker ---------------------------------------------------------------------------

def build_module(tx, module: torch.nn.Module, source, do_guard: bool) -> "NNModuleVariable":
    """The tracker for `module` at `source` (called by `builder.wrap`), with its identity guard."""
    if source is None:
        tx.unsupported(f"an nn.Module of type {type(module).__qualname__} without a source",
                       category="unsupported value")
    if not do_guard:
        return NNModuleVariable(module, source, source)
    if isinstance(source, LocalSource):
        tx.output.add_guard(Guard(GuardKind.ID_MATCH, source, module, tx.location()))
        return NNModuleVariable(module, source, source)
    index = next(_alias_ids)
    tx.output.add_guard(Guard(GuardKind.ID_MATCH, ModuleBindSource(source, index), module, tx.location()))
    return NNModuleVariable(module, source, ModuleAliasSource(source, index))


class NNModuleVariable(UserObjectVariable):
    """An `nn.Module` with a source. `base` is the source its attributes are read from in
    guards (an alias of `source`, Note [Module guard aliases])."""

    __slots__ = ("base", "call_checked")

    def __init__(self, value, source, base):
        super().__init__(value, source)
        self.base = base
        self.call_checked = False

    def describe(self) -> str:
        return f"module {self.source.describe()} ({type(self.value).__qualname__})"

    # ---- attributes ----------------------------------------------------------------
    def var_getattr(self, tx, name):
        module = self.value
        cls_attr = _class_attr(type(module), name)
        if cls_attr is not None and hasattr(type(cls_attr), "__set__"):
            return super().var_getattr(tx, name)  # data descriptor (property, __dict__, ...)
        instance = module.__dict__
        if name in instance:
            if name in _SLOT_DICTS:
                return self._slot_dict(tx, name)
            return tx.wrap(instance[name], _Attr(self.base, name))
        for dict_name in _SLOT_DICTS:
            slots = instance[dict_name]
            if name in slots:
                return self._slot(tx, dict_name, name)
        if cls_attr is not None:
            if isinstance(cls_attr, _METHODS) or (hasattr(type(cls_attr), "__get__") and not isinstance(cls_attr, type)):
                return super().var_getattr(tx, name)
            return tx.wrap(cls_attr, AttrSource(self.base, name))
        if _class_attr(type(module), "__getattr__") is not torch.nn.Module.__getattr__:
            return super().var_getattr(tx, name)
        tx.raise_user_error(AttributeError(f"'{type(module).__name__}' object has no attribute '{name}'"))

    def _slot(self, tx, dict_name: str, key: str):
        return tx.wrap(self.value.__dict__[dict_name][key], ModuleSlotSource(self.base, dict_name, key))

    def _slot_dict(self, tx, dict_name: str):
        """`self._modules` (etc.) as a dict of trackers whose keys are guarded."""
        slots = self.value.__dict__[dict_name]
        src = _Attr(self.base, dict_name)
        cached = tx.output.tracked.get(src)
        if cached is not None:
            return cached
        tx.output.add_guard(Guard(GuardKind.DICT_KEYS, src, tuple(slots), tx.location()))
        items = {k: self._slot(tx, dict_name, k) for k in slots}
        vt = DictVariable(items, src, type(slots))
        tx.output.tracked[src] = vt
        return vt

    # ---- calls -----------------------------------------------------------------------
    def call_function(self, tx, args, kwargs):
        module = self.value
        cls = type(module)
        if cls.__call__ is torch.nn.Module.__call__ and cls._call_impl is torch.nn.Module._call_impl \
                and not self._has_hooks(tx):
            return self.var_getattr(tx, "forward").call_function(tx, args, kwargs)
        return super().call_function(tx, args, kwargs)  # inline type(module).__call__ (hooks run)

    def _has_hooks(self, tx) -> bool:
        """Whether a call must run `Module._call_impl`'s hook logic; guarded either way."""
        module = self.value
        local = [getattr(module, name) for name in _MODULE_HOOK_DICTS]
        shadowed = "forward" in module.__dict__
        compiled = module.__dict__.get("_compiled_call_impl") is not None
        if not self.call_checked:
            self.call_checked = True
            parts = tuple(_Attr(self.base, n) for n in (*_MODULE_HOOK_DICTS, "_compiled_call_impl")) + (
                InstanceDictHasSource(self.base, "forward"),)
            if not (any(local) or shadowed or compiled):
                tx.output.add_guard(Guard(GuardKind.CONSTANT_MATCH, AnyOfSource(
                    parts, f"hooks of {self.source.describe()}"), None, tx.location()))
        if any(local) or shadowed or compiled:
            # the generic path reads every dict it uses, and guards what it reads
            return True
        return _global_hooks(tx)

    # ---- containers ------------------------------------------------------------------
    def unpack(self, tx) -> list:
        module = self.value
        if isinstance(module, (torch.nn.Sequential, torch.nn.ModuleList)) and \
                type(module).__iter__ in (torch.nn.Sequential.__iter__, torch.nn.ModuleList.__iter__):
            return list(self._slot_dict(tx, "_modules").items.values())
        if isinstance(module, torch.nn.ModuleDict) and type(module).__iter__ is torch.nn.ModuleDict.__iter__:
            return [ConstantVariable(k) for k in self._slot_dict(tx, "_modules").items]
        from .iterators import iterator_of

        return iterator_of(tx, self.call_method(tx, "__iter__", [], {})).unpack(tx)

    def call_method(self, tx, name, args, kwargs):
        module = self.value
        if name == "__getitem__" and len(args) == 1 and not kwargs and args[0].is_python_constant() \
                and _class_attr(type(module), "__getitem__") in _INDEXABLE:
            return self._index(tx, args[0].as_python_constant())
        if name == "__len__" and isinstance(module, _CONTAINERS) and not args:
            return ConstantVariable(len(self._slot_dict(tx, "_modules").items))
        return super().call_method(tx, name, args, kwargs)

    def _index(self, tx, key):
        module = self.value
        children = self._slot_dict(tx, "_modules")  # guards the keys: an index names one child
        if isinstance(key, slice):
            tx.unsupported(f"slicing {self.describe()} creates a new module",
                           category="unsupported call", hint="index the container with integers instead")
        try:
            child = module[key]
        except (IndexError, KeyError, TypeError) as e:
            tx.raise_user_error(e)
        for k, v in module._modules.items():
            if v is child:
                return children.items[k]
        raise AssertionError("indexed child not found in _modules")


def _global_hooks(tx) -> bool:
    """Whether any global module hook is registered; guarded (once per capture)."""
    dicts = [getattr(_module_mod, name) for name in _GLOBAL_HOOK_DICTS]
    present = any(dicts)
    if not present:
        source = AnyOfSource(tuple(ObjectSource(d) for d in dicts), "global nn.Module hooks")
        tx.output.add_guard(Guard(GuardKind.CONSTANT_MATCH, source, None, tx.location()))
    return present

