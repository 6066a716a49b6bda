"""The methods of the builtin types: one table (vars/builtin_methods.py), classified from the
types, and what the tracer does with them.

- completeness: every callable name of `dir(t)` of the 13 types is in the table, so a
  newer Python that adds a method fails here with its name;
- the classification follows the runtime's own declarations (`collections.abc`), so it
  cannot drift;
- pure methods of constants are folded (fullgraph), unbound C methods of containers
  (`dict.get(d, k)`, `list.append(l, x)`) run the container's own method, side effects as
  eager, and a method a container does not model breaks naming it and its class.
"""
from __future__ import annotations

import collections
import collections.abc as abc

import pytest
import torch

import bytegraph
from bytegraph.vars import builtin_methods
from bytegraph.vars.builtin_methods import TABLE, TYPES, Kind
from helpers import check


def _x():
    return torch.arange(3.0)


def _break_reasons(fn, *args):
    return [b.reason for b in bytegraph.explain(fn)(*args).break_reasons]


# ---- (1) completeness -----------------------------------------------------------------

@pytest.mark.parametrize("t", TYPES, ids=lambda t: t.__name__)
def test_every_method_of_the_type_is_in_the_table(t):
    names = {name for name in dir(t) if callable(getattr(t, name))}
    missing = sorted(names - TABLE[t].keys())
    assert not missing, (f"{t.__name__} has methods the table lacks "
                         f"(classify them in vars/builtin_methods.py): {missing}")
    assert not builtin_methods.UNCLASSIFIED[t]
    assert TABLE[t].keys() == names  # nothing that is not a method of the type


def test_a_method_no_rule_explains_is_left_out():
    """What makes the completeness test fail on a newer Python: a new public method of a
    mutable type, or a new dunder of any type, is classified by no rule."""

    class GrownList(list):
        def frobnicate(self):
            pass

    class GrownTuple(tuple):
        def __frobnicate__(self):
            pass

        def frobnicate(self):
            pass

    assert builtin_methods._classify(GrownList, "frobnicate") is None
    assert builtin_methods._classify(GrownTuple, "__frobnicate__") is None
    # a public method of an immutable type reads only: pure by immutability
    assert builtin_methods._classify(GrownTuple, "frobnicate")[0] is Kind.PURE


# ---- (3) the classification, derived from the ABCs ------------------------------------

def _abc_names(cls) -> set:
    return {name for klass in cls.__mro__ if klass is not object for name, value in vars(klass).items()
            if callable(value)}


@pytest.mark.parametrize("t", TYPES, ids=lambda t: t.__name__)
def test_mutators_are_what_the_mutable_abc_adds(t):
    mutable = [m for m in (abc.MutableSequence, abc.MutableMapping, abc.MutableSet) if issubclass(t, m)]
    mutators = builtin_methods.mutators(t)
    if not mutable:  # an immutable type: nothing mutates it
        assert not mutators, mutators
        assert all(m.kind is not Kind.MUTATES_RECEIVER and not m.mutation for m in TABLE[t].values())
        return
    (mutable,) = mutable
    readonly = {abc.MutableSequence: abc.Sequence, abc.MutableMapping: abc.Mapping, abc.MutableSet: abc.Set}[mutable]
    added = _abc_names(mutable) - _abc_names(readonly)
    assert added <= mutators, added - mutators
    assert all(TABLE[t][name].kind is not Kind.MUTATES_RECEIVER for name in _abc_names(readonly) if name in TABLE[t])
    for name in mutators:
        assert TABLE[t][name].reason and TABLE[t][name].mutation == f"mutates the {t.__name__}"
    # the type's own remainder, stated in the table with its reason, is exactly this
    assert mutators - added == _OWN_MUTATORS[t], mutators - added


# what each mutable type mutates beyond its Mutable* ABC (each changes a fresh value in eager)
_OWN_MUTATORS = {
    list: {"sort", "__imul__"},
    dict: {"__ior__"},
    set: {"update", "intersection_update", "difference_update", "symmetric_difference_update"},
}
_SAMPLE_CALLS = {
    ("list", "sort"): ([2, 1], ()), ("list", "__imul__"): ([1], (2,)), ("dict", "__ior__"): ({}, ({"a": 1},)),
    ("set", "update"): ({1}, ({2},)), ("set", "intersection_update"): ({1}, ({2},)),
    ("set", "difference_update"): ({1}, ({1},)), ("set", "symmetric_difference_update"): ({1}, ({2},)),
}


