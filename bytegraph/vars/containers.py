"""Python containers: tuples, lists, torch.Size, namedtuples, dicts and sets.

Every container is mutated in place on its tracker, so every alias sees the change.
A container read from the caller's world (it has a source) is guarded by its state
when read (type and length, dict keys) and, when mutated, is recorded in the
side-effect log (`tx.output.side_effects`, O(1) per write) so the residual code
replays its final state on the real object, keeping its identity.
"""
from __future__ import annotations

import collections
import operator

import torch

from ..guards.sources import AttrSource
from . import builtin_methods
from .class_lookup import MISSING, class_lookup
from .factory import provides
from .base import MethodOfVariable, VariableTracker
from .constant import ConstantVariable, is_constant_value
from .dict_keys import RegistryIdKey, TrackerKey, has_tracker_keys, key_tracker, load_key, reconstruct_map
from . import factory
from .sorting import sort_in_place
from .object_protocol import items_equal
from .set_order import eager_order, has_tensor_members
from .method_table import dispatch, mutator, no_args, no_arguments, no_kwargs, one_arg, row

# the methods that change the receiver, from the table of builtin methods; OrderedDict's
# own `move_to_end` reorders it (a DictVariable models OrderedDicts too)
DICT_MUTATORS = builtin_methods.mutators(dict) | {"move_to_end"}
# the set methods that make a new set or a bool from any iterables (the dunder operators take sets)
_SET_QUERIES = builtin_methods.named_pure(set)
# the in-place operators a kind implements as a method of its own (`a |= b` is `a.__ior__(b)`)
_SET_INPLACE = {"__ior__": "update", "__iand__": "intersection_update", "__isub__": "difference_update",
                "__ixor__": "symmetric_difference_update"}


def _check_mutable(tx, vt, name: str) -> None:
    """`name()` is about to mutate `vt`: the mutation barrier (Note [Mutation barrier] in
    graph/side_effects.py); pre-existing containers go to the side-effect log."""
    tx.output.side_effects.mutate(vt)


def _replace_dict(d, new):
    """Residual helper: replay of a dict's writes, keeping its identity."""
    d.clear()
    d.update(new)


def _replace_set(s, new):
    """Residual helper: replay of a set's writes, keeping its identity."""
    s.clear()
    s.update(new)


def _mutating_keys(tx, vt, name: str, keys_change: bool) -> None:
    """`name()` is about to change dict or set `vt` (the barrier), and its set of keys too if
    `keys_change` (live iterators over it check `keys_version`)."""
    _check_mutable(tx, vt, name)
    if keys_change:
        vt.keys_version += 1


def unmodelled_method(tx, vt, name: str, args, kwargs) -> VariableTracker:
    """Method `name` of container `vt` that its kind does not model, as the table of builtin
    methods (vars/builtin_methods.py) classifies it: a method returning a live iterator goes to
    the iterator slot; a pure one on a container of immutable constants, with such arguments,
    is folded by calling the real method (its result is a new object, as eager's); anything
    else breaks, naming the method and its classification."""
    cls = vt.python_type()
    method = builtin_methods.lookup(cls, name)
    if method is None:
        tx.unsupported(f"method {name}() of {vt.describe()}", category="unsupported call")
    if method.returns_view and method.slot and not args and not kwargs:
        return getattr(vt, method.slot)(tx)
    if method.foldable and all(_flat_constant(v) for v in (vt, *args, *kwargs.values())):
        return factory.fold_call(tx, getattr(vt.as_python_constant(), name), args, kwargs,
                                 f"{method.owner.__name__}.{name}")
    tx.unsupported(builtin_methods.unmodelled_reason(cls, name, vt.describe()), category="unsupported call")


def _flat_constant(vt) -> bool:
    """Whether `vt` is a Python constant whose real value holds no mutable object of the trace
    (folding copies it): an immutable constant, or a list, set or dict of them."""
    if not vt.is_python_constant():
        return False
    value = vt.as_python_constant()
    if is_constant_value(value):
        return True
    if isinstance(value, dict):
        return all(is_constant_value(v) for v in value.values())
    return type(value) in (list, set) and all(is_constant_value(v) for v in value)


def _search(tx, seq, name, args, kwargs) -> VariableTracker:
    return _index_or_count(tx, seq, name, args[0], *_bounds(tx, args[1:]))


def _length(tx, seq, name, args, kwargs) -> VariableTracker:
    return ConstantVariable(len(seq.items))


def _contains(tx, vt, name, args, kwargs) -> VariableTracker:
    return vt.contains_impl(tx, args[0])


def _getitem(tx, vt, name, args, kwargs) -> VariableTracker:
    return vt.getitem_impl(tx, args[0])


def _iter(tx, vt, name, args, kwargs) -> VariableTracker:
    return vt.iterate(tx)


def _reversed(tx, vt, name, args, kwargs) -> VariableTracker:
    return vt.reverse_iterate(tx)


