"""Sets made in the trace that hold hook registries' ids, eager vs compiled (Note [Hook
registries] in bytegraph/vars/hooks/registry.py).

A set that only collects ids and answers `in` for ids keeps them by tracker, so the hook
registered again under a new id does not recompile (`Module._call_impl`'s set of the
`always_call` hooks that ran, and its check of that set when `forward` raises); anything that
needs the ids' values (iteration, a constant member, set algebra, the set leaving the
function) guards them, and each new id recompiles, with eager's answer every time.
"""
from __future__ import annotations

import torch

import bytegraph
from hook_helpers import differential


class Doubler(torch.nn.Module):
    def forward(self, x):
        return 2 * x + 1


class Raises(torch.nn.Module):
    def forward(self, x):
        raise ValueError("forward failed")


def _post(mod, args, out):
    return out * 3


def _always(log):
    def hook(mod, args, out):
        log.append("always")
    return hook


def _world(fn, module=Doubler, hooks=2, always=False):
    """`build` for `differential` (fn(m, x) is the compiled function) and the `after_call` that
    removes every hook and registers the same functions again (new ids)."""
    handles = {}

    def register(m, log):
        return [m.register_forward_hook(_always(log) if always else _post, always_call=always) for _ in range(hooks)]

    def build():
        torch.manual_seed(0)
        m = module()
        log = []
        handles[id(m)] = (register(m, log), log)
        return fn, (lambda i: (m, torch.randn(2, 3))), log

    def after_call(i, args, out, world):
        m = args[0]
        old, log = handles[id(m)]
        for h in old:
            h.remove()
        handles[id(m)] = (register(m, log), log)
    return build, after_call


def _collect(m):
    seen = set()
    for hook_id in m._forward_hooks:
        seen.add(hook_id)
    return seen


def test_ids_collected_and_tested_compile_once():
    def f(m, x):
        seen = _collect(m)
        first = next(iter(m._forward_hooks))
        seen.discard(first)
        return m(x) * len(seen) + (first in seen) + (first not in seen) * 2

    build, after_call = _world(f)
    differential(build, calls=4, graphs=1, after_call=after_call)


def test_ids_removed_with_remove_compile_once():
    def f(m, x):
        seen = _collect(m)
        for hook_id in m._forward_hooks:
            seen.remove(hook_id)
        return m(x) + len(seen)

    build, after_call = _world(f)
    differential(build, calls=4, graphs=1, after_call=after_call)


def test_always_call_hooks_after_a_raising_forward_run_once():
    # _call_impl's except path: each always_call hook not run yet runs (its id not in the set)
    build, after_call = _world(lambda m, x: m(x), module=Raises, always=True)
    differential(build, calls=3, after_call=after_call, backward=False)


def test_iterating_the_ids_follows_eager():
    def f(m, x):  # (the two runs' ids differ: their offsets from the least agree)
        seen = _collect(m)
        return x + sum(i * (k - min(seen)) for i, k in enumerate(sorted(seen)))

    build, after_call = _world(f)
    differential(build, calls=3, after_call=after_call, steady=False)


def test_a_constant_member_compares_by_value():
    def f(m, x):
        seen = _collect(m)
        probe = next(iter(m._forward_hooks))
        seen.add(-1)
        return x + (probe in seen) + (-1 in seen) * 2 + len(seen)

    build, after_call = _world(f)
    differential(build, calls=3, after_call=after_call, steady=False)


def test_set_algebra_on_ids_follows_eager():
    def f(m, x):
        seen = _collect(m)
        return x + len(seen | {next(iter(m._forward_hooks)), 5}) + len(seen - {5})

    build, after_call = _world(f)
    differential(build, calls=3, after_call=after_call, steady=False)


def test_the_set_returned_holds_the_ids():
    # not differential: the ids are the world's own; the set must be this call's ids
    m = Doubler()
    compiled = bytegraph.compile(lambda m, x: (m(x), _collect(m)), backend="eager")
    for _ in range(3):
        handles = [m.register_forward_hook(_post) for _ in range(2)]
        out, seen = compiled(m, torch.ones(2))
        assert seen == set(m._forward_hooks) and len(seen) == 2
        torch.testing.assert_close(out, torch.full((2,), 27.0))
        for h in handles:
            h.remove()
