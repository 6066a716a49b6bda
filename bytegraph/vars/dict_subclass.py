"""Instances of user subclasses of `dict` or `collections.OrderedDict` made in the trace
(a `ModelOutput`-like dataclass over an OrderedDict, `class Registry(dict)`).

Such an object has two states: its dict items and its instance `__dict__`.
`DictObjectVariable` is a `NewObjectVariable` (attributes in `attrs`, the class's Python
methods, `__setattr__`, properties, `super()` as for any user instance) that also holds a
`DictPartVariable`: a dict tracker of the builtin base's type with the items. A C method of
the builtin base found on the class (`keys`, `__setitem__`, `update`; reached directly,
through `super()`, through an operator such as `|=`, or called unbound, `dict.keys(obj)`) is
bound to the object by `builtin_base_method` and runs on the items; the object-protocol
slots (`len`, `in`, `[]`, iteration, truth) go to the class's Python dunder when it defines
one, else to the items. On a subclass that overrides item access in Python, OrderedDict's
`update`/`__init__`/`|=` put each item through `self[k] = v` (traced so), and its `pop`/
`popitem`/`setdefault` break (they call the class's item access in CPython's own order).
`cls(...)` makes it as `type.__call__` does (`vars/construction.py`): `dict.__new__` gives
the empty object, then the class's `__init__` is traced (a dataclass `__init__` and its
`__post_init__` included); the base's own `__init__` is `update`.

Returned or live at a graph break, it is rebuilt without running the class's code again
(its effects were traced): `cls.__new__(cls)`, each item put by the builtin base's own
`__setitem__` (never a Python override) in the trace's order, then the instance `__dict__`
in the trace's order (`_new_dict_object`). Its views and iterators are rebuilt over that
object. A method of the base not modelled here (`copy` of an OrderedDict, which calls the
class, `__reduce__`, comparisons) is a graph break.
"""
from __future__ import annotations

import collections
import types

from .base import VariableTracker
from .class_lookup import class_lookup
from .constant import ConstantVariable
from .container_subclass import BaseContainerMethodVariable
from .containers import DictVariable
from .dict_keys import key_tracker, reconstruct_map
from .method_table import dispatch, row
from .objects import NewObjectVariable
from .containers import _as_mapping

_DICT_BASES = (collections.OrderedDict, dict)
_HEAP_TYPE = 1 << 9  # Py_TPFLAGS_HEAPTYPE: a class made by a class statement
_VIEW_METHODS = ("keys", "values", "items", "__iter__", "__reversed__")
# what OrderedDict's C methods call on a subclass instead of its own item access
_ODICT_ITEM_DUNDERS = ("__setitem__", "__getitem__", "__delitem__", "__contains__")


def dict_base(cls: type):
    """The builtin dict class (`OrderedDict` or `dict`) a user class extends, or None when it
    extends neither, or also another C class (`defaultdict`, ...)."""
    if not isinstance(cls, type) or not issubclass(cls, dict) or cls in _DICT_BASES:
        return None
    for klass in cls.__mro__:
        if klass is not object and klass not in _DICT_BASES and not klass.__flags__ & _HEAP_TYPE:
            return None
    return collections.OrderedDict if issubclass(cls, collections.OrderedDict) else dict


def dict_instance_reason(cls: type) -> str | None:
    """None when instances of dict subclass `cls` are modelled here; else why not."""
    meta = type(cls)
    if meta is not type and any(not k.__flags__ & _HEAP_TYPE for k in meta.__mro__[:-2]):
        return f"its metaclass {meta.__qualname__} is not written in Python"
    for hook in ("__setattr__", "__delattr__"):
        fn = class_lookup(cls, hook)[1]
        if fn is not getattr(object, hook) and not isinstance(fn, types.FunctionType):
            return f"its {hook} is not written in Python"
    for klass in cls.__mro__:
        if klass.__flags__ & _HEAP_TYPE and klass.__dict__.get("__slots__", ()):
            return f"{klass.__qualname__} defines __slots__"
    return None


def new_dict_object(cls: type) -> "DictObjectVariable":
    """`dict.__new__(cls)`: an empty instance of dict subclass `cls` (`dict_base(cls)` is set)."""
    return DictObjectVariable(dict.__new__(cls), dict_base(cls))


