"""nn.Module hooks with compiled calls: forward (pre-)hooks traced inside the graph, hook
dicts guarded, backward hooks and registrations inside the region as graph breaks with
reasons, eager's warnings emitted."""
from __future__ import annotations

import pytest
import torch
from torch.nn.modules import module as module_mod

import bytegraph
from hook_helpers import BACKENDS, FAST_BACKENDS, Counting, differential


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 8)
        self.fc2 = torch.nn.Linear(8, 3)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def _mlp_world(register):
    def build():
        torch.manual_seed(0)
        m = MLP()
        log = []
        register(m, log)
        return m, lambda i: (torch.randn(2, 4, generator=torch.Generator().manual_seed(i)),), log
    return build


@pytest.mark.parametrize("backend", BACKENDS)
def test_forward_pre_hook_changes_the_input(backend):
    build = _mlp_world(lambda m, log: m.fc1.register_forward_pre_hook(lambda mod, args: (args[0] * 2,)))
    differential(build, backend=backend, graphs=1)


@pytest.mark.parametrize("backend", BACKENDS)
def test_forward_hook_changes_the_output(backend):
    build = _mlp_world(lambda m, log: m.fc2.register_forward_hook(lambda mod, args, out: out.tanh()))
    differential(build, backend=backend, graphs=1)


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_forward_hook_with_kwargs(backend):
    def register(m, log):
        def hook(mod, args, kwargs, out):
            log.append(sorted(kwargs))
            return out + 1
        m.fc1.register_forward_hook(hook, with_kwargs=True)
    differential(_mlp_world(register), backend=backend, graphs=1)


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_forward_pre_hook_with_kwargs(backend):
    def register(m, log):
        def hook(mod, args, kwargs):
            log.append(len(args))
            return (args[0] - 1,), kwargs
        m.register_forward_pre_hook(hook, with_kwargs=True)
    differential(_mlp_world(register), backend=backend, graphs=1)


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_always_call_forward_hook(backend):
    def register(m, log):
        m.fc2.register_forward_hook(lambda mod, args, out: log.append("always") or out * 3, always_call=True)
    differential(_mlp_world(register), backend=backend, graphs=1)


def test_forward_hook_and_pre_hook_on_one_module_run_in_eager_order():
    def register(m, log):
        m.fc1.register_forward_pre_hook(lambda mod, args: log.append("pre"))
        m.fc1.register_forward_hook(lambda mod, args, out: log.append("post"))
        m.fc1.register_forward_pre_hook(lambda mod, args: log.append("pre2"), prepend=True)
    differential(_mlp_world(register), backend="eager", graphs=1)


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_hook_appending_to_a_list_does_not_recompile(backend):
    """A forward hook that grows a list: once 8 graphs in 8 calls (the list's length was
    guarded), now one."""
    calls = []

    def build():
        calls.clear()
        torch.manual_seed(0)
        m = torch.nn.Linear(3, 3)
        m.register_forward_hook(lambda mod, i, o: calls.append(o.shape))
        return m, lambda i: (torch.randn(2, 3),), calls
    differential(build, backend=backend, calls=8, graphs=1)


GLOBAL_SEEN = []


def _global_forward_hook(mod, args, out):
    GLOBAL_SEEN.append(type(mod).__name__)
    return out


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_global_forward_hook(backend):
    handles = []

    def build():
        GLOBAL_SEEN.clear()
        while handles:
            handles.pop().remove()
        handles.append(module_mod.register_module_forward_hook(_global_forward_hook))
        torch.manual_seed(0)
        return MLP(), lambda i: (torch.randn(2, 4),), GLOBAL_SEEN
    try:
        differential(build, backend=backend, graphs=1, calls=4)
    finally:
        for h in handles:
            h.remove()


def test_global_forward_pre_hook():
    handles = []

    def build():
        while handles:
            handles.pop().remove()
        log = []
        handles.append(module_mod.register_module_forward_pre_hook(lambda mod, args: log.append(type(mod).__name__)))
        torch.manual_seed(0)
        return MLP(), lambda i: (torch.randn(2, 4),), log
    try:
        differential(build, backend="eager", graphs=1, calls=3)
    finally:
        for h in handles:
            h.remove()


def _calls(cf, m_e, x, log_e, log_c, label):
    out_e, out_c = m_e(x), cf(x)
    torch.testing.assert_close(out_c, out_e, msg=label)
    assert log_c == log_e, label


