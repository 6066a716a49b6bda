"""Attribute lookup on `nn.Module`s read from outside: the order CPython's
`object.__getattribute__` and then `nn.Module.__getattr__` resolve a name in, eager vs
compiled. Data descriptors of the class (properties) come first, then the instance
`__dict__`, then class attributes (methods, static and class methods, other descriptors,
plain values), and only then the class's `__getattr__`: nn.Module's reads `_parameters`,
`_buffers` and `_modules` in that order; a class's own `__getattr__` runs as written.
"""
from __future__ import annotations

import pytest
import torch
from helpers import CompileCounter, check

import bytegraph


class MethodBase(torch.nn.Module):
    def linear(self, x, flag=None):
        return x * 3.0


class ShadowedEverywhere(MethodBase):
    """Each name is both a class attribute and something the instance holds."""

    def __init__(self):
        super().__init__()
        self.activation = torch.nn.ReLU()           # in _modules: the class method wins
        self.linear = torch.nn.Linear(10, 10)       # in _modules: the base class method wins
        self.initializer = torch.ones([10, 10])     # a plain tensor in __dict__: wins over the method
        self.scale = 0.5                             # a float in __dict__: wins over the method

    def activation(self, x):
        return x * 1.2

    def initializer(self):
        return torch.zeros([10, 10])

    def scale(self):
        return 2.0

    def forward(self, x):
        return self.activation(self.linear(self.initializer + x)) * self.scale


def test_class_methods_win_over_submodules_and_instance_values_over_methods():
    check(lambda m, x: m(x), ShadowedEverywhere(), torch.randn(10, 10), graphs=1, fullgraph=True)


class ScaledByAttributes(MethodBase):
    def __init__(self):
        super().__init__()
        self.a = 3

    def b(self, x):
        raise RuntimeError("shadowed by the instance attribute: never called")


class ScaledChild(ScaledByAttributes):
    def __init__(self):
        super().__init__()
        self.linear = torch.nn.Linear(11, 11)  # never called: MethodBase.linear wins
        self.a = 2
        self.b = 2
        self.scale = 1

    def scale(self, x):
        raise RuntimeError("shadowed by the instance attribute: never called")

    def forward(self, x):
        return self.linear(x) * self.a * self.b * self.scale


def test_compiled_module_with_shadowed_names_runs_once_and_matches_eager():
    counter = CompileCounter()
    m = ScaledChild()
    x = torch.ones(3, 3)
    expected = m(x)
    compiled = bytegraph.compile(m, backend=counter)
    compiled(torch.ones(3, 3))
    torch.testing.assert_close(compiled(torch.ones(3, 3)), expected)
    assert counter.frame_count == 1


