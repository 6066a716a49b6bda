"""Attribute writes on objects from outside whose class defines a Python `__setattr__` /
`__delattr__` (transformers' `PretrainedConfig.__setattr__` maps attribute names; PEFT
writes a config field inside forward): the hook is traced, and the generic write it ends in
is replayed through `object.__setattr__`, so the hook runs once, as eagerly. C methods of a
dict/OrderedDict base reached as descriptors on a subclass instance from outside
(`ModelOutput.keys`, `OrderedDict.items(output)`, through `ModelOutput.__getitem__` and
`to_tuple`), and properties through a subclass MRO. Differential: outputs, grads, the
objects' state after the call; torch.compile with fullgraph=True is the reference for the
one-graph cases."""
import collections

import pytest
import torch

import bytegraph
from helpers import check

X = torch.randn(3, requires_grad=True)


def _one_graph_as_torch_compile(fn, *args, **kwargs):
    torch._dynamo.reset()
    torch.compile(fn, backend="eager", fullgraph=True)(*args)
    return check(fn, *args, graphs=1, fullgraph=True, **kwargs)


class Mapped:
    """A config-like class: aliases mapped to canonical names by a Python `__setattr__`."""

    attribute_map = {"hidden_dim": "hidden_size"}

    def __init__(self):
        self.hidden_size = 4
        self.use_cache = True

    def __setattr__(self, key, value):
        if key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        super().__setattr__(key, value)


class Counting:
    """A `__setattr__` with an effect of its own: replaying the write through it would count twice."""

    def __init__(self):
        object.__setattr__(self, "writes", 0)

    def __setattr__(self, key, value):
        object.__setattr__(self, "writes", self.writes + 1)
        object.__setattr__(self, key, value)

    def __delattr__(self, key):
        object.__setattr__(self, "writes", self.writes + 1)
        object.__delattr__(self, key)


def test_python_setattr_maps_the_name():
    def f(x, cfg):
        cfg.hidden_dim = 8  # written as hidden_size
        cfg.use_cache = False
        return x * cfg.hidden_size, cfg.use_cache

    _one_graph_as_torch_compile(f, X, Mapped())


def test_python_setattr_runs_once_per_write():
    def f(x, obj):
        obj.a = 2
        obj.b = x.sum().detach()
        obj.a = obj.a + 1
        del obj.b
        return x * obj.a, obj.writes

    check(f, X, Counting(), graphs=1, fullgraph=True)  # torch.compile cannot trace object.__delattr__


def test_pretrained_config_field_written_in_forward():
    transformers = pytest.importorskip("transformers")

    class TinyConfig(transformers.PretrainedConfig):
        model_type = "tiny-for-setattr-test"
        attribute_map = {"hidden_dim": "hidden_size"}

        def __init__(self, hidden_size=4, **kwargs):
            self.hidden_size = hidden_size
            super().__init__(**kwargs)

    def f(x, cfg):
        cfg.use_cache = False  # PEFT-style write inside forward
        cfg.hidden_dim = 6
        return x * cfg.hidden_size + cfg.hidden_dim

    _one_graph_as_torch_compile(f, X, TinyConfig())


def test_frozen_dataclass_write_raises_as_eager():
    import dataclasses

    @dataclasses.dataclass(frozen=True)
    class Frozen:
        a: int = 1

    def f(x, obj):
        try:
            obj.a = 2
        except dataclasses.FrozenInstanceError:
            return x + obj.a
        return x

    check(f, X, Frozen())


def test_write_then_return_the_object():
    res = check(lambda x, cfg: (setattr(cfg, "hidden_dim", 3), cfg, x + 1)[1:], X, Mapped(), graphs=1)
    assert res.compiled.out[0].hidden_size == 3 and "hidden_dim" not in vars(res.compiled.out[0])


# ---- descriptors of a dict/OrderedDict base on a subclass instance from outside -------------

class Output(collections.OrderedDict):
    """A ModelOutput-like OrderedDict subclass with Python item access."""

    def __getitem__(self, k):
        if isinstance(k, str):
            return dict(self.items())[k]
        return self.to_tuple()[k]

    def to_tuple(self):
        return tuple(self[k] for k in self.keys())


def _output():
    return Output(hidden=torch.randn(3), pooled=torch.randn(3))


@pytest.mark.parametrize("fn", [
    lambda x, o: (list(o.keys()), x + o["hidden"]),
    lambda x, o: x + sum(v for v in o.values()),
    lambda x, o: ([k for k, v in o.items()] + [len(o.items())], x + 1),
    lambda x, o: x * o[1] + o.to_tuple()[0],
    lambda x, o: (list(collections.OrderedDict.keys(o)), x + dict.get(o, "pooled")),
    lambda x, o: (list(type(o).values(o))[0] + x, "hidden" in o.keys()),
], ids=["keys", "values", "items", "getitem and to_tuple", "unbound OrderedDict.keys", "through the type"])
def test_dict_base_methods_of_an_instance_from_outside(fn):
    _one_graph_as_torch_compile(fn, X, _output())


def test_transformers_model_output_from_outside():
    outputs = pytest.importorskip("transformers.modeling_outputs")
    out = outputs.BaseModelOutputWithPooling(last_hidden_state=torch.randn(3), pooler_output=torch.randn(3))

    def f(x, o):
        return list(o.keys()), x + o[0] + o["pooler_output"] + o.to_tuple()[1]

    _one_graph_as_torch_compile(f, X, out)


def test_returned_view_is_the_real_objects_view():
    res = check(lambda x, o: (x + 1, o.keys()), X, _output(), graphs=1)
    assert type(res.compiled.out[1]) is type(collections.OrderedDict().keys())


def test_keys_changed_between_calls_recompile():
    def f(x, o):
        return x * len(list(o.keys()))

    cf = bytegraph.compile(f)
    a, b = _output(), Output(only=torch.ones(3))
    assert torch.equal(cf(X, a), f(X, a))
    assert torch.equal(cf(X, b), f(X, b))  # the keys guard failed: traced again


def test_mutating_a_dict_base_still_breaks():
    def f(x, o):
        o.move_to_end("hidden")
        return x + 1, list(o.keys())

    check(f, X, _output())


# ---- properties through a subclass MRO ---------------------------------------------------------

class Base:
    scale = 2

    @property
    def factor(self):
        return self.scale

    @classmethod
    def make_shift(cls):
        return cls.scale + 1


class Middle(Base):
    @property
    def factor(self):
        return super().factor * 10


class Leaf(Middle):
    scale = 3


def test_properties_and_classmethods_through_the_mro():
    check(lambda x, o: x * o.factor + o.make_shift() + type(o).make_shift(), X, Leaf(), graphs=1, fullgraph=True)


class Plain:
    pass


@pytest.mark.parametrize("cls", [Plain, Counting], ids=["plain class", "Python __setattr__/__delattr__"])
def test_attribute_added_then_deleted_replays_no_delete(cls):
    def f(x, o):
        o.b = 1
        del o.b  # the real object never had `b`: nothing to delete after the graph
        o.keep = 2
        del o.keep
        o.keep = 3
        del o.keep  # `keep` existed: deleted once
        return x + 1

    obj = cls()
    obj.keep = 0
    check(f, X, obj, graphs=1)
