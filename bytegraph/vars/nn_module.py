"""`torch.nn.Module` instances read from the caller's world: `NNModuleVariable`.

A module is traced through its own Python code (no per-layer special cases): a call
inlines `forward` (or, when hooks are registered, `Module.__call__` itself, so the
hooks run like eager); attribute reads follow Python's lookup order and then
`nn.Module.__getattr__`'s (`_parameters`, `_buffers`, `_modules`).

Sources and guards:
- a module is guarded by type (Note [Modules are guarded by type, not identity]);
  everything below it (`training`, other instance attributes, submodules, parameters,
  buffers) is read through its `__dict__` and the dicts nn.Module keeps
  (`d['_modules']['3'].__dict__['_parameters']['weight']`), never through the slow
  Python `Module.__getattr__`; users see `self.layers[3].weight` in messages;
- parameters and buffers become graph inputs by source (TENSOR_MATCH);
- a call guards, in one clause per module, that it has no hooks, no instance `forward`
  and no `_compiled_call_impl` (Note [Module call guard]), and, once per class, that the
  class's `__call__` and `_call_impl` are still nn.Module's; the global hook dicts are
  guarded empty once; a class attribute read (a method: `forward`) guards that no instance
  attribute shadows it and, once per class, that the class still finds that function
  (`vars/classes.py::guard_class_attribute`), so replacing `forward` or `__call__` on the
  instance or the class between calls recompiles;
- plain attribute writes (`self.calls += 1`) go to the side-effect log and are replayed
  with `setattr`; writes that would register a parameter, buffer or submodule break.

With `config.reuse_repeated_blocks`, the call of a module nothing has read yet goes through
`vars/repeated_blocks.py` (Note [Repeated blocks]), which may replay an earlier call of its
class; `read` (set by every slot that reads the module) says whether anything has.

Note [Module guard aliases]
The guard function evaluates every clause from the frame's locals, so a parameter
three modules deep would re-walk the module path for every clause. The type guard of
a module therefore binds the module and its `__dict__` to guard-local names with `:=`
(`ModuleBindSource`: `__bg_m3`, `__bg_d3`), and every source below it starts from the
dict alias (`ModuleAliasSource`); a parameter is bound likewise (`__bg_t7`) by the first
conjunct of its tensor guard (`GuardAliasSource.binding_name`), the first clause that reads it.
This is sound because guards are evaluated in insertion order and a module's type
guard is installed before anything is read from it; an unguarded module
(wrap(..., guard=False)) is never aliased. Residual code never uses the aliases: every
source reconstructs from the frame (`reconstruct` goes through `owner`).
"""
from __future__ import annotations

import types
import weakref

import torch
from torch.nn.modules import module as _module_mod

from .. import config
from ..hints import is_static_module
from ..guards.guard import Guard, GuardKind
from ..guards.sources import (AttrSource, GuardAliasSource, GuardExpressionSource, ModuleAliasSource, ModuleBindSource,
                              ModuleDictItemSource, ModuleSlotSource, ObjectSource, WeakRefCallSource)
from .base import MethodOfVariable, VariableTracker
from .constant import ConstantVariable
from .containers import DictVariable, TupleVariable
from .functions import BoundMethodVariable, bind_arguments
from .lazy_int import wrap_int
from .hooks.module import (REGISTRATION_METHODS, break_on_backward_hooks, forward_hooks_around, has_skipped_hooks,
                           registration_break)
from .class_lookup import class_dict_source, class_lookup, is_data_descriptor
from .classes import guard_class_attribute
from .objects import DELETED, UserObjectVariable
from .registry import handles, register
from .tensor import TensorVariable
from . import factory, lazy_modules, repeated_blocks


def _next_alias(tx) -> int:
    """A fresh alias number for this capture (names stay small and stable across runs)."""
    return tx.output.next_guard_alias()


_ABSENT = object()


def _lookup(cls: type, name: str):
    """The class attribute `name` along the MRO, or `_ABSENT` (None is a value here)."""
    for klass in cls.__mro__:
        d = klass.__dict__
        if name in d:
            return d[name]
    return _ABSENT


_SLOT_DICTS = ("_parameters", "_buffers", "_modules")
_MODULE_GETATTR = torch.nn.Module.__getattr__
_GLOBAL_HOOK_DICTS = ("_global_backward_pre_hooks", "_global_backward_hooks", "_global_forward_hooks",
                      "_global_forward_pre_hooks")
