"""Python modules, classes and instances of user classes read from the caller's world.

Attribute lookup on an instance follows Python's order with `inspect.getattr_static`
(data descriptors, instance dict, class attributes along the MRO); functions found on
the class become bound methods that are inlined, properties run their getter inlined.

Attribute writes (`store_attr`/`delete_attr`) on a pre-existing instance are kept on its
tracker (`attrs`, name -> tracker or DELETED) and recorded in the side-effect log, which
replays them with `setattr`/`delattr` after the graph; later reads in the same trace see
them. Writes to a module's attributes are global writes of that module.
"""
from __future__ import annotations

import inspect
import types

from ..guards.sources import AttrSource
from .base import CallableValueVariable, VariableTracker
from .functions import BoundMethodVariable
from .lazy_int import wrap_int

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
        if _plain_user_class(self.cls):
            obj = NewObjectVariable(object.__new__(self.cls))
            init = _class_attr(self.cls, "__init__")
            if isinstance(init, types.FunctionType):
                result = tx.wrap(init, None).call_function(tx, [obj, *args], kwargs)
                if not (result.is_python_constant() and result.as_python_constant() is None):
                    tx.raise_user_error(TypeError("__init__() should return None"))
            elif args or kwargs:
                tx.raise_user_error(TypeError(f"{self.cls.__name__}() takes no arguments"))
            return obj
        tx.unsupported(f"creating an instance of {self.cls.__qualname__}", category="unsupported call",
                       hint="objects of user classes can be created outside the compiled function")

    def describe(self) -> str:
        return f"class {self.cls.__qualname__}"


class UserObjectVariable(VariableTracker):
    """An instance of a user class (or any object without a dedicated tracker)."""

    __slots__ = ("value", "attrs")

    def __init__(self, value, source=None):
        super().__init__(source)
        self.value = value
        self.attrs = None  # pending attribute writes: name -> tracker or _DELETED

    def python_type(self) -> type:
        return type(self.value)

    # ---- attribute writes ------------------------------------------------------------
    def store_attr(self, tx, name, value) -> None:
        self._check_writable(tx, name, "setting")
        self._write(tx, name, value)

    def delete_attr(self, tx, name) -> None:
        self._check_writable(tx, name, "deleting")
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
        if self.attrs is None:
            self.attrs = {}
        if self.attrs.get(name) is _DELETED and value is not _DELETED:
            # `del o.a; ...; o.a = v` moves `a` to the end of `o.__dict__`: replay the
            # delete (key `(DELETE_FIRST, name)`) right before the new value.
            del self.attrs[name]
            if self.source is not None and name in self.value.__dict__:
                self.attrs[(DELETE_FIRST, name)] = _DELETED
        self.attrs[name] = value
        if self.source is not None:
            tx.output.side_effects.note_attr_write(self)

    def _check_writable(self, tx, name: str, what: str) -> None:
        cls = type(self.value)
        if self.source is None and not isinstance(self, NewObjectVariable):
            tx.unsupported(f"{what} attribute {name!r} of an object made during tracing", category="side effect")
        if cls.__setattr__ is not object.__setattr__ or cls.__delattr__ is not object.__delattr__:
            tx.unsupported(f"{what} attribute {name!r} of {self.describe()}, whose class defines "
                           "__setattr__/__delattr__", category="side effect")
        cls_attr = _class_attr(cls, name)
        if cls_attr is not None and (hasattr(type(cls_attr), "__set__") or hasattr(type(cls_attr), "__delete__")):
            tx.unsupported(f"{what} attribute {name!r} of {self.describe()} through a descriptor "
                           f"({type(cls_attr).__name__})", category="side effect")
        if not isinstance(getattr(self.value, "__dict__", None), dict):
            tx.unsupported(f"{what} attribute {name!r} of {self.describe()}, which has no __dict__",
                           category="side effect")

    def var_getattr(self, tx, name):
        if self.attrs is not None and name in self.attrs:
            pending = self.attrs[name]
            if pending is not _DELETED:
                return pending
            if _class_attr(type(self.value), name) is None:
                return self._dynamic_getattr(tx, name)
            tx.unsupported(f"reading class attribute {name!r} after deleting the instance attribute",
                           category="side effect")
        src = AttrSource(self.source, name) if self.source is not None else None
        try:
            static = inspect.getattr_static(self.value, name)
        except AttributeError:
            return self._dynamic_getattr(tx, name)
        cls_attr = _class_attr(type(self.value), name)
        if static is cls_attr and self.source is not None and hasattr(self.value, "__dict__"):
            tx.guard_attr_presence(self.source, name, False)  # an instance attribute would shadow it
        if isinstance(static, property) and static is cls_attr:
            return tx.wrap(static.fget, None).call_function(tx, [self], {})
        if isinstance(static, types.FunctionType) and static is cls_attr:
            class_src = AttrSource(AttrSource(self.source, "__class__"), name) if self.source is not None else None
            return BoundMethodVariable(tx.wrap(static, class_src), self, src)
        if isinstance(static, staticmethod):
            return tx.wrap(static.__func__, None)
        if isinstance(static, classmethod):
            return BoundMethodVariable(tx.wrap(static.__func__, None),
                                       ClassVariable(type(self.value)))
        if hasattr(type(static), "__get__") and static is cls_attr and not isinstance(static, type):
            tx.unsupported(f"descriptor {name!r} of {self.describe()}", category="unsupported attribute")
        value = getattr(self.value, name)
        if type(value) is int and src is not None:
            return wrap_int(tx, value, src)  # e.g. a counter: pinned only if tracing uses its value
        return tx.wrap(value, src)

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
        cg.push_null()
        cg.load_const(_new_object)
        cg.load_const(type(self.value))
        names = [n for n, v in self.attrs.items() if v is not _DELETED]
        for name in names:
            cg.reconstruct(self.attrs[name])
        cg.build("BUILD_TUPLE", len(names))
        cg.load_const(tuple(names))
        cg.call(3)

    def describe(self) -> str:
        return f"new object of type {type(self.value).__qualname__}"


