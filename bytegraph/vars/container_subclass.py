"""Read-only methods of a builtin container, called on an instance of a user subclass.

`class Registry(dict)` whose own `get` calls `super().get(key)` reaches `dict.get`, a C
method, with the user object as `self`. The tracer does not model such an object's
contents (only its attributes), but a read-only method of the builtin base reads nothing
Python code can change behind the trace's back within one capture: every C method that
mutates the contents is a graph break. So a call with constant arguments of a read-only
method of `dict`, `list`, `tuple`, `set` or `frozenset` on an object read from the caller's
world is run at trace time, and its result is wrapped (and guarded) at a
`CMethodResultSource`: `dict.get(<object>, 'key')`, which reads the base container's own
contents past any Python override. Any other method of the base stays a graph break.
"""
from __future__ import annotations

import types

from ..guards.sources import CMethodResultSource
from .base import VariableTracker

_READ_ONLY = {
    dict: frozenset({"get", "__getitem__", "__contains__", "__len__"}),
    list: frozenset({"__getitem__", "__contains__", "__len__", "index", "count"}),
    tuple: frozenset({"__getitem__", "__contains__", "__len__", "index", "count"}),
    set: frozenset({"__contains__", "__len__"}),
    frozenset: frozenset({"__contains__", "__len__"}),
}
_KEY_TYPES = (str, int, bool, type(None))  # constants whose repr rebuilds them in a guard


def is_read_only_base_method(attr) -> bool:
    """Whether `attr` (found on a class) is a read-only C method of a builtin container."""
    if not isinstance(attr, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        return False
    return attr.__name__ in _READ_ONLY.get(getattr(attr, "__objclass__", None), ())


class BaseContainerMethodVariable(VariableTracker):
    """`method` (a C method of a builtin container) bound to `obj`, an instance of a user
    subclass of that container, rebuilt as `types.MethodType(method, <obj>)`. Calling it
    runs a read-only method on an instance read from the caller's world;
    `dict_subclass.DictBaseMethodVariable` calls those of one made in the trace."""

    __slots__ = ("method", "obj")

    def __init__(self, method, obj: VariableTracker):
        super().__init__(None)
        self.method = method
        self.obj = obj

    def python_type(self) -> type:
        return types.BuiltinMethodType

    def children(self):
        return (self.obj,)

    def call_function(self, tx, args, kwargs):
        what = f"{self.method.__objclass__.__name__}.{self.method.__name__}"
        if kwargs or not all(a.is_python_constant() and type(a.as_python_constant()) in _KEY_TYPES
                             for a in args):
            tx.unsupported(f"{what}() of {self.obj.describe()} with arguments that are not str/int/None constants",
                           category="unsupported call")
        if self.obj.source is None:
            tx.unsupported(f"{what}() of {self.obj.describe()}, made during tracing", category="unsupported call")
        if self.method.__name__ == "__getitem__" and hasattr(type(self.obj.value), "__missing__"):
            tx.unsupported(f"{what}() of {self.obj.describe()}, whose class defines __missing__ (a missing key "
                           f"runs it, and it may insert)", category="unsupported call")
        consts = tuple(a.as_python_constant() for a in args)
        try:
            result = self.method(self.obj.value, *consts)
        except Exception as e:  # KeyError, IndexError, ValueError, TypeError: the user's error
            tx.raise_user_error(e)
        return tx.wrap(result, CMethodResultSource(self.obj.source, self.method, consts))

    def reconstruct(self, cg) -> None:
        cg.push_null()
        cg.load_const(types.MethodType)
        cg.load_const(self.method)
        cg.reconstruct(self.obj)
        cg.call(2)

    def describe(self) -> str:
        return f"{self.method.__objclass__.__name__}.{self.method.__name__} of {self.obj.describe()}"
