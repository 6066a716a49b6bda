"""torch.nn.Module inputs: calls, parameters and buffers, train/eval, and module state
changed between calls (eager vs compiled)."""
import pytest
import torch
import torch.nn as nn

import bytegraph
from helpers import CompileCounter, assert_same, check, compile_counted


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 8)
        self.fc2 = nn.Linear(8, 3)
        self.register_buffer("scale", torch.full((3,), 2.0))
        self.act = nn.GELU()
        self.n_extra = 1

    def forward(self, x):
        h = self.act(self.fc1(x))
        for _ in range(self.n_extra):
            h = h + 0.1 * h.tanh()
        return self.fc2(h) * self.scale


def _fresh_mlp():
    torch.manual_seed(0)
    return MLP()


def test_module_forward_called_through_function():
    def f(m, x):
        return m(x).relu().sum(-1)

    check(f, _fresh_mlp(), torch.randn(5, 4), graphs=1, rerun=False)


def test_module_bound_forward_compiled():
    m = _fresh_mlp()
    cf, cnt = compile_counted(m.forward)
    x = torch.randn(2, 4)
    assert_same(m(x), cf(x), "forward")
    assert cnt.frame_count == 1


PIECES = {
    "linear": lambda: nn.Linear(4, 3),
    "layernorm": lambda: nn.LayerNorm(4),
    "conv1d": lambda: nn.Conv1d(5, 2, 3, padding=1),
    "embedding_bag_free_sequential": lambda: nn.Sequential(nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 2)),
    "module_list": lambda: nn.ModuleList([nn.Linear(4, 4), nn.Tanh()]),
    "batchnorm_eval": lambda: nn.BatchNorm1d(4).eval(),
}


@pytest.mark.parametrize("name", list(PIECES))
def test_builtin_modules(name):
    # the module is a closure variable (the same object in every run); the input is copied
    torch.manual_seed(0)
    mod = PIECES[name]()

    def f(x):
        if isinstance(mod, nn.ModuleList):
            for layer in mod:
                x = layer(x)
            return x
        return mod(x)

    check(f, torch.randn(5, 4), graphs=1)


def test_fresh_module_instance_with_same_structure_does_not_recompile():
    def f(m, x):
        return m(x) * 2

    cnt = CompileCounter()
    cf = bytegraph.compile(f, backend=cnt)
    x = torch.randn(3, 4)
    for seed in range(3):
        torch.manual_seed(seed)
        m = MLP()
        assert_same(f(m, x), cf(m, x), f"instance {seed}")
    assert cnt.frame_count == 1


def test_batchnorm_train_updates_running_stats():
    torch.manual_seed(0)

    def f(m, x):
        return m(x)

    check(f, nn.BatchNorm1d(4), torch.randn(6, 4), rerun=False)


def test_parameters_updated_between_calls_are_seen():
    m = _fresh_mlp()
    cf, cnt = compile_counted(lambda x: m(x))
    x = torch.randn(2, 4)
    assert_same(m(x), cf(x), "before the update")
    with torch.no_grad():
        for p in m.parameters():
            p.add_(0.5)
        m.scale.mul_(3)
    assert_same(m(x), cf(x), "after updating parameters and buffers in place")
    assert cnt.frame_count == 1


def test_optimizer_steps_between_compiled_calls():
    torch.manual_seed(0)
    m_e, m_c = MLP(), MLP()
    m_c.load_state_dict(m_e.state_dict())
    opt_e = torch.optim.SGD(m_e.parameters(), lr=0.1)
    opt_c = torch.optim.SGD(m_c.parameters(), lr=0.1)

    def loss_fn(m, x):
        return (m(x) ** 2).mean()

    cf = bytegraph.compile(loss_fn)
    x = torch.randn(4, 4)
    for step in range(3):
        le, lc = loss_fn(m_e, x), cf(m_c, x)
        assert_same(le, lc, f"loss at step {step}")
        opt_e.zero_grad()
        opt_c.zero_grad()
        le.backward()
        lc.backward()
        for (n, pe), pc in zip(m_e.named_parameters(), m_c.parameters()):
            assert_same(pe.grad, pc.grad, f"grad of {n} at step {step}")
        opt_e.step()
        opt_c.step()


def test_train_eval_switch():
    torch.manual_seed(0)
    m = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.5))

    def f(mod, x):
        return mod(x), mod.training

    cnt = CompileCounter()
    cf = bytegraph.compile(f, backend=cnt)
    x = torch.randn(3, 4)
    for mode in (True, False, True):
        m.train(mode)
        torch.manual_seed(1)
        e = f(m, x)
        torch.manual_seed(1)
        c = cf(m, x)
        assert_same(e, c, f"training={mode}")


def test_module_int_attribute_changed_between_calls():
    m = _fresh_mlp()
    cf, cnt = compile_counted(lambda x: m(x))
    x = torch.randn(2, 4)
    assert_same(m(x), cf(x), "n_extra=1")
    m.n_extra = 3
    assert_same(m(x), cf(x), "n_extra=3")


def test_submodule_replaced_between_calls():
    m = _fresh_mlp()
    cf, cnt = compile_counted(lambda x: m(x))
    x = torch.randn(2, 4)
    assert_same(m(x), cf(x), "GELU")
    m.act = nn.ReLU()
    assert_same(m(x), cf(x), "act replaced by ReLU")


def test_parameter_requires_grad_toggled():
    m = _fresh_mlp()
    cf, cnt = compile_counted(lambda x: m(x))
    x = torch.randn(2, 4)
    assert_same(m(x), cf(x), "all trainable")
    m.fc1.weight.requires_grad_(False)
    assert_same(m(x), cf(x), "fc1.weight frozen")


def test_forward_hook_registered_between_calls():
    m = _fresh_mlp()
    cf, cnt = compile_counted(lambda x: m(x))
    x = torch.randn(2, 4)
    assert_same(m(x), cf(x), "no hook")
    h = m.fc2.register_forward_hook(lambda mod, inp, out: out * 10)
    try:
        assert_same(m(x), cf(x), "with a forward hook on fc2")
    finally:
        h.remove()
    assert_same(m(x), cf(x), "hook removed")


def test_module_parameters_iteration_inside():
    def f(m, x):
        reg = sum((p ** 2).sum() for p in m.parameters())
        names = [n for n, _ in m.named_parameters()]
        return m(x).sum() + 0.01 * reg, names

    check(f, _fresh_mlp(), torch.randn(3, 4), graphs=1, rerun=False)
