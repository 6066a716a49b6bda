"""The methods of the builtin types, classified once from the types themselves.

`TABLE[t][name]` is a `BuiltinMethod` for every name of `dir(t)` whose attribute is
callable, for each `t` of `TYPES` (`dict list set frozenset tuple str bytes int float
complex bool range slice`). A method is one of:
- PURE: it reads its receiver and arguments only, so a call on Python constants can be
  folded by calling the real method at trace time;
- MUTATES_RECEIVER: it changes the receiver in place (`mutation` says how);
- PROTOCOL: an object-protocol slot the trackers implement as such (`slot`: `len_impl`,
  `getitem_impl`, `contains_impl`, `iterate`, `reverse_iterate`, `truth`); these read only;
- MACHINERY: object machinery handled elsewhere (construction, attribute access, pickling,
  class hooks), with the reason.
`returns_view` marks a method whose result is a live view or iterator of the receiver
(`dict.keys`, `__iter__`): never folded into an unrelated copy. `on_type` marks a
classmethod or staticmethod (`dict.fromkeys`, `str.maketrans`): called on the class.

Derived, not enumerated: which types are mutable is what `collections.abc` registers them
as (`MutableSequence`, `MutableMapping`, `MutableSet`); an immutable type has no mutating
method, so its methods are pure unless they are protocol slots or machinery. A mutable
type's mutators are what its `Mutable*` ABC adds over the read-only one (`Sequence`,
`Mapping`, `Set`: abstract and mixin methods), plus the type's own remainder
(`_OWN_MUTATORS`, each with its reason); its pure methods are the read-only ABC's, its
immutable counterpart's (`tuple` for `list`, `frozenset` for `set`), `object`'s and the
operator methods (named by the `operator` module, the `numbers` ABCs), plus its own
remainder (`_OWN_PURE`). A dunder of any type must be explained by one of those rules. A
name no rule explains is left out of the table (`UNCLASSIFIED`), so a newer Python adding
a method to one of these types fails `tests/test_builtin_methods.py` with its name, and
the trackers break on it with a reason instead of guessing.

This module imports no tracker, so any kind module can ask it.
"""
from __future__ import annotations

import collections.abc as abc
import enum
import numbers
import operator
import types
from dataclasses import dataclass

TYPES = (dict, list, set, frozenset, tuple, str, bytes, int, float, complex, bool, range, slice)

# (mutable ABC, its read-only base): a type registered with the first is mutable
MUTABLE_ABCS = ((abc.MutableSequence, abc.Sequence), (abc.MutableMapping, abc.Mapping), (abc.MutableSet, abc.Set))


class Kind(enum.Enum):
    PURE = "pure"
    MUTATES_RECEIVER = "mutates the receiver"
    PROTOCOL = "object-protocol slot"
    MACHINERY = "object machinery"


@dataclass(frozen=True)
class BuiltinMethod:
    owner: type  # the table's type (the method may be inherited from object)
    name: str
    kind: Kind
    reason: str  # which rule classified it, and why
    mutation: str = ""  # MUTATES_RECEIVER: what a call changes
    slot: str = ""  # PROTOCOL: the tracker slot that implements it
    returns_view: bool = False  # the result is a live view / iterator of the receiver
    on_type: bool = False  # a classmethod or staticmethod

    @property
    def foldable(self) -> bool:
        """Whether a call on Python constants can be folded by calling the real method."""
        return self.kind in (Kind.PURE, Kind.PROTOCOL) and not self.returns_view

    def describe(self) -> str:
        """The classification, for break reasons: "mutates the list", "pure", ..."""
        if self.kind is Kind.MUTATES_RECEIVER:
            return self.mutation
        if self.kind is Kind.PURE:
            return "pure, folded only on Python constants" + (": returns a live view" if self.returns_view else "")
        return f"{self.kind.value}: {self.reason}"


# Object machinery: what these names do is handled by the tracker protocol or the class,
# not by calling the method on a value.
_MACHINERY = {
    "__class__": "the value's class, an attribute (a data descriptor of object) rather than a method",
    "__new__": "construction: calling the class",
    "__init__": "construction: it (re)initialises the value; calling the class runs it",
    "__init_subclass__": "a hook of class creation, called when a class subclasses the type",
    "__subclasshook__": "the ABC machinery of issubclass()",
    "__class_getitem__": "subscription of the class (`list[int]`), a typing form",
    "__getattribute__": "attribute lookup: the tracker's var_getattr",
    "__setattr__": "attribute assignment: the tracker's store_attr",
    "__delattr__": "attribute deletion: the tracker's delete_attr",
    "__reduce__": "pickling and copying: the result holds reconstructor callables",
    "__reduce_ex__": "pickling and copying: the result holds reconstructor callables",
    "__buffer__": "the buffer protocol (3.12, PEP 688): a memoryview of the value's memory",
}

