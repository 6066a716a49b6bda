"""Attribute reads of instances whose class defines `__getattribute__` (a config class that
maps alias names, as transformers' `PretrainedConfig` does): the Python hook is traced, its
`super().__getattribute__(name)` is the plain lookup; a hook combined with `__getattr__`
breaks with a reason. Differential: eager vs compiled."""
import torch

import bytegraph
from helpers import check


class Config:
    attribute_map = {"num_layers": "n_layer", "hidden": "n_embd"}

    def __init__(self, n_layer=2, n_embd=4):
        self.n_layer = n_layer
        self.n_embd = n_embd

    def __getattribute__(self, key):
        if key != "attribute_map" and key in super().__getattribute__("attribute_map"):
            key = super().__getattribute__("attribute_map")[key]
        return super().__getattribute__(key)

    def scaled(self, x):
        return x * self.hidden


class Counting:
    def __init__(self):
        self.reads = []
        self.v = 3

    def __getattribute__(self, key):
        if key != "reads":
            object.__getattribute__(self, "reads").append(key)
        return object.__getattribute__(self, key)


class WithBoth(Config):
    def __getattr__(self, key):
        if key.startswith("__"):  # copy.deepcopy's protocol lookups
            raise AttributeError(key)
        return 7


def _x():
    return torch.randn(3)


def test_alias_read_through_python_getattribute_from_outside():
    def fn(x, cfg):
        return x * cfg.num_layers + cfg.n_embd

    check(fn, _x(), Config(), graphs=1, fullgraph=True)


def test_alias_read_of_an_object_made_in_the_trace():
    def fn(x):
        cfg = Config(3, 5)
        return x * cfg.num_layers + cfg.hidden

    check(fn, _x(), graphs=1, fullgraph=True)


def test_missing_attribute_caught_as_eager():
    # before the hook was traced the lookup raised AttributeError here: a silent wrong result
    def fn(x, cfg):
        try:
            n = cfg.num_layers
        except AttributeError:
            n = 0
        try:
            m = cfg.missing
        except AttributeError:
            m = -1
        return x * n + m

    check(fn, _x(), Config(), graphs=1, fullgraph=True)


def test_missing_attribute_raises_as_eager():
    def fn(x, cfg):
        return x + cfg.not_there

    check(fn, _x(), Config())


def test_methods_are_found_through_the_hook():
    def fn(x, cfg):
        return cfg.scaled(x)

    check(fn, _x(), Config(), graphs=1, fullgraph=True)


def test_hook_inside_an_inlined_helper():
    def layers(cfg):
        return cfg.num_layers * 2

    def fn(x, cfg):
        return x + layers(cfg)

    check(fn, _x(), Config(4), graphs=1, fullgraph=True)


def test_hook_side_effects_replayed_in_order():
    def fn(x, obj):
        return x + obj.v + obj.v

    obj_eager, obj_compiled = Counting(), Counting()
    assert torch.equal(fn(torch.ones(2), obj_eager), bytegraph.compile(fn, fullgraph=True)(torch.ones(2), obj_compiled))
    assert object.__getattribute__(obj_eager, "reads") == object.__getattribute__(obj_compiled, "reads") == ["v", "v"]


def test_hook_across_a_graph_break():
    def fn(x, cfg):
        y = x * cfg.num_layers
        print("break")
        return y + cfg.hidden

    check(fn, _x(), Config(), graphs=2)


def test_getattribute_and_getattr_together_break_with_a_reason():
    def fn(x, cfg):
        return x + cfg.num_layers + cfg.unknown

    check(fn, _x(), WithBoth())
    reasons = [r.reason for r in bytegraph.explain(fn)(_x(), WithBoth()).break_reasons]
    assert any("defines both __getattribute__ and __getattr__" in r for r in reasons), reasons


def test_recompiles_when_the_alias_map_target_changes():
    def fn(x, cfg):
        return x * cfg.num_layers

    compiled = bytegraph.compile(fn)
    for n in (2, 3):
        cfg = Config(n)
        assert torch.equal(compiled(torch.ones(2), cfg), fn(torch.ones(2), cfg))


LOG = []


class Logging(Config):
    def __getattribute__(self, key):
        LOG.append(key)
        return super().__getattribute__(key)


def test_a_hook_with_an_effect_runs_once_per_read():
    """Guards and residual code read what `super().__getattribute__` read with
    `object.__getattribute__` (GenericAttrSource), never through the hook."""
    def fn(x, cfg):
        return x * cfg.n_layer + cfg.n_layer

    check(fn, _x(), Logging(), setup=LOG.clear, state=lambda: list(LOG))


def test_guards_never_run_the_hook():
    def fn(x, cfg):
        d = cfg.__dict__
        return x * cfg.n_layer + d["n_embd"] + ("extra" in d), d

    cfg, x = Logging(), _x()
    compiled = bytegraph.compile(fn)
    torch.testing.assert_close(compiled(x, cfg)[0], fn(x, cfg)[0])
    LOG.clear()
    compiled(x, cfg)  # a guard check and a graph run: the hook runs as often as in eager
    traced = list(LOG)
    LOG.clear()
    fn(x, cfg)
    assert traced == LOG
    source = compiled.__bg_compiled__.entries[0].guards.source
    assert "__bg_getattribute(" in source and ".n_layer" not in source, source


def test_values_read_past_the_hook_are_rebuilt_past_it():
    def fn(x, cfg):
        cfg.n_layer  # noqa: B018  (a read through the hook)
        return x + 1, cfg.layers, cfg.__dict__

    cfg = Logging()
    cfg.layers = [1, 2]
    check(fn, _x(), cfg, setup=LOG.clear, state=lambda: list(LOG))
