"""Creating instances in the trace: `cls(*args, **kwargs)` for a class tracker, following
CPython's `type.__call__`.

A call of a class first goes to its metaclass: a metaclass `__call__` written in Python is
inlined with the class as its first argument (its `super().__call__(...)` comes back here
as `TypeCallVariable`); a metaclass without its own `__call__` creates instances like
`type` does. `type.__call__` runs `cls.__new__(cls, *args, **kwargs)` — inlined when
written in Python, else `object.__new__` — and then, only if that returned an instance of
`cls`, `__init__(obj, *args, **kwargs)`. A stateless module whose construction is traceable is
built for real (vars/made_modules.py). `object.__new__(cls)` (directly, or reached
through `super().__new__(cls)`) makes a `NewObjectVariable` when instances of `cls` hold
their state in a plain instance `__dict__` (`plain_instance_reason`). Exceptions, named
tuples and enum lookups by value have constructors of their own. Anything else is a graph
break naming the class and why.
"""
from __future__ import annotations

import enum
import types

import torch

from .factory import provides
from .base import VariableTracker
from .class_lookup import class_dict_source, class_lookup
from .constant import ConstantVariable, is_constant_value
from .dict_subclass import dict_base, dict_instance_reason, new_dict_object
from .exceptions import construct_exception, constructor_effect_reason, is_plain_exception_class
from .made_modules import is_module_class, make_module
from .objects import NewObjectVariable, UserObjectVariable
from .containers import NamedTupleVariable

_DICT_NEW = dict.__dict__["__new__"]
_BREAK_HINT = "create the object outside the compiled function and pass it in"


def construct_instance(tx, cls_vt, args, kwargs):
    """`cls(*args, **kwargs)` for a class tracker: the metaclass's `__call__` first."""
    cls = cls_vt.cls
    meta = type(cls)
    if meta is not type and not isinstance(cls, enum.EnumMeta):
        owner, call = class_lookup(meta, "__call__")
        if isinstance(call, types.FunctionType):  # a metaclass __call__ written in Python
            return tx.wrap(call, class_dict_source(owner, "__call__")).call_function(tx, [cls_vt, *args], kwargs)
        if call is not type.__dict__["__call__"]:
            _unsupported(tx, cls, f"its metaclass {meta.__qualname__} has a __call__ not written in Python")
    return type_call(tx, cls_vt, args, kwargs)


def type_call(tx, cls_vt, args, kwargs):
    """`type.__call__(cls, *args, **kwargs)`: `__new__`, then `__init__` if `__new__`
    returned an instance of `cls`."""
    cls = cls_vt.cls
    if is_plain_exception_class(cls):
        return construct_exception(tx, cls, args, kwargs)
    if issubclass(cls, BaseException) and not kwargs and all(
            a.is_python_constant() and is_constant_value(a.as_python_constant()) for a in args):
        why = constructor_effect_reason(cls)  # Note [Exception constructors run while tracing]
        if why is not None:
            _unsupported(tx, cls, f"its constructor would run for real while tracing, and {why}")
        return UserObjectVariable(cls(*[a.as_python_constant() for a in args]))
    if isinstance(cls, enum.EnumMeta) and not kwargs and len(args) == 1 and args[0].is_python_constant():
        try:
            return ConstantVariable(cls(args[0].as_python_constant()))  # a lookup by value
        except ValueError as e:
            tx.raise_user_error(e)
    if isinstance(cls, enum.EnumMeta):
        _unsupported(tx, cls, "an enum called with other than one constant value")
    if issubclass(cls, tuple) and hasattr(cls, "_fields") and cls.__new__ is not tuple.__new__:
        return _construct_namedtuple(tx, cls, args, kwargs)
    if is_module_class(cls):
        made, why = make_module(tx, cls, args, kwargs)  # Note [Modules made in the trace]
        if made is None:
            _unsupported(tx, cls, f"a module made in the compiled function: {why}")
        return made
    owner, new = class_lookup(cls, "__new__")
    if isinstance(new, staticmethod) and isinstance(new.__func__, types.FunctionType):
        new_fn = tx.wrap(new.__func__, class_dict_source(owner, "__new__", "__func__"))
        obj = new_fn.call_function(tx, [cls_vt, *args], kwargs)
        if not issubclass(obj.python_type(), cls):
            return obj  # type.__call__ skips __init__
    elif new is object.__new__:
        obj = new_object(tx, cls, [], {})
    elif new is _DICT_NEW and dict_base(cls) is not None:
        obj = _new_dict_instance(tx, cls)
    else:
        _unsupported(tx, cls, "its __new__ is not written in Python")
    _init(tx, obj, args, kwargs)
    return obj


