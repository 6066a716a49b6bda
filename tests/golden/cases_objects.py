"""Golden cases: nn.Modules, user classes (methods, properties, dunders, class and static
methods), super(), generators and grad-mode blocks."""
import torch
import torch.nn as nn

import bytegraph

from .harness import case


def T(*shape, grad=False):
    return torch.randn(*shape, requires_grad=grad)


# ---------------------------------------------------------------- nn.Module


def _mlp():
    torch.manual_seed(1)
    return nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = nn.Linear(4, 4)
        self.scale = 0.5

    def forward(self, x):
        return x + self.inner(x) * self.scale


class WithBuffer(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("running", torch.zeros(3))

    def forward(self, x):
        self.running.add_(x.mean(0))
        return x - self.running


class PrintingModule(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        y = self.lin(x)
        print("inside forward")
        return y.relu()


class ModuleList3(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(3, 3) for _ in range(3))

    def forward(self, x):
        for layer in self.layers:
            x = layer(x).tanh()
        return x


@case(lambda: (_mlp(), T(2, 4)))
def sequential_mlp(m, x):
    return m(x).sum()


@case(lambda: (Residual(), T(2, 4, grad=True)))
def module_with_submodule_and_float(m, x):
    return m(x)


@case(lambda: (WithBuffer(), T(2, 3)))
def module_buffer_inplace(m, x):
    return m(x)


@case(lambda: (PrintingModule(), T(2, 3)))
def module_forward_breaks(m, x):
    return m(x) * 2


@case(lambda: (ModuleList3(), T(2, 3)))
def module_list_loop(m, x):
    return m(x)


@case(lambda: (nn.Linear(3, 2), T(4, 3)))
def module_parameters_read(m, x):
    return x @ m.weight.t() + m.bias, sum(p.numel() for p in m.parameters())


@case(lambda: (nn.Sequential(nn.Linear(3, 3), nn.Dropout(0.0)), T(2, 3)))
def module_training_flag(m, x):
    if m.training:
        return m(x) + 1
    return m(x)


@case(lambda: (nn.LayerNorm(4), T(2, 4, grad=True)))
def layer_norm_module(m, x):
    return m(x)


def _hooked():
    torch.manual_seed(2)
    m = nn.Linear(3, 3)
    m.register_forward_hook(lambda mod, inp, out: out * 2)
    return m


@case(lambda: (_hooked(), T(2, 3)))
def module_with_forward_hook(m, x):
    return m(x)


@case(lambda: (T(2, 4),))
def manual_seed_breaks_before_functional_ops(x):
    torch.manual_seed(3)
    return nn.functional.gelu(x) + nn.functional.softmax(x, dim=-1)


# ---------------------------------------------------------------- user classes


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm2(self):
        return self.x * self.x + self.y * self.y

    @property
    def swapped(self):
        return Point(self.y, self.x)

    def __add__(self, other):
        return Point(self.x + other.x, self.y + other.y)

    @classmethod
    def origin_like(cls, t):
        return cls(torch.zeros_like(t), torch.zeros_like(t))

    @staticmethod
    def twice(t):
        return t * 2


@case(lambda: (Point(T(3), T(3)),))
def user_method_call(p):
    return p.norm2()


@case(lambda: (Point(T(3), T(3)),))
def user_property(p):
    return p.swapped.x - p.y


@case(lambda: (Point(T(3), T(3)), Point(T(3), T(3))))
def user_dunder_add(p, q):
    r = p + q
    return r.x, r.y


@case(lambda: (T(3),))
def user_classmethod_and_staticmethod(t):
    o = Point.origin_like(t)
    return Point.twice(t) + o.x


@case(lambda: (T(3),))
def user_object_created_in_frame(t):
    p = Point(t, t + 1)
    return p.norm2()


class Base:
    def __init__(self, k):
        self.k = k

    def apply(self, t):
        return t * self.k


class Derived(Base):
    def __init__(self, k):
        super().__init__(k + 1)

    def apply(self, t):
        return super().apply(t) + 1


class DerivedExplicit(Base):
    def apply(self, t):
        return super(DerivedExplicit, self).apply(t) - 1


@case(lambda: (Derived(2), T(3)))
def super_zero_argument(obj, t):
    return obj.apply(t)


@case(lambda: (DerivedExplicit(3), T(3)))
def super_two_arguments(obj, t):
    return obj.apply(t)


@case(lambda: (T(3),))
def super_in_constructor_inlined(t):
    return Derived(1).apply(t)


class Slotted:
    __slots__ = ("a",)

    def __init__(self, a):
        self.a = a


@case(lambda: (Slotted(T(3)),))
def slots_member_read(s):
    return s.a + 1


@case(lambda: (Point(T(3), 4),))
def isinstance_and_hasattr(p):
    if isinstance(p, Point) and hasattr(p, "x"):
        return p.x * p.y
    return p.x


class Breaking:
    def __init__(self):
        self.n = 0

    def step(self, t):
        self.n += 1
        print("step", self.n)
        return t + self.n


@case(lambda: (Breaking(), T(3)))
def user_method_breaks_with_attribute_write(obj, t):
    return obj.step(t) * 2


# ---------------------------------------------------------------- generators


def _gen(t, n):
    for i in range(n):
        yield t * i


@case(lambda: (T(3),))
def generator_consumed_by_list(t):
    return list(_gen(t, 3))


@case(lambda: (T(3),))
def generator_expression_sum(t):
    return sum(t * i for i in range(4))


@case(lambda: (T(3),))
def generator_next_calls(t):
    g = _gen(t, 5)
    a = next(g)
    b = next(g)
    return a + b


# ---------------------------------------------------------------- grad mode


@case(lambda: (T(3, grad=True),))
def no_grad_block(x):
    with torch.no_grad():
        y = x * 2
    return x * 3 + y


@case(lambda: (T(3, grad=True),))
def enable_grad_inside_no_grad(x):
    with torch.no_grad():
        with torch.enable_grad():
            y = x * 2
        z = x + 1
    return y, z


@case(lambda: (T(3, grad=True),))
def set_grad_enabled_block(x):
    with torch.set_grad_enabled(False):
        y = x.sin()
    return y, torch.is_grad_enabled()


def _no_grad_helper(t):
    with torch.no_grad():
        return t * 5


@case(lambda: (T(3, grad=True),))
def no_grad_in_inlined_helper(x):
    return _no_grad_helper(x) + x


@case(lambda: (T(3, grad=True),))
def detach_and_requires_grad(x):
    y = x.detach()
    return y * 2, y.requires_grad, (x * 2).requires_grad


@case(lambda: (T(3, grad=True),))
def no_grad_decorated_helper(x):
    return _decorated(x) + x


@torch.no_grad()
def _decorated(t):
    return t * 7


@case(lambda: (T(3, grad=True),))
def break_inside_no_grad_helper(x):
    def helper(t):
        with torch.no_grad():
            bytegraph.graph_break()
            return t * 2

    return helper(x) + x
