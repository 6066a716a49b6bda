"""Note [Shared guard paths] (guards/compile.py): the guard function reads each path several
clauses spell once into a local, before the first clause that spells it; the clauses users
see keep the full spelling, and every guard still fails exactly when its value changes."""
import torch

import bytegraph
from helpers import CompileCounter


class Holder:
    pass


def _entry(compiled):
    return compiled.__bg_compiled__.entries[0]


def _scaled_item(kw):
    return kw["x"] * kw["scale"]


def _compile_scaled_item():
    """`_scaled_item` compiled and called once on `kw`: (compiled, its counter, kw, guards)."""
    counter = CompileCounter()
    compiled = bytegraph.compile(_scaled_item, backend=counter)
    kw = {"x": torch.ones(3), "scale": 2.0}
    torch.testing.assert_close(compiled(kw), _scaled_item(kw))
    return compiled, counter, kw, _entry(compiled).guards


def test_a_shared_path_is_read_once_and_clauses_keep_the_full_spelling():
    fn = _scaled_item
    compiled, counter, kw, guards = _compile_scaled_item()
    assert "(__bg_p0 := kw['x'])" in guards.source  # bound by the first clause that reads it
    assert guards.source.count("kw['x']") == 1, guards.source
    assert any(clause.count("kw['x']") == 6 for clause in guards.clauses), guards.clauses
    for changed in ({"x": torch.ones(4), "scale": 2.0}, {"x": torch.ones(3), "scale": 3.0},
                    {"x": torch.ones(3, dtype=torch.float64), "scale": 2.0}):
        torch.testing.assert_close(compiled(changed), fn(changed))
    assert counter.frame_count == 4
    assert guards.first_failure((kw,)) is None
    assert "kw['x']" in guards.first_failure(({"x": torch.ones(5), "scale": 2.0},)).describe()


def test_a_deep_attribute_path_shared_by_clauses():
    def fn(x, h):
        return x * h.inner.a + h.inner.b

    h = Holder()
    h.inner = Holder()
    h.inner.a, h.inner.b = 2, 3
    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter)
    x = torch.ones(2)
    torch.testing.assert_close(compiled(x, h), fn(x, h))
    source = _entry(compiled).guards.source
    assert source.count("h.inner") == 1 and "(__bg_p0 := h.inner)" in source, source
    h.inner.b = 4
    torch.testing.assert_close(compiled(x, h), fn(x, h))
    h.inner = 5  # a path that no longer reads: the guard fails (no exception escapes)
    assert counter.frame_count == 2
    try:
        fn(x, h)
    except AttributeError:
        pass
    else:
        raise AssertionError("eager should raise")


def test_module_parameters_still_bind_their_aliases_first():
    m = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2))
    counter = CompileCounter()
    compiled = bytegraph.compile(m, backend=counter)
    x = torch.randn(3, 4)
    torch.testing.assert_close(compiled(x), m(x))
    m[2].bias.requires_grad_(False)
    torch.testing.assert_close(compiled(x), m(x))
    assert counter.frame_count == 2


def test_another_thread_spells_names_in_full_while_guards_compile():
    import threading

    from bytegraph.guards.sources import ItemSource, LocalSource, naming

    source = ItemSource(LocalSource("kw"), "x")
    seen = []
    with naming({source: "__bg_p0"}):
        assert source.name() == "__bg_p0"
        thread = threading.Thread(target=lambda: seen.append(source.name()))
        thread.start()
        thread.join()
    assert seen == ["kw['x']"] and source.name() == "kw['x']"


def test_a_path_is_bound_inline_only_where_the_clause_reads_it_first():
    from bytegraph.guards.compile import _binds_first

    new = [(None, "__bg_p0")]
    assert _binds_first("type((__bg_p0 := kw['x'])) is K and __bg_p0 == V", new)
    assert _binds_first("'len' not in (__bg_p0 := getattr(f, '__globals__'))", new)
    assert _binds_first("type(((__bg_d1 := (__bg_m1 := (__bg_p0 := a.b)).__dict__) and __bg_m1)) is K", new)
    assert not _binds_first("x is (__bg_p0 := a.b)", new)  # after a comparison
    assert not _binds_first("a.c is K and (__bg_p0 := a.b) is K", new)  # after a short circuit
    assert not _binds_first("len({id(v) for v in ((__bg_p0 := a.b), c)}) == 2", new)
    assert not _binds_first("((__bg_p0 := a.b) if c else d) is K", new)
    assert not _binds_first("type(\0__bg_p0\0) is K", new)  # a marker left: never spelled
    assert not _binds_first("type(a.b) is K", new)


def test_a_path_no_clause_can_bind_is_read_by_a_statement(monkeypatch):
    import bytegraph.guards.compile as guard_compile

    monkeypatch.setattr(guard_compile, "_binds_first", lambda clause, new: False)
    monkeypatch.setattr(guard_compile, "_RENDERED", {})  # rendered anew, not kept from another test
    fn = _scaled_item
    compiled, counter, kw, guards = _compile_scaled_item()
    assert "__bg_p0 = kw['x']\n" in guards.source and guards.source.count("kw['x']") == 1, guards.source
    assert ":= kw" not in guards.source
    for changed in ({"x": torch.ones(4), "scale": 2.0}, {"x": torch.ones(3), "scale": 3.0}):
        torch.testing.assert_close(compiled(changed), fn(changed))
    torch.testing.assert_close(compiled(kw), fn(kw))
    assert counter.frame_count == 3