class BaseListVariable(VariableTracker):
    """Shared behaviour of tuple-like and list-like trackers (`items` is a Python list)."""

    __slots__ = ("items",)
    build_opcode = "BUILD_TUPLE"
    rebuilt_as_new_object = True
    METHODS = {
        "count": row(_search, when=lambda seq, args, kwargs: len(args) == 1 and not kwargs),
        "index": row(_search, when=lambda seq, args, kwargs: 1 <= len(args) <= 3 and not kwargs),
        "__len__": row(_length),
        "__contains__": row(_contains, when=one_arg),
        "__getitem__": row(_getitem, when=one_arg),
        "__iter__": row(_iter, when=no_args),
        "__reversed__": row(_reversed, when=lambda seq, args, kwargs: not args and issubclass(seq.python_type(), list)),
    }

    def __init__(self, items, source=None):
        super().__init__(source)
        self.items = list(items)

    def is_python_constant(self) -> bool:
        return all(i.is_python_constant() for i in self.items)

    def as_python_constant(self):
        return self.python_type()(i.as_python_constant() for i in self.items)

    def unpack(self, tx) -> list:
        return list(self.items)

    def truth(self, tx) -> bool:
        return bool(self.items)

    def len_impl(self, tx) -> VariableTracker:
        return ConstantVariable(len(self.items))

    def getitem_impl(self, tx, key) -> VariableTracker:
        if key.is_tensor:
            tx.unsupported("indexing a Python list with a tensor", category="data-dependent")
        index = key.as_python_constant()
        if isinstance(index, slice):
            return self.new_like(self.items[index])
        try:
            return self.items[index]
        except IndexError as e:
            tx.raise_user_error(e)
        except TypeError as e:
            tx.raise_user_error(e)

    def hasattr_impl(self, tx, name: str) -> bool:
        return hasattr(self.python_type(), name)

    def children(self):
        return self.items

    def sequence_items(self):
        return self.items

    def as_fx_arg(self, tx):
        items = [i.as_fx_arg(tx) for i in self.items]
        return list(items) if self.python_type() is list else tuple(items)

    def iterate(self, tx):
        return factory.sequence_iterator(self)

    def reverse_iterate(self, tx):
        """`reversed(seq)`: live over a list (Note [Live iterators])."""
        return factory.sequence_iterator(self, reverse=True)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if callable(getattr(self.python_type(), name, None)):
            return MethodOfVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        result = dispatch(tx, self, self.METHODS, name, args, kwargs)
        return result if result is not None else unmodelled_method(tx, self, name, args, kwargs)

    def builtin_base_method(self, tx, attr):
        """`list.index(l, x)`, `tuple.count(t, x)`: bound to this value."""
        name = builtin_methods.bound_name(self.python_type(), attr)
        return MethodOfVariable(self, name) if name is not None else None

    def new_like(self, items) -> "BaseListVariable":
        return type(self)(items)

    def binary_op_impl(self, tx, op, other, reflected: bool = False):
        """`+` of two sequences of one family (a list, a tuple, a deque: what `new_like`
        makes), `*` by a constant count, `==`/`!=` item by item."""
        if op is operator.add and not reflected and isinstance(other, BaseListVariable) and (
                issubclass(other.python_type(), self.python_type())
                or isinstance(self, TupleVariable) and isinstance(other, TupleVariable)):
            return self.new_like(self.items + other.items)
        if op is operator.mul and other.is_python_constant() and isinstance(other.as_python_constant(), int):
            return self.new_like(self.items * other.as_python_constant())
        if op in (operator.eq, operator.ne) and isinstance(other, BaseListVariable):
            same = len(self.items) == len(other.items) and _sequence_family(self.python_type()) is \
                _sequence_family(other.python_type()) and items_equal(tx, self.items, other.items)
            return ConstantVariable(same is (op is operator.eq))
        return None

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        for item in self.items:
            cg.reconstruct(item)
        cg.build(self.build_opcode, len(self.items))


class TupleVariable(BaseListVariable):
    __slots__ = ()

    def python_type(self) -> type:
        return tuple


class SizeVariable(TupleVariable):
    """`torch.Size`: a tuple of ints, constant under static shapes, else some symbolic
    (Note [Symbolic sizes] in graph/shapes.py): a graph op then gets a list of nodes."""

    __slots__ = ()
    rebuilt_as_new_object = False
    METHODS = {**TupleVariable.METHODS,
               "numel": row(lambda tx, size, name, args, kwargs: ConstantVariable(size.as_python_constant().numel()),
                            when=no_args)}

    def as_fx_arg(self, tx):
        if any(item.is_symbolic() for item in self.items):
            return [item.as_fx_arg(tx) for item in self.items]
        return torch.Size(self.as_python_constant())

    def python_type(self) -> type:
        return torch.Size

    def reconstruct(self, cg) -> None:
        if any(item.is_symbolic() for item in self.items):
            cg.push_callable_const(torch.Size)
            cg.reconstruct_items(self.items, "BUILD_TUPLE")
            cg.call(1)
            return
        cg.load_const(self.as_python_constant())


# what collections.namedtuple itself puts in the class (handled structurally here)
_NAMEDTUPLE_MACHINERY = frozenset({"_make", "_replace", "_asdict", "__repr__", "__getnewargs__", "__new__"})


