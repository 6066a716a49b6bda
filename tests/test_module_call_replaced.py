"""A module's `forward` or `__call__` (or another method, or a callable object's `__call__`)
replaced between calls, on the instance or on the class (or a class of its MRO): the next call
recompiles and runs the new code, as eager does (Note [Module call guard] in vars/nn_module.py,
`vars/classes.py::guard_class_attribute`); nothing replaced, nothing recompiles."""
import types

import torch

import bytegraph
from helpers import CompileCounter, assert_same


def _fresh_classes():
    """New classes per test: the tests replace their attributes."""

    class Cos(torch.nn.Module):
        def forward(self, x):
            return torch.cos(x)

    class Sub(Cos):
        pass

    class Helper(torch.nn.Module):
        def scale(self, x):
            return x * 2

        def forward(self, x):
            return self.scale(x) + 1

    return Cos, Sub, Helper


def sine_forward(self, x):
    return torch.sin(x)


def test_instance_forward_replaced_recompiles():
    """torch's test_monkeypatching_forward."""
    Cos, _, _ = _fresh_classes()
    mod = Cos()

    def fn(x):
        return mod(x)

    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter)
    x = torch.randn(10)
    assert_same(fn(x), compiled(x))
    assert_same(fn(x), compiled(x))
    assert counter.op_count == 1
    mod.forward = types.MethodType(sine_forward, mod)
    assert_same(fn(x), compiled(x))
    assert counter.op_count == 2


def test_class_forward_replaced_recompiles():
    Cos, _, _ = _fresh_classes()
    mod = Cos()
    counter = CompileCounter()
    compiled = bytegraph.compile(mod, backend=counter)
    x = torch.randn(10)
    assert_same(mod(x), compiled(x))
    Cos.forward = sine_forward
    assert_same(mod(x), compiled(x))
    assert_same(torch.sin(x), compiled(x))
    assert counter.frame_count == 2


def test_forward_replaced_on_a_subclass_that_inherited_it_recompiles():
    Cos, Sub, _ = _fresh_classes()
    mod = Sub()
    counter = CompileCounter()
    compiled = bytegraph.compile(mod, backend=counter)
    x = torch.randn(10)
    assert_same(mod(x), compiled(x))
    Sub.forward = sine_forward  # Cos.forward is unchanged: the lookup from Sub finds the new one
    assert_same(mod(x), compiled(x))
    assert counter.frame_count == 2


def test_class_call_replaced_recompiles():
    Cos, _, _ = _fresh_classes()
    mod = Cos()

    def fn(x):
        return mod(x)

    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter)
    x = torch.randn(10)
    assert_same(fn(x), compiled(x))
    Cos.__call__ = lambda self, x: torch.sin(x) * 3
    assert_same(fn(x), compiled(x))
    assert counter.frame_count == 2


def test_instance_call_is_ignored_by_a_call_as_by_eager():
    """`mod(x)` looks `__call__` up on the class: an instance attribute changes nothing, in eager
    and compiled; reading `mod.__call__` explicitly sees it (and recompiles)."""
    Cos, _, _ = _fresh_classes()
    mod = Cos()

    def call(x):
        return mod(x)

    def explicit(x):
        return mod.__call__(x)

    counter = CompileCounter()
    compiled_call = bytegraph.compile(call, backend=counter)
    compiled_explicit = bytegraph.compile(explicit, backend=counter)
    x = torch.randn(10)
    assert_same(call(x), compiled_call(x))
    assert_same(explicit(x), compiled_explicit(x))
    mod.__call__ = lambda x: torch.sin(x)
    assert_same(call(x), compiled_call(x))
    assert_same(explicit(x), compiled_explicit(x))
    assert_same(torch.sin(x), compiled_explicit(x))
    assert counter.frame_count == 3


def test_another_method_replaced_on_the_class_recompiles():
    _, _, Helper = _fresh_classes()
    mod = Helper()
    counter = CompileCounter()
    compiled = bytegraph.compile(mod, backend=counter)
    x = torch.randn(4)
    assert_same(mod(x), compiled(x))
    Helper.scale = lambda self, x: x * 5
    assert_same(mod(x), compiled(x))
    assert counter.frame_count == 2


def test_instances_of_an_unchanged_class_share_the_entry():
    Cos, _, _ = _fresh_classes()
    counter = CompileCounter()
    x = torch.randn(4)

    def fn(m, x):
        return m(x)

    compiled = bytegraph.compile(fn, backend=counter)
    for _ in range(3):
        mod = Cos()
        assert_same(fn(mod, x), compiled(mod, x))
    assert counter.frame_count == 1


def test_callable_object_call_replaced_recompiles():
    """torch's test_dunder_call_recompile."""

    class Foo:
        def __call__(self, x):
            return x + 1

    counter = CompileCounter()

    def f(x, foo):
        return foo(x)

    compiled = bytegraph.compile(f, backend=counter)
    x = torch.ones(2)
    foo1, foo2 = Foo(), Foo()
    assert_same(f(x, foo1), compiled(x, foo1))
    assert_same(f(x, foo2), compiled(x, foo2))
    assert counter.frame_count == 1
    Foo.__call__ = lambda self, x: x + 2
    assert_same(f(x, foo1), compiled(x, foo1))
    assert_same(x + 2, compiled(x, foo2))
    assert counter.frame_count == 2
