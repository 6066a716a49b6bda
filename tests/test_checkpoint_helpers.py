"""The helpers activation-checkpointing code calls (torch.utils.checkpoint's, and the
`backward` of hand-written checkpoint Functions in Megatron, DeepSpeed, fairscale):
`torch.autograd._is_checkpoint_valid()`, a query of the autograd engine's state (false while
a backward with `inputs=`, or `torch.autograd.grad`, runs), folded to its current answer and
guarded per call (`torch_functions.SPECIAL`), as torch.compile folds it; torch.utils.checkpoint's
pure helpers traced as Python; those that read pytree's registry (keyed by the `namedtuple`
function) break with the reason. Differential: outputs, grads, errors as eager."""
import re

import pytest
import torch
import torch.utils.checkpoint as cp

import bytegraph
from helpers import check, compile_counted


def _x(*shape):
    return torch.randn(*shape, requires_grad=True)


def valid_branch(x):
    if torch.autograd._is_checkpoint_valid():
        return x + 1
    return x - 1


def test_is_checkpoint_valid_in_a_branch_is_one_graph():
    check(valid_branch, _x(3), graphs=1, fullgraph=True)


def _checkpoint_guard(x):  # an inlined helper, as a checkpoint Function's backward starts
    if not torch.autograd._is_checkpoint_valid():
        raise RuntimeError("Checkpointing is not compatible with .grad()")
    return x * 2


def test_is_checkpoint_valid_inside_an_inlined_helper():
    check(lambda x: _checkpoint_guard(x).sum(), _x(3), graphs=1, fullgraph=True)


def _answers_inside_backward(fn):
    """What `fn` returns when called from a tensor hook, during `backward()` (valid) and during
    `torch.autograd.grad` (not valid)."""
    seen = []
    x = torch.ones(2, requires_grad=True)
    y = x * 3
    y.register_hook(lambda g: seen.append(fn(g)))
    y.sum().backward(retain_graph=True)
    torch.autograd.grad(y.sum(), [x])
    return seen


def test_is_checkpoint_valid_is_guarded_per_call():
    compiled, counter = compile_counted(valid_branch)
    eager = _answers_inside_backward(valid_branch)
    compiled_answers = _answers_inside_backward(compiled)
    for e, c in zip(eager, compiled_answers):
        torch.testing.assert_close(c, e)
    assert [t[0].item() for t in eager] == [2.0, 0.0]  # valid in backward(), not in grad()
    assert counter.frame_count == 2  # the second answer recompiled


@pytest.mark.parametrize("fn", [
    lambda x: (x * 2, cp.detach_variable((x, x + 1))),
    lambda x: (cp.check_backward_validity((x,)), x * 2),
    lambda x: (x + 1, cp._get_autocast_kwargs("cpu")),
    lambda x: (x + 1, cp.DefaultDeviceType.get_device_type()),
    lambda x: (x + 1, cp._get_device_module("cpu").__name__),
], ids=["detach_variable", "check_backward_validity", "_get_autocast_kwargs", "DefaultDeviceType",
        "_get_device_module"])
def test_checkpoint_module_helpers_are_one_graph(fn):
    check(fn, _x(3), graphs=1, fullgraph=True)


def test_check_backward_validity_warning_breaks():
    """No input requires grad: it warns (a graph break, as warnings.warn is)."""
    def fn(x):
        cp.check_backward_validity((x,))
        return x * 2

    with pytest.warns(UserWarning):
        check(fn, torch.randn(3))


@pytest.mark.parametrize("helper", [cp._infer_device_type, cp.get_device_states], ids=lambda h: h.__name__)
def test_pytree_helpers_break_with_the_reason(helper):
    def fn(x):
        return x + 1, helper(x)

    check(fn, _x(3))
    reasons = [b.reason for b in bytegraph.explain(fn)(_x(3)).break_reasons]
    assert any(re.search("a dict with keys other than constants", r) for r in reasons), reasons
