"""Lookups by one key in an instance `__dict__` (`d.get(k)`, `d[k]`, `k in d`): only that
key is read and guarded, as a `__getattribute__` written in Python does at every attribute
read (transformers' configs look up one spec name in `self.__dict__`). The other entries of
the dict are not guarded: changing them between calls does not recompile. Differential:
eager vs compiled over call sequences, graphs counted."""
import pytest
import torch

import bytegraph
from helpers import CompileCounter, check


class SpecConfig:
    def __init__(self):
        self.scale = 2
        self.name = "cfg"
        self.ratio = 0.5
        self.table = {"k": 1}

    def __getattribute__(self, key):
        spec = super().__getattribute__("__dict__").get("_spec")
        if spec is not None and key in spec:
            return spec[key]
        return super().__getattribute__(key)


def _sequence(fn, make_args, changes, graphs):
    """Call eager and compiled `fn` on fresh arguments after each change; equal results,
    `graphs` graphs in all."""
    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter)
    for change in changes:
        eager_args, compiled_args = make_args(), make_args()
        change(eager_args[1])
        change(compiled_args[1])
        torch.testing.assert_close(compiled(*compiled_args), fn(*eager_args))
    assert counter.frame_count == graphs


def test_a_missing_key_is_guarded_alone():
    def fn(x, cfg):
        return x * cfg.scale

    def name(cfg):
        cfg.name = "other"

    def ratio(cfg):
        cfg.ratio = 0.25

    def table(cfg):
        cfg.table["k"] = 5

    _sequence(fn, lambda: (torch.ones(3), SpecConfig()), [lambda cfg: None, name, ratio, table], graphs=1)


def test_the_key_appearing_recompiles():
    def fn(x, cfg):
        return x * cfg.scale

    def spec(cfg):
        object.__setattr__(cfg, "_spec", {"scale": 7})

    _sequence(fn, lambda: (torch.ones(3), SpecConfig()), [lambda cfg: None, spec, lambda cfg: None, spec], graphs=2)


def test_a_present_key_is_guarded_by_its_value():
    def fn(x, cfg):
        d = cfg.__dict__
        return x * d["scale"] + d.get("ratio", 0.0)

    def scale(cfg):
        cfg.scale = 3

    _sequence(fn, lambda: (torch.ones(3), SpecConfig()), [lambda cfg: None, scale, lambda cfg: None], graphs=2)


def test_two_present_keys_are_both_guarded():
    def fn(x, obj):
        d = obj.__dict__
        return x + ("scale" in d) + ("name" in d)

    def drop_name(cfg):
        del cfg.name

    _sequence(fn, lambda: (torch.ones(3), SpecConfig()), [lambda cfg: None, drop_name, lambda cfg: None], graphs=2)


def test_pending_writes_are_seen_by_keyed_reads():
    class Plain:
        def __init__(self):
            self.a = 1
            self.b = 2

    def fn(x, obj):
        obj.c = 3
        del obj.b
        d = obj.__dict__
        return x * d["c"] + d.get("a") + ("b" in d) + d.get("b", 10), sorted(d)

    check(fn, torch.ones(3), Plain(), graphs=1)


@pytest.mark.parametrize("read", ["getitem", "get", "contains"])
def test_absent_key_reads_as_eager(read):
    class Plain:
        def __init__(self):
            self.a = 1

    def fn(x, obj):
        d = obj.__dict__
        if read == "getitem":
            try:
                return x + d["missing"]
            except KeyError as e:
                return x - len(str(e))
        if read == "get":
            return x + (d.get("missing") is None) + d.get("missing", 4)
        return x + ("missing" in d) + ("a" in d)

    check(fn, torch.ones(3), Plain())


def test_whole_dict_read_after_a_keyed_read_is_one_tracker():
    class Plain:
        def __init__(self):
            self.items_ = [1]

    def fn(x, obj):
        d = obj.__dict__
        first = d["items_"]
        first.append(2)
        return x + len(list(d.values())[0]), d["items_"] is first, len(d)

    check(fn, torch.ones(3), Plain(), graphs=1)


def test_presence_of_two_function_attributes_is_guarded_for_each():
    def tagged():
        pass

    def fn(x, f):
        return x + hasattr(f, "first") + hasattr(f, "second")

    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter)
    tagged.first = tagged.second = True
    torch.testing.assert_close(compiled(torch.ones(2), tagged), fn(torch.ones(2), tagged))
    del tagged.second
    torch.testing.assert_close(compiled(torch.ones(2), tagged), fn(torch.ones(2), tagged))
    assert counter.frame_count == 2