def _replace(tx, nt, name, args, kwargs) -> VariableTracker:
    return NamedTupleVariable([kwargs.get(f, item) for f, item in zip(nt._fields(), nt.items)], nt.tuple_cls)


def _asdict(tx, nt, name, args, kwargs) -> VariableTracker:
    return DictVariable(dict(zip(nt._fields(), nt.items)))


class NamedTupleVariable(TupleVariable):
    """A namedtuple or a torch.return_types structseq; fields readable by name."""

    __slots__ = ("tuple_cls",)
    METHODS = {**TupleVariable.METHODS,
               "_replace": row(_replace, when=lambda nt, args, kwargs: not args and set(kwargs) <= set(nt._fields())),
               "_asdict": row(_asdict, when=no_arguments)}

    def __init__(self, items, tuple_cls, source=None):
        super().__init__(items, source)
        self.tuple_cls = tuple_cls

    def python_type(self) -> type:
        return self.tuple_cls

    def new_like(self, items):
        return TupleVariable(items)

    def as_python_constant(self):
        return self.tuple_cls(*[i.as_python_constant() for i in self.items])

    def _fields(self) -> tuple:
        return getattr(self.tuple_cls, "_fields", None) or self.tuple_cls.__match_args__

    def var_getattr(self, tx, name: str) -> VariableTracker:
        fields = self._fields()
        if name in fields:
            return self.items[list(fields).index(name)]
        if name == "_fields":
            return ConstantVariable(tuple(fields))
        owner, attr = class_lookup(self.tuple_cls, name)
        if attr is not MISSING and owner not in (tuple, object) and name not in _NAMEDTUPLE_MACHINERY:
            src = AttrSource(self.source, name) if self.source is not None else None
            return factory.bind_class_attribute(tx, self, owner, name, attr, src)  # methods, properties
        return super().var_getattr(tx, name)

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            super().reconstruct(cg)
            return
        cg.push_callable_const(self.tuple_cls)
        for item in self.items:
            cg.reconstruct(item)
        if hasattr(self.tuple_cls, "_fields"):
            cg.call(len(self.items))
        else:  # a structseq (torch.return_types.*) takes one sequence
            cg.build("BUILD_TUPLE", len(self.items))
            cg.call(1)



def _list_append(tx, lst, name, args, kwargs) -> VariableTracker:
    items = lst.items
    items.append(args[0])
    return ConstantVariable(None)


def _list_extend(tx, lst, name, args, kwargs) -> VariableTracker:
    items = lst.items
    items.extend(args[0].unpack(tx) if not isinstance(args[0], list) else args[0])
    return ConstantVariable(None)


def _list_iadd(tx, lst, name, args, kwargs) -> VariableTracker:
    _list_extend(tx, lst, name, args, kwargs)
    return lst


def _list_imul(tx, lst, name, args, kwargs) -> VariableTracker:
    items = lst.items
    items[:] = items * args[0].as_python_constant()
    return lst


def _list_insert(tx, lst, name, args, kwargs) -> VariableTracker:
    items = lst.items
    items.insert(args[0].as_python_constant(), args[1])
    return ConstantVariable(None)


def _list_pop(tx, lst, name, args, kwargs) -> VariableTracker:
    items = lst.items
    index = args[0].as_python_constant() if args else -1
    if not items:
        tx.raise_user_error(IndexError("pop from empty list"))
    return items.pop(index)


def _list_remove(tx, lst, name, args, kwargs) -> VariableTracker:
    items = lst.items
    target = args[0]
    for i, item in enumerate(items):
        if item is target or (item.is_python_constant() and target.is_python_constant()
                              and item.as_python_constant() == target.as_python_constant()):
            del items[i]
            break
        if not (item.is_python_constant() and target.is_python_constant()):
            tx.unsupported("list.remove() of a value the tracer cannot compare", category="unsupported call")
    else:
        tx.raise_user_error(ValueError("list.remove(x): x not in list"))
    return ConstantVariable(None)


def _list_clear(tx, lst, name, args, kwargs) -> VariableTracker:
    items = lst.items
    items.clear()
    return ConstantVariable(None)


def _list_reverse(tx, lst, name, args, kwargs) -> VariableTracker:
    items = lst.items
    items.reverse()
    return ConstantVariable(None)


def _list_sort(tx, lst, name, args, kwargs) -> VariableTracker:
    items = lst.items
    reverse = bool(kwargs.get("reverse", ConstantVariable(False)).as_python_constant())
    key_fn = kwargs.get("key")
    keyed = [key_fn.call_function(tx, [i], {}) if key_fn is not None else i for i in items]
    if all(k.is_python_constant() for k in keyed):
        keys = [k.as_python_constant() for k in keyed]
        order = sorted(range(len(items)), key=keys.__getitem__, reverse=reverse)
        items[:] = [items[i] for i in order]
    else:
        sort_in_place(tx, items, keyed, reverse)
    return ConstantVariable(None)


def _list_setitem(tx, lst, name, args, kwargs) -> VariableTracker:
    items = lst.items
    key = args[0].as_python_constant()
    if isinstance(key, slice):
        items[key] = args[1].unpack(tx)
    else:
        items[key] = args[1]
    return ConstantVariable(None)


