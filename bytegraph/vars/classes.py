"""Classes: `ClassVariable` (a class object) and Python's class-level attribute rules.

`class_lookup` walks the MRO like `type.__getattribute__` does (without running
metaclass code); `bind_class_attribute` turns what it found into what the attribute
access returns: a bound method for a function, the function of a `staticmethod`, a
method bound to the class for a `classmethod`, the getter's result for a `property`,
the result of a `__get__` written in Python for other descriptors, a bound method for a
C callable that binds like a function (`functools.lru_cache` wrappers), else the value.

Values found in a class `__dict__` get the source `<owner>.__dict__[name]` (the owner
class is fixed by the guards on the instance's type), so a method or property replaced
between calls fails its guard and recompiles.
"""
from __future__ import annotations

import enum
import functools
import types

from ..guards.guard import GuardKind
from ..guards.sources import AttrSource, ObjectSource
from .base import VariableTracker
from .constant import ConstantVariable
from .container_subclass import BaseContainerMethodVariable, is_read_only_base_method
from .functions import BoundMethodVariable
from .lazy_int import wrap_int
from .method_table import dispatch, no_args, one_arg, row
from .object_protocol import real_hasattr
from .class_lookup import MISSING, class_dict_source, class_lookup
from . import factory
from .factory import provides
from .registry import guard, register
from .containers import TupleVariable
from .base import MethodOfVariable
from ..guards.guard import Guard

# C callables whose `__get__` binds like a function's (`types.MethodType(attr, obj)`)
_BINDS_LIKE_A_FUNCTION = (types.FunctionType, functools._lru_cache_wrapper)


def bind_class_attribute(tx, obj: VariableTracker, owner: type, name: str, attr, src):
    """`obj.name` where `name` is found on `owner`, a class in the MRO of `type(obj)`, and
    no instance attribute shadows it; `src` is the source of `obj.name` (or None)."""
    if isinstance(attr, _BINDS_LIKE_A_FUNCTION):
        return BoundMethodVariable(tx.wrap(attr, class_dict_source(owner, name)), obj, src)
    if isinstance(attr, (staticmethod, classmethod)):
        return bind_on_class(tx, ClassVariable(obj.python_type()), owner, name, attr)
    if isinstance(attr, property):
        return call_property(tx, obj, owner, name, attr, "fget")
    getter = getattr(type(attr), "__get__", None)
    if isinstance(getter, types.FunctionType):  # a descriptor class written in Python
        descriptor = tx.wrap(attr, class_dict_source(owner, name))
        return tx.wrap(getter, None).call_function(
            tx, [descriptor, obj, ClassVariable(obj.python_type())], {})
    if isinstance(attr, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        bound = obj.builtin_base_method(tx, attr)
        if bound is not None:
            return bound
    if getter is not None and obj.source is not None and is_read_only_base_method(attr):
        return BaseContainerMethodVariable(attr, obj)
    if getter is not None and not isinstance(attr, type):
        tx.unsupported(f"descriptor {name!r} ({type(attr).__name__}) of {obj.describe()}",
                       category="unsupported attribute")
    if src is None:
        return tx.wrap(attr, class_dict_source(owner, name))
    return wrap_attribute(tx, attr, src)


_PROPERTY_ACCESSORS = {"fget": "getter", "fset": "setter", "fdel": "deleter"}


_IMMUTABLE_TYPE = 1 << 8  # Py_TPFLAGS_IMMUTABLETYPE: a builtin class, whose attributes cannot be set


def guard_class_attribute(tx, cls: type, name: str, fn) -> None:
    """Guard that `cls.name` still finds `fn`, a function the trace called in place of looking
    it up at run time (a module's `forward` and methods, a class's `__call__`): replacing it
    between calls, on `cls` or on any class of its MRO (`Model.forward = g`, `Foo.__call__ = h`),
    recompiles. One identity clause per class and name (`Model.forward is <function>`); a
    builtin class cannot change and is not guarded."""
    if cls.__flags__ & _IMMUTABLE_TYPE:
        return
    tx.output.add_guard_at(tx, GuardKind.ID_MATCH, AttrSource(ObjectSource(cls), name), fn)


def call_property(tx, obj: VariableTracker, owner: type, name: str, prop: property, accessor: str,
                  *args: VariableTracker):
    """Run `prop.<accessor>(obj, *args)` (`fget`, `fset` or `fdel`) inlined; a missing
    accessor is the user's AttributeError, worded like CPython's."""
    fn = getattr(prop, accessor)
    if fn is None:
        tx.raise_user_error(AttributeError(f"property {name!r} of {obj.python_type().__name__!r} object has "
                                           f"no {_PROPERTY_ACCESSORS[accessor]}"))
    return tx.wrap(fn, class_dict_source(owner, name, accessor)).call_function(tx, [obj, *args], {})


def bind_on_class(tx, cls_vt, owner: type, name: str, attr):
    """`cls.name` for a function-like `attr` found on `owner` in the MRO of the class at
    `cls_vt`: a method bound to the class for a classmethod, the function for a
    staticmethod or a plain function; None for anything else."""
    if isinstance(attr, classmethod):
        return BoundMethodVariable(tx.wrap(attr.__func__, class_dict_source(owner, name, "__func__")), cls_vt)
    if isinstance(attr, staticmethod):
        return tx.wrap(attr.__func__, class_dict_source(owner, name, "__func__"))
    if isinstance(attr, types.FunctionType):
        return tx.wrap(attr, class_dict_source(owner, name))
    return None


def wrap_attribute(tx, value, src):
    """An attribute value read through `src`; ints stay unpinned until tracing uses them."""
    if type(value) is int:
        return wrap_int(tx, value, src)
    return tx.wrap(value, src)


class ClassVariable(VariableTracker):
    """A class object. Calls to builtin and torch classes go through the builtin tables."""

    __slots__ = ("cls",)

    def __init__(self, cls: type, source=None):
        super().__init__(source)
        self.cls = cls

    def python_type(self) -> type:
        return type(self.cls)

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self):
        return self.cls

    def truth(self, tx) -> bool:
        if hasattr(type(self.cls), "__bool__") or hasattr(type(self.cls), "__len__"):  # an Enum class
            return super().truth(tx)
        return True

    def reconstruct(self, cg) -> None:
        if self.source is None:  # e.g. the class a classmethod is bound to: the class itself
            cg.load_const(self.cls)
        else:
            super().reconstruct(cg)

    def var_getattr(self, tx, name):
        if name in ("__name__", "__qualname__", "__module__"):
            return ConstantVariable(getattr(self.cls, name))
        if name == "__dict__" and type(self.cls) is type:
            return ClassDictVariable(self.cls)
        owner, attr = class_lookup(self.cls, name)
        src = AttrSource(self.source, name) if self.source is not None else None
        if attr is MISSING:
            try:
                value = getattr(self.cls, name)  # from the metaclass (`__mro__`, `__members__`)
            except AttributeError as e:
                tx.raise_user_error(e)
            return tx.wrap(value, src)
        bound = bind_on_class(tx, self, owner, name, attr)
        if bound is not None:
            return bound
        return tx.wrap(getattr(self.cls, name), src if src is not None else class_dict_source(owner, name))

    def hasattr_impl(self, tx, name: str) -> bool:
        return real_hasattr(tx, self, self.cls, name)

    def unpack(self, tx) -> list:
        if isinstance(self.cls, enum.EnumMeta):
            return [ConstantVariable(member) for member in self.cls]
        return super().unpack(tx)

    def call_function(self, tx, args, kwargs):
        return factory.construct_instance(tx, self, args, kwargs)

    def describe(self) -> str:
        return f"class {self.cls.__qualname__}"