# Machinery of the mutable types only: what a copy of the value would answer differently.
_MUTABLE_MACHINERY = {
    "__sizeof__": "memory layout: it reads the allocation (over-allocated capacity), which a copy does not share",
}

# The object-protocol slots (Note [Tracker protocol] in vars/base.py): the tracker slot.
PROTOCOL_SLOTS = {
    "__len__": "len_impl",
    "__getitem__": "getitem_impl",
    "__contains__": "contains_impl",
    "__iter__": "iterate",
    "__reversed__": "reverse_iterate",
    "__bool__": "truth",
}

# Their own mutators of the mutable types, beyond what the Mutable* ABC adds.
_OWN_MUTATORS = {
    list: {"sort": "sorts the list in place (not in MutableSequence)",
           "__imul__": "`l *= n` repeats the items in place (MutableSequence has only __iadd__)"},
    dict: {"__ior__": "`d |= e` updates the dict in place (PEP 584; not in MutableMapping)"},
    set: {"update": "the named form of `|=` (MutableSet.__ior__), over any iterables",
          "intersection_update": "the named form of `&=` (MutableSet.__iand__), over any iterables",
          "difference_update": "the named form of `-=` (MutableSet.__isub__), over any iterables",
          "symmetric_difference_update": "the named form of `^=` (MutableSet.__ixor__), over any iterables"},
}

# Their own pure methods of the mutable types, beyond the read-only ABC's, the immutable
# counterpart's, object's and the operators.
_OWN_PURE = {
    list: {"copy": "a shallow copy: a new list of the same items"},
    dict: {"copy": "a shallow copy: a new dict of the same items",
           "fromkeys": "a classmethod making a new dict"},
    set: {},
}

# The immutable counterpart whose methods a mutable type has with the same meaning.
_COUNTERPART = {list: tuple, set: frozenset}

# The read-only views of a mapping (Mapping's mixins return MappingViews over it).
_MAPPING_VIEWS = frozenset({"keys", "values", "items"})

# Dunders of the types' own that no ABC names: reads of the value.
_OWN_DUNDERS = {"__bytes__": "a conversion: bytes(x)", "__getformat__": "a query of the C float format",
                "__getnewargs__": "the value's own data, as the arguments of __new__ for a copy"}

_INPLACE_OPERATORS = frozenset(n for n in dir(operator) if n.startswith("__i") and n.endswith("__")
                               and n not in ("__index__", "__inv__", "__invert__"))


def _abc_methods(cls: type) -> frozenset:
    """The abstract and mixin methods of ABC `cls` (its MRO below object)."""
    return frozenset(name for klass in cls.__mro__ if klass is not object
                     for name, value in vars(klass).items()
                     if callable(value) or isinstance(value, (classmethod, staticmethod)))


def _operator_names() -> frozenset:
    """The operator dunders: `operator`'s (and their reflected forms), the `numbers` ABCs'."""
    names = {n for n in dir(operator) if n.startswith("__") and n.endswith("__") and callable(getattr(operator, n))}
    names |= {"__r" + n[2:] for n in names}
    names |= _abc_methods(numbers.Integral) | _abc_methods(numbers.Real) | _abc_methods(numbers.Complex)
    return frozenset(names) - _INPLACE_OPERATORS - {"__call__", "__hash__", "__init__"}


_OPERATORS = _operator_names()
_OBJECT_METHODS = frozenset(n for n in dir(object) if callable(getattr(object, n)))


def mutable_abcs(t: type):
    """(mutable ABC, read-only ABC) that type `t` is registered with, or None (immutable)."""
    for pair in MUTABLE_ABCS:
        if issubclass(t, pair[0]):
            return pair
    return None


def _on_type(t: type, name: str) -> bool:
    attr = _static_lookup(t, name)
    return isinstance(attr, (classmethod, staticmethod, types.ClassMethodDescriptorType)) or name == "__new__"


