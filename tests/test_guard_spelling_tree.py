"""Note [Guard spelling tree] (guards/spelling.py) and the paths it shares (Note [Shared guard
paths] in guards/compile.py): each source is spelled once per guard build, how often a path
is read is counted on the tree, clauses are spelled again from it with their locals, and a
program rendered before is not rendered again (Note [Guard code cache]). Differential: every
guard still fails exactly when its value changes."""
import re

import torch

import bytegraph
from bytegraph.guards import compile as guard_compile
from bytegraph.guards.compile import CompiledGuards
from bytegraph.guards.guard import Guard, GuardKind
from bytegraph.guards.sources import AttrSource, DefaultSource, GlobalSource, LocalSource
from bytegraph.guards.spelling import Spelling
from helpers import CompileCounter
from support.small_models import Scaled


class Holder:
    pass


def _guard_source(compiled) -> str:
    return compiled.__bg_compiled__.entries[0].guards.source


def test_each_source_is_one_node_and_reads_are_counted_through_paths():
    inner = AttrSource(LocalSource("h"), "inner")
    a, b = AttrSource(inner, "a"), AttrSource(inner, "b")
    guards = [Guard(GuardKind.TYPE_MATCH, inner, Holder), Guard(GuardKind.CONSTANT_MATCH, a, 2),
              Guard(GuardKind.CONSTANT_MATCH, b, 3)]
    spelling = Spelling()
    clauses = spelling.clauses(guards, guard_compile._Binder())
    assert spelling.texts.count("h.inner") == 1  # spelled once, however many clauses read through it
    assert [spelling.texts[c] for c in clauses][1] == "type(h.inner.a) is __bg_k1 and h.inner.a == __bg_k2"
    top, within = spelling.read_counts(clauses)
    assert top["h.inner"][0] == 1 and within["h.inner"] == {"h.inner.a": 1, "h.inner.b": 1}
    assert top["h.inner.a"][0] == 1 and "h.inner.a" not in within
    # h.inner: once by its clause, once under each of a and b; a and b: twice in their own clause
    assert guard_compile._shared(spelling, clauses) == {"h.inner", "h.inner.a", "h.inner.b"}


def test_a_path_read_once_gets_no_local():
    guards = [Guard(GuardKind.TYPE_MATCH, AttrSource(LocalSource("h"), "a"), int),
              Guard(GuardKind.ID_MATCH, AttrSource(LocalSource("h"), "b"), None)]
    spelling = Spelling()
    clauses = spelling.clauses(guards, guard_compile._Binder())
    assert guard_compile._shared(spelling, clauses) == set()


def _scaled(x, cfg=None):
    return x * cfg.a + cfg.b


CFG = Holder()
CFG.a, CFG.b = 2, 3
_scaled.__defaults__ = (CFG,)


def _calls_scaled(x):
    return _scaled(x)


def test_a_default_read_through_its_defaults_tuple_binds_one_local():
    counter = CompileCounter()
    compiled = bytegraph.compile(_calls_scaled, backend=counter)
    x = torch.ones(3)
    torch.testing.assert_close(compiled(x), _calls_scaled(x))
    source = _guard_source(compiled)
    assert "__defaults__" in source, source
    assert not re.search(r"\((__bg_p\d+) := \1\)", source), source  # never a local bound to itself
    for name, value in re.findall(r"\((__bg_p\d+) := ([^()]*)\)", source):
        assert name not in value, source
    CFG.b = 4
    torch.testing.assert_close(compiled(x), _calls_scaled(x))
    replaced = Holder()
    replaced.a, replaced.b = 5, 4
    _scaled.__defaults__ = (replaced,)
    try:
        torch.testing.assert_close(compiled(x), _calls_scaled(x))
    finally:
        _scaled.__defaults__ = (CFG,)
        CFG.b = 3
    assert counter.frame_count == 3


def test_a_default_spelled_as_its_item_shares_the_local():
    fn = LocalSource("f")
    default = DefaultSource(fn, "cfg", 0)
    guards = [Guard(GuardKind.TYPE_MATCH, default, Holder),
              Guard(GuardKind.CONSTANT_MATCH, AttrSource(default, "a"), 2),
              Guard(GuardKind.CONSTANT_MATCH, AttrSource(default, "b"), 3)]
    holder = Holder()
    holder.a, holder.b = 2, 3
    f_defaults = (holder,)

    def g(cfg=holder):
        return cfg

    compiled = CompiledGuards(guards, ("f",), {}, None)
    assert compiled.source.count("f.__defaults__[0]") == 1, compiled.source
    assert compiled.fn(g) and g.__defaults__ == f_defaults
    holder.b = 4
    assert not compiled.fn(g) and compiled.first_failure((g,)) is guards[2]

    def other(cfg=5):
        return cfg

    assert not compiled.fn(other) and compiled.first_failure((other,)) is guards[0]


def test_a_program_rendered_before_is_not_rendered_again(monkeypatch):
    rendered = []
    render = guard_compile._render

    def counting(*args):
        rendered.append(args)
        return render(*args)

    monkeypatch.setattr(guard_compile, "_render", counting)
    monkeypatch.setattr(guard_compile, "_RENDERED", {})
    counters = [CompileCounter(), CompileCounter()]
    models = [Scaled(), Scaled()]
    compiled = [bytegraph.compile(m, backend=c) for m, c in zip(models, counters)]
    x = torch.randn(3, 4)
    for m, c in zip(models, compiled):
        torch.testing.assert_close(c(x), m(x))
    assert len(rendered) == 1
    entries = [c._bg_compiled.entries[0] for c in compiled]
    assert entries[0].guards.source == entries[1].guards.source
    models[0].scale = 3  # only the first model changes: only it recompiles, rendering its new program
    for m, c in zip(models, compiled):
        torch.testing.assert_close(c(x), m(x))
    assert [c.frame_count for c in counters] == [2, 1] and len(rendered) == 2
    models[1].lin.weight.requires_grad_(False)  # a tensor guard of the second one fails
    for m, c in zip(models, compiled):
        torch.testing.assert_close(c(x), m(x))
    assert [c.frame_count for c in counters] == [2, 2]


def test_a_global_spelled_by_a_different_program_is_rendered_anew(monkeypatch):
    monkeypatch.setattr(guard_compile, "_RENDERED", {})
    one = [Guard(GuardKind.CONSTANT_MATCH, AttrSource(GlobalSource("CFG"), "a"), 2)]
    two = [Guard(GuardKind.CONSTANT_MATCH, AttrSource(GlobalSource("CFG"), "b"), 3)]
    scope = {"CFG": CFG}
    first, second = CompiledGuards(one, (), scope, None), CompiledGuards(two, (), scope, None)
    assert len(guard_compile._RENDERED) == 2 and first.source != second.source
    assert first.fn() and second.fn()
    CFG.b = 5
    try:
        assert first.fn() and not second.fn()
    finally:
        CFG.b = 3