_TREE_METHODS = frozenset({"modules", "named_modules", "children", "named_children", "parameters",
                           "named_parameters", "buffers", "named_buffers"})
_CONTAINERS = (torch.nn.Sequential, torch.nn.ModuleList, torch.nn.ModuleDict)
_INDEXABLE = {torch.nn.Sequential.__getitem__, torch.nn.ModuleList.__getitem__, torch.nn.ModuleDict.__getitem__}


# Note [Module call guard]: one clause per called module: no hook of any kind, no
# instance `forward`, no `_compiled_call_impl` (`module.compile()`), read from its dict.
_NO_HOOKS = "({0}['_backward_hooks'] or {0}['_backward_pre_hooks'] or {0}['_forward_hooks'] or " \
            "{0}['_forward_pre_hooks'] or 'forward' in {0} or '_compiled_call_impl' in {0} or None)"


# ---- the tracker ---------------------------------------------------------------------------

@register(torch.nn.Module, weakref.ReferenceType)
def build_module(tx, module: torch.nn.Module, source, do_guard: bool) -> NNModuleVariable:
    """The tracker for `module` at `source` (or a weak reference), with its type guard.

    Note [Modules are guarded by type, not identity]: everything the trace reads from a
    module is guarded through its own source (constants by value, submodules by type,
    parameters and buffers by tensor metadata, the keys of every slot dict it walks,
    its hooks when called), so another instance with the same structure reuses the
    entry, and an in-place change of the same instance (train(), a replaced submodule,
    a frozen parameter) fails exactly the guard of what changed."""
    if isinstance(module, weakref.ReferenceType):
        return build_weakref(tx, module, source, do_guard)
    if source is None:
        tx.unsupported(f"an nn.Module of type {type(module).__qualname__} without a source",
                       category="unsupported value")
    if not do_guard:  # nothing may assume an alias was bound: spell the full path
        return NNModuleVariable(module, source, source, AttrSource(source, "__dict__"))
    index = _next_alias(tx)
    tx.output.add_guard(Guard(GuardKind.TYPE_MATCH, ModuleBindSource(source, index), type(module), tx.guard_location()))
    return NNModuleVariable(module, source, ModuleAliasSource(source, index),
                            ModuleAliasSource(source, index, of_dict=True))


