"""`super()` and `super(cls, obj)`: attribute lookup that starts after `cls` in the MRO of
`obj` (an instance, or a class in a classmethod).

A class bound to `super` is the class of a classmethod when it subclasses the starting
class, else the instance of a metaclass (`super().__call__(...)` in a metaclass's
`__call__`, which is `type.__call__`: `vars/construction.py`). The zero-argument form
reads what CPython reads: the frame's first argument (from its cell when a closure
captures it) and the `__class__` cell the compiler creates for methods that mention
`super`. What the lookup finds is bound like any class attribute
(`vars/classes.py::bind_class_attribute`), with the object as `self`; `object`'s own
`__init__`, `__setattr__` and `__delattr__` go to the builtin table.
"""
from __future__ import annotations

import builtins

from . import builtins as builtin_calls
from .base import VariableTracker
from .registry import handles
from .class_lookup import class_dict_source
from .classes import ClassVariable, bind_class_attribute, bind_on_class
from .functions import BoundMethodVariable
from .construction import TypeCallVariable


class SuperVariable(VariableTracker):
    __slots__ = ("start", "obj")

    def __init__(self, start: type, obj: VariableTracker):
        super().__init__(None)
        self.start = start
        self.obj = obj

    def python_type(self) -> type:
        return super

    def _binds_class(self) -> bool:
        """A class in a classmethod (not a class as the instance of a metaclass)."""
        return isinstance(self.obj, ClassVariable) and issubclass(self.obj.cls, self.start)

    def _search_order(self) -> tuple:
        subject = self.obj.as_python_constant() if self._binds_class() else self.obj.python_type()
        mro = subject.__mro__
        return mro[mro.index(self.start) + 1:]

    def var_getattr(self, tx, name):
        for owner in self._search_order():
            if name in owner.__dict__:
                attr = owner.__dict__[name]
                break
        else:
            if name == "__class__":
                return ClassVariable(super)
            tx.raise_user_error(AttributeError(f"'super' object has no attribute {name!r}"))
        if owner is object:
            return self._object_method(tx, name, attr)
        if owner is type and name == "__call__" and not self._binds_class():
            return TypeCallVariable(self.obj)  # in a metaclass's __call__
        if self._binds_class():
            bound = bind_on_class(tx, self.obj, owner, name, attr)
            return bound if bound is not None else tx.wrap(attr, class_dict_source(owner, name))
        return bind_class_attribute(tx, self.obj, owner, name, attr, None)

    def _object_method(self, tx, name, attr):
        if name == "__new__":  # a static method: `super().__new__(cls)` is `object.__new__(cls)`
            return tx.wrap(object.__new__)
        if builtin_calls.is_builtin(attr) and not self._binds_class():
            return BoundMethodVariable(builtin_calls.BuiltinVariable(attr), self.obj)
        tx.unsupported(f"super().{name} reaching object.{name}", category="unsupported attribute")

    def describe(self) -> str:
        return f"super({self.start.__qualname__}, {self.obj.describe()})"


def make_super(tx, args, kwargs):
    """The tracker for a call of `super` with trackers `args`."""
    if kwargs or len(args) not in (0, 2):
        tx.unsupported("super() with one argument (an unbound super object)", category="unsupported builtin")
    if args:
        start_vt, obj = args
        if not isinstance(start_vt, ClassVariable):
            tx.raise_user_error(TypeError(f"super() argument 1 must be a type, not {start_vt.python_type().__name__}"))
        start = start_vt.cls
    else:
        start, obj = _zero_argument_super(tx)
    subject = obj.as_python_constant() if isinstance(obj, ClassVariable) else obj.python_type()
    if isinstance(obj, ClassVariable) and not issubclass(subject, start):
        subject = obj.python_type()  # a class as the instance of a metaclass
    if not isinstance(subject, type) or not issubclass(subject, start):
        tx.raise_user_error(TypeError("super(type, obj): obj must be an instance or subtype of type"))
    return SuperVariable(start, obj)


def _zero_argument_super(tx):
    code = tx.code
    if code.co_argcount + code.co_kwonlyargcount == 0 and not code.co_flags & 0x04:
        tx.raise_user_error(RuntimeError("super(): no arguments"))
    first = code.co_varnames[0]
    if first in tx.cells:
        obj = tx.cells[first].contents
    else:
        try:
            obj = tx.locals[first]  # reads an unread argument (Note [Arguments wrapped when read])
        except KeyError:
            obj = None
    if obj is None:
        tx.raise_user_error(RuntimeError("super(): arg[0] deleted"))
    class_cell = tx.cells.get("__class__")
    if class_cell is None or class_cell.contents is None:
        tx.raise_user_error(RuntimeError("super(): __class__ cell not found"))
    start = class_cell.contents
    if not isinstance(start, ClassVariable):
        tx.raise_user_error(RuntimeError("super(): __class__ is not a type"))
    return start.cls, obj



@handles(builtins.super)
def _super(tx, fn, args, kwargs):
    return make_super(tx, args, kwargs)