def _class_dict_get(tx, d, name, args, kwargs) -> VariableTracker:
    if args[0].is_python_constant() and args[0].as_python_constant() not in d._keys(tx):
        return args[1] if len(args) == 2 else ConstantVariable(None)
    return d._item(tx, args[0])


def _class_dict_contains(tx, d, name, args, kwargs) -> VariableTracker:
    return ConstantVariable(args[0].as_python_constant() in d._keys(tx))


def _class_dict_keys(tx, d, name, args, kwargs) -> VariableTracker:

    return TupleVariable([ConstantVariable(k) for k in d._keys(tx)])


class ClassDictVariable(VariableTracker):
    """`cls.__dict__` (a read-only mappingproxy): items are read, and guarded, one by one
    through `cls.__dict__[key]`; which keys exist is guarded when tracing asks."""

    __slots__ = ("cls",)
    # the mappingproxy's methods (called with no keyword arguments)
    METHODS = {
        "__getitem__": row(lambda tx, d, name, args, kwargs: d._item(tx, args[0]), when=one_arg),
        "get": row(_class_dict_get, when=lambda d, args, kwargs: len(args) in (1, 2)),
        "__contains__": row(_class_dict_contains,
                            when=lambda d, args, kwargs: len(args) == 1 and args[0].is_python_constant()),
        "keys": row(_class_dict_keys, when=no_args),
        "__len__": row(lambda tx, d, name, args, kwargs: ConstantVariable(len(d._keys(tx))), when=no_args),
    }

    def __init__(self, cls: type):
        super().__init__(AttrSource(ObjectSource(cls), "__dict__"))
        self.cls = cls

    def python_type(self) -> type:
        return types.MappingProxyType

    def _keys(self, tx) -> list:
        keys = list(self.cls.__dict__)
        tx.output.add_guard(Guard(GuardKind.DICT_KEYS, self.source, tuple(keys), tx.guard_location()))
        return keys

    def _item(self, tx, key_vt):
        if not key_vt.is_python_constant():
            tx.unsupported(f"reading {self.describe()} with key {key_vt.describe()}", category="unsupported dict key")
        key = key_vt.as_python_constant()
        if key not in self._keys(tx):
            tx.raise_user_error(KeyError(key))
        return tx.wrap(self.cls.__dict__[key], class_dict_source(self.cls, key))

    def unpack(self, tx) -> list:
        return [ConstantVariable(k) for k in self._keys(tx)]

    def var_getattr(self, tx, name):

        if name in self.METHODS:
            return MethodOfVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        if kwargs:
            return super().call_method(tx, name, args, kwargs)
        result = dispatch(tx, self, self.METHODS, name, args, kwargs)
        if result is None:
            tx.unsupported(f"{name}() of {self.describe()}", category="unsupported call")
        return result

    def describe(self) -> str:
        return f"{self.cls.__qualname__}.__dict__"


@register(type)
def build_class(tx, value, source, do_guard: bool) -> VariableTracker:
    """A class (of any metaclass) outside the trace-rules table."""
    guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
    return ClassVariable(value, source)


provides("bind_class_attribute")(bind_class_attribute)
