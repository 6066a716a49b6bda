"""Python modules and instances of user classes read from the caller's world or made
during tracing.

Attribute reads on an instance follow `object.__getattribute__`: data descriptors of the
class (properties, `__slots__` members, descriptors written in Python), then the instance
`__dict__`, then class attributes (`vars/classes.py::bind_class_attribute`), then a
`__getattr__` written in Python. `__class__` and `__dict__` are answered directly.

Attribute writes run a `__setattr__`/`__delattr__` written in Python, else
`object.__setattr__` semantics (`generic_setattr`: a property's setter, else the
instance dict). Writes on a pre-existing instance are kept on its tracker (`attrs`,
name -> tracker or DELETED) and recorded in the side-effect log, which replays them with
`setattr`/`delattr` after the graph; later reads in the same trace see them. Writes to a
module's attributes are global writes of that module. Operators, truth and iteration of
instances go to the class's dunder methods (`vars/dunders.py`).

Registers the builders (`vars/registry.py`) of Python modules, C functions outside the
trace-rules table (`OpaqueCallableVariable`) and, as the fallback, any other object.
"""
from __future__ import annotations

import types

from ..guards.guard import GuardKind
from ..guards.sources import AttrSource, GenericAttrSource, ItemSource
from .base import REPLAY_OBJECT, CallableValueVariable, MethodOfVariable, VariableTracker
from .class_lookup import MISSING, class_lookup, is_data_descriptor
from .classes import bind_class_attribute, call_property, guard_class_attribute, wrap_attribute
from .constant import ConstantVariable
from .containers import DICT_MUTATORS, DictVariable
from .lazy_int import wrap_int
from .object_protocol import real_hasattr
from .registry import guard, register
from . import factory
from .container_subclass import BaseContainerMethodVariable, is_read_only_base_method
from .dunders import user_contains
from .dunders import user_iter
from .dunders import user_truth