class PropertyOverSlots(torch.nn.Module):
    """A property is a data descriptor: it wins over every slot dict and the instance dict."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(4))
        self._buffers["scale"] = torch.full((4,), 100.0)   # same name as the property
        self._modules["head"] = torch.nn.Linear(4, 4)      # same name as the property

    @property
    def scale(self):
        return self.w * 2

    @property
    def head(self):
        return torch.tanh

    def forward(self, x):
        return self.head(x * self.scale)


def test_properties_win_over_buffers_and_submodules_of_the_same_name():
    check(lambda m, x: m(x), PropertyOverSlots(), torch.randn(4), graphs=1, fullgraph=True)


class ClassValueOverBuffer(torch.nn.Module):
    scale = 3.0  # a plain class attribute: found before nn.Module.__getattr__ looks at _buffers

    def __init__(self):
        super().__init__()
        self._buffers["scale"] = torch.full((2,), 100.0)

    def forward(self, x):
        return x * self.scale


def test_plain_class_attribute_wins_over_a_buffer():
    check(lambda m, x: m(x), ClassValueOverBuffer(), torch.randn(2), graphs=1, fullgraph=True)


class StaticAndClassMethods(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self._modules["double"] = torch.nn.Linear(2, 2)
        self._modules["triple"] = torch.nn.Linear(2, 2)

    @staticmethod
    def double(x):
        return x * 2

    @classmethod
    def triple(cls, x):
        return x * 3 + len(cls.__name__)

    def forward(self, x):
        return self.double(x) + self.triple(x)


def test_static_and_class_methods_win_over_submodules():
    check(lambda m, x: m(x), StaticAndClassMethods(), torch.randn(2), graphs=1, fullgraph=True)


class Constant:
    """A non-data descriptor written in Python (only `__get__`)."""

    def __init__(self, value):
        self.value = value

    def __get__(self, obj, owner=None):
        return self.value


class DescriptorModule(torch.nn.Module):
    offset = Constant(5.0)
    bias_like = Constant(-1.0)

    def __init__(self):
        super().__init__()
        self._parameters["offset"] = torch.nn.Parameter(torch.full((3,), 100.0))  # the descriptor wins
        self.__dict__["bias_like"] = 7.0  # the instance dict wins over a non-data descriptor

    def forward(self, x):
        return x + self.offset + self.bias_like


def test_non_data_descriptor_between_the_instance_dict_and_the_slot_dicts():
    check(lambda m, x: m(x), DescriptorModule(), torch.randn(3), graphs=1, fullgraph=True)


def test_parameter_shadowed_by_an_instance_attribute():
    def make():
        m = torch.nn.Linear(3, 3)
        object.__setattr__(m, "weight", torch.eye(3) * 2)  # a plain tensor in __dict__: read before _parameters
        return m
    check(lambda m, x: m(x), make(), torch.randn(2, 3), graphs=1, fullgraph=True)


def test_parameter_shadowed_by_an_instance_attribute_removed_between_calls_recompiles():
    m_e = torch.nn.Linear(3, 3)
    m_c = torch.nn.Linear(3, 3)
    m_c.load_state_dict(m_e.state_dict())
    for m in (m_e, m_c):
        object.__setattr__(m, "weight", torch.eye(3) * 2)
    counter = CompileCounter()
    compiled = bytegraph.compile(m_c, backend=counter)
    x = torch.randn(2, 3)
    torch.testing.assert_close(compiled(x), m_e(x))
    for m in (m_e, m_c):
        del m.__dict__["weight"]  # the parameter is visible again
    torch.testing.assert_close(compiled(x), m_e(x))
    torch.testing.assert_close(compiled(x), m_e(x))
    assert counter.frame_count == 2


class InstanceOverMethod(MethodBase):
    def __init__(self):
        super().__init__()
        self.scale = 4.0

    def scale(self, x):
        return x * 0.5


def test_instance_attribute_shadowing_a_method_deleted_between_calls_recompiles():
    def fn(m, x):
        s = m.scale
        return m.linear(x) * (s(x) if callable(s) else s)

    m_e, m_c = InstanceOverMethod(), InstanceOverMethod()
    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter)
    x = torch.randn(3)
    torch.testing.assert_close(compiled(m_c, x), fn(m_e, x))
    del m_e.scale, m_c.scale  # the method is found again
    torch.testing.assert_close(compiled(m_c, x), fn(m_e, x))
    torch.testing.assert_close(compiled(m_c, x), fn(m_e, x))
    assert counter.frame_count == 2


class ForwardingGetattr(torch.nn.Module):
    """A class's own `__getattr__` runs as written: this one answers `weight` from another
    tensor before nn.Module's slot dicts, and falls back to them for the rest."""

    def __init__(self):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.full((3,), 100.0))
        self.alternative = torch.full((3,), 2.0)
        self.register_buffer("shift", torch.ones(3))

    def __getattr__(self, name):
        if name == "weight" and "alternative" in self.__dict__:
            return self.__dict__["alternative"]
        return super().__getattr__(name)

    def forward(self, x):
        return x * self.weight + self.shift


def test_a_class_getattr_runs_before_the_slot_dicts_it_does_not_consult():
    check(lambda m, x: m(x), ForwardingGetattr(), torch.randn(3), graphs=1)


class FallbackGetattr(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 3)
        self.defaults = {"gain": 3.0}

    def __getattr__(self, name):
        try:
            return super().__getattr__(name)
        except AttributeError:
            defaults = self.__dict__.get("defaults", {})
            if name in defaults:
                return defaults[name]
            raise

    def forward(self, x):
        return self.lin(x) * self.gain


def test_a_class_getattr_falling_back_after_nn_module_getattr():
    check(lambda m, x: m(x), FallbackGetattr(), torch.randn(2, 3), graphs=1)


def test_missing_attribute_raises_like_eager():
    def fn(m, x):
        try:
            return m.nothing_here
        except AttributeError as e:
            return x + len(str(e))
    check(fn, torch.nn.Linear(2, 2), torch.randn(2), graphs=1)


@pytest.mark.parametrize("name", ["training", "weight", "forward", "_parameters"])
def test_hasattr_and_getattr_with_default_follow_the_same_order(name):
    def fn(m, x):
        return x + hasattr(m, name) + (getattr(m, name + "_missing", None) is None)
    check(fn, torch.nn.Linear(2, 2), torch.randn(2), graphs=1)