def test_hooks_added_and_removed_between_calls_are_honoured():
    torch.manual_seed(0)
    m_e, m_c = MLP(), MLP()
    m_c.load_state_dict(m_e.state_dict())
    log_e, log_c = [], []
    counter = Counting()
    cf = bytegraph.compile(m_c, backend=counter)
    x = torch.randn(2, 4)
    _calls(cf, m_e, x, log_e, log_c, "no hooks")
    hs = [m.fc2.register_forward_hook(lambda mod, a, o, log=log: log.append("f") or o * 2)
          for m, log in ((m_e, log_e), (m_c, log_c))]
    _calls(cf, m_e, x, log_e, log_c, "forward hook added after the first compile")
    ps = [m.fc1.register_forward_pre_hook(lambda mod, a, log=log: log.append("p") or (a[0] + 1,))
          for m, log in ((m_e, log_e), (m_c, log_c))]
    _calls(cf, m_e, x, log_e, log_c, "pre-hook added too")
    for h in hs:
        h.remove()
    _calls(cf, m_e, x, log_e, log_c, "forward hook removed")
    for h in ps:
        h.remove()
    _calls(cf, m_e, x, log_e, log_c, "all removed")
    frames = counter.frames
    _calls(cf, m_e, x, log_e, log_c, "all removed, again")
    assert counter.frames == frames and log_e == ["f", "p", "f", "p"]


def test_global_hook_added_after_the_first_compile_is_honoured():
    torch.manual_seed(0)
    m = MLP()
    cf = bytegraph.compile(m)
    x = torch.randn(2, 4)
    torch.testing.assert_close(cf(x), m(x))
    h = module_mod.register_module_forward_hook(lambda mod, a, o: o * 0 if isinstance(mod, MLP) else None)
    try:
        assert torch.equal(cf(x), torch.zeros(2, 3))
    finally:
        h.remove()
    torch.testing.assert_close(cf(x), m(x))


# ---- backward hooks: graph breaks with a reason, eager semantics --------------------------

@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_full_backward_hook_fires_like_eager(backend):
    def register(m, log):
        m.fc1.register_full_backward_hook(lambda mod, gin, gout: log.append([g.shape for g in gout]))
    differential(_mlp_world(register), backend=backend)


def test_full_backward_hook_replacing_grad_input():
    def register(m, log):
        m.fc2.register_full_backward_hook(lambda mod, gin, gout: tuple(g * 0.5 for g in gin))
    differential(_mlp_world(register), backend="aot_eager")


def test_full_backward_pre_hook():
    def register(m, log):
        m.fc2.register_full_backward_pre_hook(lambda mod, gout: log.append("pre") or (gout[0] * 2,))
    differential(_mlp_world(register), backend="aot_eager")


def test_module_call_with_backward_hooks_breaks_with_a_reason(caplog):
    build = _mlp_world(lambda m, log: m.fc1.register_full_backward_hook(lambda *a: log.append("bw")))
    with caplog.at_level("DEBUG", logger="bytegraph.graph_breaks"):
        differential(build, backend="eager")
    assert "with backward hooks (registered on it)" in caplog.text


def test_backward_hook_removed_between_calls_recompiles():
    torch.manual_seed(0)
    m = MLP()
    log = []
    h = m.fc1.register_full_backward_hook(lambda *a: log.append("bw"))
    counter = Counting()
    cf = bytegraph.compile(m, backend=counter)
    x = torch.randn(2, 4)
    cf(x).sum().backward()
    assert log == ["bw"]
    h.remove()
    cf(x).sum().backward()
    cf(x).sum().backward()
    assert log == ["bw"] and counter.frames >= 2


def test_global_backward_hook():
    handles = []

    def build():
        while handles:
            handles.pop().remove()
        log = []
        handles.append(module_mod.register_module_full_backward_hook(
            lambda mod, gin, gout: log.append(type(mod).__name__)))
        torch.manual_seed(0)
        return MLP(), lambda i: (torch.randn(2, 4),), log
    try:
        differential(build, backend="eager", calls=2)
    finally:
        for h in handles:
            h.remove()