@pytest.mark.parametrize("key", sorted(_SAMPLE_CALLS), ids="{0[0]}.{0[1]}".format)
def test_the_stated_remainder_mutates_in_eager(key):
    value, args = _SAMPLE_CALLS[key]
    before = type(value)(value)
    getattr(value, key[1])(*args)
    assert value != before


def test_mutable_types_are_the_abc_registered_ones():
    mutable = {t for t in TYPES if builtin_methods.mutable_abcs(t) is not None}
    assert mutable == {list, dict, set}
    for t in set(TYPES) - mutable:
        assert not issubclass(t, (abc.MutableSequence, abc.MutableMapping, abc.MutableSet))


def test_views_iterators_and_slots():
    assert {n for n, m in TABLE[dict].items() if m.returns_view} == {"keys", "values", "items", "__iter__",
                                                                   "__reversed__"}
    for t in TYPES:
        for name, m in TABLE[t].items():
            if m.returns_view:
                assert not m.foldable
            if m.kind is Kind.PROTOCOL:
                assert m.slot == builtin_methods.PROTOCOL_SLOTS[name]
    assert TABLE[int]["from_bytes"].on_type and TABLE[dict]["fromkeys"].on_type and TABLE[str]["maketrans"].on_type
    assert not TABLE[str]["upper"].on_type
    assert (TABLE[str]["__reduce_ex__"].kind is Kind.MACHINERY
            and TABLE[list]["__init_subclass__"].kind is Kind.MACHINERY)


def test_lookup_respects_overrides_of_subclasses():
    # OrderedDict's own __eq__ compares order: not dict's entry; dict.get it inherits is
    assert builtin_methods.lookup(collections.OrderedDict, "__eq__") is None
    assert builtin_methods.lookup(collections.OrderedDict, "get") is TABLE[dict]["get"]
    assert builtin_methods.lookup(bool, "__and__") is TABLE[bool]["__and__"]


# ---- (2) folds of pure methods on constants, fullgraph --------------------------------

def _str_methods(x):
    s = "{a}-{b}"
    return x + 1, (s.format_map({"a": 1, "b": 2}), "foobar".removeprefix("foo"), "foobar".removesuffix("bar"),
                   "abc".translate(str.maketrans("ab", "xy")), "a,b".partition(","), "a\nb".splitlines(),
                   "%d-%s" % (3, "q"), "ab".__getnewargs__(), str.upper("abc"), "abc".__len__(),
                   list("abc".__iter__()), "Ab".casefold(), "ab".center(6, "*"), "x".zfill(3))


def _bytes_methods(x):
    b = b"ab"
    return x + 1, (b.hex(), bytes.fromhex("6162"), b.decode(), b.translate(bytes.maketrans(b"a", b"z")),
                   b.__bytes__(), b.hex(":"), list(b.__iter__()), bytes.upper(b))


def _int_and_bool_methods(x):
    return x + (7).bit_count(), ((7).to_bytes(2, "little"), int.from_bytes(b"\x01\x02", "little"),
                                 (6).as_integer_ratio(), (7).__round__(-1), (7).__index__(),
                                 int.__add__(3, 4), (3).__class__.__name__, True.bit_length(),
                                 bool.from_bytes(b"\x01", "big"), int.__add__(True, 1), (12).__format__("x"))


def _float_and_complex_methods(x):
    return x * (1.5).is_integer(), ((1.5).hex(), float.fromhex("0x1.8p+0"), (0.75).as_integer_ratio(),
                                    float.__getformat__("double"), (2.5).__floor__(), (2.5).__trunc__(),
                                    (1 + 2j).conjugate(), (3 + 4j).__abs__(), complex.__mul__(1j, 1j))


def _range_and_slice_methods(x):
    r = range(2, 10, 2)
    return x + r.count(4), (r.index(6), list(r.__reversed__()), r.__getitem__(slice(1, 3)), len(r),
                            slice(1, 5).indices(3), slice(None, None, -1).indices(4), r.__contains__(8))


def _tuple_and_frozenset_methods(x):
    t = (1, 2, 2, 3)
    f = frozenset({1, 2})
    return x + t.count(2), (t.index(2, 2), t.__add__((4,)), t.__mul__(2), tuple.count(t, 3), list(t.__iter__()),
                            f.union({3}), f.isdisjoint({4}), f.__or__(frozenset({5})), sorted(f.__iter__()),
                            frozenset.issubset(f, {1, 2, 3}), t.__hash__() == hash(t))


@pytest.mark.parametrize("fn", [_str_methods, _bytes_methods, _int_and_bool_methods, _float_and_complex_methods,
                                _range_and_slice_methods, _tuple_and_frozenset_methods], ids=lambda f: f.__name__[1:])
