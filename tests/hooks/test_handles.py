"""Handles of tensor hooks registered in a compiled region: the real `RemovableHandle` lands
where user code put it; `remove()` inside is replayed in order."""
from __future__ import annotations

import pytest
import torch
from torch.utils.hooks import RemovableHandle

import bytegraph
from hook_helpers import FAST_BACKENDS, Counting, differential, leaf


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_registered_and_removed_in_one_call_never_fires(backend):
    def build():
        log = []

        def f(x):
            h = x.register_hook(lambda g: log.append("fired") or g * 100)
            y = (x * 2).sum()
            h.remove()
            return y
        return f, lambda i: (leaf(3, seed=i),), log
    differential(build, backend=backend, graphs=1)


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_removed_after_a_graph_break(backend):
    def build():
        log = []

        def f(x):
            h = x.register_hook(lambda g: log.append("fired") or g * 100)
            y = x * 2
            bytegraph.graph_break()
            h.remove()
            return y.sum()
        return f, lambda i: (leaf(3, seed=i),), log
    differential(build, backend=backend, graphs=2)


def test_one_of_two_hooks_removed():
    def build():
        log = []

        def f(x):
            a = x.register_hook(lambda g: log.append("a") or g * 2)
            x.register_hook(lambda g: log.append("b") or g + 1)
            a.remove()
            return (x * x).sum()
        return f, lambda i: (leaf(3, seed=i),), log
    differential(build, backend="aot_eager", graphs=1)


def test_with_handle_removes_at_block_exit():
    def build():
        log = []

        def f(x):
            with x.register_hook(lambda g: log.append("in block") or g * 7):
                y = x * 2
            x.register_hook(lambda g: log.append("kept"))
            return y.sum()
        return f, lambda i: (leaf(3, seed=i),), log
    differential(build, backend="eager", graphs=1)


def _compiled(f, backend="eager"):
    counter = Counting(backend)
    return bytegraph.compile(f, backend=counter), counter


def test_returned_handle_is_the_real_handle_and_removes_outside():
    log = []

    def f(x):
        h = x.register_hook(lambda g: log.append("fired") or g * 5)
        return (x * 2).sum(), h
    cf, counter = _compiled(f)
    x = leaf(3)
    out, h = cf(x)
    assert type(h) is RemovableHandle
    h.remove()
    out.backward()
    assert log == [] and torch.equal(x.grad, torch.full((3,), 2.0))
    x2 = leaf(3)
    out2, h2 = cf(x2)
    out2.backward()
    assert log == ["fired"] and torch.equal(x2.grad, torch.full((3,), 10.0))
    assert h2.id > h.id and counter.frames == 1


def test_handles_stored_in_a_list_a_dict_and_an_attribute():
    class Holder:
        pass
    log = []

    def f(x, hs, d, holder):
        hs.append(x.register_hook(lambda g: log.append("list") or g))
        d["h"] = x.register_hook(lambda g: log.append("dict") or g)
        holder.h = x.register_hook(lambda g: log.append("attr") or g)
        return (x * 3).sum()
    cf, counter = _compiled(f)
    for _ in range(3):
        hs, d, holder = [], {}, Holder()
        x = leaf(3)
        out = cf(x, hs, d, holder)
        assert [type(v) for v in (hs[0], d["h"], holder.h)] == [RemovableHandle] * 3
        d["h"].remove()
        out.backward()
        assert log[-2:] == ["list", "attr"]
    assert counter.frames == 1


def test_handle_live_across_a_break_is_the_real_one():
    seen = []

    def f(x):
        h = x.register_hook(lambda g: g * 2)
        bytegraph.graph_break()
        seen.append(type(h))
        return (x * 1).sum(), h
    cf, _ = _compiled(f)
    x = leaf(3)
    out, h = cf(x)
    out.backward()
    assert seen == [RemovableHandle] and isinstance(h, RemovableHandle)
    assert torch.equal(x.grad, torch.full((3,), 2.0))