def _list_delitem(tx, lst, name, args, kwargs) -> VariableTracker:
    items = lst.items
    del items[args[0].as_python_constant()]
    return ConstantVariable(None)


class ListVariable(BaseListVariable):
    __slots__ = ()
    identity_tracked = True
    build_opcode = "BUILD_LIST"
    inplace_methods = frozenset({"__imul__"})
    METHODS = {
        **BaseListVariable.METHODS,
        "append": mutator(_list_append), "extend": mutator(_list_extend), "__iadd__": mutator(_list_iadd),
        "__imul__": mutator(_list_imul), "insert": mutator(_list_insert), "pop": mutator(_list_pop),
        "remove": mutator(_list_remove), "clear": mutator(_list_clear), "reverse": mutator(_list_reverse),
        "sort": mutator(_list_sort), "__setitem__": mutator(_list_setitem), "__delitem__": mutator(_list_delitem),
        "copy": row(lambda tx, lst, name, args, kwargs: ListVariable(list(lst.items)), when=no_args),
    }

    def python_type(self) -> type:
        return list

    def replay_records(self, cg) -> list:
        def push():  # src[:] = [items...]
            cg.reconstruct_items(self.items, "BUILD_LIST")
            self.source.reconstruct(cg)
            cg.load_const(slice(None))
        return [(push, cg.store_subscr)]


def _bounds(tx, args) -> list:
    """The constant `start`/`stop` arguments of `index()`."""
    if not all(a.is_python_constant() for a in args):
        tx.unsupported("index() with bounds that are not Python constants", category="data-dependent")
    return [a.as_python_constant() for a in args]


def _index_or_count(tx, seq, name: str, target, start=0, stop=None) -> VariableTracker:
    """`seq.index(target[, start[, stop]])` / `seq.count(target)`: identity first, then `==`
    on constants."""
    matches = []
    n = len(seq.items)
    first, last, _ = slice(start, stop).indices(n)
    for i, item in enumerate(seq.items):
        if not first <= i < last:
            continue
        if item is target:
            matches.append(i)
        elif item.is_python_constant() and target.is_python_constant():
            if item.as_python_constant() == target.as_python_constant():
                matches.append(i)
        else:
            tx.unsupported(f"{name}() compares {item.describe()} with {target.describe()} by value",
                           category="data-dependent")
        if matches and name == "index":
            return ConstantVariable(matches[0])
    if name == "count":
        return ConstantVariable(len(matches))
    if issubclass(seq.python_type(), tuple):
        tx.raise_user_error(ValueError("tuple.index(x): x not in tuple"))
    what = repr(target.as_python_constant()) if target.is_python_constant() else target.describe()
    tx.raise_user_error(ValueError(f"{what} is not in {seq.python_type().__name__}"))


def _dict_setitem(tx, d, name, args, kwargs) -> VariableTracker:
    items = d.items
    key = args[0].key_impl(tx)
    _mutating_keys(tx, d, name, key not in items)
    items[key] = args[1]
    return ConstantVariable(None)


def _dict_delitem(tx, d, name, args, kwargs) -> VariableTracker:
    items = d.items
    if args[0].key_impl(tx) not in items:
        missing_key_error(tx, d, args[0].key_impl(tx))
    _mutating_keys(tx, d, name, True)
    del items[args[0].key_impl(tx)]
    return ConstantVariable(None)


def _dict_pop(tx, d, name, args, kwargs) -> VariableTracker:
    items = d.items
    key = args[0].key_impl(tx)
    if key in items:
        _mutating_keys(tx, d, name, True)
        return items.pop(key)
    if len(args) > 1:
        return args[1]
    missing_key_error(tx, d, key)


def _dict_setdefault(tx, d, name, args, kwargs) -> VariableTracker:
    items = d.items
    key = args[0].key_impl(tx)
    if key in items:
        return items[key]
    _mutating_keys(tx, d, name, True)
    return items.setdefault(key, args[1] if len(args) > 1 else ConstantVariable(None))


def _dict_update(tx, d, name, args, kwargs) -> VariableTracker:
    items = d.items
    if len(args) > 1:
        tx.raise_user_error(TypeError(f"update expected at most 1 argument, got {len(args)}"))
    new = {}
    for other in args:
        new.update(_as_mapping(tx, other))
    new.update(kwargs)
    _mutating_keys(tx, d, name, not new.keys() <= items.keys())
    items.update(new)
    return ConstantVariable(None)


def _dict_ior(tx, d, name, args, kwargs) -> VariableTracker:
    _dict_update(tx, d, name, args, kwargs)
    return d


def _dict_clear(tx, d, name, args, kwargs) -> VariableTracker:
    items = d.items
    _mutating_keys(tx, d, name, bool(items))
    items.clear()
    return ConstantVariable(None)


def _dict_view(tx, d, name, args, kwargs) -> VariableTracker:
    return factory.dict_view(d, name)


def _dict_get(tx, d, name, args, kwargs) -> VariableTracker:
    key = args[0].key_impl(tx)
    default = args[1] if len(args) > 1 else ConstantVariable(None)
    return d.items.get(key, default)