class NNModuleVariable(UserObjectVariable):
    """An `nn.Module` with a source. In guards, attributes are read from `dict_src` (the
    module's `__dict__`) and class attributes from `base` (the module); both are aliases
    bound by its type guard (Note [Module guard aliases])."""

    __slots__ = ("base", "call_checked", "dict_src", "read")

    def __init__(self, value, source, base, dict_src):
        super().__init__(value, source)
        self.base = base
        self.dict_src = dict_src
        self.call_checked = False
        self.read = False  # whether the trace read anything of it yet (Note [Repeated blocks])

    def mark_read(self, tx) -> None:
        """The trace reads the module (an attribute, a slot, its hooks, a protocol slot): from
        now on a call of it is not the first thing that learns about it (vars/repeated_blocks.py)."""
        if not self.read:
            tx.output.side_effects.touch(self)
            self.read = True

    def describe(self) -> str:
        return f"module {self.source.describe()} ({type(self.value).__qualname__})"

    # ---- attributes ----------------------------------------------------------------
    def var_getattr(self, tx, name):
        """`module.name` in CPython's order (`object.__getattribute__`): a data descriptor of
        the class (a property), the instance `__dict__`, a class attribute (a method, a
        static or class method, another descriptor, a plain value), and only then the
        class's `__getattr__` (`_module_getattr`)."""
        self.mark_read(tx)
        module = self.value
        if self.attrs is not None and name in self.attrs:  # written earlier in this trace
            pending = self.attrs[name]
            if pending is not DELETED:
                return pending
            tx.unsupported(f"reading attribute {name!r} of {self.describe()} after deleting it",
                           category="side effect")
        if name == "__class__":
            return tx.wrap(type(module), None)  # pinned by the module's type guard
        cls_attr = _lookup(type(module), name)
        if cls_attr is not _ABSENT and is_data_descriptor(cls_attr):
            if type(cls_attr) is property:
                return tx.wrap(cls_attr.fget, None).call_function(tx, [self], {})
            return super().var_getattr(tx, name)  # another data descriptor
        instance = module.__dict__
        if name in instance:
            if name in _SLOT_DICTS:
                return self._slot_dict(tx, name)
            value = instance[name]
            source = ModuleDictItemSource(self.dict_src, name, self.source)
            if type(value) is int:  # a counter is not pinned unless used; never symbolic on a static module
                return wrap_int(tx, value, source, static=is_static_module(module))
            if isinstance(value, torch.Tensor) and is_static_module(module):
                return self._static_tensor(tx, value, source)
            return tx.wrap(value, source)
        if cls_attr is _ABSENT:
            return self._module_getattr(tx, name)
        if name in _TREE_METHODS and cls_attr is getattr(torch.nn.Module, name):
            return ModuleMethodVariable(self, name)
        if name in REGISTRATION_METHODS and cls_attr is getattr(torch.nn.Module, name):
            return MethodOfVariable(self, name)  # its call breaks (vars/hooks/module.py)
        if name != "forward" or not self.call_checked:  # Note [Module call guard] covers forward
            # an instance attribute set later would shadow the class attribute
            tx.output.add_guard(Guard(GuardKind.NOT_PRESENT, self.dict_src, name, tx.guard_location()))
        if isinstance(cls_attr, types.FunctionType):
            guard_class_attribute(tx, type(module), name, cls_attr)  # `Model.forward = g` recompiles
            return BoundMethodVariable(tx.wrap(cls_attr, None), self, AttrSource(self.source, name))
        if isinstance(cls_attr, staticmethod):
            return tx.wrap(cls_attr.__func__, None)
        if isinstance(cls_attr, classmethod):
            return BoundMethodVariable(tx.wrap(cls_attr.__func__, None), tx.wrap(type(module), None))
        if hasattr(type(cls_attr), "__get__") and not isinstance(cls_attr, type):
            return super().var_getattr(tx, name)
        return tx.wrap(cls_attr, AttrSource(self.base, name))

    def _module_getattr(self, tx, name):
        """`type(module).__getattr__(module, name)`, reached when neither the class nor the
        instance dict has `name`: nn.Module's is `slot_lookup`; a class's own runs as
        written (its `super().__getattr__(name)` reaches `slot_lookup` through
        `module_getattr_handler`)."""
        if type(self.value).__getattr__ is not _MODULE_GETATTR:  # the type's cached lookup
            return super().var_getattr(tx, name)  # the generic lookup ends at that __getattr__
        return self.slot_lookup(tx, name)

    def slot_lookup(self, tx, name):
        """`nn.Module.__getattr__(module, name)`: `_parameters`, `_buffers`, `_modules` in
        that order, else eager's AttributeError."""
        self.mark_read(tx)
        instance = self.value.__dict__
        for dict_name in _SLOT_DICTS:
            whole = tx.output.tracked.get(ModuleDictItemSource(self.dict_src, dict_name, self.source))
            if whole is not None:  # `self._buffers` read whole: writes through it are in its tracker
                if name in whole.items:
                    return whole.items[name]
                continue
            if name in instance[dict_name]:
                return self._slot(tx, dict_name, name)
        tx.raise_user_error(AttributeError(f"'{type(self.value).__name__}' object has no attribute '{name}'"))

    def _slot(self, tx, dict_name: str, key: str):
        self.mark_read(tx)
        value = self.value.__dict__[dict_name][key]
        source = ModuleSlotSource(self.dict_src, dict_name, key, self.source)
        if isinstance(value, torch.Tensor) and isinstance(self.dict_src, ModuleAliasSource):
            cached = tx.output.tracked.get(source)
            if cached is None:
                # its tensor guard binds it, so the rest of that guard does not re-walk the path
                static = (config.force_parameter_static_shapes and dict_name in ("_parameters", "_buffers")) \
                    or is_static_module(self.value)  # Note [Symbolic sizes] (graph/shapes.py)
                cached = tx.output.add_input(GuardAliasSource(source, f"__bg_t{_next_alias(tx)}"), value,
                                             static=static, module_state=True)
                tx.output.tracked[source] = cached
            return cached
        return tx.wrap(value, source)

    @staticmethod
    def _static_tensor(tx, value: torch.Tensor, source):
        """A tensor attribute of a `mark_static` module: a graph input whose sizes stay static."""
        cached = tx.output.tracked.get(source)
        if cached is None:
            cached = tx.output.add_input(source, value, static=True, module_state=True)
            tx.output.tracked[source] = cached
        return cached

    def _slot_dict(self, tx, dict_name: str):
        """`self._modules` (etc.) as a dict of trackers whose keys are guarded."""
        self.mark_read(tx)
        slots = self.value.__dict__[dict_name]
        src = ModuleDictItemSource(self.dict_src, dict_name, self.source)
        cached = tx.output.tracked.get(src)
        if cached is not None:
            return cached
        tx.output.add_guard(Guard(GuardKind.DICT_KEYS, src, tuple(slots), tx.guard_location()))
        items = {k: self._slot(tx, dict_name, k) for k in slots}
        vt = DictVariable(items, src, type(slots))
        tx.output.tracked[src] = vt
        return vt

    def _check_writable(self, tx, name: str, what: str, value=None) -> None:
        """Plain attribute writes are logged and replayed with `setattr` (graph/side_effects.py);
        `Module.__setattr__` then does exactly `object.__setattr__` (a plain tensor under a
        name no slot dict holds too: `nn.utils.weight_norm`'s pre-hook sets `weight` so).
        Writes that register a parameter, buffer or submodule, or that go through a
        descriptor, are not modelled."""
        d = self.value.__dict__
        if self.source is None:
            tx.unsupported(f"{what} attribute {name!r} of a module without a source", category="side effect")
        cls = type(self.value)
        if cls.__setattr__ is not torch.nn.Module.__setattr__ or cls.__delattr__ is not torch.nn.Module.__delattr__:
            tx.unsupported(f"{what} attribute {name!r} of {self.describe()}, whose class overrides "
                           "__setattr__/__delattr__", category="side effect")
        if any(name in d[slot] for slot in _SLOT_DICTS) or name in _SLOT_DICTS or isinstance(value, NNModuleVariable) \
                or (isinstance(value, TensorVariable) and issubclass(value.python_type(), torch.nn.Parameter)):
            tx.unsupported(f"{what} {name!r} of {self.describe()} changes its parameters, buffers or "
                           "submodules", category="side effect",
                           hint="register parameters, buffers and submodules outside the compiled call")
        if hasattr(type(_lookup(cls, name)), "__set__"):
            tx.unsupported(f"{what} attribute {name!r} of {self.describe()} through a descriptor",
                           category="side effect")

    def store_attr(self, tx, name, value) -> None:
        self.mark_read(tx)
        if value.is_tensor and name in self.value.__dict__["_buffers"] and value is self.var_getattr(tx, name) \
                and not torch.nn.modules.module._global_buffer_registration_hooks:
            return  # `self.n += 1` on a buffer: changed in place, set back to itself (a no-op)
        self._check_writable(tx, name, "setting", value)
        self._write(tx, name, value)

    def delete_attr(self, tx, name) -> None:
        self.mark_read(tx)
        self._check_writable(tx, name, "deleting")
        self.delete_instance_attr(tx, name)

    # ---- calls -----------------------------------------------------------------------
    def call_function(self, tx, args, kwargs):
        module = self.value
        if module.__dict__["_forward_pre_hooks"]:
            hook = lazy_modules.pending_hook(module)
            if hook is not None:  # Note [Lazy module initialization]: restarts the capture, or breaks
                lazy_modules.initialize(tx, self, hook, args, kwargs)
        if config.reuse_repeated_blocks and not self.read:
            return repeated_blocks.call(tx, self, self._call, args, kwargs)
        return self._call(tx, args, kwargs)

    def _call(self, tx, args, kwargs):
        """The call itself: `forward` inlined when no hook can run, else `type(module).__call__`."""
        self.mark_read(tx)
        cls = type(self.value)
        if cls.__call__ is torch.nn.Module.__call__ and cls._call_impl is torch.nn.Module._call_impl \
                and not self.has_hooks(tx):
            _guard_call_path(tx, cls)
            return self.var_getattr(tx, "forward").call_function(tx, args, kwargs)
        break_on_backward_hooks(tx, self)
        return super().call_function(tx, args, kwargs)  # inline type(module).__call__ (hooks run)

    def inlined_function(self):
        return getattr(type(self.value), "forward", None)  # a call without hooks inlines forward

    def compiled_callee(self, tx):
        """A module without hooks (now guarded) is called as `forward(module, ...)`, its
        class's `forward` compiled by bytegraph; one with a hook torch marks as not for
        compilers (FSDP2's) as `forward_hooks_around(<that forward>, module)(...)`: the hooks
        run eagerly around it (Note [Hooks run eagerly around a compiled forward], which
        checks at each call what it does not model)."""
        if self.source is None:
            return None
        owner, forward = class_lookup(type(self.value), "forward")
        if not (isinstance(forward, types.FunctionType) and factory.is_traceable(forward)):
            return None
        if not self.has_hooks(tx):
            return tx.wrap(forward, class_dict_source(owner, "forward")), self
        if has_skipped_hooks(self.value):
            return tx.wrap(forward, class_dict_source(owner, "forward")), self, forward_hooks_around
        return None

    def has_hooks(self, tx) -> bool:
        """Whether a call must run `Module._call_impl`'s hook logic (Note [Module call guard])."""
        self.mark_read(tx)
        d = self.value.__dict__
        present = bool(d["_backward_hooks"] or d["_backward_pre_hooks"] or d["_forward_hooks"]
                       or d["_forward_pre_hooks"] or "forward" in d or "_compiled_call_impl" in d)
        if present:
            return True  # the generic path reads, and so guards, every dict it uses
        if not self.call_checked:
            tx.output.side_effects.touch(self)
            self.call_checked = True
            tx.output.add_guard(Guard(GuardKind.CONSTANT_MATCH, GuardExpressionSource(
                _NO_HOOKS, (self.dict_src,), f"hooks of {self.source.describe()}"), None, tx.guard_location()))
        return _global_hooks(tx)

    # ---- walking the module tree -----------------------------------------------------
    def named_modules(self, tx, prefix: str = "", remove_duplicate: bool = True, seen=None):
        """[(qualified name, tracker)] like `Module.named_modules`; guards every `_modules` dict's keys."""
        seen = set() if seen is None else seen
        if remove_duplicate and id(self.value) in seen:
            return []
        seen.add(id(self.value))
        out = [(prefix, self)]
        for key, child in self._slot_dict(tx, "_modules").items.items():
            if isinstance(child, NNModuleVariable):
                out += child.named_modules(tx, f"{prefix}.{key}" if prefix else key, remove_duplicate, seen)
        return out

    def _named_members(self, tx, dict_name: str, prefix: str, recurse: bool, remove_duplicate: bool):
        modules = self.named_modules(tx, prefix, remove_duplicate) if recurse else [(prefix, self)]
        seen, out = set(), []
        for module_prefix, module in modules:
            for key, vt in module._slot_dict(tx, dict_name).items.items():
                real = module.value.__dict__[dict_name][key]
                if real is None or (remove_duplicate and id(real) in seen):
                    continue
                seen.add(id(real))
                out.append((f"{module_prefix}.{key}" if module_prefix else key, vt))
        return out

    def _tree_method(self, tx, name: str, args, kwargs):
        """`modules()`, `named_parameters()`, ...: computed from the real tree, as trackers."""
        fn = getattr(torch.nn.Module, name)
        defaults = [ConstantVariable(v) for v in fn.__defaults__ or ()]
        bound = bind_arguments(tx, fn.__code__, defaults, {}, [self, *args], kwargs)
        options = {k: v.as_python_constant() for k, v in bound.items() if k != "self"}
        if name in ("modules", "named_modules"):
            if options.get("memo") is not None:
                tx.unsupported("named_modules(memo=...)", category="unsupported call")
            pairs = self.named_modules(tx, options.get("prefix", ""), options.get("remove_duplicate", True))
        elif name in ("children", "named_children"):
            pairs, seen = [], set()
            for key, child in self._slot_dict(tx, "_modules").items.items():
                if isinstance(child, NNModuleVariable) and id(child.value) not in seen:
                    seen.add(id(child.value))
                    pairs.append((key, child))
        else:
            dict_name = "_parameters" if "parameters" in name else "_buffers"
            pairs = self._named_members(tx, dict_name, options.get("prefix", ""), options.get("recurse", True),
                                        options.get("remove_duplicate", True))
        if name.startswith("named_"):
            items = [TupleVariable([ConstantVariable(k), v]) for k, v in pairs]
        else:
            items = [v for _, v in pairs]
        return factory.iterator_over(items)

    # ---- containers ------------------------------------------------------------------
    def iterate(self, tx):
        self.mark_read(tx)
        return VariableTracker.iterate(self, tx)  # through `unpack`, which keeps sources

    def unpack(self, tx) -> list:
        self.mark_read(tx)
        module = self.value
        if isinstance(module, (torch.nn.Sequential, torch.nn.ModuleList)) and \
                type(module).__iter__ in (torch.nn.Sequential.__iter__, torch.nn.ModuleList.__iter__):
            return list(self._slot_dict(tx, "_modules").items.values())
        if isinstance(module, torch.nn.ModuleDict) and type(module).__iter__ is torch.nn.ModuleDict.__iter__:
            return [ConstantVariable(k) for k in self._slot_dict(tx, "_modules").items]
        return self.call_method(tx, "__iter__", [], {}).iterate(tx).unpack(tx)

    def call_method(self, tx, name, args, kwargs):
        self.mark_read(tx)
        module = self.value
        if name in REGISTRATION_METHODS and class_lookup(type(module), name)[1] is getattr(torch.nn.Module, name):
            registration_break(tx, self.source.describe(), name)
        if name == "__getitem__" and len(args) == 1 and not kwargs and args[0].is_python_constant() \
                and class_lookup(type(module), "__getitem__")[1] in _INDEXABLE:
            return self._index(tx, args[0].as_python_constant())
        if name == "__len__" and isinstance(module, _CONTAINERS) and not args:
            return ConstantVariable(len(self._slot_dict(tx, "_modules").items))
        if name in _TREE_METHODS and class_lookup(type(module), name)[1] is getattr(torch.nn.Module, name):
            return self._tree_method(tx, name, args, kwargs)
        return super().call_method(tx, name, args, kwargs)

    def _index(self, tx, key):
        module = self.value
        children = self._slot_dict(tx, "_modules")  # guards the keys: an index names one child
        if isinstance(key, slice):
            if type(module).__init__ not in (torch.nn.Sequential.__init__, torch.nn.ModuleList.__init__):
                tx.unsupported(f"slicing {self.describe()} creates a new module",
                               category="unsupported call", hint="index the container with integers instead")
            return ModuleSliceVariable(self, (key,), list(children.items.values())[key])
        try:
            child = module[key]
        except (IndexError, KeyError, TypeError) as e:
            tx.raise_user_error(e)
        for k, v in module._modules.items():
            if v is child:
                return children.items[k]
        raise AssertionError("indexed child not found in _modules")


