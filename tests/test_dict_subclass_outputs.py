"""Instances of user subclasses of dict/OrderedDict made in the trace (`vars/dict_subclass.py`):
a `ModelOutput`-like dataclass over an OrderedDict with a metaclass, `__post_init__`,
`__getitem__` by int and str, `to_tuple`, keys/values/items and attribute access, created
in the trace, used, and returned (rebuilt with eager's items and attributes, in eager's
order), inside inlined helpers and across a graph break."""
import dataclasses
import inspect
import functools
from collections import OrderedDict
from dataclasses import dataclass, fields
from typing import Optional

import pytest
import torch

import bytegraph
from helpers import assert_same, check


class _RenameMeta(type):
    """Like transformers' `_BCCacheNameMeta`: wraps the dataclass `__init__` to rename a kwarg."""

    def __setattr__(cls, name, value):
        if name == "__init__":
            init = value

            @functools.wraps(init)
            def __init__(self, *args, **kwargs):
                if "old" in kwargs:
                    kwargs["extra"] = kwargs.pop("old")
                init(self, *args, **kwargs)

            value = __init__
        super().__setattr__(name, value)


class Output(OrderedDict, metaclass=_RenameMeta):
    """A small `ModelOutput`: keys are the fields that are not None."""

    def __post_init__(self):
        class_fields = fields(self)
        for field in class_fields:
            v = self.__dict__.get(field.name)
            if v is not None:
                self[field.name] = v

    def __getitem__(self, k):
        if isinstance(k, str):
            return dict(self.items())[k]
        return self.to_tuple()[k]

    def __setattr__(self, name, value):
        if name in {f.name for f in fields(self)} and value is not None:
            super().__setitem__(name, value)
        super().__setattr__(name, value)

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        super().__setattr__(key, value)

    def __delitem__(self, *args, **kwargs):
        raise Exception(f"You cannot use ``__delitem__`` on a {self.__class__.__name__} instance.")

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


@dataclass
class LayerOutput(Output):
    hidden: Optional[torch.Tensor] = None
    extra: Optional[torch.Tensor] = None
    scores: Optional[tuple] = None


class Bag(dict):
    """A plain dict subclass with a method of its own and attributes."""

    def total(self):
        return sum(self.values())


def _same_attrs(result):
    e, c = result.eager.out, result.compiled.out
    objs = zip(e, c) if isinstance(e, tuple) else [(e, c)]
    for a, b in objs:
        if isinstance(a, dict):
            assert type(a) is type(b)
            assert list(vars(a)) == list(vars(b))
            assert_same(vars(a), vars(b), "vars(out)")


def _x():
    return torch.randn(3, 4, requires_grad=True)


def test_created_and_returned():
    def fn(x):
        return LayerOutput(hidden=x.sin(), extra=x * 2)

    _same_attrs(check(fn, _x(), graphs=1, fullgraph=True))


def test_none_fields_are_not_keys():
    def fn(x):
        out = LayerOutput(hidden=x + 1)
        return out, len(out), list(out.keys()), "extra" in out, out.extra is None

    _same_attrs(check(fn, _x(), graphs=1, fullgraph=True))


def test_index_by_int_and_str():
    def fn(x):
        out = LayerOutput(hidden=x.cos(), extra=x - 1)
        return out[0] + out["extra"], out[1], out[-1]

    check(fn, _x(), graphs=1, fullgraph=True)


def test_to_tuple_and_slices():
    def fn(x):
        out = LayerOutput(x * 3, None, (x, x + 1))
        return out.to_tuple(), out[:1], out[1:]

    check(fn, _x(), graphs=1, fullgraph=True)


def test_keys_values_items():
    def fn(x):
        out = LayerOutput(hidden=x, extra=x.exp())
        return list(out.keys()), [v * 2 for v in out.values()], {k: v + 1 for k, v in out.items()}

    check(fn, _x(), graphs=1, fullgraph=True)


