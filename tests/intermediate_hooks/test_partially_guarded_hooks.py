"""A hook on an intermediate whose behaviour depends on an object the forward only hands to it
(`functools.partial(hook, obj=obj)`, a closure over `obj`): the forward never reads `obj`'s
attributes, so it is not guarded on them and compiles once (torch's test_hooks.py
test_register_hook_partial_guarding, test_intermediate_hook_with_closure_eager: one frame where
bytegraph once compiled four). The hook runs on the real gradient with the object of its own
call; compared with eager: outputs, gradients, and frame counts beside torch.compile's."""
from __future__ import annotations

import functools

import pytest
import torch

import bytegraph
from helpers import CompileCounter
from hook_harness import Counting


class WithVal:
    def __init__(self, val):
        self.val = val


def add_val(grad, *, obj):
    return grad + obj.val


class PartialHookModule(torch.nn.Module):
    def forward(self, x, obj):
        y = x.mul(2)
        y.register_hook(functools.partial(add_val, obj=obj))
        return (y.mul(3),)


def closure_hook_fn(x, obj):
    y = x.sin()
    y.register_hook(lambda grad: grad + obj.val)
    return y.sin()


OBJECTS = (lambda: WithVal(torch.tensor(88.0)), lambda: WithVal(torch.tensor(99.0)), lambda: WithVal(11))


def _eager_grads(fn, objects):
    grads = []
    for obj in objects:
        x = torch.ones(4, requires_grad=True)
        out = fn(x, obj)
        (out[0] if isinstance(out, tuple) else out).sum().backward()
        grads.append(x.grad)
    return grads


@pytest.mark.parametrize("backend", ("eager", "aot_eager"))
def test_partial_hook_module_compiled_once_across_wrappers_and_objects(backend):
    """Four `bytegraph.compile(mod)` wrappers, objects whose `val` is a tensor of another value
    and then an int: one frame, as torch.compile (its test counts 1)."""
    mod = PartialHookModule()
    objects = [make() for make in OBJECTS]
    expected = _eager_grads(mod, [objects[0], objects[0], objects[1], objects[2]])
    counter = CompileCounter(backend)
    for obj, want in zip([objects[0], objects[0], objects[1], objects[2]], expected):
        x = torch.ones(4, requires_grad=True)
        bytegraph.compile(mod, backend=counter, fullgraph=True)(x, obj)[0].sum().backward()
        torch.testing.assert_close(x.grad, want)
    assert counter.frame_count == 1


def test_partial_hook_under_compiled_autograd_one_forward_frame():
    """The same under bytegraph's compiled autograd: the hook's body is traced into the backward
    graph there, where `obj.val` is read and guarded; the forward still compiles once."""
    mod = PartialHookModule()
    objects = [make() for make in OBJECTS]
    expected = _eager_grads(mod, objects)
    forward = CompileCounter()
    backward = Counting("eager")
    compiled = bytegraph.compile(mod, backend=forward, fullgraph=True)
    with bytegraph.compiled_autograd.enable(backward, fullgraph=True):
        for obj, want in zip(objects, expected):
            x = torch.ones(4, requires_grad=True)
            compiled(x, obj)[0].sum().backward()
            torch.testing.assert_close(x.grad, want)
    assert forward.frame_count == 1
    assert len(backward.graphs) <= 2  # a tensor `val` and then an int: at most one recompile of the backward


def test_closure_hook_one_forward_and_one_backward_graph():
    """torch's test_intermediate_hook_with_closure_eager: a lambda over `obj` as the hook, two
    objects whose `val` tensors differ in value only: one forward frame, one backward graph."""
    objects = [OBJECTS[0](), OBJECTS[1]()]
    expected = _eager_grads(closure_hook_fn, objects)
    forward = CompileCounter()
    backward = Counting("eager")
    compiled = bytegraph.compile(closure_hook_fn, backend=forward, fullgraph=True)
    with bytegraph.compiled_autograd.enable(backward, fullgraph=True):
        for obj, want in zip(objects, expected):
            x = torch.ones(4, requires_grad=True)
            compiled(x, obj).sum().backward()
            torch.testing.assert_close(x.grad, want)
    assert forward.frame_count == 1
    assert len(backward.graphs) == 1