# The dict methods a DictVariable models; those of DICT_MUTATORS pass the barrier only when
# they change the dict (`_mutating_keys`), so they are ordinary rows.
_DICT_METHODS = {
    "__setitem__": row(_dict_setitem),
    "__delitem__": row(_dict_delitem),
    "pop": row(_dict_pop),
    "popitem": row(lambda tx, d, name, args, kwargs: d._popitem(tx, args, kwargs)),
    "move_to_end": row(lambda tx, d, name, args, kwargs: d._move_to_end(tx, args, kwargs),
                       when=lambda d, args, kwargs: d.dict_type is not dict),
    "setdefault": row(_dict_setdefault),
    "update": row(_dict_update),
    "__ior__": row(_dict_ior),
    "clear": row(_dict_clear),
    **dict.fromkeys(("keys", "values", "items"), row(_dict_view, when=no_arguments)),
    "get": row(_dict_get),
    "__contains__": row(lambda tx, d, name, args, kwargs: ConstantVariable(args[0].key_impl(tx) in d.items)),
    "__len__": row(_length),
    "__iter__": row(_iter, when=no_args),
    "__reversed__": row(_reversed, when=no_args),
    "copy": row(lambda tx, d, name, args, kwargs: d.copy()),
    "__getitem__": row(_getitem),
}


class DictVariable(VariableTracker):
    """A dict or OrderedDict (defaultdicts: vars/keyed_dicts.py) with constant keys or tensor
    keys (`TrackerKey`, vars/dict_keys.py).

    `keys_version` counts the changes of the key set (or of the order), so that live
    iterators notice them (Note [Live iterators] in vars/iterators.py)."""

    __slots__ = ("items", "dict_type", "keys_version")
    identity_tracked = True
    rebuilt_as_new_object = True
    fully_known = True  # `items` is the whole dict (not a dict known key by key, vars/keyed_dicts.py)
    inplace_methods = frozenset({"__ior__"})
    #: `==` compares the items (a Counter's missing keys count as zero: not plain)
    plain_equality = True
    METHODS = _DICT_METHODS

    def __init__(self, items: dict, source=None, dict_type=dict):
        super().__init__(source)
        self.items = dict(items)
        self.dict_type = dict_type
        self.keys_version = 0

    def python_type(self) -> type:
        return self.dict_type

    @property
    def order_sensitive(self) -> bool:
        """Whether `==` between two of this kind also compares the order (OrderedDict)."""
        return issubclass(self.dict_type, collections.OrderedDict)

    def binary_op_impl(self, tx, op, other, reflected: bool = False):
        """`d1 | d2` of two dicts and `==`/`!=` by keys and values (and order, for two
        OrderedDicts)."""
        if op is operator.or_ and not reflected and isinstance(other, DictVariable):
            return self.merged(other)
        if op in (operator.eq, operator.ne) and isinstance(other, DictVariable):
            a, b = (other, self) if reflected else (self, other)
            if not (a.plain_equality and b.plain_equality):
                tx.unsupported(f"comparing {a.describe()} with {b.describe()} holding values that are not constants",
                               category="unsupported operator")
            same = a.items.keys() == b.items.keys() and items_equal(tx, a.items.values(), [b.items[k] for k in a.items])
            if a.order_sensitive and b.order_sensitive:
                same = same and list(a.items) == list(b.items)
            return ConstantVariable(same is (op is operator.eq))
        return None

    def merged(self, other: "DictVariable") -> "DictVariable":
        """`self | other` for two plain or ordered dicts (an OrderedDict operand makes one)."""
        kind = collections.OrderedDict if self.order_sensitive or other.order_sensitive else dict
        return DictVariable({**self.items, **other.items}, dict_type=kind)

    def is_python_constant(self) -> bool:
        items = self.items  # one read: a subclass may compute it (InstanceDictVariable)
        return all(v.is_python_constant() for v in items.values()) and not has_tracker_keys(items)

    def as_python_constant(self):
        return self.dict_type((k, v.as_python_constant()) for k, v in self.items.items())

    def unpack(self, tx) -> list:
        return [key_tracker(k) for k in self.items]

    def ordered_keys(self) -> list:
        return list(self.items)

    def iterate(self, tx):
        return factory.hashed_iterator(self)

    def reverse_iterate(self, tx):
        return factory.hashed_iterator(self, reverse=True)

    def truth(self, tx) -> bool:
        return bool(self.items)

    def len_impl(self, tx) -> VariableTracker:
        return ConstantVariable(len(self.items))

    def contains_impl(self, tx, item) -> VariableTracker:
        return self.call_method(tx, "__contains__", [item], {})

    def getitem_impl(self, tx, key_vt) -> VariableTracker:
        key = key_vt.key_impl(tx)
        if key not in self.items:
            return self.missing(tx, key)
        return self.items[key]

    def missing(self, tx, key) -> VariableTracker:
        """`self[key]` of a key it does not hold (a defaultdict inserts its default)."""
        missing_key_error(tx, self, key)

    def hasattr_impl(self, tx, name: str) -> bool:
        return hasattr(self.python_type(), name)

    def children(self):
        if has_tracker_keys(self.items):
            return [*(k.vt for k in self.items if type(k) is TrackerKey), *self.items.values()]
        return self.items.values()

    def as_fx_arg(self, tx):
        if has_tracker_keys(self.items):
            tx.unsupported(f"passing {self.describe()}, a dict with tensor keys, to a torch op",
                           category="unsupported dict key")
        return {k: v.as_fx_arg(tx) for k, v in self.items.items()}

    def as_kwargs(self, tx) -> dict:
        return dict(self.items)

    def replay_records(self, cg) -> list:
        def push_new():
            reconstruct_map(cg, self.items)
        return [cg.helper_effect(_replace_dict, self.source, push_new)]

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if callable(getattr(self.dict_type, name, None)):
            return MethodOfVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        self.items  # every method reads them first: a kind computing them (InstanceDictVariable) guards them here
        result = dispatch(tx, self, self.METHODS, name, args, kwargs)
        return result if result is not None else unmodelled_method(tx, self, name, args, kwargs)

    def builtin_base_method(self, tx, attr):
        """`dict.get(d, k)`, `dict.__contains__(d, k)`: bound to this value."""
        name = builtin_methods.bound_name(self.python_type(), attr)
        return MethodOfVariable(self, name) if name is not None else None

    def _popitem(self, tx, args, kwargs) -> VariableTracker:
        last = True
        if self.dict_type is not dict:
            flag = args[0] if args else kwargs.get("last", ConstantVariable(True))
            last = bool(flag.as_python_constant())
        elif args or kwargs:
            tx.unsupported("dict.popitem() with arguments", category="unsupported call")
        if not self.items:
            tx.raise_user_error(KeyError("popitem(): dictionary is empty" if self.dict_type is dict
                                         else "dictionary is empty"))
        key = next(reversed(self.items)) if last else next(iter(self.items))
        _mutating_keys(tx, self, "popitem", True)
        return TupleVariable([key_tracker(key), self.items.pop(key)])

    def _move_to_end(self, tx, args, kwargs) -> VariableTracker:
        key = args[0].key_impl(tx)
        flag = args[1] if len(args) > 1 else kwargs.get("last", ConstantVariable(True))
        if key not in self.items:
            tx.raise_user_error(KeyError(key))
        _mutating_keys(tx, self, "move_to_end", True)
        items = self.items
        if flag.as_python_constant():
            items[key] = items.pop(key)
        else:
            rest = dict(items)
            items.clear()
            items[key] = rest.pop(key)
            items.update(rest)
        return ConstantVariable(None)

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        rebuilt_from_dict = self.dict_type in _REBUILT_FROM_DICT
        if self.dict_type is not dict and not rebuilt_from_dict:
            cg.tx.unsupported(f"returning a new {self.dict_type.__name__}", category="unsupported output")
        if rebuilt_from_dict:  # OrderedDict({...}), Counter({...}) keep order and counts
            cg.push_callable_const(self.dict_type)
        reconstruct_map(cg, self.items)
        if rebuilt_from_dict:
            cg.call(1)

    def copy(self) -> "DictVariable":
        """`self.copy()`: a new dict of the same type and items."""
        return DictVariable(self.items, dict_type=self.dict_type)