def test_attribute_access_and_iteration():
    def fn(x):
        out = LayerOutput(hidden=x, extra=x.relu())
        total = out.hidden + out.extra
        for key in out:
            total = total + out[key].sum()
        return total, out.scores

    check(fn, _x(), graphs=1, fullgraph=True)


def test_metaclass_wrapped_init_renames_kwarg():
    def fn(x):
        return LayerOutput(hidden=x, old=x * 5)

    _same_attrs(check(fn, _x(), graphs=1, fullgraph=True))


def test_setitem_after_creation_sets_attribute():
    def fn(x):
        out = LayerOutput(hidden=x)
        out["extra"] = x.tanh()
        out.scores = (x,)
        return out, out.extra

    _same_attrs(check(fn, _x(), graphs=1, fullgraph=True))


def test_delitem_raises_like_eager():
    def fn(x):
        out = LayerOutput(hidden=x)
        del out["hidden"]
        return out

    check(fn, _x())


def test_missing_str_key_raises_keyerror():
    def fn(x):
        out = LayerOutput(hidden=x)
        try:
            return out["extra"]
        except KeyError as e:
            return x + 1, str(e)

    check(fn, _x(), graphs=1, fullgraph=True)


def _make(x):
    return LayerOutput(hidden=x * 2, extra=x + 3)


def _consume(out):
    return out.to_tuple()[0] + out["extra"]


def test_inside_inlined_helpers():
    def fn(x):
        out = _make(x)
        return _consume(out), _make(x.sin())

    _same_attrs(check(fn, _x(), graphs=1, fullgraph=True))


def test_across_a_graph_break():
    def fn(x):
        out = LayerOutput(hidden=x.sin(), extra=x.cos())
        bytegraph.graph_break()
        return out["hidden"] + out[1], out

    _same_attrs(check(fn, _x(), graphs=2))


def test_across_a_break_inside_a_helper():
    def helper(x):
        out = _make(x)
        bytegraph.graph_break()
        return out

    def fn(x):
        out = helper(x)
        return out.to_tuple(), out

    _same_attrs(check(fn, _x()))


def test_plain_dict_subclass():
    def fn(x):
        bag = Bag(a=x, b=x * 2)
        bag["c"] = x.sum()
        bag.note = "hi"
        return bag, bag.total(), len(bag), sorted(bag)

    _same_attrs(check(fn, _x(), graphs=1, fullgraph=True))


def test_plain_dict_subclass_update_and_pop():
    def fn(x):
        bag = Bag({"a": x})
        bag.update(b=x + 1)
        popped = bag.pop("a")
        bag.setdefault("z", x * 0)
        return bag, popped, bag.get("q", 7)

    _same_attrs(check(fn, _x(), graphs=1, fullgraph=True))


def test_ordereddict_subclass_move_to_end():
    class Ordered(OrderedDict):
        pass

    def fn(x):
        d = Ordered(a=x, b=x + 1, c=x + 2)
        d.move_to_end("a")
        return d, list(reversed(d))

    check(fn, _x(), graphs=1, fullgraph=True)


def test_missing_written_in_python():
    class Fallback(dict):
        def __missing__(self, key):
            return key * 2

    def fn(x):
        d = Fallback(a=x + 1)
        return d["a"], d["bb"], "bb" in d

    check(fn, _x(), graphs=1, fullgraph=True)


def test_returned_object_is_a_real_instance_with_eagers_order():
    def fn(x):
        out = LayerOutput(extra=x, hidden=x + 1)
        return out

    result = check(fn, _x(), graphs=1, fullgraph=True)
    _same_attrs(result)
    assert list(result.compiled.out.keys()) == ["hidden", "extra"]
    assert dataclasses.is_dataclass(result.compiled.out)


def test_ordered_dict_copy_breaks_with_a_reason():
    class Ordered(OrderedDict):
        pass

    def fn(x):
        return Ordered(a=x).copy()

    with pytest.raises(bytegraph.Unsupported, match="OrderedDict.copy"):
        bytegraph.compile(fn, fullgraph=True)(_x())
    check(fn, _x())