def _reading(name: str):
    """The inherited protocol slot `name`, marking the module read first (Note [Repeated blocks])."""
    inherited = getattr(UserObjectVariable, name)

    def slot(self, tx, *args, **kwargs):
        self.mark_read(tx)
        return inherited(self, tx, *args, **kwargs)

    slot.__name__ = slot.__qualname__ = name
    return slot


for _name in ("truth", "len_impl", "contains_impl", "getitem_impl", "setitem_impl", "hasattr_impl",
              "builtin_base_method", "binary_op_impl", "enter_with", "reverse_iterate", "next_item", "key_impl",
              "as_fx_arg"):
    setattr(NNModuleVariable, _name, _reading(_name))


@handles(torch.nn.Module.__getattr__)
def module_getattr_handler(tx, fn, args, kwargs):
    """`nn.Module.__getattr__(module, name)` called by a class's own `__getattr__`
    (`super().__getattr__(name)`): the slot lookup of the module's tracker."""
    if kwargs or len(args) != 2 or not isinstance(args[0], NNModuleVariable) or not args[1].is_python_constant() \
            or type(args[1].as_python_constant()) is not str:
        tx.unsupported("nn.Module.__getattr__ called on something other than a module and a constant name",
                       category="unsupported call")
    return args[0].slot_lookup(tx, args[1].as_python_constant())


