"""Tensor operators, torch.* / torch.nn.functional.* / Tensor methods, in-place ops,
factories and indexing: eager vs compiled on fresh copies (see helpers.check)."""
import pytest
import torch
import torch.nn.functional as F

from helpers import check

# ------------------------------------------------------------------ binary operators

BINARY = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b,
    "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "pow": lambda a, b: a.abs() ** b,
    "matmul": lambda a, b: a @ b,
}


@pytest.mark.parametrize("op", list(BINARY))
def test_binary_tensor_tensor(op):
    f = BINARY[op]
    check(f, torch.randn(4, 4), torch.rand(4, 4) + 0.5, graphs=1)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow"])
def test_binary_tensor_scalar(op):
    f = BINARY[op]
    check(f, torch.randn(5), 3, graphs=1)
    check(f, torch.randn(5), 2.5, graphs=1)


REVERSED = {
    "radd": lambda a: 2 + a,
    "rsub": lambda a: 2 - a,
    "rmul": lambda a: 2.5 * a,
    "rtruediv": lambda a: 1 / a,
    "rfloordiv": lambda a: 7 // a,
    "rmod": lambda a: 7 % a,
    "rpow": lambda a: 2 ** a,
}


@pytest.mark.parametrize("op", list(REVERSED))
def test_binary_scalar_tensor(op):
    check(REVERSED[op], torch.rand(6) + 0.5, graphs=1)


BITWISE = {
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "lshift": lambda a, b: a << (b % 4),
    "rshift": lambda a, b: a >> (b % 4),
}


@pytest.mark.parametrize("op", list(BITWISE))
def test_bitwise_int_tensors(op):
    check(BITWISE[op], torch.randint(0, 64, (8,)), torch.randint(0, 64, (8,)), graphs=1)


@pytest.mark.parametrize("op", ["and", "or", "xor"])
def test_bitwise_bool_tensors(op):
    check(BITWISE[op], torch.rand(8) > 0.5, torch.rand(8) > 0.5, graphs=1)


def test_broadcasting_and_type_promotion():
    def f(a, b, c):
        return a + b, a * c, b / 2, c + 1.5

    check(f, torch.randn(3, 1), torch.arange(4), torch.tensor(True), graphs=1)


# ------------------------------------------------------------------ unary / compare

UNARY = {
    "neg": lambda a: -a,
    "pos": lambda a: +a,
    "abs": lambda a: abs(a),
    "invert_bool": lambda a: ~(a > 0),
    "not_any": lambda a: (a > 100).any().logical_not(),
}


# Ops whose result is their own input record no node (Note [Ops returning their input] in
# graph/output_graph.py): a function made only of them compiles no graph.
RETURNS_INPUT = {"pos", "dropout_eval"}


@pytest.mark.parametrize("op", list(UNARY))
def test_unary(op):
    check(UNARY[op], torch.randn(5), graphs=0 if op in RETURNS_INPUT else 1)


def test_invert_int_tensor():
    check(lambda a: ~a, torch.randint(-5, 5, (6,)), graphs=1)


COMPARE = {
    "lt": lambda a, b: a < b,
    "le": lambda a, b: a <= b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
    "gt": lambda a, b: a > b,
    "ge": lambda a, b: a >= b,
}


@pytest.mark.parametrize("op", list(COMPARE))
def test_compare_tensors(op):
    a = torch.randint(0, 3, (10,)).float()
    b = torch.randint(0, 3, (10,)).float()
    check(COMPARE[op], a, b, graphs=1)


@pytest.mark.parametrize("op", ["lt", "eq", "ge"])
def test_compare_tensor_scalar(op):
    check(COMPARE[op], torch.randint(0, 3, (10,)), 1, graphs=1)


def test_compare_result_used_as_mask():
    def f(x):
        return torch.where(x > 0, x, torch.zeros_like(x)) + (x <= 0).float()

    check(f, torch.randn(4, 4, requires_grad=True), graphs=1)


# ------------------------------------------------------------------ in-place

INPLACE = {
    "iadd": lambda a, b: a.__iadd__(b),
    "isub": lambda a, b: a.__isub__(b),
    "imul": lambda a, b: a.__imul__(b),
    "itruediv": lambda a, b: a.__itruediv__(b),
}


def _iadd(x, y):
    z = x * 1
    z += y
    return z


def _isub(x, y):
    z = x * 1
    z -= y
    return z


def _imul(x, y):
    z = x * 1
    z *= y
    return z


def _itruediv(x, y):
    z = x * 1
    z /= y
    return z


def _ipow(x, y):
    z = x.abs() + 1
    z **= 2
    return z + y


