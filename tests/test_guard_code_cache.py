"""Note [Guard code cache] (guards/compile.py): a guard function whose text was compiled
before reuses that code object, run in its own entry's scope; the objects of `ObjectSource`s
are numbered in the text, so equal programs on other objects give equal texts, and each entry
still checks its own objects. Differential over call sequences, graphs counted."""
import torch

import bytegraph
from bytegraph.guards import compile as guard_compile
from bytegraph.guards.compile import CompiledGuards
from bytegraph.guards.guard import Guard, GuardKind
from bytegraph.guards.sources import AttrSource, ObjectSource
from helpers import CompileCounter
from support.small_models import Scaled


class Box:
    def __init__(self, v):
        self.v = v


def test_equal_texts_share_code_and_check_their_own_objects():
    first, second = Box(1), Box(1)
    a = CompiledGuards([Guard(GuardKind.CONSTANT_MATCH, AttrSource(ObjectSource(first), "v"), 1)], (), {}, None)
    b = CompiledGuards([Guard(GuardKind.CONSTANT_MATCH, AttrSource(ObjectSource(second), "v"), 1)], (), {}, None)
    assert a.source == b.source and "__bg_o0" in a.source and "__bg_obj_" not in a.source
    assert a.fn.__code__ is b.fn.__code__
    assert a.fn() and b.fn()
    second.v = 2
    assert a.fn() and not b.fn()
    assert b.first_failure(()) is b.guards[0] and a.first_failure(()) is None


def test_the_cache_keeps_the_most_recent_texts(monkeypatch):
    monkeypatch.setattr(guard_compile, "_CODE_CACHE", {})
    monkeypatch.setattr(guard_compile, "_CODE_CACHE_SIZE", 2)
    texts = [f"def __bg_guard():\n    return {i}\n" for i in range(3)]
    codes = [guard_compile._code_of(t) for t in texts]
    assert list(guard_compile._CODE_CACHE) == texts[1:]
    assert guard_compile._code_of(texts[2]) is codes[2]
    assert guard_compile._code_of(texts[0]) is not codes[0]  # evicted, compiled again


def test_two_instances_of_a_model_each_keep_their_guards():
    counters = [CompileCounter(), CompileCounter()]
    models = [Scaled(), Scaled()]
    compiled = [bytegraph.compile(m, backend=c) for m, c in zip(models, counters)]
    x = torch.randn(3, 4)
    for m, c in zip(models, compiled):
        torch.testing.assert_close(c(x), m(x))
    entries = [c._bg_compiled.entries[0] for c in compiled]
    assert entries[0].guards.source == entries[1].guards.source
    assert entries[0].guards.fn.__code__ is entries[1].guards.fn.__code__
    models[1].scale = 3  # only the second model changes: only it recompiles
    for m, c in zip(models, compiled):
        torch.testing.assert_close(c(x), m(x))
    assert [c.frame_count for c in counters] == [1, 2]