class ModuleSliceVariable(VariableTracker):
    """`container[a:b]` of a `ModuleList`/`Sequential` (whose `__getitem__` and `__init__` are
    torch's): a new container of the same class over some of the children. Indexing, `len` and
    iteration read the children's trackers; calling it is a graph break; where it escapes
    (a break, a return) it is rebuilt once by slicing the real container again, as eager
    made it."""

    __slots__ = ("container", "keys", "items")
    rebuilt_as_new_object = True

    def __init__(self, container: NNModuleVariable, keys: tuple, items: list):
        super().__init__(None)
        self.container = container
        self.keys = keys  # the slices applied in turn
        self.items = items

    def python_type(self) -> type:
        return type(self.container.value)

    def children(self):
        return (self.container,)

    def unpack(self, tx) -> list:
        return list(self.items)

    def len_impl(self, tx) -> VariableTracker:
        return ConstantVariable(len(self.items))

    def truth(self, tx) -> bool:
        return bool(self.items)

    def getitem_impl(self, tx, key_vt) -> VariableTracker:
        if not key_vt.is_python_constant():
            return super().getitem_impl(tx, key_vt)
        key = key_vt.as_python_constant()
        if isinstance(key, slice):
            return ModuleSliceVariable(self.container, (*self.keys, key), self.items[key])
        if type(key) is not int:
            return super().getitem_impl(tx, key_vt)
        if not -len(self.items) <= key < len(self.items):
            tx.raise_user_error(IndexError(f"index {key} is out of range"))  # torch's wording
        return self.items[key]

    def reconstruct(self, cg) -> None:
        cg.reconstruct(self.container)
        for key in self.keys:
            cg.load_const(key)
            cg.binary_subscr()

    def describe(self) -> str:
        return f"a slice of {self.container.describe()}"


