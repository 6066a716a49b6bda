"""Live dict views: `d.keys()`, `d.values()`, `d.items()` and `view.mapping`.

A view holds the tracker of its dict (`DictVariable`), never a copy, so a view taken
before the dict changes sees the change, like CPython's. Its kind's real type is its
`python_type` (`dict_keys`, `odict_values`, ...). Keys and items views are set-like:
`==`, `<`..., `& | - ^` with sets, views or any iterable give what eager gives (a
`set` for the operators). Iterating a view is a live dict iterator
(`HashedIteratorVariable`, Note [Live iterators] in vars/iterators.py). At a graph break a
view made during tracing is rebuilt as `<dict>.keys()` on the rebuilt (same) dict.
"""
from __future__ import annotations

import operator

from .factory import provides
from .mapping_proxy import MappingProxyVariable
from .base import MethodOfVariable, VariableTracker
from .constant import ConstantVariable
from .containers import DictVariable, SetVariable, TupleVariable
from .dict_keys import has_tracker_keys, key_tracker
from .iterators import HashedIteratorVariable, iterator_of
from .method_table import dispatch, no_args, row

_SET_OPERATORS = {operator.and_: "&", operator.or_: "|", operator.sub: "-", operator.xor: "^"}
_ORDERINGS = {operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">="}


def _set_like_with_one(view, args, kwargs) -> bool:
    """A call of a keys or items view's method taking one set-like operand."""
    return len(args) == 1 and view.kind != "values"


# a view's methods (`in` and `isdisjoint` of keys and items views only)
_VIEW_METHODS = {
    "__len__": row(lambda tx, view, name, args, kwargs: ConstantVariable(len(view.dict_vt.items)), when=no_args),
    "__iter__": row(lambda tx, view, name, args, kwargs: view.iterate(tx), when=no_args),
    "__reversed__": row(lambda tx, view, name, args, kwargs: view.reverse_iterate(tx), when=no_args),
    "__contains__": row(lambda tx, view, name, args, kwargs: ConstantVariable(view._contains(tx, args[0])),
                        when=_set_like_with_one),
    "isdisjoint": row(lambda tx, view, name, args, kwargs: ConstantVariable(
        _as_set(tx, view).isdisjoint(_as_set(tx, args[0]))), when=_set_like_with_one),
}


class DictViewVariable(VariableTracker):
    """`dict_vt.keys()` / `.values()` / `.items()` (`kind`), live over `dict_vt`."""

    __slots__ = ("dict_vt", "kind")
    rebuilt_as_new_object = True

    def __init__(self, dict_vt: DictVariable, kind: str, source=None):
        super().__init__(source)
        self.dict_vt = dict_vt
        self.kind = kind

    def python_type(self) -> type:
        return type(getattr(self.dict_vt.dict_type(), self.kind)())

    def describe(self) -> str:
        return f"{self.dict_vt.describe()}.{self.kind}()"

    def unpack(self, tx) -> list:
        items = self.dict_vt.items
        if self.kind == "keys":
            return [key_tracker(k) for k in items]
        if self.kind == "values":
            return list(items.values())
        return [TupleVariable([key_tracker(k), v]) for k, v in items.items()]

    def iterate(self, tx):
        return HashedIteratorVariable(self.dict_vt, self.kind)

    def reverse_iterate(self, tx):
        return HashedIteratorVariable(self.dict_vt, self.kind, reverse=True)

    def truth(self, tx) -> bool:
        return bool(self.dict_vt.items)

    def contains_impl(self, tx, item) -> VariableTracker:
        if self.kind == "values":  # compares by equality, as a scan of the values
            return super().contains_impl(tx, item)
        return self.call_method(tx, "__contains__", [item], {})

    def hasattr_impl(self, tx, name: str) -> bool:
        return hasattr(self.python_type(), name)

    def children(self):
        return (self.dict_vt,)

    def binary_op_impl(self, tx, op, other, reflected: bool = False):
        """Set operators, orderings and `==` with a view operand (`d.keys() | {...}`)."""
        return view_operator(tx, op, other, self) if reflected else view_operator(tx, op, self, other)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name == "mapping":
            return MappingProxyVariable(self.dict_vt)
        if name in _VIEW_METHODS and hasattr(self.python_type(), name):
            return MethodOfVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        result = dispatch(tx, self, _VIEW_METHODS, name, args, kwargs)
        if result is None:
            tx.unsupported(f"method {name}() of {self.describe()}", category="unsupported call")
        return result

    def _contains(self, tx, item) -> bool:
        items = self.dict_vt.items
        if self.kind == "keys":
            return item.key_impl(tx) in items
        if isinstance(item, TupleVariable) and type(item) is TupleVariable:
            pair = item.items
        elif isinstance(item, ConstantVariable) and type(item.value) is tuple:
            pair = [ConstantVariable(v) for v in item.value]
        else:
            return False  # CPython: only a 2-tuple can be in an items view
        if len(pair) != 2:
            return False
        key = pair[0].key_impl(tx)
        if key not in items:
            return False
        value, wanted = items[key], pair[1]
        if value is wanted:
            return True
        if value.is_python_constant() and wanted.is_python_constant():
            return bool(value.as_python_constant() == wanted.as_python_constant())
        tx.unsupported(f"`in` on {self.describe()} compares {value.describe()} with {wanted.describe()}",
                       category="data-dependent")

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        cg.reconstruct(self.dict_vt)
        cg.call_method0(self.kind)