def test_slots_dict_subclass_breaks_with_a_reason():
    class Slotted(dict):
        __slots__ = ("a",)

    def fn(x):
        return Slotted(k=x)

    with pytest.raises(bytegraph.Unsupported, match="defines __slots__"):
        bytegraph.compile(fn, fullgraph=True)(_x())


def test_view_of_returned_object():
    def fn(x):
        bag = Bag(a=x, b=x + 1)
        return bag, bag.keys()

    result = check(fn, _x(), graphs=1, fullgraph=True)
    bag, keys = result.compiled.out
    bag["new"] = 1
    assert list(keys) == ["a", "b", "new"]  # a view of the returned object itself


def test_double_star_unpacking():
    def f(a, b):
        return a * b

    def fn(x):
        return f(**Bag(a=x, b=x + 1))

    check(fn, _x(), graphs=1, fullgraph=True)


class _Layer(torch.nn.Module):
    def chunk(self, hidden, extra=None):
        return hidden * 2

    def forward(self, x):
        return len(inspect.signature(self.chunk).parameters), list(inspect.signature(self.chunk).parameters)


def test_signature_of_a_bound_method_drops_self():
    """BERT's `apply_chunking_to_forward` counts the parameters of a bound method."""
    check(_Layer(), _x())

    def fn(layer, x):
        return layer(x), x + len(inspect.signature(layer.chunk).parameters)

    check(fn, _Layer(), _x(), graphs=1, fullgraph=True)


def test_base_methods_called_unbound():
    def fn(x):
        bag = Bag(a=x)
        dict.__setitem__(bag, "k", x * 2)
        return bag, list(dict.keys(bag)), dict.get(bag, "k") + 1

    _same_attrs(check(fn, _x(), graphs=1, fullgraph=True))


def test_unbound_method_of_another_base_raises_like_eager():
    def fn(x):
        OrderedDict.move_to_end(Bag(a=x), "a")
        return x

    check(fn, _x())


def test_comparison_breaks_with_a_reason():
    def fn(x):
        return Bag(a=1) == {"a": 1}, x + 1

    with pytest.raises(bytegraph.Unsupported, match=r"__eq__\(\) of the items of new object of type Bag"):
        bytegraph.compile(fn, fullgraph=True)(_x())
    check(fn, _x())


def test_view_escaping_from_a_class_that_overrides_keys_breaks_with_a_reason():
    class Keyed(dict):
        def keys(self):
            return super().keys()

    def fn(x):
        d = Keyed(a=x + 1)
        return d, d.keys()

    with pytest.raises(bytegraph.Unsupported, match="whose class overrides keys"):
        bytegraph.compile(fn, fullgraph=True)(_x())
    check(fn, _x())


class Logged(OrderedDict):
    """OrderedDict's C `__init__`/`update` call a subclass's `__setitem__`."""

    def __setitem__(self, key, value):
        super().__setitem__(key, value * 2)


def test_ordereddict_init_and_update_go_through_a_python_setitem():
    def fn(x):
        d = Logged({"a": x}, b=x + 1)
        d.update(c=x - 1)
        d |= {"e": x}
        return d

    check(fn, _x(), graphs=1, fullgraph=True)


def test_dict_update_does_not_call_a_python_setitem():
    class Doubling(dict):
        def __setitem__(self, key, value):
            super().__setitem__(key, value * 2)

    def fn(x):
        d = Doubling({"a": x}, b=x + 1)
        d.update(c=x - 1)
        d["z"] = x
        return d

    check(fn, _x(), graphs=1, fullgraph=True)


def test_ordereddict_pop_with_python_item_access_breaks_with_a_reason():
    def fn(x):
        d = Logged(a=x)
        return d.pop("a"), d

    with pytest.raises(bytegraph.Unsupported, match=r"OrderedDict.pop\(\) of new object of type Logged"):
        bytegraph.compile(fn, fullgraph=True)(_x())
    check(fn, _x())
