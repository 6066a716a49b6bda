"""Read-only methods of a builtin container base (`dict.get`, `dict.__getitem__`,
`list.index`, `set.__contains__`...) called on an instance of a user subclass read from the
caller's world (a registry class whose own `get` calls `super().get`): run at trace time,
the result guarded at `dict.get(<object>, key)`; mutating ones stay graph breaks."""
import torch

import bytegraph
from helpers import check, compile_counted


class Registry(dict):
    """Like transformers' `_CanRecordRegistry`: keyed by the class name of a model."""

    def __setitem__(self, model, value):
        super().__setitem__(type(model).__name__, value)

    def get(self, model):
        return super().get(type(model).__name__) or {}

    def has(self, model):
        return super().__contains__(type(model).__name__)


class Listing(list):
    def where(self, item):
        return super().index(item) if super().__contains__(item) else -1


class Flags(frozenset):
    def on(self, name):
        return super().__contains__(name)


REGISTRY = Registry()
LISTING = Listing(["a", "b", "c"])
FLAGS = Flags({"fast"})


class Net(torch.nn.Module):
    def forward(self, x):
        spec = REGISTRY.get(self)
        for name, scale in spec.items():
            x = x * scale
        return x + REGISTRY.has(self)


class Other(Net):
    pass


def _lookup(x, model):  # an inlined helper
    return x + len(REGISTRY.get(model))


REGISTRY[Net()] = {"hidden": 2.0, "attn": 3.0}


def test_super_get_of_dict_subclass_one_graph():
    check(Net(), torch.randn(3), graphs=1, fullgraph=True)


def test_lookup_inside_inlined_helper():
    net = Net()
    check(lambda x: _lookup(x, net) * 2, torch.randn(3), graphs=1, fullgraph=True)


def test_missing_key_falls_back_like_eager():
    check(Other(), torch.randn(3), graphs=1, fullgraph=True)


def test_lookup_across_a_graph_break():
    net = Net()

    def fn(x):
        x = _lookup(x, net)
        bytegraph.graph_break()
        return _lookup(x, net) + len(REGISTRY.get(net))

    check(fn, torch.randn(3), graphs=2)


def test_contents_changed_between_calls_recompiles():
    net = Net()
    fn, counter = compile_counted(net)
    x = torch.ones(2)
    assert torch.equal(fn(x), net(x))
    saved = dict.get(REGISTRY, "Net")
    try:
        REGISTRY[net] = {"hidden": 5.0}
        assert torch.equal(fn(x), net(x))
        assert counter.frame_count == 2
    finally:
        dict.__setitem__(REGISTRY, "Net", saved)


def test_list_and_frozenset_subclass_reads():
    def fn(x):
        return x * LISTING.where("b") + LISTING.where("z") + FLAGS.on("fast") + FLAGS.on("slow") + len(LISTING)

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_dict_getitem_missing_key_raises_like_eager():
    class Strict(dict):
        def lookup(self, key):
            return super().__getitem__(key)

    table = Strict(a=1)

    def fn(x):
        try:
            return x + table.lookup("b")
        except KeyError as e:
            return x - len(str(e))

    check(fn, torch.randn(2), graphs=1)


def test_mutating_base_method_breaks_with_reason():
    class Log(dict):
        def add(self, key):
            super().__setitem__(key, 1)

    log = Log()

    def fn(x):
        log.add("k")
        return x + 1

    out = bytegraph.explain(fn, torch.ones(2))
    assert out.graph_break_count >= 1
    assert any("__setitem__" in b.reason for b in out.break_reasons), [b.reason for b in out.break_reasons]
    assert log == {"k": 1}


def test_made_during_tracing_is_traced():
    """A registry made in the trace is a dict-subclass object (vars/dict_subclass.py); it used to break."""
    def fn(x):
        r = Registry()
        r[x] = {"k": 1}
        return x + len(r.get(x)) + len(r.get(3)), r.has(x), r

    check(fn, torch.ones(2), graphs=1, fullgraph=True)


def test_getitem_of_defaultdict_subclass_breaks_not_runs_missing():
    import collections

    class Counts(collections.defaultdict):
        def read(self, key):
            return super().__getitem__(key)

    counts = Counts(int)

    def fn(x):
        return x + counts.read("new")

    out = bytegraph.explain(fn, torch.ones(2))
    assert any("__missing__" in b.reason for b in out.break_reasons), [b.reason for b in out.break_reasons]
    assert dict(counts) == {"new": 0}  # inserted once, by the eager call at the break
    torch.testing.assert_close(out.result, torch.ones(2))