def test_handle_made_outside_removed_inside():
    def build():
        log = []

        def make(i):
            x = leaf(3, seed=i)
            h = x.register_hook(lambda g: log.append("outside") or g * 10)
            return x, h

        def f(x, h):
            h.remove()
            return (x * 2).sum()
        return f, make, log
    differential(build, backend="aot_eager", graphs=1, calls=4)


GLOBAL_HANDLE = None


def test_global_handle_removed_inside():
    def build():
        log = []

        def make(i):
            global GLOBAL_HANDLE
            x = leaf(3, seed=i)
            GLOBAL_HANDLE = x.register_hook(lambda g: log.append("global handle") or g * 10)
            return (x,)

        def f(x):
            GLOBAL_HANDLE.remove()
            return (x * 2).sum()
        return f, make, log
    differential(build, backend="eager", graphs=1, calls=3)


def test_handle_id_flows_back_to_python_without_recompiling():
    def f(x):
        a = x.register_hook(lambda g: g)
        b = x.register_hook(lambda g: g)
        return x * 1, a, b.id, b.id - a.id
    cf, counter = _compiled(f)
    for _ in range(4):
        _, a, b_id, diff = cf(leaf(3))
        assert b_id == a.id + 1 and diff == 1
    assert counter.frames == 1


def test_handle_id_used_as_a_constant_breaks_with_a_reason(caplog):
    table = {}

    def f(x):
        h = x.register_hook(lambda g: g)
        table[h.id] = "registered"
        return x * 2
    with caplog.at_level("DEBUG", logger="bytegraph.graph_breaks"):
        cf, _ = _compiled(f)
        out = cf(leaf(3))
    assert "using the id of a hook handle made in the compiled region as a Python value" in caplog.text
    assert list(table.values()) == ["registered"] and out.shape == (3,)


def test_other_handle_attributes_break_with_a_reason(caplog):
    def f(x):
        h = x.register_hook(lambda g: g * 2)
        ref = h.hooks_dict_ref
        return x * 2, ref
    with caplog.at_level("DEBUG", logger="bytegraph.graph_breaks"):
        cf, _ = _compiled(f)
        x = leaf(3)
        out, ref = cf(x)
    assert "attribute 'hooks_dict_ref' of a hook handle made in the compiled region" in caplog.text
    assert len(ref()) == 1
    out.sum().backward()
    assert torch.equal(x.grad, torch.full((3,), 4.0))  # registered once, not twice


def test_removing_a_module_forward_hook_inside_breaks_and_matches_eager():
    def build():
        torch.manual_seed(0)
        lin = torch.nn.Linear(3, 3)
        log = []

        def make(i):
            h = lin.register_forward_hook(lambda m, a, o: log.append("fwd") or o * 2)
            return torch.randn(2, 3), h

        def f(x, h):
            y = lin(x)
            h.remove()
            return lin(y).sum()
        return f, make, log
    differential(build, backend="eager", calls=3, steady=False)


def test_hook_whose_closure_holds_its_own_handle_runs_eagerly_with_a_reason(caplog):
    def build():
        log = []

        def f(x):
            h = None

            def once(g):
                log.append("once")
                h.remove()
                return g * 2
            h = x.register_hook(once)
            return (x * 1).sum()
        return f, lambda i: (leaf(3, seed=i),), log
    with caplog.at_level("DEBUG", logger="bytegraph.graph_breaks"):
        # the graph is compiled before the residual code finds the cycle; the entry runs eagerly
        differential(build, backend="eager", graphs=1)
    assert "a tensor hook whose closure holds the hook's own handle" in caplog.text


def test_removing_a_module_hook_handle_inside_names_the_reason(caplog):
    lin = torch.nn.Linear(3, 3)
    h = lin.register_forward_pre_hook(lambda m, a: None)

    def f(x, h):
        h.remove()
        return lin(x)
    with caplog.at_level("DEBUG", logger="bytegraph.graph_breaks"):
        bytegraph.compile(f)(torch.randn(2, 3), h)
    assert "a module hook, inside the compiled region" in caplog.text
    assert not lin._forward_pre_hooks
