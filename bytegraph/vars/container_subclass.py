"""Read-only methods of a builtin container, called on an instance of a user subclass.

`class Registry(dict)` whose own `get` calls `super().get(key)` reaches `dict.get`, a C
method, with the user object as `self`. The tracer does not model such an object's
contents (only its attributes), but a read-only method of the builtin base reads nothing
Python code can change behind the trace's back within one capture: every C method that
mutates the contents is a graph break. So a call with constant arguments of a read-only
method of `dict`, `list`, `tuple`, `set` or `frozenset` on an object read from the caller's
world is run at trace time, and its result is wrapped (and guarded) at a
`CMethodResultSource`: `dict.get(<object>, 'key')`, which reads the base container's own
contents past any Python override. `keys()`/`values()`/`items()` of a `dict` or
`OrderedDict` base (`ModelOutput.keys` of a model output passed in) are answered from a
snapshot of the keys, guarded (`list(OrderedDict.keys(<object>)) == [...]`, in the base's
own order), the values read at `dict.__getitem__(<object>, key)`; the contents cannot change
within the capture (their mutating C methods break), so the snapshot stands for the live
view, and the view itself, where residual code needs it, is the real method called on the
real object. Any other method of the base stays a graph break.
"""
from __future__ import annotations

import collections
import types

from ..guards.guard import GuardKind
from ..guards.sources import CMethodResultSource
from .base import VariableTracker
from .constant import ConstantVariable
from .registry import guard
from .containers import TupleVariable

_VIEWS = frozenset({"keys", "values", "items"})
_READ_ONLY = {
    dict: frozenset({"get", "__getitem__", "__contains__", "__len__", *_VIEWS}),
    collections.OrderedDict: _VIEWS,
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
        if self.method.__name__ in _VIEWS and not consts:
            return _contents_view(tx, self.method, self.obj)
        try:
            result = self.method(self.obj.value, *consts)
        except Exception as e:  # KeyError, IndexError, ValueError, TypeError: the user's error
            tx.raise_user_error(e)
        return tx.wrap(result, CMethodResultSource(self.obj.source, self.method, consts))

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(types.MethodType)
        cg.load_const(self.method)
        cg.reconstruct(self.obj)
        cg.call(2)

    def describe(self) -> str:
        return f"{self.method.__objclass__.__name__}.{self.method.__name__} of {self.obj.describe()}"


def _contents_view(tx, method, obj) -> "ContentsViewVariable":
    """`method(obj)` for a `keys`/`values`/`items` C method of a dict base: the snapshot
    view (see the module docstring), its keys guarded."""
    keys = list(collections.OrderedDict.keys(obj.value) if isinstance(obj.value, collections.OrderedDict)
                else dict.keys(obj.value))
    if not all(type(k) in _KEY_TYPES for k in keys):
        tx.unsupported(f"{method.__objclass__.__name__}.{method.__name__}() of {obj.describe()} with keys that are "
                       "not str/int/None constants", category="unsupported call")
    keys_fn = collections.OrderedDict.keys if isinstance(obj.value, collections.OrderedDict) else dict.keys
    guard(tx, True, GuardKind.DICT_KEYS, CMethodResultSource(obj.source, keys_fn, ()), keys)

    def value(k):
        return tx.wrap(dict.__getitem__(obj.value, k), CMethodResultSource(obj.source, dict.__getitem__, (k,)))


    if method.__name__ == "keys":
        items = [ConstantVariable(k) for k in keys]
    elif method.__name__ == "values":
        items = [value(k) for k in keys]
    else:
        items = [TupleVariable([ConstantVariable(k), value(k)]) for k in keys]
    return ContentsViewVariable(method, obj, items)


class ContentsViewVariable(VariableTracker):
    """`keys()`/`values()`/`items()` of a dict-subclass instance from outside: its items
    (a guarded snapshot); rebuilt as the real method called on the real object."""

    __slots__ = ("method", "obj", "items")

    def __init__(self, method, obj: VariableTracker, items: list):
        super().__init__(None)
        self.method = method
        self.obj = obj
        self.items = items

    def python_type(self) -> type:
        return type(self.method(self.obj.value))

    def unpack(self, tx) -> list:
        return list(self.items)

    def len_impl(self, tx) -> VariableTracker:
        return ConstantVariable(len(self.items))

    def truth(self, tx) -> bool:
        return bool(self.items)

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(self.method)
        cg.reconstruct(self.obj)
        cg.call(1)

    def describe(self) -> str:
        return f"{self.method.__objclass__.__name__}.{self.method.__name__}() of {self.obj.describe()}"