class _Deleted:
    """The pending value of a deleted attribute or global (see graph/side_effects.py)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<deleted>"


DELETED = _DELETED = _Deleted()
DELETE_FIRST = "__bg_delete_first__"

# Modules whose attributes are taken as fixed (no guard per attribute read).
_TRUSTED_MODULE_PREFIXES = ("torch", "math", "operator", "functools", "builtins", "itertools",
                            "collections", "typing", "numbers", "enum", "dataclasses")


def _trusted(module: types.ModuleType) -> bool:
    name = module.__name__
    return any(name == p or name.startswith(p + ".") for p in _TRUSTED_MODULE_PREFIXES)


class PythonModuleVariable(VariableTracker):
    __slots__ = ("module",)

    def __init__(self, module, source=None):
        super().__init__(source)
        self.module = module

    def python_type(self) -> type:
        return types.ModuleType

    def as_python_constant(self):
        return self.module

    def var_getattr(self, tx, name):
        pending = tx.output.side_effects.pending_global(self.module.__dict__, name)
        if pending is not None:
            if pending is _DELETED:
                tx.raise_user_error(AttributeError(f"module {self.module.__name__!r} has no attribute {name!r}"))
            return pending
        try:
            value = getattr(self.module, name)
        except AttributeError as e:
            tx.raise_user_error(e)
        src = AttrSource(self.source, name) if self.source is not None else None
        if type(value) is int and src is not None and not _trusted(self.module):
            return wrap_int(tx, value, src)
        return tx.wrap(value, src, guard=not _trusted(self.module))

    def store_attr(self, tx, name, value) -> None:
        self._write(tx, name, value)

    def delete_attr(self, tx, name) -> None:
        if name not in self.module.__dict__ and \
                tx.output.side_effects.pending_global(self.module.__dict__, name) in (None, _DELETED):
            tx.raise_user_error(AttributeError(f"module {self.module.__name__!r} has no attribute {name!r}"))
        self._write(tx, name, _DELETED)

    def _write(self, tx, name, value) -> None:
        if self.source is None:
            tx.unsupported(f"setting attribute {name!r} of {self.describe()} reached without a source",
                           category="side effect")
        tx.output.side_effects.store_global(self.module.__dict__, AttrSource(self.source, "__dict__"), name, value)

    def hasattr_impl(self, tx, name: str) -> bool:
        if self.source is not None:
            pending = tx.output.side_effects.pending_global(self.module.__dict__, name)
            if pending is not None:
                return pending is not _DELETED
        return real_hasattr(tx, self, self.module, name)

    def describe(self) -> str:
        return f"module {self.module.__name__}"



class UserObjectVariable(VariableTracker):
    """An instance of a user class (or any object without a dedicated tracker)."""

    __slots__ = ("value", "attrs")
    identity_tracked = True
    rebuilt_as_new_object = True
    replay_phase = REPLAY_OBJECT
    is_user_object = True

    def __init__(self, value, source=None):
        super().__init__(source)
        self.value = value
        self.attrs = None  # pending attribute writes: name -> tracker or _DELETED

    def python_type(self) -> type:
        return type(self.value)

    def enter_with(self, tx) -> tuple:
        """`with obj:` finds `__enter__` and `__exit__` on the class, never on the instance
        (CPython's special-method lookup), then calls `__enter__`."""
        cls = type(self.value)
        bound = []
        for name in ("__enter__", "__exit__"):
            owner, attr = class_lookup(cls, name)
            if attr is MISSING:
                missed = " (missed __exit__ method)" if bound else ""
                tx.raise_user_error(TypeError(f"'{cls.__qualname__}' object does not support the context "
                                              f"manager protocol{missed}"))
            bound.append(bind_class_attribute(tx, self, owner, name, attr, None))
        return bound[1], bound[0].call_function(tx, [], {})

    # ---- attribute reads ---------------------------------------------------------------
    def var_getattr(self, tx, name):
        getattribute = python_getattribute(type(self.value))
        if getattribute is None:
            return self.generic_getattr(tx, name)
        if class_lookup(type(self.value), "__getattr__")[1] is not MISSING:
            tx.unsupported(f"reading {name!r} of {self.describe()}, whose class defines both __getattribute__ "
                           "and __getattr__", category="unsupported attribute")
        return tx.wrap(getattribute, None).call_function(tx, [self, ConstantVariable(name)], {})

    def generic_getattr(self, tx, name, dynamic: bool = True):
        """`object.__getattribute__(self, name)`, then the class's Python `__getattr__` on a
        miss when `dynamic` (CPython's attribute hook); `dynamic=False` is the bare
        `object.__getattribute__` a Python `__getattribute__` calls."""
        cls = type(self.value)
        if self.attrs is not None and name in self.attrs:
            pending = self.attrs[name]
            if pending is not _DELETED:
                return pending
            if class_lookup(cls, name)[1] is MISSING:
                return self._dynamic_getattr(tx, name, dynamic)
            tx.unsupported(f"reading class attribute {name!r} after deleting the instance attribute",
                           category="side effect")
        # Past a Python __getattribute__ (`dynamic=False`), guards and residual code read what
        # this lookup read with object.__getattribute__: spelled `obj.name`, they would run the hook.
        src = (AttrSource if dynamic else GenericAttrSource)(self.source, name) if self.source is not None else None
        if name == "__class__":
            return tx.wrap(cls, src, guard=False)  # the object's type is guarded already
        owner, cls_attr = class_lookup(cls, name)
        if name == "__dict__" and isinstance(cls_attr, types.GetSetDescriptorType):
            return InstanceDictVariable(tx, self, src)
        if cls_attr is not MISSING and is_data_descriptor(cls_attr):
            return self._data_descriptor_get(tx, name, owner, cls_attr, src)
        inst_dict = _instance_dict(self.value)
        if inst_dict is not None and name in inst_dict:
            return wrap_attribute(tx, inst_dict[name], src)
        if inst_dict is not None and self.source is not None:  # an instance attribute would shadow it
            tx.guard_attr_presence(self.source, name, False,
                                   None if dynamic else GenericAttrSource(self.source, "__dict__"))
        if cls_attr is MISSING:
            return self._dynamic_getattr(tx, name, dynamic)
        return bind_class_attribute(tx, self, owner, name, cls_attr, src)

    def _data_descriptor_get(self, tx, name, owner, descriptor, src):
        if isinstance(descriptor, types.MemberDescriptorType) and self.source is not None:
            try:
                value = getattr(self.value, name)  # a __slots__ member: reading it runs no user code
            except AttributeError as e:
                tx.raise_user_error(e)
            return tx.wrap(value, src)
        if isinstance(descriptor, (types.MemberDescriptorType, types.GetSetDescriptorType)):
            tx.unsupported(f"descriptor {name!r} ({type(descriptor).__name__}) of {self.describe()}",
                           category="unsupported attribute")
        return bind_class_attribute(tx, self, owner, name, descriptor, src)

    def _dynamic_getattr(self, tx, name, dynamic: bool = True):
        getattr_fn = class_lookup(type(self.value), "__getattr__")[1] if dynamic else MISSING
        if isinstance(getattr_fn, types.FunctionType):
            return tx.wrap(getattr_fn, None).call_function(tx, [self, ConstantVariable(name)], {})
        tx.raise_user_error(AttributeError(f"{type(self.value).__name__!r} object has no attribute {name!r}"))

    # ---- attribute writes ------------------------------------------------------------
    def store_attr(self, tx, name, value) -> None:
        setattr_fn = class_lookup(type(self.value), "__setattr__")[1]
        if isinstance(setattr_fn, types.FunctionType):  # written in Python: runs like any method
            tx.wrap(setattr_fn, None).call_function(tx, [self, ConstantVariable(name), value], {})
            return
        self.generic_setattr(tx, name, value)

    def delete_attr(self, tx, name) -> None:
        delattr_fn = class_lookup(type(self.value), "__delattr__")[1]
        if isinstance(delattr_fn, types.FunctionType):
            tx.wrap(delattr_fn, None).call_function(tx, [self, ConstantVariable(name)], {})
            return
        self.generic_delattr(tx, name)

    def generic_setattr(self, tx, name, value) -> None:
        """`object.__setattr__(obj, name, value)`: a property's setter, else the instance dict."""
        owner, descriptor = class_lookup(type(self.value), name)
        if isinstance(descriptor, property):
            call_property(tx, self, owner, name, descriptor, "fset", value)
            return
        self._check_writable(tx, name, "setting", descriptor)
        self._write(tx, name, value)

    def generic_delattr(self, tx, name) -> None:
        """`object.__delattr__(obj, name)`."""
        owner, descriptor = class_lookup(type(self.value), name)
        if isinstance(descriptor, property):
            call_property(tx, self, owner, name, descriptor, "fdel")
            return
        self._check_writable(tx, name, "deleting", descriptor)
        self.delete_instance_attr(tx, name)

    def delete_instance_attr(self, tx, name) -> None:
        if self.pending_attr_present(name) is False or (
                self.pending_attr_present(name) is None and name not in self.value.__dict__):
            tx.raise_user_error(AttributeError(name))
        self._write(tx, name, _DELETED)

    def pending_attr_present(self, name):
        """True/False if a write in this trace decided whether instance attribute `name`
        exists, None if the real object decides."""
        if self.attrs is None or name not in self.attrs:
            return None
        return self.attrs[name] is not _DELETED

    def _write(self, tx, name, value) -> None:
        tx.output.side_effects.mutate(self)  # Note [Mutation barrier]; replayed if sourced
        if self.attrs is None:
            self.attrs = {}
        if self.attrs.get(name) is _DELETED and value is not _DELETED:
            # `del o.a; ...; o.a = v` moves `a` to the end of `o.__dict__`: replay the
            # delete (key `(DELETE_FIRST, name)`) right before the new value.
            del self.attrs[name]
            if self.source is not None and name in self.value.__dict__:
                self.attrs[(DELETE_FIRST, name)] = _DELETED
        self.attrs[name] = value

    def _check_writable(self, tx, name: str, what: str, descriptor) -> None:
        cls = type(self.value)
        if self.source is None and not isinstance(self, NewObjectVariable):
            tx.unsupported(f"{what} attribute {name!r} of an object made during tracing", category="side effect")
        if self.source is not None and not (_python_or_generic(cls.__setattr__, object.__setattr__)
                                            and _python_or_generic(cls.__delattr__, object.__delattr__)):
            # a hook written in C ran nowhere in the trace: the write cannot be replayed past it
            tx.unsupported(f"{what} attribute {name!r} of {self.describe()}, whose class defines "
                           "__setattr__/__delattr__ in C", category="side effect")
        if descriptor is not MISSING and is_data_descriptor(descriptor):
            tx.unsupported(f"{what} attribute {name!r} of {self.describe()} through a descriptor "
                           f"({type(descriptor).__name__})", category="side effect")
        if _instance_dict(self.value) is None:
            tx.unsupported(f"{what} attribute {name!r} of {self.describe()}, which has no __dict__",
                           category="side effect")

    # ---- protocols -------------------------------------------------------------------
    def call_function(self, tx, args, kwargs):
        call = class_lookup(type(self.value), "__call__")[1]
        if isinstance(call, types.FunctionType):
            guard_class_attribute(tx, type(self.value), "__call__", call)  # `Foo.__call__ = g` recompiles
            return tx.wrap(call, None).call_function(tx, [self, *args], kwargs)
        return super().call_function(tx, args, kwargs)

    def truth(self, tx) -> bool:
        return user_truth(tx, self)

    def iterate(self, tx):
        return user_iter(tx, self)

    def unpack(self, tx) -> list:
        return self.iterate(tx).unpack(tx)

    def contains_impl(self, tx, item) -> VariableTracker:
        result = user_contains(tx, self, item)
        return result if result is not None else super().contains_impl(tx, item)

    def builtin_base_method(self, tx, attr):
        """A read-only C method of a builtin container base (`OrderedDict.keys`, `dict.get`) of
        an instance from outside (vars/container_subclass.py), bound or called unbound."""
        if self.source is not None and is_read_only_base_method(attr) and isinstance(self.value, attr.__objclass__):
            return BaseContainerMethodVariable(attr, self)
        return None

    def hasattr_impl(self, tx, name: str) -> bool:
        pending = self.pending_attr_present(name)
        if pending is not None:
            return pending  # written or deleted earlier in this trace
        return real_hasattr(tx, self, self.value, name)

    def children(self):
        return [item for item in (self.attrs or {}).values() if item is not _DELETED]

    def replay_records(self, cg) -> list:
        """`setattr`/`delattr` per pending attribute write, in write order; through
        `object.__setattr__`/`object.__delattr__` when the class has its own hooks (written in
        Python: the trace ran them, and recorded the generic write they ended in)."""
        cls = type(self.value)
        generic = cls.__setattr__ is not object.__setattr__ or cls.__delattr__ is not object.__delattr__
        real = _instance_dict(self.value) or {}
        return [_attr_record(cg, self.source, name, value, generic) for name, value in self.attrs.items()
                if not _deletes_nothing(self.attrs, real, name, value)]

    def replayed_values(self):
        return [v for v in self.attrs.values() if v is not _DELETED]

    def describe(self) -> str:
        what = self.source.describe() if self.source is not None else "object"
        return f"{what} of type {type(self.value).__qualname__}"


def _deletes_nothing(attrs: dict, real: dict, name, value) -> bool:
    """Whether pending write `name -> value` is a delete of an attribute the real object no
    longer has when the replay reaches it: one the trace added and deleted again (absent
    from the real `__dict__`, or deleted first by its `(DELETE_FIRST, name)` record)."""
    return value is _DELETED and not isinstance(name, tuple) and (name not in real or (DELETE_FIRST, name) in attrs)


def _python_or_generic(hook, generic) -> bool:
    return hook is generic or isinstance(hook, types.FunctionType)


def _attr_record(cg, source, name, value, generic: bool = False) -> tuple:
    if isinstance(name, tuple):  # (DELETE_FIRST, name): a delete before re-adding `name`
        name = name[1]
    if generic:  # object.__setattr__(obj, name, value) / object.__delattr__(obj, name), result dropped
        hook = object.__delattr__ if value is _DELETED else object.__setattr__

        def push_generic():
            cg.push_callable_const(hook)
            source.reconstruct(cg)
            cg.load_const(name)
            if value is not _DELETED:
                cg.reconstruct(value)

        def call_generic():
            cg.call(2 if value is _DELETED else 3)
            cg.pop_top()
        return push_generic, call_generic
    if value is _DELETED:
        return (lambda: source.reconstruct(cg)), (lambda: cg.delete_attr(name))

    def push():
        cg.reconstruct(value)
        source.reconstruct(cg)
    return push, (lambda: cg.store_attr(name))


class NewObjectVariable(UserObjectVariable):
    """An instance of a plain user class created during tracing (`Point(x, y)`).

    `value` is a real, empty instance made with `object.__new__` (only for attribute
    lookup on its class); its state lives in `attrs`. If it escapes, residual code makes
    it again: `object.__new__(cls)` plus its final instance dict (see `_new_object`)."""

    __slots__ = ()

    def __init__(self, value):
        super().__init__(value, None)
        self.attrs = {}

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(_new_object)
        cg.load_const(type(self.value))
        self.load_instance_dict(cg)
        cg.call(3)

    def load_instance_dict(self, cg) -> None:
        """Push the final instance dict as two arguments: the tuple of values, then the
        tuple of names (deleted attributes and delete-first markers left out)."""
        names = [n for n, v in self.attrs.items() if not isinstance(n, tuple) and v is not _DELETED]
        for name in names:
            cg.reconstruct(self.attrs[name])
        cg.build("BUILD_TUPLE", len(names))
        cg.load_const(tuple(names))

    def describe(self) -> str:
        return f"new object of type {type(self.value).__qualname__}"


def _new_object(cls, values, names):
    obj = object.__new__(cls)
    obj.__dict__.update(zip(names, values))
    return obj


class InstanceDictVariable(DictVariable):
    """`obj.__dict__`: the real dict with the trace's pending writes to `obj` applied,
    recomputed at every use so later attribute writes are seen; writing through it is a
    graph break. Rebuilt as `<obj>.__dict__`.

    A lookup by one constant key (`d.get(k)`, `d[k]`, `k in d`) reads only that key: it
    guards the key's presence or absence and wraps its value through `<obj>.__dict__[k]`
    (a `__getattribute__` written in Python looks up one name in the instance dict at
    every attribute read, as transformers' configs do). Anything else (iteration, `len`,
    `==`, a copy) wraps the whole real dict, guarded by its keys. Both keep nothing here:
    the trackers and guards live in the output graph's tables, which a checkpoint restore
    truncates."""

    __slots__ = ("obj", "_output", "_source")

    def __init__(self, tx, obj: UserObjectVariable, source=None):
        VariableTracker.__init__(self, None)
        self.obj = obj
        self.dict_type = dict
        self._output = tx.output
        self._source = source  # where the real dict is read (`<obj>.__dict__`, or past a Python hook)

    @property
    def real(self) -> VariableTracker | None:
        """The tracker of the whole real dict (None for an object made in the trace)."""
        if self._source is None:
            return None
        return self._output.current_tx.wrap(_instance_dict(self.obj.value), self._source)

    @property
    def items(self) -> dict:
        real = self.real
        items = dict(real.items) if real is not None else {}
        for name, value in (self.obj.attrs or {}).items():
            if isinstance(name, tuple):
                continue  # (DELETE_FIRST, name): only an ordering note for the replay
            items.pop(name, None)
            if value is not _DELETED:
                items[name] = value
        return items

    @property
    def keys_version(self) -> tuple:
        """The keys themselves: attribute writes change them (Note [Live iterators])."""
        return tuple(self.items)

    def _lookup(self, tx, key):
        """The tracker `self[key]` holds, or `_DELETED` when the key is absent, reading and
        guarding only that key of the real dict."""
        attrs = self.obj.attrs
        if attrs and key in attrs:
            return attrs[key]
        source = self._source
        if source is None:
            return _DELETED
        whole = tx.output.tracked.get(source)
        if whole is not None:  # already wrapped whole: its trackers, its key guard
            return whole.items.get(key, _DELETED)
        real = _instance_dict(self.obj.value)
        if not {*map(type, real)} <= _STR:  # a lookup could run a key's __eq__
            return self.real.items.get(key, _DELETED)
        if key not in real:
            tx.output.add_guard_at(tx, GuardKind.NOT_PRESENT, source, key)
            return _DELETED
        tx.output.add_guard_at(tx, GuardKind.PRESENT, source, key)
        return tx.wrap(real[key], ItemSource(source, key))

    def call_method(self, tx, name, args, kwargs):
        if name in DICT_MUTATORS:
            tx.unsupported(f"{name}() on the __dict__ of {self.obj.describe()}", category="side effect")
        if not kwargs and len(args) in _KEYED_READS.get(name, ()):
            key = args[0].key_impl(tx)
            if type(key) is str:
                value = self._lookup(tx, key)
                if name == "__contains__":
                    return ConstantVariable(value is not _DELETED)
                if value is not _DELETED:
                    return value
                if name == "get":
                    return args[1] if len(args) > 1 else ConstantVariable(None)
                tx.raise_user_error(KeyError(key))
        return super().call_method(tx, name, args, kwargs)

    def getitem_impl(self, tx, key_vt) -> VariableTracker:
        return self.call_method(tx, "__getitem__", [key_vt], {})

    def reconstruct(self, cg) -> None:
        if python_getattribute(type(self.obj.value)) is not None:
            cg.load_generic_attr(lambda: cg.reconstruct(self.obj), "__dict__")  # past the class's Python hook
            return
        cg.reconstruct(self.obj)
        cg.load_attr("__dict__")

    def describe(self) -> str:
        return f"the __dict__ of {self.obj.describe()}"


_KEYED_READS = {"get": (1, 2), "__getitem__": (1,), "__contains__": (1,)}  # method -> its argument counts
_STR = {str}


def python_getattribute(cls: type):
    """`cls`'s `__getattribute__` if it is written in Python, else None (object's, or a
    builtin base's generic one: attribute reads run no user code)."""
    getattribute = class_lookup(cls, "__getattribute__")[1]
    return getattribute if isinstance(getattribute, types.FunctionType) else None


def _instance_dict(obj):
    """`obj.__dict__` if it is a real dict, else None (no user code runs)."""
    try:
        d = object.__getattribute__(obj, "__dict__")
    except AttributeError:
        return None
    return d if type(d) is dict else None


class OpaqueCallableVariable(CallableValueVariable):
    """A C function bytegraph knows nothing about (`time.time`, `os.getpid`, a NumPy
    function): it can be passed around, and calling it is a graph break, except a C method
    of a builtin base called unbound on a value that models that base (`dict.keys(obj)`,
    the `builtin_base_method` slot)."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs):
        if args and isinstance(self.fn, (types.MethodDescriptorType, types.WrapperDescriptorType)):
            bound = args[0].builtin_base_method(tx, self.fn)  # `dict.keys(obj)` on a dict subclass
            if bound is not None:
                return bound.call_function(tx, args[1:], kwargs)
        rule = factory.trace_rule(self.fn)  # a BREAK rule: why, and how to avoid it
        tx.unsupported(rule.reason, category=rule.category, hint=rule.hint)

    def describe(self) -> str:
        return f"C function {getattr(self.fn, '__qualname__', self.fn)!s}"


# ---- builders (vars/registry.py) ---------------------------------------------------------

@register(types.ModuleType)
def build_python_module(tx, value, source, do_guard: bool) -> VariableTracker:
    guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
    return PythonModuleVariable(value, source)


@register(types.BuiltinFunctionType, types.MethodWrapperType, types.WrapperDescriptorType,
          types.MethodDescriptorType)
def build_c_function(tx, value, source, do_guard: bool) -> VariableTracker:
    """A C function outside the trace-rules table (`vars/trace_rules.py`). A method bound to
    an object whose class defines it (`d.get` kept in a variable, or left on the stack at a
    graph break) is that object's method: calls go to the object's tracker."""
    if source is None:
        tx.unsupported(f"C function {getattr(value, '__qualname__', value)!s} without a source",
                       category="unsupported value")
    if _is_bound_c_method(value):
        guard(tx, do_guard, GuardKind.TYPE_MATCH, source, type(value))
        guard(tx, do_guard, GuardKind.CONSTANT_MATCH, AttrSource(source, "__name__"), value.__name__)
        return MethodOfVariable(tx.wrap(value.__self__, AttrSource(source, "__self__")), value.__name__)
    guard(tx, do_guard, same_callable_guard(value), source, value)
    return OpaqueCallableVariable(value, source)


def _is_bound_c_method(fn) -> bool:
    """Whether `fn` is a C method bound to an instance (not a module or class) by its class's
    method descriptor of the same name, so `type(obj).name(obj, ...)` is the same call."""
    if type(fn) is not types.BuiltinMethodType:
        return False
    owner = fn.__self__
    if owner is None or isinstance(owner, (types.ModuleType, type)):
        return False
    descriptor = getattr(type(owner), fn.__name__, None)
    return type(descriptor) is types.MethodDescriptorType and descriptor.__get__(owner) == fn


def same_callable_guard(fn) -> GuardKind:
    """How to guard that a callable is still `fn`: by identity, except for a C method bound
    anew at every read (`itertools.chain.from_iterable`, `dict.fromkeys`, `t.__add__`: each
    read makes a fresh object, equal to the last), which is guarded by equality."""
    if type(fn) is types.MethodWrapperType or (
            type(fn) is types.BuiltinMethodType and not isinstance(fn.__self__, (types.ModuleType, type(None)))):
        return GuardKind.CONSTANT_MATCH
    return GuardKind.ID_MATCH


@register(object)
def build_user_object(tx, value, source, do_guard: bool) -> VariableTracker:
    """Any other object from the caller's world, guarded by type."""
    if source is None:
        tx.unsupported(f"an object of type {type(value).__qualname__} made outside the trace without a source",
                       category="unsupported value")
    guard(tx, do_guard, GuardKind.TYPE_MATCH, source, type(value))
    return UserObjectVariable(value, source)
