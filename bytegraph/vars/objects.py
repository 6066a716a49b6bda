"""Python modules, classes and instances of user classes read from the caller's world.

Attribute lookup on an instance follows Python's order with `inspect.getattr_static`
(data descriptors, instance dict, class attributes along the MRO); functions found on
the class become bound methods that are inlined, properties run their getter inlined.
"""
from __future__ import annotations

import inspect
import types

from ..guards.sources import AttrSource
from .base import VariableTracker
from .functions import BoundMethodVariable

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
        try:
            value = getattr(self.module, name)
        except AttributeError as e:
            tx.raise_user_error(e)
        src = AttrSource(self.source, name) if self.source is not None else None
        return tx.wrap(value, src, guard=not _trusted(self.module))

    def describe(self) -> str:
        return f"module {self.module.__name__}"


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

    def var_getattr(self, tx, name):
        try:
            static = inspect.getattr_static(self.cls, name)
        except AttributeError as e:
            tx.raise_user_error(e)
        src = AttrSource(self.source, name) if self.source is not None else None
        if isinstance(static, classmethod):
            return BoundMethodVariable(tx.wrap(static.__func__, None), self)
        if isinstance(static, staticmethod):
            return tx.wrap(static.__func__, src)
        return tx.wrap(getattr(self.cls, name), src)

    def call_function(self, tx, args, kwargs):
        if issubclass(self.cls, BaseException) and all(a.is_python_constant() for a in args):
            return UserObjectVariable(self.cls(*[a.as_python_constant() for a in args]))
        if issubclass(self.cls, tuple) and hasattr(self.cls, "_fields") and self.cls.__new__ is not tuple.__new__:
            from .containers import NamedTupleVariable

            defaults = getattr(self.cls, "_field_defaults", {})
            values = dict(zip(self.cls._fields, args))
            for field in self.cls._fields:
                if field not in values:
                    if field in kwargs:
                        values[field] = kwargs[field]
                    elif field in defaults:
                        values[field] = tx.wrap(defaults[field], None)
                    else:
                        tx.raise_user_error(TypeError(f"{self.cls.__name__}() missing argument '{field}'"))
            return NamedTupleVariable([values[f] for f in self.cls._fields], self.cls)
        tx.unsupported(f"creating an instance of {self.cls.__qualname__}", category="unsupported call",
                       hint="objects of user classes can be created outside the compiled function")

    def describe(self) -> str:
        return f"class {self.cls.__qualname__}"


class UserObjectVariable(VariableTracker):
    """An instance of a user class (or any object without a dedicated tracker)."""

    __slots__ = ("value",)

    def __init__(self, value, source=None):
        super().__init__(source)
        self.value = value

    def python_type(self) -> type:
        return type(self.value)

    def var_getattr(self, tx, name):
        src = AttrSource(self.source, name) if self.source is not None else None
        try:
            static = inspect.getattr_static(self.value, name)
        except AttributeError:
            return self._dynamic_getattr(tx, name)
        cls_attr = _class_attr(type(self.value), name)
        if isinstance(static, property) and static is cls_attr:
            return tx.wrap(static.fget, None).call_function(tx, [self], {})
        if isinstance(static, types.FunctionType) and static is cls_attr:
            return BoundMethodVariable(tx.wrap(static, None), self, src)
        if isinstance(static, staticmethod):
            return tx.wrap(static.__func__, None)
        if isinstance(static, classmethod):
            return BoundMethodVariable(tx.wrap(static.__func__, None),
                                       ClassVariable(type(self.value)))
        if hasattr(type(static), "__get__") and static is cls_attr and not isinstance(static, type):
            tx.unsupported(f"descriptor {name!r} of {self.describe()}", category="unsupported attribute")
        return tx.wrap(getattr(self.value, name), src)

    def _dynamic_getattr(self, tx, name):
        getattr_fn = _class_attr(type(self.value), "__getattr__")
        if isinstance(getattr_fn, types.FunctionType):
            from .constant import ConstantVariable

            return tx.wrap(getattr_fn, None).call_function(tx, [self, ConstantVariable(name)], {})
        tx.raise_user_error(AttributeError(f"{type(self.value).__name__!r} object has no attribute {name!r}"))

    def call_function(self, tx, args, kwargs):
        call = _class_attr(type(self.value), "__call__")
        if isinstance(call, types.FunctionType):
            return tx.wrap(call, None).call_function(tx, [self, *args], kwargs)
        return super().call_function(tx, args, kwargs)

    def describe(self) -> str:
        what = self.source.describe() if self.source is not None else "object"
        return f"{what} of type {type(self.value).__qualname__}"


def _class_attr(cls: type, name: str):
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None
