"""Functions a user marks `torch.compiler.disable` run eagerly, as under torch.compile:
their call is a graph break, the function (and every call it makes) runs on real tensors,
tracing resumes after it (vars/disabled_functions.py); torch's own marked helpers stay
traced (tests/test_optimizers.py)."""
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensor

import bytegraph
from helpers import CompileCounter, check

SEEN: list = []


@torch.compiler.disable
def eager_helper(t):
    SEEN.append(isinstance(t, FakeTensor))
    return t + 1


def inner_of_disabled(t):
    return t * 3


@torch.compiler.disable
def disabled_caller(t):
    return inner_of_disabled(t) - 1


def calls_disabled(x):
    y = x.sin()
    z = eager_helper(y)
    return z.cos()


def test_disabled_function_runs_eagerly_between_two_graphs():
    SEEN.clear()
    check(calls_disabled, torch.randn(3, requires_grad=True), graphs=2)
    assert SEEN and not any(SEEN)  # never given a fake tensor: not traced


def test_calls_inside_a_disabled_function_are_not_compiled():
    counter = CompileCounter()
    x = torch.randn(3)
    fn = bytegraph.compile(lambda t: disabled_caller(t * 2) + 1, backend=counter)
    torch.testing.assert_close(fn(x), disabled_caller(x * 2) + 1)
    assert counter.frame_count == 2 and counter.op_count == 2  # `* 2` and `+ 1`; not `* 3`, `- 1`


def test_disabled_function_under_fullgraph_names_it():
    fn = bytegraph.compile(calls_disabled, fullgraph=True)
    with pytest.raises(bytegraph.Unsupported, match="eager_helper.*torch.compiler.disable"):
        fn(torch.randn(3))


class Scaler:
    def __init__(self):
        self.calls = 0

    @torch.compiler.disable
    def scale(self, t):
        self.calls += 1
        return t * 2


def test_disabled_method_runs_eagerly_and_its_write_is_seen():
    def fn(x, scaler):
        return scaler.scale(x + 1) - scaler.calls

    check(fn, torch.randn(3), Scaler(), graphs=2)


def test_disabled_function_in_a_nested_frame():
    def mid(t):
        return eager_helper(t * 2) + 4

    def fn(x):
        return mid(x + 8) + 16

    result = check(fn, torch.randn(3), graphs=2)
    assert result.counter.op_count == 4