class ModuleMethodVariable(VariableTracker):
    """`module.parameters` (etc.) looked up, not yet called: answered from the real tree."""

    __slots__ = ("module", "name")

    def __init__(self, module: NNModuleVariable, name: str):
        super().__init__(None)
        self.module = module
        self.name = name

    def python_type(self) -> type:
        return types.MethodType

    def call_function(self, tx, args, kwargs):
        return self.module._tree_method(tx, self.name, args, kwargs)

    def describe(self) -> str:
        return f"method {self.name} of {self.module.describe()}"


class WeakRefVariable(VariableTracker):
    """A `weakref.ref` read from the caller's world (e.g. `RNNBase._flat_weight_refs`);
    calling it reads the referent (only tensors, or None when dead) through its source."""

    __slots__ = ("ref",)

    def __init__(self, ref, source):
        super().__init__(source)
        self.ref = ref

    def python_type(self) -> type:
        return type(self.ref)

    def call_function(self, tx, args, kwargs):
        if args or kwargs:
            tx.raise_user_error(TypeError("weakref.ref() takes no arguments"))
        referent = self.ref()
        if referent is not None and not isinstance(referent, torch.Tensor):
            # e.g. RemovableHandle.hooks_dict_ref: a dict whose keys change on every call
            tx.unsupported(f"calling weak reference {self.source.describe()} to a "
                           f"{type(referent).__qualname__}", category="unsupported call")
        return tx.wrap(referent, WeakRefCallSource(self.source))