# dict subclasses whose constructor, given a plain dict, makes an equal object in its order
_REBUILT_FROM_DICT = (collections.OrderedDict, collections.Counter)


def _members(tx, vt) -> dict:
    """The members of iterable `vt` as {key: tracker}, in iteration order (set members:
    tensors break)."""
    return {_set_member(tx, item): item for item in vt.unpack(tx)}

def missing_key_error(tx, dict_vt, key):
    """The KeyError of looking up `key` that `dict_vt` does not hold (a tensor key's message
    would print the tensor's values: a break)."""
    if type(key) is TrackerKey:
        tx.unsupported(f"KeyError: {key.vt.describe()} is not a key of {dict_vt.describe()} (its message "
                       "prints the tensor)", category="unsupported dict key")
    tx.raise_user_error(KeyError(key))


def _as_mapping(tx, vt) -> dict:
    if isinstance(vt, DictVariable) and vt.fully_known:
        return vt.items
    if hasattr(vt.python_type(), "keys"):
        # a mapping (ChainMap, a user Mapping): its keys (as `Mapping.keys()` iterates), then [key]
        keys = vt.iterate(tx).unpack(tx)
        return {key.key_impl(tx): vt.getitem_impl(tx, key) for key in keys}
    pairs = {}
    for pair in vt.unpack(tx):
        k, v = pair.unpack(tx)
        pairs[k.key_impl(tx)] = v
    return pairs


def _set_member(tx, vt):
    """The hashable value of set member `vt`: a constant, or a tensor's `TrackerKey` (Note
    [Sets of tensors] in vars/set_order.py); other objects hashed by identity break."""
    key = vt.key_impl(tx)
    if type(key) is TrackerKey and not vt.is_tensor:
        tx.unsupported(f"a set holding {vt.describe()} (sets of objects hashed by identity other than tensors "
                       "are not traced)", category="unsupported dict key")
    return key