class DictOut(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(3, 3)

    def forward(self, x):
        return {"y": self.fc(x)}


def test_backward_hook_warning_for_a_non_tensor_output_is_emitted():
    def build():
        torch.manual_seed(0)
        inner = DictOut()
        inner.register_full_backward_hook(lambda *a: None)
        log = []

        def f(x):
            return inner(x)["y"] * 2
        return f, lambda i: (torch.randn(2, 3, requires_grad=True),), log
    _, comp = differential(build, backend="eager")
    assert any("For backward hooks to be called" in m for _, m in comp[0]["warnings"])


def test_non_full_backward_hook_future_warning_is_emitted():
    class TwoOut(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(3, 3)

        def forward(self, x):
            y = self.fc(x)
            return y.relu(), y.sigmoid()

    def build():
        torch.manual_seed(0)
        m = TwoOut()
        log = []
        m.register_backward_hook(lambda mod, gin, gout: log.append(len(gout)))
        return m, lambda i: (torch.randn(2, 3, requires_grad=True),), log
    _, comp = differential(build, backend="eager")
    assert any(c == "FutureWarning" for c, _ in comp[0]["warnings"])


# ---- registering module hooks inside the compiled region ----------------------------------

def test_registering_a_forward_hook_inside_breaks_and_matches_eager(caplog):
    def build():
        torch.manual_seed(0)
        m = MLP()
        log = []

        def f(x):
            y = m.fc1(x)
            m.fc2.register_forward_hook(lambda mod, a, o: log.append("fwd") or o + 1)
            return m.fc2(torch.relu(y)).sum()
        return f, lambda i: (torch.randn(2, 4),), log
    with caplog.at_level("DEBUG", logger="bytegraph.graph_breaks"):
        differential(build, backend="eager", steady=False)
    assert "register_forward_hook() registers a module hook inside the compiled region" in caplog.text


def test_registering_a_global_module_hook_inside_breaks(caplog):
    handles = []

    def build():
        torch.manual_seed(0)
        m = torch.nn.Linear(3, 3)
        log = []

        def f(x):
            handles.append(module_mod.register_module_forward_hook(lambda mod, a, o: log.append("g")))
            return m(x).sum()
        return f, lambda i: (torch.randn(2, 3),), log
    try:
        with caplog.at_level("DEBUG", logger="bytegraph.graph_breaks"):
            def build_clean():
                while handles:
                    handles.pop().remove()
                return build()
            differential(build_clean, backend="eager", calls=1)
    finally:
        for h in handles:
            h.remove()
    assert "register_module_forward_hook() registers a module hook inside the compiled region" in caplog.text


# ---- tensor hooks and module hooks together ------------------------------------------------

class Clipped(torch.nn.Module):
    """Registers a gradient-clipping hook on each parameter inside its forward."""

    def __init__(self, clip: float):
        super().__init__()
        self.fc1 = torch.nn.Linear(4, 16)
        self.fc2 = torch.nn.Linear(16, 2)
        self.clip = clip

    def forward(self, x):
        for p in self.parameters():
            p.register_hook(lambda g: g.clamp(-self.clip, self.clip))
        return self.fc2(torch.tanh(self.fc1(x)))


@pytest.mark.parametrize("backend", BACKENDS)
def test_three_step_training_loop_with_a_clipping_hook_registered_in_forward(backend):
    torch.manual_seed(0)
    m_e, m_c = Clipped(0.05), Clipped(0.05)
    m_c.load_state_dict(m_e.state_dict())
    opt_e = torch.optim.SGD(m_e.parameters(), lr=0.5)
    opt_c = torch.optim.SGD(m_c.parameters(), lr=0.5)
    counter = Counting(backend)
    cm = bytegraph.compile(m_c, backend=counter)
    data = [(torch.randn(8, 4), torch.randn(8, 2)) for _ in range(3)]
    for x, target in data:
        for model, opt in ((m_e, opt_e), (cm, opt_c)):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(x), target)
            loss.backward()
            assert all(p.grad.abs().max() <= 0.05 + 1e-7 for p in m_e.parameters())
            opt.step()
    for (name, pe), pc in zip(m_e.named_parameters(), m_c.parameters()):
        torch.testing.assert_close(pc, pe, rtol=1e-4, atol=1e-5, msg=name)
    assert counter.frames == 1


def test_tensor_hook_inside_a_module_with_a_forward_hook():
    class M(torch.nn.Module):
        def __init__(self, log):
            super().__init__()
            self.fc = torch.nn.Linear(3, 3)
            self.log = log

        def forward(self, x):
            x.register_hook(lambda g: self.log.append("x") or g * 2)
            return self.fc(x)

    def build():
        torch.manual_seed(0)
        log = []
        m = M(log)
        m.register_forward_hook(lambda mod, a, o: log.append("fwd") or o * 3)
        return m, lambda i: (torch.randn(2, 3, requires_grad=True),), log
    differential(build, backend="aot_eager", graphs=1, calls=4)


STEADY_MODULE_CASES = {
    "forward_hook": lambda m, log: m.fc2.register_forward_hook(lambda mod, a, o: o * 2),
    "pre_hook": lambda m, log: m.fc1.register_forward_pre_hook(lambda mod, a: (a[0] + 1,)),
    "appending_hook": lambda m, log: m.fc1.register_forward_hook(lambda mod, a, o: log.append(o.sum().item())),
    "kwargs_hook": lambda m, log: m.register_forward_hook(lambda mod, a, k, o: o, with_kwargs=True),
    "two_modules": lambda m, log: (m.fc1.register_forward_hook(lambda mod, a, o: log.append(1)),
                                   m.fc2.register_forward_pre_hook(lambda mod, a: log.append(2))),
}


@pytest.mark.parametrize("case", sorted(STEADY_MODULE_CASES))
def test_ten_calls_of_a_hooked_module_compile_once(case):
    differential(_mlp_world(STEADY_MODULE_CASES[case]), backend="eager", calls=10, graphs=1)


def test_ten_training_steps_with_hooks_registered_in_forward_compile_once():
    def build():
        torch.manual_seed(0)
        m = Clipped(0.1)
        return m, lambda i: (torch.randn(4, 4),), []
    differential(build, backend="eager", calls=10, graphs=1)
