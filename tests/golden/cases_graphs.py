"""Golden cases: single graphs (tensor ops, grads, Python values, containers, control flow
on constants, builtins)."""
import math
import operator

import torch

from .harness import case


def T(*shape, grad=False):
    return torch.randn(*shape, requires_grad=grad)


@case(lambda: (T(3), T(3)))
def add_mul(x, y):
    return x * 2 + y


@case(lambda: (T(4, 3, grad=True), T(3, 5, grad=True)))
def matmul_relu_grad(x, w):
    return (x @ w).relu().sum()


@case(lambda: (T(2, 3, grad=True),))
def method_chain(x):
    return x.sin().cos().exp().mean(dim=1)


@case(lambda: (T(2, 3),))
def torch_functions(x):
    a = torch.tanh(x)
    b = torch.cat([a, x], dim=0)
    return torch.sum(b, dim=0, keepdim=True)


@case(lambda: (T(4, 4, grad=True),))
def views_and_indexing(x):
    y = x.view(2, 8)[:, 1:5]
    z = x.t().reshape(-1)
    return y * 2, z[3:]


@case(lambda: (T(2, 3),))
def shape_arithmetic(x):
    n, m = x.shape
    return x.reshape(n * m) + x.size(1) + x.dim()


@case(lambda: (T(3), 2.5, 4))
def python_scalars(x, a, k):
    return x * a + k, a * k


@case(lambda: (T(3),))
def factory_functions(x):
    return torch.zeros(3) + torch.ones_like(x) * torch.arange(3)


@case(lambda: (T(2, 2),))
def dtype_conversion(x):
    return x.to(torch.float64).double().sum(), x.int()


@case(lambda: (T(3), T(3)))
def returns_tuple_and_dict(x, y):
    return {"sum": x + y, "pair": (x - y, y)}


@case(lambda: ([T(2), T(2), T(2)],))
def list_argument_loop(xs):
    total = xs[0]
    for t in xs[1:]:
        total = total + t
    return total


@case(lambda: ({"a": T(2), "b": T(2)},))
def dict_argument_items(d):
    return [v * 2 for k, v in sorted(d.items())]


@case(lambda: (T(3), 3))
def range_loop_unrolled(x, n):
    for i in range(n):
        x = x + i
    return x


@case(lambda: (T(3), True))
def branch_on_bool_argument(x, flag):
    if flag:
        return x + 1
    return x - 1


@case(lambda: (T(2, 3),))
def branch_on_shape(x):
    if x.shape[0] > 1:
        return x.sum(0)
    return x


@case(lambda: (T(3),))
def builtins_on_values(x):
    values = [1, 5, 3]
    return x * max(values) + min(values) + len(values) + abs(-2) + sum(values)


@case(lambda: (T(3),))
def math_and_operator(x):
    return operator.add(x, math.sqrt(4.0)) * math.pi


@case(lambda: (T(3), T(3)))
def zip_enumerate(x, y):
    out = []
    for i, (a, b) in enumerate(zip([x, y], [y, x])):
        out.append(a * i + b)
    return out


@case(lambda: (T(3),))
def list_comprehension(x):
    return torch.stack([x * i for i in range(3)])


@case(lambda: (T(3),))
def nested_function_call(x):
    def inner(t, k=2):
        return t * k

    return inner(x) + inner(x, k=3)


@case(lambda: (T(3),))
def lambda_and_map(x):
    return list(map(lambda t: t + 1, [x, x * 2]))


@case(lambda: (T(2, 3),))
def inplace_on_intermediate(x):
    y = x.clone()
    y.add_(1)
    y.mul_(2)
    return y


@case(lambda: (T(3),))
def inplace_on_input(x):
    x.add_(1)
    return x


@case(lambda: (T(3),))
def returns_input_unchanged(x):
    return x, x + 1


@case(lambda: (T(3),))
def no_tensor_work(x):
    return 1 + 2


@case(lambda: (T(2, 2),))
def tensor_metadata(x):
    return x + x.numel(), x.dtype, x.shape, x.requires_grad


@case(lambda: (T(3), T(3)))
def comparison_ops(x, y):
    return (x > y) & (x < 1), torch.where(x > 0, x, y)


@case(lambda: (T(4),))
def unpack_and_star(x):
    a, *rest = x.split(1)
    return a, torch.cat(rest)


@case(lambda: (T(2, 3),))
def fstring_and_constants(x):
    name = f"{x.shape[0]}x{x.shape[1]}"
    return x * len(name)