def _set_like(vt) -> bool:
    """Operands that a keys/items view compares with (sets and set-like views)."""
    if isinstance(vt, DictViewVariable):
        return vt.kind != "values"
    return isinstance(vt, SetVariable) or (isinstance(vt, ConstantVariable) and type(vt.value) is frozenset)


def _as_set(tx, vt) -> set:
    """The elements of an operand of a view's set operation, as Python constants."""
    if isinstance(vt, DictViewVariable) and vt.kind == "keys" and not has_tracker_keys(vt.dict_vt.items):
        return set(vt.dict_vt.items)
    items = vt.unpack(tx) if isinstance(vt, (DictViewVariable, SetVariable)) else iterator_of(tx, vt).unpack(tx)
    for item in items:
        if not item.is_python_constant():
            tx.unsupported(f"a set operation on {vt.describe()}, whose elements are not Python constants",
                           category="unsupported operator")
    return {item.as_python_constant() for item in items}


def view_operator(tx, fn, a, b) -> VariableTracker:
    """A binary operator with a dict view operand (`d.keys() | {...}`, `d.items() == ...`)."""
    if fn in (operator.eq, operator.ne):
        if not (_set_like(a) and _set_like(b)):  # values views (and other kinds) compare by identity
            return ConstantVariable((a is b) == (fn is operator.eq))
        return ConstantVariable(fn(_as_set(tx, a), _as_set(tx, b)))
    values_view = any(isinstance(x, DictViewVariable) and x.kind == "values" for x in (a, b))
    if fn in _ORDERINGS and _set_like(a) and _set_like(b):
        return ConstantVariable(fn(_as_set(tx, a), _as_set(tx, b)))
    if fn in _SET_OPERATORS and not values_view:
        result = fn(_as_set(tx, a), _as_set(tx, b))
        return SetVariable([ConstantVariable(v) for v in result], tx=tx)
    names = f"'{a.python_type().__name__}' and '{b.python_type().__name__}'"
    if fn in _ORDERINGS:
        tx.raise_user_error(TypeError(f"'{_ORDERINGS[fn]}' not supported between instances of {names}"))
    if fn in _SET_OPERATORS:
        tx.raise_user_error(TypeError(f"unsupported operand type(s) for {_SET_OPERATORS[fn]}: {names}"))
    tx.unsupported(f"operator {fn.__name__} on {a.describe()} and {b.describe()}", category="unsupported operator")


provides("dict_view")(DictViewVariable)
