"""numpy on Python numbers and lists in traced code (bytegraph/vars/numpy_calls.py): ufuncs,
numpy's core reductions, scalar types and `np.finfo`/`np.iinfo` folded on constant data
(dtype objects from outside included), their results constants of eager's type
(`np.float64`, `np.int64`, `np.bool`, numpy's own limits objects), numpy scalars passed to
graph ops as eager passes them; numpy on a tensor, array results and warnings are reasoned
graph breaks. Differential: outputs (types included), grads, errors; torch.compile with
fullgraph=True is the reference for the one-graph cases."""
import re

import numpy as np
import pytest
import torch

import bytegraph
from helpers import check

X = torch.randn(2, 8, requires_grad=True)
SCALE = np.float32(0.5)
INT8 = np.dtype("int8")


def _one_graph_as_torch_compile(fn, *args):
    torch._dynamo.reset()
    torch.compile(fn, backend="eager", fullgraph=True)(*args)
    return check(fn, *args, graphs=1, fullgraph=True)


def _breaks_with(fn, *args, match):
    check(fn, *args)
    reasons = [r.reason for r in bytegraph.explain(fn, *args).break_reasons]
    assert any(re.search(match, r) for r in reasons), reasons


def attention_scale(x, heads):
    head_dim = x.shape[-1] // heads
    return x / np.sqrt(head_dim) + np.log2(heads)


@pytest.mark.parametrize("fn", [
    lambda x: x * np.sqrt(4.0),
    lambda x: x * np.sum([1, 2, 3]) + np.prod((2, 3)),
    lambda x: x * np.log2(8) + np.pi,
    lambda x: x * np.float32(2.5) + np.int64(3),
    lambda x: x * np.mean([1.0, 2.0, 4.0]) - np.max([3, 1]) + np.clip(5, 0, 3),
    lambda x: x * np.round(2.567, 2) + np.sum([1, 2, 3], dtype=np.float32),
    lambda x: x * np.maximum(2, 3),
    lambda x: x * SCALE,
], ids=["sqrt", "sum and prod of a list and a tuple", "log2 and pi", "scalar types", "reductions",
        "round and dtype=", "a binary ufunc", "numpy scalar from outside"])
def test_numpy_on_constants_is_one_graph(fn):
    _one_graph_as_torch_compile(fn, X)


def test_numpy_bool_in_an_if_is_one_graph():
    """torch.compile traces np.isclose through torch._numpy into a tensor and breaks at the `if`."""
    check(lambda x: x * 2 if np.isclose(1.0, 1.0 + 1e-12) else x, X, graphs=1, fullgraph=True)


def test_numpy_on_a_size_read_from_the_tensor():
    _one_graph_as_torch_compile(attention_scale, X, 2)


def test_results_keep_eager_types():
    def f(x):
        r = np.sqrt(4.0)
        return x + 1, r, type(r), np.sum([1, 2]), np.float32(1.5) * 2, np.isclose(1.0, 2.0), np.divmod(7, 2)

    res = check(f, X, graphs=1, fullgraph=True)
    assert type(res.compiled.out[1]) is np.float64 and res.compiled.out[2] is np.float64


def test_numpy_scalar_into_torch_factories_keeps_its_dtype():
    def f(x):
        return x + torch.tensor(np.float32(1.5)), torch.tensor(np.sqrt(2.0)), torch.full((2,), np.int64(3))

    res = check(f, X, graphs=1, fullgraph=True)
    assert res.compiled.out[1].dtype == torch.float64  # a float64 numpy scalar, as eager


def test_numpy_on_a_tensor_breaks_naming_the_call():
    _breaks_with(lambda x: np.sqrt(x.detach()) + 1, X, match=r"numpy function np\.sqrt called on a tensor")
    with pytest.raises(bytegraph.Unsupported, match=r"numpy function np\.sum called on a tensor.*"):
        bytegraph.compile(lambda x: np.sum(x), fullgraph=True)(torch.ones(2))
    out = bytegraph.explain(lambda x: np.sqrt(x.detach()) + 1, X)
    assert any("torch.sqrt" in r.hint for r in out.break_reasons), [r.hint for r in out.break_reasons]


def test_array_result_breaks():
    _breaks_with(lambda x: x * np.cumsum([1, 2, 3])[-1], X, match=r"np\.cumsum returns a ndarray")


def test_call_that_warns_breaks_and_warns_as_eager():
    def f(x):
        return x * np.isinf(np.log(0.0))

    with pytest.warns(RuntimeWarning):
        _breaks_with(f, X, match=r"np\.log warns on these arguments")


def test_function_outside_the_pure_modules_breaks_with_its_module():
    _breaks_with(lambda x: x * len(np.unique([3, 1, 3]).tolist()), X,
                 match=r"numpy function np\.unique \(defined in numpy\.lib")


def test_numpy_error_is_raised_as_eager():
    check(lambda x: x * np.sqrt("four"), X)

    def caught(x):
        try:
            return x * np.sqrt("four")
        except TypeError:
            return x - 1

    check(caught, X, graphs=1, fullgraph=True)


def test_non_constant_argument_breaks():
    class Box:
        def sqrt(self):  # numpy calls it for an object argument: user code, not folded
            return 2.0

    _breaks_with(lambda x, b: x * np.sqrt(b), X, Box(), match=r"np\.sqrt called on values that are not constant data")


# ---- machine limits: np.finfo / np.iinfo on constant dtypes, folded --------------------------
@pytest.mark.parametrize("fn", [
    lambda x: x * np.finfo(np.float32).eps + np.iinfo(np.int32).max,
    lambda x: x.clamp(min=float(np.finfo(np.float16).min), max=float(np.finfo("float16").max)),
    lambda x: x + np.finfo(float).tiny * np.iinfo(INT8).bits,
], ids=["eps and max", "float16 range by type and by name", "builtin type and dtype object from outside"])
def test_finfo_and_iinfo_are_one_graph(fn):
    _one_graph_as_torch_compile(fn, X)


def test_limits_keep_eager_types():
    def f(x):
        fi, ii = np.finfo(np.float32), np.iinfo(np.int8)
        return x + 1, fi.eps, fi.tiny, fi.max, fi.bits, fi.dtype, ii.min, ii.max, fi, ii

    res = check(f, X, graphs=1, fullgraph=True)
    assert type(res.compiled.out[1]) is np.float32 and res.compiled.out[-2] is np.finfo(np.float32)


def test_limits_of_a_dtype_read_from_outside_and_in_a_helper():
    def eps_of(dtype):
        return np.finfo(dtype).eps

    check(lambda x, dt: x * eps_of(dt), X, np.float64, graphs=1, fullgraph=True)


def test_limits_errors_are_raised_as_eager():
    check(lambda x: x * np.finfo(np.int32).eps, X)
    check(lambda x: x * np.iinfo(np.float32).max, X)

    def caught(x):
        try:
            return x * np.iinfo("float32").max
        except ValueError:
            return x - 1

    check(caught, X, graphs=1, fullgraph=True)


def test_limits_of_a_tensor_break_naming_the_call():
    def f(x):
        try:
            return x * np.finfo(x).eps  # numpy raises ValueError: a tensor is no dtype
        except ValueError:
            return x - 1

    _breaks_with(f, X, match=r"numpy function np\.finfo called on a tensor")