def _no_tensor_algebra(tx, s, name: str, others) -> None:
    """Set algebra on members that are tensors is not modelled (Note [Sets of tensors])."""
    if has_tensor_members(s.items) or any(has_tensor_members(other) for other in others):
        tx.unsupported(f"{name}() of sets holding tensors (set algebra on sets of tensors is not traced)",
                       category="unsupported call")


def _by_id(s, vt) -> bool:
    """Whether set `s` keeps member `vt` by its tracker: a hook registry's id, in a set made in
    the trace that holds only such ids (Note [Hook registries] in vars/hooks/registry.py)."""
    return s.source is None and getattr(vt, "registry_id", False) and all(
        type(k) is RegistryIdKey for k in s.items)


def _set_key(tx, s, vt):
    """The key of `vt` in set `s`: by tracker when `_by_id`, else its value (the members kept
    by tracker guarded and keyed by value first)."""
    if _by_id(s, vt):
        return RegistryIdKey(vt)
    s.settle()
    return _set_member(tx, vt)


def _set_add(tx, s, name, args, kwargs) -> VariableTracker:
    key = _set_key(tx, s, args[0])
    items = s.items
    _mutating_keys(tx, s, name, key not in items)
    items.setdefault(key, args[0])
    return ConstantVariable(None)


def _set_drop(tx, s, name: str, key) -> None:
    """Member `key` of `s` leaves it."""
    _mutating_keys(tx, s, name, True)
    del s.items[key]


def _set_discard(tx, s, name, args, kwargs) -> VariableTracker:
    key = _set_key(tx, s, args[0])
    if key in s.items:
        _set_drop(tx, s, name, key)
    return ConstantVariable(None)


def _set_remove(tx, s, name, args, kwargs) -> VariableTracker:
    key = _set_key(tx, s, args[0])
    if key not in s.items:
        tx.raise_user_error(KeyError(args[0].as_python_constant() if type(key) is RegistryIdKey else key))
    _set_drop(tx, s, name, key)
    return ConstantVariable(None)


def _set_inplace(tx, s, name, args, kwargs) -> VariableTracker:
    """`s |= t` (`__ior__`, ...): the named update, on sets only."""
    if not all(issubclass(other.python_type(), (set, frozenset)) for other in args):
        symbol = {"__ior__": "|=", "__iand__": "&=", "__isub__": "-=", "__ixor__": "^="}[name]
        tx.raise_user_error(TypeError(f"unsupported operand type(s) for {symbol}: 'set' and "
                                      f"'{args[0].python_type().__name__}'"))
    _set_update(tx, s, _SET_INPLACE[name], args, {})
    return s


def _union_step(items: dict, keys: set, new: dict, other: dict) -> set:
    for k, vt in other.items():
        if k not in items:
            new.setdefault(k, vt)
    return keys


def _symmetric_difference_step(items: dict, keys: set, new: dict, other: dict) -> set:
    new.update((k, vt) for k, vt in other.items() if k not in items)
    return keys - other.keys()


# name -> how one argument of the update changes (the kept keys, the new members), as `set`'s
_SET_UPDATES = {
    "update": _union_step,
    "intersection_update": lambda items, keys, new, other: keys & other.keys(),
    "difference_update": lambda items, keys, new, other: keys - other.keys(),
    "symmetric_difference_update": _symmetric_difference_step,
}


def _set_update(tx, s, name, args, kwargs) -> VariableTracker:
    items = s.items
    others = [_members(tx, other) for other in args]
    _no_tensor_algebra(tx, s, name, others)
    step = _SET_UPDATES[name]
    keys = set(items)
    new = {}
    for other in others:
        keys = step(items, keys, new, other)
    result = {k: vt for k, vt in items.items() if k in keys}
    result.update(new)
    _mutating_keys(tx, s, name, result.keys() != items.keys())
    items.clear()
    items.update(result)
    return ConstantVariable(None)


def _set_pop(tx, s, name, args, kwargs) -> VariableTracker:
    items = s.items
    if not items:
        tx.raise_user_error(KeyError("pop from an empty set"))
    key = s.iteration_keys(tx)[0]
    _mutating_keys(tx, s, name, True)
    return items.pop(key)


def _set_clear(tx, s, name, args, kwargs) -> VariableTracker:
    items = s.items
    _mutating_keys(tx, s, name, bool(items))
    items.clear()
    return ConstantVariable(None)


def _set_query(tx, s, name, args, kwargs) -> VariableTracker:
    """The set methods that make a new set or a bool, over any iterables of hashable members."""
    others = [_members(tx, other) for other in args]
    _no_tensor_algebra(tx, s, name, others)
    result = getattr(set(s.items), name)(*[set(other) for other in others])
    if not isinstance(result, set):
        return ConstantVariable(result)
    trackers = dict(s.items)
    for other in others:
        for key, vt in other.items():
            trackers.setdefault(key, vt)
    return SetVariable([trackers[key] for key in result], tx=tx)