def _imatmul(x, y):
    z = x.clone()
    z @= y
    return z


@pytest.mark.parametrize("fn", [_iadd, _isub, _imul, _itruediv, _ipow, _imatmul], ids=lambda f: f.__name__)
def test_inplace_operator_on_intermediate(fn):
    check(fn, torch.randn(3, 3, requires_grad=True), torch.rand(3, 3) + 1, graphs=1)


def test_inplace_operator_on_input_mutates_input():
    def f(x, y):
        x += y
        x *= 2
        return x.sum()

    check(f, torch.randn(4), torch.randn(4), graphs=1)


def test_inplace_method_on_input_returns_input():
    def f(x):
        x.add_(1).mul_(3)
        return x

    check(f, torch.randn(4), graphs=1)


def test_inplace_methods_on_intermediates():
    def f(x):
        y = x.clone()
        y.sin_()
        y.clamp_(-0.5, 0.5)
        y.addcmul_(x, x, value=0.5)
        y.zero_().add_(x)
        return y

    check(f, torch.randn(5, requires_grad=True), graphs=1)


def test_inplace_on_view_of_input():
    def f(x):
        x[0].fill_(7.0)
        x[:, 1] += 1
        x.view(-1)[3] = -1.0
        return x * 2

    check(f, torch.randn(3, 3), graphs=1)


def test_setitem_on_input():
    def f(x, idx):
        x[idx] = 0.0
        x[x > 1] = 1.0
        return x

    check(f, torch.randn(6) * 2, torch.tensor([0, 2]), graphs=1)


def test_inplace_on_intermediate_then_grad():
    def f(x):
        y = x * 2
        y[1:] = y[1:] * 3
        y.relu_()
        return y

    check(f, torch.randn(6, requires_grad=True), graphs=1)


def test_out_of_place_does_not_mutate():
    def f(x):
        y = x.add(1)
        return x, y

    check(f, torch.randn(3), graphs=1)


def test_copy_into_input():
    def f(x, y):
        x.copy_(y * 2)

    check(f, torch.randn(3), torch.randn(3), graphs=1)


# ------------------------------------------------------------------ torch.* functions

TORCH_FNS = {
    "sin_cos": lambda x: torch.sin(x) + torch.cos(x),
    "exp_log": lambda x: torch.log(torch.exp(x) + 1),
    "tanh_sigmoid": lambda x: torch.tanh(x) * torch.sigmoid(x),
    "sum_dim": lambda x: torch.sum(x, dim=1, keepdim=True),
    "mean_all": lambda x: torch.mean(x),
    "max_dim": lambda x: torch.max(x, dim=0),
    "min_dim_values": lambda x: torch.min(x, 1).values,
    "cat": lambda x: torch.cat([x, x * 2], dim=0),
    "stack": lambda x: torch.stack((x, x + 1), dim=-1),
    "where": lambda x: torch.where(x > 0, x, -x),
    "clamp": lambda x: torch.clamp(x, min=-0.5, max=0.5),
    "matmul": lambda x: torch.matmul(x, x.T),
    "einsum": lambda x: torch.einsum("ij,kj->ik", x, x),
    "cumsum": lambda x: torch.cumsum(x, dim=1),
    "softmax": lambda x: torch.softmax(x, dim=-1),
    "topk": lambda x: torch.topk(x, 2, dim=1),
    "sort": lambda x: torch.sort(x, dim=0, descending=True),
    "argmax": lambda x: torch.argmax(x, dim=1),
    "split": lambda x: torch.split(x, 2, dim=1),
    "chunk": lambda x: torch.chunk(x, 2),
    "flatten": lambda x: torch.flatten(x),
    "transpose": lambda x: torch.transpose(x, 0, 1).contiguous(),
    "norm": lambda x: torch.linalg.norm(x, dim=1),
    "baddbmm": lambda x: torch.baddbmm(x[None], x[None], x.T[None]),
    "tril": lambda x: torch.tril(x) + torch.triu(x, 1),
    "allclose_free": lambda x: torch.isclose(x, x + 1e-9),
    "gather": lambda x: torch.gather(x, 1, torch.zeros(4, 2, dtype=torch.long)),
    "unbind": lambda x: torch.unbind(x, 1),
}


@pytest.mark.parametrize("name", list(TORCH_FNS))
def test_torch_function(name):
    check(TORCH_FNS[name], torch.randn(4, 4, requires_grad=True), graphs=1)