def _python_override(cls: type, name: str) -> bool:
    """Whether `cls` gets `name` from a class written in Python (not the builtin base)."""
    return isinstance(class_lookup(cls, name)[1], types.FunctionType)


class DictPartVariable(DictVariable):
    """The items of a `DictObjectVariable` (`owner`), as a dict of the builtin base's type.
    Views and iterators over it stand for views and iterators of the owner."""

    __slots__ = ("owner",)

    def __init__(self, owner: "DictObjectVariable", base: type):
        super().__init__({}, None, base)
        self.owner = owner

    def is_python_constant(self) -> bool:
        return False

    def missing(self, tx, key) -> VariableTracker:
        """`dict.__getitem__` of a missing key calls the class's Python `__missing__`."""
        fn = class_lookup(self.owner.python_type(), "__missing__")[1]
        if isinstance(fn, types.FunctionType):
            return tx.wrap(fn, None).call_function(tx, [self.owner, ConstantVariable(key)], {})
        return super().missing(tx, key)

    def reconstruct(self, cg) -> None:
        cls = self.owner.python_type()
        if any(_python_override(cls, name) for name in _VIEW_METHODS):
            cg.tx.unsupported(f"a view or iterator of {self.owner.describe()}, whose class overrides keys/"
                              "values/items/__iter__/__reversed__ (the rebuilt object's method would differ)",
                              category="unsupported output")
        cg.reconstruct(self.owner)

    def describe(self) -> str:
        return f"the items of {self.owner.describe()}"


def _through_items(obj) -> bool:
    """Whether OrderedDict's C methods on `obj` call its class's item access (written in Python)."""
    return obj.dict_part.dict_type is not dict and any(obj._overrides(n) for n in _ODICT_ITEM_DUNDERS)


def _base_update(tx, obj, name, args, kwargs) -> VariableTracker:
    """The base's `update` (also its `__init__`)."""
    if len(args) > 1:
        tx.raise_user_error(TypeError(f"{name.strip('_')} expected at most 1 argument, got {len(args)}"))
    if _through_items(obj):  # OrderedDict's update puts each item by `self[k] = v`
        obj._update_by_setitem(tx, args, kwargs)
    elif args or kwargs:
        obj.dict_part.call_method(tx, "update", args, kwargs)
    return ConstantVariable(None)


def _base_ior(tx, obj, name, args, kwargs) -> VariableTracker:
    _base_update(tx, obj, name, args, kwargs)
    return obj


def _base_item_access(tx, obj, name, args, kwargs) -> VariableTracker:
    tx.unsupported(f"OrderedDict.{name}() of {obj.describe()}, whose class overrides item access in "
                   "Python (OrderedDict calls it)", category="unsupported call")


def _base_copy(tx, obj, name, args, kwargs) -> VariableTracker:
    if obj.dict_part.dict_type is not dict:
        tx.unsupported(f"OrderedDict.copy() of {obj.describe()} (it calls the class)", category="unsupported call")
    return DictVariable(obj.dict_part.items)


# the base's C methods that are not the items' own (the rest run on the items, `dict_part`)
_BASE_METHODS = {
    "__init__": row(_base_update),
    "update": row(_base_update),
    "__ior__": row(_base_ior),
    **dict.fromkeys(("pop", "popitem", "setdefault"),
                    row(_base_item_access, when=lambda obj, args, kwargs: _through_items(obj))),
    "copy": row(_base_copy),
}


