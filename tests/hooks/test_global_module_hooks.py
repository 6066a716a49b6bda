"""Global module hooks (`torch.nn.modules.module.register_module_*hook`) with a compiled
module: torch.compile(module) warns at the call (its OptimizedModule is a module, so the
hooks fire one extra time for it); bytegraph.compile(module) warns at the call too, with
what holds for bytegraph: the hooks fire as in eager (its wrapper is not a module),
forward hooks are traced, backward hooks break every module call, and registering or
removing one recompiles. Fresh state per test; every hook is removed at the end.
"""
from __future__ import annotations

import contextlib
import warnings

import pytest
import torch
from torch.nn.modules import module as module_mod

import bytegraph
from hook_helpers import Counting


class Small(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 3)

    def forward(self, x):
        return torch.relu(self.fc(x)) - 1


@contextlib.contextmanager
def global_hook(register, hook):
    handle = register(hook)
    try:
        yield handle
    finally:
        handle.remove()


def _pair():
    torch.manual_seed(0)
    m_e = Small()
    m_c = Small()
    m_c.load_state_dict(m_e.state_dict())
    return m_e, m_c


def _calls(fn, x):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn(x)
    return out, [w for w in caught if issubclass(w.category, bytegraph.GlobalModuleHooksWarning)]


def test_compiled_module_call_warns_and_hooks_fire_as_in_eager():
    m_e, m_c = _pair()
    seen_e, seen_c = [], []
    counter = Counting()
    compiled = bytegraph.compile(m_c, backend=counter)
    x = torch.randn(2, 3)
    with global_hook(module_mod.register_module_forward_pre_hook, lambda mod, args: seen_e.append(type(mod))):
        ref = m_e(x)
    with global_hook(module_mod.register_module_forward_pre_hook, lambda mod, args: seen_c.append(type(mod))):
        out, caught = _calls(compiled, x)
        again, caught_again = _calls(compiled, x)
    torch.testing.assert_close(out, ref)
    torch.testing.assert_close(again, ref)
    assert seen_e == [Small, torch.nn.Linear]
    assert seen_c == seen_e * 2  # not for the wrapper: it is not a module
    assert counter.frames == 1
    assert len(caught) == 1 and caught_again == []  # warned where the call captured
    message = str(caught[0].message)
    assert issubclass(caught[0].category, UserWarning)
    assert "global hooks on modules" in message and "1 forward pre-hook" in message
    assert "register_module_forward_hook" in message and "an extra time" in message
    assert caught[0].filename == __file__  # the user's call, not bytegraph's frames


def test_no_warning_without_global_hooks_or_for_a_compiled_function():
    m_e, m_c = _pair()
    x = torch.randn(2, 3)
    _, caught = _calls(bytegraph.compile(m_c), x)
    assert caught == []
    compiled_fn = bytegraph.compile(lambda x: m_c(x) * 2)
    with global_hook(module_mod.register_module_forward_hook, lambda mod, args, out: out):
        out, caught = _calls(compiled_fn, x)
    assert caught == []  # torch.compile(fn) does not warn either: no wrapper module is involved
    torch.testing.assert_close(out, m_e(x) * 2)


def test_global_hook_registered_after_the_first_call_warns_at_the_recompile():
    m_e, m_c = _pair()
    counter = Counting()
    compiled = bytegraph.compile(m_c, backend=counter)
    x = torch.randn(2, 3)
    _, caught = _calls(compiled, x)
    assert caught == []

    def hook(mod, args, out):
        return out * 3 if isinstance(mod, Small) else out

    with global_hook(module_mod.register_module_forward_hook, hook):
        out, caught = _calls(compiled, x)
        ref = m_e(x)
    torch.testing.assert_close(out, ref)
    assert len(caught) == 1 and "1 forward hook" in str(caught[0].message)
    out, caught = _calls(compiled, x)  # removed: the first entry serves again, no warning
    torch.testing.assert_close(out, m_e(x))
    assert caught == [] and counter.frames == 2


@pytest.mark.filterwarnings("ignore:Full backward hook")
def test_global_backward_hook_warns_and_fires_as_in_eager():
    m_e, m_c = _pair()
    grads_e, grads_c = [], []
    compiled = bytegraph.compile(m_c)
    x = torch.randn(2, 3, requires_grad=True)
    with global_hook(module_mod.register_module_full_backward_hook,
                     lambda mod, gin, gout: grads_e.append(type(mod).__name__)):
        m_e(x).sum().backward()
    with global_hook(module_mod.register_module_full_backward_hook,
                     lambda mod, gin, gout: grads_c.append(type(mod).__name__)):
        out, caught = _calls(compiled, x)
        out.sum().backward()
    assert grads_c == grads_e
    message = str(caught[0].message)
    assert "1 backward hook" in message and "graph break" in message