def _new_object(cls, values, names):
    obj = object.__new__(cls)
    obj.__dict__.update(zip(names, values))
    return obj


def _plain_user_class(cls: type) -> bool:
    """A Python class whose instances are made by `object.__new__` and hold their state in
    a plain instance `__dict__` (no slots, no custom __setattr__, no metaclass)."""
    if type(cls) is not type or cls.__new__ is not object.__new__ or cls.__module__ == "builtins":
        return False
    if cls.__setattr__ is not object.__setattr__ or cls.__delattr__ is not object.__delattr__:
        return False
    for klass in cls.__mro__[:-1]:
        if "__slots__" in klass.__dict__ or klass.__module__ == "builtins":
            return False
    try:
        import torch

        if issubclass(cls, torch.nn.Module) or issubclass(cls, torch.Tensor):
            return False
    except ImportError:  # pragma: no cover
        pass
    init = _class_attr(cls, "__init__")
    return isinstance(init, types.FunctionType) or init is object.__init__


def _class_attr(cls: type, name: str):
    for klass in cls.__mro__:
        if name in klass.__dict__:
            return klass.__dict__[name]
    return None


class OpaqueCallableVariable(CallableValueVariable):
    """A C function bytegraph knows nothing about (`time.time`, `os.getpid`, a NumPy
    function): it can be passed around, and calling it is a graph break."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs):
        tx.unsupported(f"calling C function {getattr(self.fn, '__qualname__', self.fn)!s}, which bytegraph "
                       "does not know", category="unsupported call",
                       hint="the call runs eagerly at a graph break; move it outside the compiled "
                            "function to avoid the break")

    def describe(self) -> str:
        return f"C function {getattr(self.fn, '__qualname__', self.fn)!s}"
