"""Golden cases: the guards installed for tensors, ints, floats, containers, modules,
closures, defaults and globals, and the recompiles (with their reasons) when a guard fails."""
import torch
import torch.nn as nn

from .harness import case


def T(*shape, grad=False, dtype=torch.float32):
    return torch.randn(*shape, requires_grad=grad).to(dtype)


# ---------------------------------------------------------------- tensors

@case(calls=lambda: [(T(3),), (T(3),), (T(4),)])
def recompile_on_shape(x):
    return x * 2


@case(calls=lambda: [(T(3),), (T(3, dtype=torch.float64),)])
def recompile_on_dtype(x):
    return x + 1


@case(calls=lambda: [(T(3),), (T(3, grad=True),)])
def recompile_on_requires_grad(x):
    return x.sin()


@case(calls=lambda: [(T(2, 3),), (T(3, 2).t(),)])
def recompile_on_stride(x):
    return x.sum(0)


@case(calls=lambda: [(T(3), T(3)), (torch.ones(3),) * 2])
def recompile_on_aliasing(x, y):
    return x + y


@case(lambda: (T(2, 3),))
def tensor_view_input(x):
    return x[0] + x[1]


# ---------------------------------------------------------------- Python values

@case(calls=lambda: [(T(3), 2), (T(3), 2), (T(3), 3)])
def recompile_on_int_value(x, k):
    return x * k


@case(calls=lambda: [(T(3), 2), (T(3), 5)])
def int_passed_through_unguarded(x, k):
    return x + 1, k


@case(calls=lambda: [(T(3), 0.5), (T(3), 1.5)])
def recompile_on_float(x, a):
    return x * a


@case(calls=lambda: [(T(3), "add"), (T(3), "mul")])
def recompile_on_string(x, op):
    if op == "add":
        return x + 1
    return x * 2


@case(calls=lambda: [(T(3), None), (T(3), T(3))])
def recompile_on_none_vs_tensor(x, bias):
    if bias is None:
        return x
    return x + bias


# ---------------------------------------------------------------- containers

@case(calls=lambda: [(T(3), [1, 2]), (T(3), [1, 2, 3])])
def recompile_on_list_length(x, xs):
    return x * len(xs)


@case(calls=lambda: [(T(3), {"a": 1}), (T(3), {"b": 1})])
def recompile_on_dict_keys(x, d):
    return [x * v for v in d.values()]


@case(calls=lambda: [(T(3), (T(3), 2)), (T(3), (T(3), 3))])
def tuple_argument_items(x, pair):
    t, k = pair
    return x + t * k


@case(calls=lambda: [(T(3), {1, 2}), (T(3), {1, 3})])
def recompile_on_set_elements(x, s):
    return x * (2 in s)


# ---------------------------------------------------------------- modules


class Scaled(nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = k
        self.lin = nn.Linear(3, 3)

    def forward(self, x):
        return self.lin(x) * self.k


def _scaled(k):
    torch.manual_seed(4)
    return Scaled(k)


@case(calls=lambda: [(_scaled(2), T(2, 3)), (_scaled(2), T(2, 3)), (_scaled(3), T(2, 3))])
def module_attribute_guard(m, x):
    return m(x)


@case(calls=lambda: [(nn.Linear(3, 3), T(2, 3)), (nn.Linear(3, 3, bias=False), T(2, 3))])
def recompile_on_module_without_bias(m, x):
    return m(x)


def _eval_mode():
    torch.manual_seed(5)
    return nn.Dropout(0.5).eval()


@case(calls=lambda: [(_eval_mode(), T(4)), (_eval_mode(), T(4))])
def module_eval_mode(m, x):
    return m(x)


# ---------------------------------------------------------------- closures, defaults, globals


SCALE = 2
FLAG = True


def _set_scale(value):
    global SCALE
    SCALE = value


def _scale_state():
    return SCALE


@case(lambda: (T(3),), setup=lambda: _set_scale(2), state=_scale_state)
def global_int_read(x):
    return x * SCALE


@case(lambda: (T(3),))
def global_bool_branch(x):
    if FLAG:
        return x + 1
    return x - 1


def _with_default(x, k=3, *, mode="scale"):
    if mode == "scale":
        return x * k
    return x + k


@case(lambda: (T(3),))
def defaults_used(x):
    return _with_default(x) + _with_default(x, mode="shift")


@case(calls=lambda: [(T(3),), (T(3), 4)])
def root_default_then_explicit(x, k=2):
    return x * k


def _make_scaler(k):
    def scaler(x):
        return x * k

    return scaler


@case(calls=lambda: [(T(3), _make_scaler(2)), (T(3), _make_scaler(2)), (T(3), _make_scaler(5))])
def closure_argument_cells(x, f):
    return f(x)


def _make_unused_cell(k):
    def f(x):
        if False:
            return k
        return x + 1

    return f


@case(calls=lambda: [(T(3), _make_unused_cell(1)), (T(3), _make_unused_cell(2))])
def closure_cell_never_read(x, f):
    return f(x)


def helper_a(t):
    return t + 1


def helper_b(t):
    return t - 1


@case(calls=lambda: [(T(3), helper_a), (T(3), helper_b)])
def recompile_on_function_argument(x, f):
    return f(x)


class Counter:
    def __init__(self):
        self.calls = 0


@case(lambda: (T(3), Counter()))
def unpinned_int_attribute(x, c):
    c.calls += 1
    return x + 1


@case(calls=lambda: [(T(3), Counter()), (T(3), Counter())])
def int_attribute_used_in_graph(x, c):
    return x * (c.calls + 1)


class Absent:
    pass


@case(lambda: (T(3), Absent()))
def guard_on_absent_attribute(x, o):
    n = getattr(o, "n", 0)
    o.n = n + 1
    return x * n


@case(lambda: (T(3),))
def grad_mode_guard_under_no_grad(x):
    return x * torch.is_grad_enabled()


@case(calls=lambda: [(T(3), k) for k in (1, 2, 3, 4)], config={"cache_size_limit": 2})
def cache_size_limit_reached(x, k):
    return x * (0, 10, 20, 30, 40)[k]  # an index specializes k: each value is an entry