def _init(tx, obj, args, kwargs) -> None:
    cls = obj.python_type()
    init = class_lookup(cls, "__init__")[1]
    if isinstance(init, types.FunctionType):
        result = tx.wrap(init, None).call_function(tx, [obj, *args], kwargs)
        if not (result.is_python_constant() and result.as_python_constant() is None):
            tx.raise_user_error(TypeError("__init__() should return None"))
    elif init is not object.__init__:
        base_init = obj.builtin_base_method(tx, init) if isinstance(init, types.WrapperDescriptorType) else None
        if base_init is None:
            _unsupported(tx, cls, "its __init__ is not written in Python")
        base_init.call_function(tx, args, kwargs)
    elif (args or kwargs) and cls.__new__ is object.__new__:
        tx.raise_user_error(TypeError(f"{cls.__name__}() takes no arguments"))


def new_object(tx, cls: type, args, kwargs) -> VariableTracker:
    """`object.__new__(cls, *args, **kwargs)`: an empty instance. Extra arguments are an
    error when `cls` overrides `__new__` or does not override `__init__` (`object_new` in
    CPython's Objects/typeobject.c)."""
    if not isinstance(cls, type):
        tx.raise_user_error(TypeError(f"object.__new__(X): X is not a type object ({type(cls).__name__})"))
    if args or kwargs:
        if cls.__new__ is not object.__new__:
            tx.raise_user_error(TypeError("object.__new__() takes exactly one argument (the type to instantiate)"))
        if cls.__init__ is object.__init__:
            tx.raise_user_error(TypeError(f"{cls.__name__}() takes no arguments"))
    why_not = plain_instance_reason(cls)
    if why_not is not None:
        _unsupported(tx, cls, why_not)
    try:
        value = object.__new__(cls)
    except TypeError as e:  # an abstract class
        tx.raise_user_error(e)
    return NewObjectVariable(value)


def _new_dict_instance(tx, cls: type) -> VariableTracker:
    """`dict.__new__(cls)` for a user subclass of dict/OrderedDict (`vars/dict_subclass.py`)."""
    why_not = dict_instance_reason(cls)
    if why_not is not None:
        _unsupported(tx, cls, why_not)
    return new_dict_object(cls)


def _unsupported(tx, cls: type, why: str):
    tx.unsupported(f"creating an instance of {cls.__qualname__} ({why})", category="unsupported call",
                   hint=_BREAK_HINT)


def _construct_namedtuple(tx, cls, args, kwargs):
    defaults = getattr(cls, "_field_defaults", {})
    values = dict(zip(cls._fields, args))
    for field in cls._fields:
        if field not in values:
            if field in kwargs:
                values[field] = kwargs[field]
            elif field in defaults:
                values[field] = tx.wrap(defaults[field], None)
            else:
                tx.raise_user_error(TypeError(f"{cls.__name__}() missing argument '{field}'"))
    return NamedTupleVariable([values[f] for f in cls._fields], cls)


def plain_instance_reason(cls: type) -> str | None:
    """None for a Python class whose instances `object.__new__` makes and whose state is a
    plain instance `__dict__` (no non-empty `__slots__` and some class without `__slots__`,
    no builtin bases; `__setattr__`/`__delattr__`, if any, written in Python; a metaclass,
    if any, written in Python); else why not, in words."""
    if cls.__module__ == "builtins":
        return "a builtin class without a known constructor"
    meta = type(cls)
    if meta is not type and any(k.__module__ == "builtins" for k in meta.__mro__[:-2]):
        return f"its metaclass {meta.__qualname__} is not written in Python"
    if issubclass(cls, (torch.nn.Module, torch.Tensor)):
        return "modules and tensors are made outside the trace"
    for hook in ("__setattr__", "__delattr__"):
        fn = class_lookup(cls, hook)[1]
        if fn is not getattr(object, hook) and not isinstance(fn, types.FunctionType):
            return f"its {hook} is not written in Python"
    bases = cls.__mro__[:-1]
    for klass in bases:
        if klass.__dict__.get("__slots__", ()) or klass.__module__ == "builtins":
            return f"{klass.__qualname__} defines __slots__ or is builtin"
    if all("__slots__" in klass.__dict__ for klass in bases):  # empty slots everywhere: no __dict__
        return f"{cls.__qualname__} defines __slots__ or is builtin"
    return None


class TypeCallVariable(VariableTracker):
    """`super().__call__` inside a metaclass's `__call__`: `type.__call__` bound to a class."""

    __slots__ = ("cls_vt",)

    def __init__(self, cls_vt):
        super().__init__(None)
        self.cls_vt = cls_vt

    def python_type(self) -> type:
        return types.MethodWrapperType

    def call_function(self, tx, args, kwargs):
        return type_call(tx, self.cls_vt, args, kwargs)

    def describe(self) -> str:
        return f"type.__call__ of {self.cls_vt.describe()}"


provides("construct_instance")(construct_instance)