# The set methods a SetVariable models; its mutators (keyword arguments ignored) pass the
# barrier only when they change the set (`_mutating_keys`), so they are ordinary rows.
_SET_METHODS = {
    "add": row(_set_add),
    "discard": row(_set_discard),
    "remove": row(_set_remove),
    **dict.fromkeys(_SET_INPLACE, row(_set_inplace)),
    **dict.fromkeys(_SET_UPDATES, row(_set_update)),
    "pop": row(_set_pop),
    "clear": row(_set_clear),
    "__iter__": row(_iter, when=no_args),
    **dict.fromkeys(_SET_QUERIES, row(_set_query, when=no_kwargs)),
}


# the methods that keep a hook registry's ids by tracker (`_by_id`); any other settles them
_BY_ID_METHODS = frozenset({"add", "discard", "remove", "__contains__", "__len__"})


class SetVariable(VariableTracker):
    """A set of constants and tensors (as a dict key -> tracker, to keep insertion order for
    iteration; a tensor's key is its `TrackerKey`, Note [Sets of tensors] in vars/set_order.py);
    `keys_version` counts the changes of its members (Note [Live iterators]); `order` is the
    iteration order of its tensor members last computed (keys, ordered keys)."""

    __slots__ = ("items", "keys_version", "order")
    identity_tracked = True
    rebuilt_as_new_object = True
    inplace_methods = frozenset(_SET_INPLACE)
    METHODS = _SET_METHODS

    def __init__(self, items: list, source=None, tx=None):
        super().__init__(source)
        self.items = {}
        self.keys_version = 0
        self.order = None
        for vt in items:
            self.items[_set_member(tx, vt)] = vt

    def python_type(self) -> type:
        return set

    def settle(self) -> None:
        """The members kept by tracker (a hook registry's ids, `_by_id`) keyed by their values,
        which are guarded now: what any use but adding, discarding and `in` needs."""
        first = next((k for k in self.items if type(k) is RegistryIdKey), None)
        if first is not None:
            first.vt.output.side_effects.touch(self)  # representation only: a restore takes it back with the guards
            self.items = {(k.vt.as_python_constant() if type(k) is RegistryIdKey else k): vt
                          for k, vt in self.items.items()}

    def is_python_constant(self) -> bool:
        return not has_tensor_members(self.items)

    def as_python_constant(self):
        self.settle()
        if has_tensor_members(self.items):
            return super().as_python_constant()
        return set(self.items)

    def unpack(self, tx) -> list:
        self.settle()
        if has_tensor_members(self.items):
            return [self.items[k] for k in self.iteration_keys(tx)]
        return [ConstantVariable(v) for v in set(self.items)]

    def iteration_keys(self, tx) -> list:
        """The member keys in eager's iteration order: a set of constants rebuilt from them;
        one holding tensors, by their identity hashes (guarded, or a break: vars/set_order.py)."""
        self.settle()
        if not has_tensor_members(self.items):
            return list(set(self.items))
        keys = tuple(self.items)
        if self.order is None or self.order[0] != keys:
            tx.output.side_effects.touch(self)  # a cache of what the guards now say
            self.order = (keys, tuple(eager_order(tx, self)))
        return list(self.order[1])

    def ordered_keys(self) -> list:
        self.settle()
        if has_tensor_members(self.items):  # asked after `iteration_keys` (`iterate`)
            return list(self.order[1])
        return list(set(self.items))

    def iterate(self, tx):
        self.iteration_keys(tx)
        return factory.hashed_iterator(self)

    def contains_impl(self, tx, item) -> VariableTracker:
        if _by_id(self, item):
            return ConstantVariable(RegistryIdKey(item) in self.items)
        self.settle()
        if has_tensor_members(self.items) or item.is_tensor:  # by identity (a set from outside holds no tensor)
            return ConstantVariable(_set_member(tx, item) in self.items)
        return super().contains_impl(tx, item)

    def truth(self, tx) -> bool:
        return bool(self.items)

    def len_impl(self, tx) -> VariableTracker:
        return ConstantVariable(len(self.items))

    def hasattr_impl(self, tx, name: str) -> bool:
        return hasattr(self.python_type(), name)

    def children(self):
        return self.items.values()

    def reverse_iterate(self, tx):
        tx.raise_user_error(TypeError(f"{self.describe()} is not reversible"))

    def replay_records(self, cg) -> list:
        return [cg.helper_effect(_replace_set, self.source, lambda: cg.load_const(tuple(self.items)))]

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if callable(getattr(set, name, None)):
            return MethodOfVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        if name not in _BY_ID_METHODS:
            self.settle()
        result = dispatch(tx, self, self.METHODS, name, args, kwargs)
        return result if result is not None else unmodelled_method(tx, self, name, args, kwargs)

    def builtin_base_method(self, tx, attr):
        """`set.isdisjoint(s, t)`, `set.add(s, x)`: bound to this value."""
        name = builtin_methods.bound_name(self.python_type(), attr)
        return MethodOfVariable(self, name) if name is not None else None

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        for k in self.items:  # in insertion order, as eager built it
            load_key(cg, k)
        cg.build("BUILD_SET", len(self.items))



provides("tuple_of")(TupleVariable)


def _sequence_family(kind: type) -> type:
    """Which sequences compare equal by items: tuples with tuples, lists with lists, deques
    with deques."""
    return next((base for base in (tuple, list) if issubclass(kind, base)), kind)