F_FNS = {
    "relu": lambda x: F.relu(x),
    "gelu": lambda x: F.gelu(x, approximate="tanh"),
    "silu": lambda x: F.silu(x),
    "leaky_relu": lambda x: F.leaky_relu(x, negative_slope=0.2),
    "softmax": lambda x: F.softmax(x, dim=1),
    "log_softmax": lambda x: F.log_softmax(x, -1),
    "layer_norm": lambda x: F.layer_norm(x, (8,)),
    "linear": lambda x: F.linear(x, torch.ones(3, 8), torch.zeros(3)),
    "mse_loss": lambda x: F.mse_loss(x, torch.zeros_like(x)),
    "cross_entropy": lambda x: F.cross_entropy(x, torch.tensor([1, 0, 7, 3])),
    "normalize": lambda x: F.normalize(x, dim=1),
    "pad": lambda x: F.pad(x, (1, 2)),
    "conv1d": lambda x: F.conv1d(x[None], torch.ones(2, 4, 3)),
    "max_pool1d": lambda x: F.max_pool1d(x[None], 2),
    "dropout_eval": lambda x: F.dropout(x, 0.5, training=False),
    "embedding": lambda x: F.embedding(torch.tensor([0, 2, 3]), x),
    "scaled_dot_product_attention": lambda x: F.scaled_dot_product_attention(x[None], x[None], x[None]),
}


@pytest.mark.parametrize("name", list(F_FNS))
def test_functional(name):
    check(F_FNS[name], torch.randn(4, 8, requires_grad=True), graphs=0 if name in RETURNS_INPUT else 1)


RETURNING_INPUT = {
    "to_own_dtype": lambda x: x.to(x.dtype),
    "float_of_float": lambda x: x.float(),
    "contiguous": lambda x: x.contiguous(),
    "type_as_itself": lambda x: x.type_as(x),
    "dropout_p0": lambda x: F.dropout(x, 0.0, training=True),
}


@pytest.mark.parametrize("name", list(RETURNING_INPUT))
def test_op_returning_its_input_is_not_recorded(name):
    """The op returns `x` itself, eagerly and compiled (`is` holds); only the op after it is a node."""
    op = RETURNING_INPUT[name]

    def fn(x):
        y = op(x)
        return y is x, y * 2

    result = check(fn, torch.randn(4, 8, requires_grad=True), graphs=1)
    assert result.eager.out[0] is True
    assert len(result.counter.ops()) == 1, result.counter.ops()


def test_inplace_op_returning_its_input_is_recorded():
    def fn(x):
        y = x.clone()
        z = y.add_(1)
        return z is y, z

    result = check(fn, torch.randn(3), graphs=1)
    assert result.eager.out[0] is True
    assert "add_" in result.counter.ops(), result.counter.ops()


METHODS = {
    "view_reshape": lambda x: x.view(2, 8).reshape(4, 4, 1).squeeze(-1),
    "permute": lambda x: x.permute(1, 0).contiguous(),
    "unsqueeze_expand": lambda x: x.unsqueeze(0).expand(3, 4, 4),
    "sum_mean": lambda x: x.sum(0) + x.mean(dim=1),
    "to_dtype": lambda x: x.to(torch.float64) * 2,
    "type_as": lambda x: x.double().type_as(x),
    "float_int": lambda x: (x * 10).int().float(),
    "masked_fill": lambda x: x.masked_fill(x < 0, 0.0),
    "chained": lambda x: x.exp().log1p().sqrt().neg().abs(),
    "t": lambda x: x.t() @ x,
    "T_mT": lambda x: x.T + x.mT,
    "repeat": lambda x: x.repeat(2, 1),
    "new_zeros_new_ones": lambda x: x.new_zeros(2, 3) + x.new_ones(3),
    "new_tensor_full": lambda x: x.new_full((2,), 3.0) * x[0, :2],
    "index_select": lambda x: x.index_select(0, torch.tensor([3, 1])),
    "narrow": lambda x: x.narrow(1, 1, 2),
    "max_method": lambda x: x.max(),
    "std_var": lambda x: (x.std(), x.var(dim=0, unbiased=False)),
    "detach": lambda x: x.detach() * x,
    "clone": lambda x: x.clone(),
    "contiguous": lambda x: x.t().contiguous().view(-1),
    "split_sizes": lambda x: x.split([1, 3], dim=1),
    "flip_roll": lambda x: x.flip(0).roll(1, 1),
    "all_any": lambda x: ((x > -10).all(), (x > 10).any()),
    "matmul_method": lambda x: x.matmul(x),
    "softmax_method": lambda x: x.softmax(-1),
    "bool_ops": lambda x: (x > 0).logical_and(x < 1),
}


@pytest.mark.parametrize("name", list(METHODS))
def test_tensor_method(name):
    check(METHODS[name], torch.randn(4, 4, requires_grad=True), graphs=1)