class DictObjectVariable(NewObjectVariable):
    """An instance of a user subclass of dict/OrderedDict made in the trace (module docstring)."""

    __slots__ = ("dict_part",)

    def __init__(self, value, base: type):
        super().__init__(value)
        self.dict_part = DictPartVariable(self, base)

    def builtin_base_method(self, tx, attr):
        base = getattr(attr, "__objclass__", None)
        if base in _DICT_BASES and isinstance(self.value, base):
            return DictBaseMethodVariable(attr, self)
        return None

    def call_base(self, tx, attr, args, kwargs) -> VariableTracker:
        """`attr(self, *args, **kwargs)` for a C method `attr` of the builtin base."""
        name = attr.__name__
        result = dispatch(tx, self, _BASE_METHODS, name, args, kwargs)
        if result is not None:
            return result
        part = self.dict_part
        result = part.call_method(tx, name, args, kwargs)
        return self if result is part else result

    def _update_by_setitem(self, tx, args, kwargs) -> None:
        """`MutableMapping.update` (OrderedDict's `update`/`__init__` of a subclass): each
        item of the argument, then each keyword, put by `self[key] = value`."""
        items = [(key_tracker(k), v) for k, v in (_as_mapping(tx, args[0]) if args else {}).items()]
        items += [(ConstantVariable(k), v) for k, v in kwargs.items()]
        for key, value in items:
            self.setitem_impl(tx, key, value)

    # ---- object-protocol slots: the class's Python dunder, else the items ---------------
    def _overrides(self, name: str) -> bool:
        return _python_override(type(self.value), name)

    def getitem_impl(self, tx, key) -> VariableTracker:
        if self._overrides("__getitem__"):
            return super().getitem_impl(tx, key)
        return self.dict_part.getitem_impl(tx, key)

    def setitem_impl(self, tx, key, value) -> None:
        if self._overrides("__setitem__"):
            super().setitem_impl(tx, key, value)
        else:
            self.dict_part.call_method(tx, "__setitem__", [key, value], {})

    def len_impl(self, tx) -> VariableTracker:
        if self._overrides("__len__"):
            return super().len_impl(tx)
        return self.dict_part.len_impl(tx)

    def contains_impl(self, tx, item) -> VariableTracker:
        if self._overrides("__contains__"):
            return super().contains_impl(tx, item)
        return self.dict_part.contains_impl(tx, item)

    def iterate(self, tx):
        if self._overrides("__iter__"):
            return super().iterate(tx)
        return self.dict_part.iterate(tx)

    def reverse_iterate(self, tx):
        if self._overrides("__reversed__"):
            return self.call_method(tx, "__reversed__", [], {})
        return self.dict_part.reverse_iterate(tx)

    def truth(self, tx) -> bool:
        if self._overrides("__bool__") or self._overrides("__len__"):
            return super().truth(tx)
        return self.dict_part.truth(tx)

    def as_kwargs(self, tx) -> dict:
        """`**obj` as CPython's dict merge does it: the dict's own items when the class keeps
        dict's `__iter__`, else `obj[k]` for each `k` of `obj.keys()` (OrderedDict subclasses
        such as transformers' ModelOutput: their `__getitem__` runs)."""
        if type(self.value).__iter__ is dict.__iter__:
            return self.dict_part.as_kwargs(tx)
        kwargs = {}
        for key in self.call_method(tx, "keys", [], {}).unpack(tx):
            if not key.is_python_constant() or type(key.as_python_constant()) is not str:
                tx.raise_user_error(TypeError("keywords must be strings"))
            kwargs[key.as_python_constant()] = self.call_method(tx, "__getitem__", [key], {})
        return kwargs

    def children(self):
        return [*super().children(), self.dict_part]

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(_new_dict_object)
        cg.load_const(type(self.value))
        cg.load_const(self.dict_part.dict_type)
        reconstruct_map(cg, self.dict_part.items)
        self.load_instance_dict(cg)
        cg.call(5)

    def describe(self) -> str:
        return f"new object of type {type(self.value).__qualname__}"


def _new_dict_object(cls, base, items, values, names):
    """Residual helper: an instance of dict subclass `cls` with `items` (put by the builtin
    base's own `__setitem__`, in order) and instance attributes `names` = `values`."""
    obj = cls.__new__(cls)
    setitem = base.__setitem__
    for k, v in items.items():
        setitem(obj, k, v)
    obj.__dict__.update(zip(names, values))
    return obj


class DictBaseMethodVariable(BaseContainerMethodVariable):
    """A C method of the builtin dict base (`OrderedDict.keys`, `dict.__setitem__`) bound
    to a `DictObjectVariable`; rebuilt as `types.MethodType(method, <obj>)`."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs):
        return self.obj.call_base(tx, self.method, args, kwargs)