def _classify(t: type, name: str):
    """(kind, reason, mutation) for `t.name`, or None when no rule explains it."""
    noun = f"the {t.__name__}"
    abcs = mutable_abcs(t)
    if abcs is not None:
        mutable, readonly = abcs
        if name in _abc_methods(mutable) - _abc_methods(readonly) and name not in _MACHINERY:
            return (Kind.MUTATES_RECEIVER, f"{mutable.__name__} adds it over {readonly.__name__}",
                    f"mutates {noun}")
        if name in _OWN_MUTATORS.get(t, ()):
            return Kind.MUTATES_RECEIVER, _OWN_MUTATORS[t][name], f"mutates {noun}"
        if name in _MUTABLE_MACHINERY:
            return Kind.MACHINERY, _MUTABLE_MACHINERY[name], ""
    if name in _MACHINERY:
        return Kind.MACHINERY, _MACHINERY[name], ""
    if name in PROTOCOL_SLOTS:
        return Kind.PROTOCOL, f"the tracker slot {PROTOCOL_SLOTS[name]}", ""
    if abcs is not None:
        readonly = abcs[1]
        if name in _abc_methods(readonly):
            return Kind.PURE, f"read-only in {readonly.__name__}", ""
        if name in _OWN_PURE.get(t, ()):
            return Kind.PURE, _OWN_PURE[t][name], ""
        if t in _COUNTERPART and name in dir(_COUNTERPART[t]) and name not in _INPLACE_OPERATORS:
            return Kind.PURE, f"shared with {_COUNTERPART[t].__name__}, its immutable counterpart", ""
    if name in _OPERATORS:
        return Kind.PURE, "an operator: makes a new value from its operands", ""
    if name in _OBJECT_METHODS:
        return Kind.PURE, "a read-only method of object (repr, format, hash, comparison, size, dir, state)", ""
    if name in _OWN_DUNDERS:
        return Kind.PURE, _OWN_DUNDERS[name], ""
    if abcs is None and not name.startswith("__"):
        return Kind.PURE, f"a method of an immutable type: it reads {noun} and its arguments only", ""
    return None


def _static_lookup(t: type, name: str):
    for klass in t.__mro__:
        if name in vars(klass):
            return vars(klass)[name]
    return None


def _build():
    table, unclassified = {}, {}
    for t in TYPES:
        methods, missing = {}, []
        for name in dir(t):
            if not callable(getattr(t, name)):
                continue
            found = _classify(t, name)
            if found is None:
                missing.append(name)
                continue
            kind, reason, mutation = found
            view = name in ("__iter__", "__reversed__") or (issubclass(t, abc.Mapping) and name in _MAPPING_VIEWS)
            methods[name] = BuiltinMethod(t, name, kind, reason, mutation, PROTOCOL_SLOTS.get(name, "")
                                          if kind is Kind.PROTOCOL else "", view, _on_type(t, name))
        table[t] = methods
        unclassified[t] = tuple(missing)
    return table, unclassified


TABLE, UNCLASSIFIED = _build()


def table_type(cls: type):
    """The first of `TYPES` in `cls`'s MRO (`dict` for an OrderedDict), or None."""
    for klass in cls.__mro__:
        if klass in TABLE:
            return klass
    return None


def lookup(cls: type, name: str):
    """The `BuiltinMethod` that `cls`'s instances call as `name`: the table entry of its builtin
    base, when `cls` does not override that method (else None: its classification is unknown)."""
    base = table_type(cls)
    if base is None:
        return None
    method = TABLE[base].get(name)
    if method is None or (cls is not base and _static_lookup(cls, name) is not _static_lookup(base, name)):
        return None
    return method


def mutators(t: type) -> frozenset:
    """The names of `t`'s methods that mutate the receiver."""
    return frozenset(n for n, m in TABLE[t].items() if m.kind is Kind.MUTATES_RECEIVER)


def named_pure(t: type) -> frozenset:
    """The names of `t`'s pure methods that are not dunders (`set.union`, `str.upper`)."""
    return frozenset(n for n, m in TABLE[t].items() if m.kind is Kind.PURE and not n.startswith("__"))


def type_level_folds() -> list:
    """The pure classmethods/staticmethods of the immutable types, as the callables a read
    gives (`int.from_bytes`, `str.maketrans`): folded on constant arguments."""
    return [getattr(t, n) for t in TYPES if mutable_abcs(t) is None
            for n, m in TABLE[t].items() if m.on_type and m.kind is Kind.PURE]


def bound_name(cls: type, attr):
    """`attr.__name__` when `attr`, a C method descriptor (`dict.get`, `list.__contains__`), is
    what attribute lookup on instances of `cls` finds under that name (so `attr(obj, ...)`
    is `obj.<name>(...)`); else None."""
    if not isinstance(attr, (types.MethodDescriptorType, types.WrapperDescriptorType)):
        return None
    name = attr.__name__
    return name if _static_lookup(cls, name) is attr else None


def unmodelled_reason(cls: type, name: str, what: str):
    """The break reason for method `name` of `what` (a tracker's description), a value of
    type `cls`, that its kind does not model; None when the table does not know it."""
    method = lookup(cls, name)
    if method is None:
        return None
    return f"method {name}() of {what}: {method.owner.__name__}.{name} ({method.describe()}) is not modelled"
