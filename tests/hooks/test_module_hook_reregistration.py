"""A module hook removed and registered again between calls, eager vs compiled.

Every registration gets a new `RemovableHandle` id, the key of the hook in the module's
hook dicts (`_forward_hooks`, `_forward_hooks_with_kwargs`, ...). `Module._call_impl` uses
the ids only to pair a hook with its flags, so the same hook registered again (a new id,
the same function, the same flags, the same order) runs the same code: no recompile.
What changes the call (another function, another order, other flags, a hook added or
removed) recompiles; a trace that uses an id's value (a user reading the keys) is guarded
on it.
"""
from __future__ import annotations

import pytest
import torch
from torch.nn.modules import module as module_mod

import bytegraph
from hook_helpers import FAST_BACKENDS, differential


class Doubler(torch.nn.Module):
    def forward(self, x):
        return 2 * x + 1


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(3, 3)
        self.act = Doubler()

    def forward(self, x):
        return self.act(self.inner(x)).sum(-1)


def _post(mod, args, out):
    return 2 * out + 1


def _post_other(mod, args, out):
    return out - 3


def _pre(mod, args):
    return (args[0] * 3,)


def _post_kwargs(mod, args, kwargs, out):
    return out * (len(kwargs) + 2)


def _world(register, target=lambda m: m, module=Doubler):
    """`build` for `differential`: a module with hooks registered by `register(m)` (which
    returns the handles), re-registered after every call by `reregister`."""
    handles = {}

    def build():
        torch.manual_seed(0)
        m = module()
        handles[id(m)] = register(target(m))
        return (lambda m, x: m(x)), (lambda i: (m, torch.randn(2, 3))), []
    return build, handles


def _again(register, handles, target=lambda m: m):
    def after_call(i, args, out, world):
        m = args[0]
        for h in handles[id(m)]:
            h.remove()
        handles[id(m)] = register(target(m))
    return after_call


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_forward_hook_registered_again_with_the_same_function_compiles_once(backend):
    def register(m):
        return [m.register_forward_hook(_post)]
    build, handles = _world(register)
    differential(build, calls=10, backend=backend, graphs=1, after_call=_again(register, handles))


def test_forward_pre_hook_registered_again_compiles_once():
    def register(m):
        return [m.register_forward_pre_hook(_pre)]
    build, handles = _world(register)
    differential(build, calls=10, graphs=1, after_call=_again(register, handles))


def test_hook_with_kwargs_registered_again_compiles_once():
    """The `with_kwargs` flag lives in a second dict under the same new id."""
    def register(m):
        return [m.register_forward_hook(_post_kwargs, with_kwargs=True), m.register_forward_pre_hook(_pre)]
    build, handles = _world(register)
    differential(build, calls=10, graphs=1, after_call=_again(register, handles))


def test_hooks_of_a_submodule_registered_again_compile_once():
    def register(m):
        return [m.register_forward_hook(_post), m.register_forward_pre_hook(_pre)]
    build, handles = _world(register, target=lambda m: m.act, module=Net)
    differential(build, calls=10, graphs=1, after_call=_again(register, handles, target=lambda m: m.act))


def test_global_forward_hook_registered_again_compiles_once():
    handles = []

    def build():
        torch.manual_seed(0)
        m = Net()
        return (lambda m, x: m(x)), (lambda i: (m, torch.randn(2, 3))), []

    def after_call(i, args, out, world):
        while handles:
            handles.pop().remove()
        handles.append(module_mod.register_module_forward_hook(_post))

    handles.append(module_mod.register_module_forward_hook(_post))
    try:
        differential(build, calls=6, graphs=1, after_call=after_call)
    finally:
        while handles:
            handles.pop().remove()


def test_always_call_hook_registered_again_compiles_once():
    def register(m):
        return [m.register_forward_hook(_post, always_call=True)]
    build, handles = _world(register)
    differential(build, calls=4, graphs=1, after_call=_again(register, handles))


def test_always_call_hook_registered_again_matches_eager():
    def register(m):
        return [m.register_forward_hook(_post, always_call=True)]
    build, handles = _world(register)
    differential(build, calls=4, steady=False, after_call=_again(register, handles))


# ---- what does change the call recompiles ----------------------------------------------------

def _compiled_pair(module=Doubler):
    torch.manual_seed(0)
    m_e = module()
    m_c = module()
    m_c.load_state_dict(m_e.state_dict())
    counter_frames = []

    def backend(gm, example_inputs):
        counter_frames.append(gm)
        return gm.forward

    compiled = bytegraph.compile(lambda m, x: m(x), backend=backend)
    return m_e, m_c, compiled, counter_frames


