"""Seeded random ops: torch.manual_seed is called outside the compiled function (check()
seeds before every run); random numbers drawn inside must equal eager's."""
import pytest
import torch
import torch.nn.functional as F

from helpers import CompileCounter, assert_same, check

import bytegraph

RANDOM = {
    "randn": lambda x: x + torch.randn(4),
    "rand": lambda x: x * torch.rand(4),
    "randint": lambda x: x + torch.randint(0, 10, (4,)),
    "randn_like": lambda x: torch.randn_like(x) * x,
    "rand_like_dtype": lambda x: torch.rand_like(x, dtype=torch.float64) + 1,
    "normal_uniform_inplace": lambda x: torch.empty(4).normal_() + torch.empty(4).uniform_(-1, 1) + x,
    "dropout_functional": lambda x: F.dropout(x, p=0.5, training=True),
    "dropout_method_chain": lambda x: F.dropout(x.relu(), 0.3) * 2,
    "bernoulli": lambda x: torch.bernoulli(torch.full_like(x, 0.5)) * x,
    "randperm": lambda x: x[torch.randperm(4)],
    "multinomial": lambda x: torch.multinomial(torch.ones(4), 2) + 0 * x.sum().long(),
    "two_draws_in_order": lambda x: (torch.randn(4) - torch.randn(4)) * x,
}


@pytest.mark.parametrize("name", list(RANDOM))
def test_random_matches_eager(name):
    check(RANDOM[name], torch.ones(4, requires_grad=True), graphs=1)


def test_dropout_module_in_training_mode():
    drop = torch.nn.Dropout(0.5)

    def f(x):
        return drop(x) + 1

    check(f, torch.ones(8, requires_grad=True), graphs=1)


def test_rng_state_advances_like_eager():
    # after the compiled call, the global generator must be in eager's state
    def f(x):
        return x + torch.randn(3)

    torch.manual_seed(7)
    e = f(torch.zeros(3))
    after_eager = torch.randn(2)
    bytegraph.reset()
    cf = bytegraph.compile(f, backend=CompileCounter())
    torch.manual_seed(7)
    c = cf(torch.zeros(3))
    after_comp = torch.randn(2)
    assert_same(e, c, "output")
    assert_same(after_eager, after_comp, "next draw after the call")


def test_consecutive_calls_draw_fresh_numbers():
    def f(x):
        return x + torch.rand(3)

    cnt = CompileCounter()
    cf = bytegraph.compile(f, backend=cnt)
    torch.manual_seed(3)
    e1, e2 = f(torch.zeros(3)), f(torch.zeros(3))
    torch.manual_seed(3)
    c1, c2 = cf(torch.zeros(3)), cf(torch.zeros(3))
    assert_same(e1, c1, "first call")
    assert_same(e2, c2, "second call")
    assert cnt.frame_count == 1


def test_manual_seed_inside_function_matches_eager():
    def f(x):
        torch.manual_seed(123)
        return x + torch.randn(3)

    check(f, torch.zeros(3))


def test_generator_argument():
    def f(x, g):
        return x + torch.randn(3, generator=g)

    g = torch.Generator().manual_seed(5)
    check(f, torch.zeros(3), g)