def test_pure_methods_of_constants_are_folded(fn):
    check(fn, _x(), graphs=1, fullgraph=True)


def test_machinery_of_a_constant_breaks_naming_it():
    def fn(x):
        y = x + 1
        return y, len("abc".__reduce_ex__(2))

    assert any("str.__reduce_ex__ (object machinery" in r for r in _break_reasons(fn, _x())), _break_reasons(fn, _x())
    check(fn, _x())


# ---- (2) dict / list / set methods reached in less common ways ------------------------

def test_unbound_dict_get():
    def fn(d, x):
        return x + dict.get(d, "a") + dict.get(d, "b", 5) + dict.__getitem__(d, "a"), dict.__contains__(d, "z")

    check(fn, {"a": 1}, _x(), graphs=1, fullgraph=True)


def test_unbound_list_contains_and_index():
    def fn(lst, x):
        return x + list.__contains__(lst, 2) + lst.__contains__(7), list.index(lst, 2, 2), lst.index(2, 1), \
            list.count(lst, 2)

    check(fn, [1, 2, 3, 2], _x(), graphs=1, fullgraph=True)


def test_set_isdisjoint_and_unbound_queries():
    def fn(s, x):
        return x + set.isdisjoint(s, {3}) + s.isdisjoint([2]), set.union(s, [7]), set.__contains__(s, 1), \
            s.__len__()

    check(fn, {1, 2}, _x(), graphs=1, fullgraph=True)


def test_setdefault_copy_fromkeys_and_or_with_side_effects():
    def fn(d, x):
        a = d.setdefault("z", x)  # inserts into the caller's dict
        b = d.setdefault("a", 9)
        e = d.copy()
        e["q"] = 1  # the copy only
        f = d | {"b": 2}
        g = dict.fromkeys("ab", 0)
        return a * b, e, f, g, len(d)

    check(fn, {"a": 1}, _x(), graphs=1, fullgraph=True)


def test_unbound_mutators_change_the_caller_containers():
    def fn(lst, d, s, x):
        list.append(lst, x)
        list.extend(lst, [1, 2])
        list.__setitem__(lst, 0, 5)
        dict.__setitem__(d, "k", x * 2)
        dict.update(d, {"u": 1})
        set.add(s, 9)
        set.discard(s, 1)
        return x + 1

    check(fn, [0], {"a": 1}, {1, 2}, _x(), graphs=1, fullgraph=True)


def test_pure_dunders_of_constant_containers_are_folded():
    def fn(lst, d, x):
        return x + len(lst.__mul__(2)), lst.__add__([9]), d.__eq__({"a": 1}), lst.__lt__([1, 3]), \
            d.__or__({"b": 2}), d.__ne__({}), lst.__repr__()

    check(fn, [1, 2], {"a": 1}, _x(), graphs=1, fullgraph=True)


def test_pure_method_of_a_list_of_tensors_breaks_naming_it():
    def fn(x):
        lst = [x, x + 1]
        y = x * 2
        return y, len(lst.__mul__(2))

    reasons = _break_reasons(fn, _x())
    assert any("list.__mul__ (pure" in r and "is not modelled" in r for r in reasons), reasons
    check(fn, _x())


def test_machinery_of_a_list_breaks_naming_it():
    def fn(lst, x):
        y = x * 2
        list.__init__(lst, [7, 8])  # re-initialises the caller's list, eagerly
        return y

    reasons = _break_reasons(fn, [1], _x())
    assert any("list.__init__ (object machinery" in r for r in reasons), reasons
    check(fn, [1], _x())


def test_size_of_a_mutable_container_is_not_folded_from_a_copy():
    """`list.__sizeof__` reads the allocation: a copy of the value (what a fold would call it
    on) answers differently, so it is machinery, and runs eagerly on the real list."""

    def fn(lst, x):
        lst.append(4)  # over-allocates the real list
        y = x * 2
        return y, lst.__sizeof__()

    reasons = _break_reasons(fn, [1, 2, 3], _x())
    assert any("list.__sizeof__ (object machinery: memory layout" in r for r in reasons), reasons
    check(fn, [1, 2, 3], _x())


def test_unbound_method_of_another_class_is_not_bound():
    """`dict.__setitem__` of an OrderedDict bypasses OrderedDict's own: not bound to the
    OrderedDict's tracker (a break), and eager's result is kept."""

    def fn(x):
        od = collections.OrderedDict(a=1)
        dict.__setitem__(od, "b", 2)
        return x + 1, list(od.items())

    check(fn, _x())