def _same(compiled, m_e, m_c, x):
    torch.testing.assert_close(compiled(m_c, x), m_e(x))


def test_registered_again_with_another_function_recompiles():
    m_e, m_c, compiled, graphs = _compiled_pair()
    x = torch.randn(2, 3)
    hs = [m.register_forward_hook(_post) for m in (m_e, m_c)]
    _same(compiled, m_e, m_c, x)
    for h in hs:
        h.remove()
    hs = [m.register_forward_hook(_post_other) for m in (m_e, m_c)]
    _same(compiled, m_e, m_c, x)
    _same(compiled, m_e, m_c, x)
    assert len(graphs) == 2


def test_hook_replaced_in_the_dict_under_its_id_recompiles():
    m_e, m_c, compiled, graphs = _compiled_pair()
    x = torch.randn(2, 3)
    hs = [m.register_forward_hook(_post) for m in (m_e, m_c)]
    _same(compiled, m_e, m_c, x)
    for m, h in zip((m_e, m_c), hs):
        m._forward_hooks[h.id] = _post_other
    _same(compiled, m_e, m_c, x)
    assert len(graphs) == 2


def test_two_hooks_registered_again_in_the_other_order_recompile():
    m_e, m_c, compiled, graphs = _compiled_pair()
    x = torch.randn(2, 3)
    hs = [(m.register_forward_hook(_post), m.register_forward_hook(_post_other)) for m in (m_e, m_c)]
    _same(compiled, m_e, m_c, x)
    for pair in hs:
        for h in pair:
            h.remove()
    hs = [(m.register_forward_hook(_post_other), m.register_forward_hook(_post)) for m in (m_e, m_c)]
    _same(compiled, m_e, m_c, x)
    _same(compiled, m_e, m_c, x)
    assert len(graphs) == 2


def test_same_function_registered_again_with_other_flags_recompiles():
    def either(mod, *rest):
        return rest[-1] * (3 if len(rest) == 3 else 5)  # (args, kwargs, out) or (args, out)

    m_e, m_c, compiled, graphs = _compiled_pair()
    x = torch.randn(2, 3)
    hs = [m.register_forward_hook(either) for m in (m_e, m_c)]
    _same(compiled, m_e, m_c, x)
    for h in hs:
        h.remove()
    hs = [m.register_forward_hook(either, with_kwargs=True) for m in (m_e, m_c)]
    _same(compiled, m_e, m_c, x)
    _same(compiled, m_e, m_c, x)
    assert len(graphs) == 2


def test_a_second_hook_added_recompiles_and_removing_it_reuses_the_first_entry():
    m_e, m_c, compiled, graphs = _compiled_pair()
    x = torch.randn(2, 3)
    for m in (m_e, m_c):
        m.register_forward_hook(_post)
    _same(compiled, m_e, m_c, x)
    extra = [m.register_forward_hook(_post_other) for m in (m_e, m_c)]
    _same(compiled, m_e, m_c, x)
    for h in extra:
        h.remove()
    _same(compiled, m_e, m_c, x)
    assert len(graphs) == 2


def test_reading_a_hook_id_guards_its_value():
    """An id used as a value is guarded like any int read from outside."""
    def fn(m, x):
        (hook_id,) = m._forward_hooks.keys()
        return m(x) + hook_id % 7

    torch.manual_seed(0)
    m = Doubler()
    counter = []
    compiled = bytegraph.compile(fn, backend=lambda gm, ex: counter.append(gm) or gm.forward)
    x = torch.randn(2, 3)
    h = m.register_forward_hook(_post)
    for _ in range(3):
        torch.testing.assert_close(compiled(m, x), fn(m, x))  # the id's value reaches the output
        h.remove()
        h = m.register_forward_hook(_post)
    # the first capture pins the id; it changed, so the second reads it as a symbolic int (as any
    # int read from outside that changes between captures) and serves the third call
    assert len(counter) == 2


def test_hook_id_membership_in_a_user_dict_guards_the_answer():
    def fn(m, x, seen):
        (hook_id,) = m._forward_hooks
        return m(x) * (2 if hook_id in seen else 3)

    torch.manual_seed(0)
    m_e, m_c = Doubler(), Doubler()
    compiled = bytegraph.compile(fn)
    x = torch.randn(2, 3)
    h_e, h_c = m_e.register_forward_hook(_post), m_c.register_forward_hook(_post)
    torch.testing.assert_close(compiled(m_c, x, {h_c.id: 1}), fn(m_e, x, {h_e.id: 1}))
    torch.testing.assert_close(compiled(m_c, x, {}), fn(m_e, x, {}))