def test_int_tensor_methods():
    def f(x):
        return x.sum(), x.float().mean(), x.argsort(), x.cumprod(0), x // 2

    check(f, torch.tensor([3, 1, 4, 1, 0, 2]), graphs=1)


def test_data_dependent_output_shapes():
    # bincount/unique/nonzero have data-dependent shapes: whatever bytegraph does
    # (graph, break, or eager), results must equal eager.
    def f(x):
        return x.bincount(minlength=5), x.unique(), x.nonzero(), x[x > 1], x * 2

    check(f, torch.tensor([3, 1, 4, 1, 0, 2]))


# ------------------------------------------------------------------ factories

FACTORIES = {
    "zeros": lambda x: x + torch.zeros(4),
    "ones_dtype": lambda x: x + torch.ones(2, 4, dtype=torch.float64),
    "arange": lambda x: x * torch.arange(4),
    "arange_float_step": lambda x: x + torch.arange(0, 2, 0.5),
    "full": lambda x: x + torch.full((4,), 2.5),
    "eye": lambda x: torch.eye(4) @ x,
    "empty_like_fill": lambda x: torch.empty_like(x).fill_(3.0) + x,
    "zeros_like_ones_like": lambda x: torch.zeros_like(x) + torch.ones_like(x, dtype=torch.int64),
    "full_like": lambda x: torch.full_like(x, 7),
    "tensor_literal": lambda x: x + torch.tensor([1.0, 2.0, 3.0, 4.0]),
    "linspace": lambda x: x + torch.linspace(0, 1, 4),
    "empty_fill": lambda x: torch.empty(4).fill_(1.5) * x,
}


@pytest.mark.parametrize("name", list(FACTORIES))
def test_factory(name):
    check(FACTORIES[name], torch.randn(4), graphs=1)


def test_factory_only_function():
    def f():
        a = torch.zeros(2, 3)
        b = torch.ones(3)
        return a + b, torch.arange(6).view(2, 3)

    check(f, graphs=1)


def test_factory_shape_from_input():
    def f(x):
        return torch.zeros(x.shape[0], 2) + torch.ones(x.size()), torch.ones(x.shape[1:])

    check(f, torch.randn(3, 2), graphs=1)


# ------------------------------------------------------------------ indexing / slicing

INDEXING = {
    "int": lambda x: x[1],
    "negative_int": lambda x: x[-1],
    "slice": lambda x: x[1:3],
    "slice_step": lambda x: x[::2, 1::2],
    "ellipsis": lambda x: x[..., 0],
    "none": lambda x: x[None, :, None],
    "tuple_mixed": lambda x: x[1:, 0],
    "tensor_index": lambda x: x[torch.tensor([0, 2, 2])],
    "list_index": lambda x: x[[0, 1], [2, 3]],
    "index_with_int_tensor_scalar": lambda x: x[torch.tensor(1)],
}


@pytest.mark.parametrize("name", list(INDEXING))
def test_tensor_indexing(name):
    check(INDEXING[name], torch.randn(4, 4, requires_grad=True), graphs=1)


def test_slice_bounds_from_python_values():
    def f(x, start, stop):
        n = stop - start
        return x[start:stop] * n, x[: -start or None]

    check(f, torch.randn(8), 2, 5, graphs=1)


def test_slice_object_built_in_function():
    def f(x):
        s = slice(1, None, 2)
        return x[s], s.start + s.step

    check(f, torch.randn(7), graphs=1)


# ------------------------------------------------------------------ graph counts


def test_only_tensor_work_is_one_graph():
    def f(x, y):
        a = x.relu() + y
        b = a.sum(dim=0)
        return torch.cat([a, b[None]]) * 2

    r = check(f, torch.randn(3, 2), torch.randn(3, 2), graphs=1)
    assert r.counter.op_count >= 4


def test_pure_python_is_no_graph():
    def f(a, b):
        c = [a, b, a * b]
        return sum(c) + max(c), {"k": a}

    check(f, 3, 4, graphs=0)


def test_python_floats_no_graph():
    def f(a):
        return a * 2.5 + 1 / 3, round(a, 2), a ** 0.5

    check(f, 7.25, graphs=0)


def test_shape_error_propagates():
    def f(x, y):
        z = x + 1
        return z @ y

    check(f, torch.randn(2, 3), torch.randn(4, 5))


def test_boolean_mask_read_with_grad():
    # data-dependent shape; graph or eager, values and gradients must match eager
    def f(x):
        return x[x > 0].sum() * 2 + x.mean()

    check(f, torch.randn(4, 4, requires_grad=True))