def build_weakref(tx, ref, source, do_guard: bool) -> WeakRefVariable:
    if source is None:
        tx.unsupported("a weak reference without a source", category="unsupported value")
    if do_guard:
        tx.output.add_guard(Guard(GuardKind.TYPE_MATCH, source, type(ref), tx.guard_location()))
    return WeakRefVariable(ref, source)


def _guard_call_path(tx, cls: type) -> None:
    """Note [Module call guard]: a call inlined as `forward` assumed the class calls through
    nn.Module's `__call__` and `_call_impl`: one clause per class keeps it so (`Model.__call__ = g`,
    on the class or a base, recompiles)."""
    module_cls = torch.nn.Module
    source = GuardExpressionSource("({0}.__call__ is {1} and {0}._call_impl is {2})",
                                   (ObjectSource(cls), ObjectSource(module_cls.__call__),
                                    ObjectSource(module_cls._call_impl)),
                                   f"{cls.__qualname__}.__call__ and ._call_impl are nn.Module's")
    tx.output.add_guard_at(tx, GuardKind.CONSTANT_MATCH, source, True)


def _global_hooks(tx) -> bool:
    """Whether any global module hook is registered; guarded (once per capture)."""
    dicts = [getattr(_module_mod, name) for name in _GLOBAL_HOOK_DICTS]
    present = any(dicts)
    if not present:
        source = GuardExpressionSource("({} or {} or {} or {} or None)", tuple(map(tx.output.object_source, dicts)),
                       "global nn.Module hooks")
        tx.output.add_guard_at(tx, GuardKind.CONSTANT_MATCH, source, None)
    return present

