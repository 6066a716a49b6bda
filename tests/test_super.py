"""`super()` in both forms, traced: `__init__` of objects made in the frame,
method and `forward` chains, multiple inheritance along the MRO, nn.Module subclasses,
`super().__getattr__`, classmethods, properties and class attributes through super.
Every test is differential (eager vs compiled) and compiles one graph with fullgraph."""
import pytest
import torch
from torch import nn

from helpers import check


def T(*shape):
    return torch.randn(*shape) if shape else torch.randn(3)


def one_graph(fn, *args, **kw):
    return check(fn, *args, graphs=1, fullgraph=True, **kw)


class A:
    scale = 2.0

    def __init__(self, w):
        self.w = w
        self.trail = ["A"]

    def run(self, x):
        return x * self.w

    @property
    def twice(self):
        return self.w * 2

    @classmethod
    def unit(cls):
        return cls.scale

    def __call__(self, x):
        return x + self.w


class B(A):
    scale = 3.0

    def __init__(self, w, b=1.0):
        super().__init__(w)
        self.b = b
        self.trail.append("B")

    def run(self, x):
        return super().run(x) + self.b

    @property
    def twice(self):
        return super().twice + 1

    @classmethod
    def unit(cls):
        return super().unit() * 10

    def __call__(self, x):
        return super().__call__(x) * 2


class C(B):
    def __init__(self, w):
        super(C, self).__init__(w, b=2.0)
        self.trail.append("C")

    def run(self, x):
        return super(C, self).run(x) * 3

    def base_scale(self):
        return super().scale


# diamond: D(B2, C2), B2(A2), C2(A2): cooperative calls follow D's MRO
class A2:
    def __init__(self):
        self.order = ["A2"]

    def step(self, x, log):
        log.append("A2")
        return x + 1


class B2(A2):
    def __init__(self):
        super().__init__()
        self.order.append("B2")

    def step(self, x, log):
        log.append("B2")
        return super().step(x * 2, log)


class C2(A2):
    def __init__(self):
        super().__init__()
        self.order.append("C2")

    def step(self, x, log):
        log.append("C2")
        return super().step(x - 3, log)


class D2(B2, C2):
    def __init__(self):
        super().__init__()
        self.order.append("D2")

    def step(self, x, log):
        log.append("D2")
        return super().step(x, log)


# ------------------------------------------------------------ objects made in the frame


def test_super_init_one_level_in_frame():
    def f(x):
        o = B(x)
        return o.run(x), o

    one_graph(f, T())


def test_super_init_two_levels_two_argument_form():
    def f(x):
        o = C(x * 2)
        return o.run(x), o.trail, o

    one_graph(f, T())


def test_super_init_diamond_follows_mro():
    def f(x):
        o = D2()
        log = []
        return o.step(x, log), o.order, log

    one_graph(f, T())


def test_super_init_reaching_object_init():
    class P:
        def __init__(self):
            super().__init__()
            self.ready = True

    def f(x):
        p = P()
        return x + 1, p.ready

    one_graph(f, T())


def test_super_init_with_keyword_and_default_arguments():
    class Q(B):
        def __init__(self, w, *, extra=5):
            super().__init__(w=w)
            self.extra = extra

    def f(x):
        q = Q(x, extra=7)
        return q.run(x) + q.extra, q.b

    one_graph(f, T())


# ------------------------------------------------------------ objects passed in


def test_super_method_on_argument():
    one_graph(lambda x, o: o.run(x), T(), B(torch.randn(3)))


def test_super_chain_three_deep_on_argument():
    one_graph(lambda x, o: o.run(x), T(), C(torch.randn(3)))


def test_super_diamond_on_argument_with_log():
    def f(x, o, log):
        return o.step(x, log)

    one_graph(f, T(), D2(), [])


def test_super_property():
    one_graph(lambda x, o: x * o.twice, T(), B(torch.randn(3)))


def test_super_class_attribute():
    one_graph(lambda x, o: x * o.base_scale(), T(), C(1.0))


def test_super_classmethod_through_class_and_instance():
    def f(x, o):
        return x * B.unit() + o.unit()

    one_graph(f, T(), B(1.0))


def test_super_call_dunder():
    one_graph(lambda x, o: o(x), T(), B(torch.randn(3)))


def test_super_getattr_fallback():
    class Base:
        def __getattr__(self, name):
            if name.startswith("__"):
                raise AttributeError(name)
            return 10

    class Child(Base):
        def __getattr__(self, name):
            if name == "special":
                return 1
            return super().__getattr__(name)

    def f(x, o):
        return x * o.special + o.other

    one_graph(f, T(), Child())


def test_super_in_method_where_self_is_captured_by_a_closure():
    class K(A):
        def run(self, x):
            def inner():
                return self.w

            return super().run(x) + inner()

    one_graph(lambda x, o: o.run(x), T(), K(torch.randn(3)))


def test_super_setattr_in_python_setattr():
    class Logged:
        def __init__(self):
            self.log = []
            self.value = 0

        def __setattr__(self, name, value):
            if name != "log":
                self.log.append(name)
            super().__setattr__(name, value)

    def f(x):
        o = Logged()
        o.value = 3
        return x * o.value, o.log, o

    one_graph(f, T())


def test_super_two_argument_form_skipping_a_level():
    class Skip(C):
        def run(self, x):
            return super(B, self).run(x)  # straight to A.run

    one_graph(lambda x, o: o.run(x), T(), Skip(torch.randn(3)))


def test_super_in_operator_dunder():
    class V:
        def __init__(self, t):
            self.t = t

        def __add__(self, other):
            return V(self.t + other.t)

    class W(V):
        def __add__(self, other):
            r = super().__add__(other)
            r.t = r.t * 2
            return r

    def f(a, b):
        return (W(a) + W(b)).t

    one_graph(f, T(), T())


def test_super_without_class_cell_raises_like_eager():
    def f(x):
        return super().run(x)  # RuntimeError: no __class__ cell / arguments

    check(f, T())


def test_super_wrong_type_raises_like_eager():
    def f(x, o):
        return super(C, o).run(x)

    check(f, T(), A(1.0))


def test_super_missing_attribute_raises_like_eager():
    class E(A):
        def run(self, x):
            return super().nope(x)

    check(lambda x, o: o.run(x), T(), E(1.0))


# ------------------------------------------------------------ nn.Module subclasses


class ScaledLinear(nn.Linear):
    def __init__(self, n, k):
        super().__init__(n, n)
        self.k = k

    def forward(self, x):
        return super().forward(x) * self.k


class ShiftedScaledLinear(ScaledLinear):
    def forward(self, x):
        return super().forward(x) + 1


class ReluShiftedScaled(ShiftedScaledLinear):
    def forward(self, x):
        return torch.relu(super().forward(x))


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(x)


class ResidualBlock(Block):
    def forward(self, x):
        return x + super().forward(x)


class GetattrModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def __getattr__(self, name):
        if name == "proj":
            return super().__getattr__("lin")
        return super().__getattr__(name)

    def forward(self, x):
        return self.proj(x)


@pytest.mark.parametrize("cls", [ScaledLinear, ShiftedScaledLinear, ReluShiftedScaled])
def test_module_super_forward_chain(cls):
    torch.manual_seed(0)
    one_graph(lambda m, x: m(x), cls(4, 2.0), T(2, 4))


def test_module_super_forward_in_plain_module():
    torch.manual_seed(0)
    one_graph(lambda m, x: m(x), ResidualBlock(), T(2, 4))


def test_module_super_forward_in_sequential():
    torch.manual_seed(0)
    seq = nn.Sequential(ResidualBlock(), ReluShiftedScaled(4, 0.5), ResidualBlock())
    one_graph(lambda m, x: m(x), seq, T(2, 4))


def test_module_super_getattr():
    torch.manual_seed(0)
    one_graph(lambda m, x: m(x), GetattrModule(), T(2, 4))


def test_module_compiled_directly_with_super_forward():
    import bytegraph
    from helpers import CompileCounter, assert_same

    torch.manual_seed(0)
    m = ReluShiftedScaled(4, 3.0)
    counter = CompileCounter()
    cm = bytegraph.compile(m, backend=counter, fullgraph=True)
    x = T(2, 4)
    assert_same(m(x), cm(x), "output")
    assert counter.frame_count == 1
