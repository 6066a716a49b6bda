"""torch callables with trace-time semantics: finfo/iinfo, devices, dtype attributes, the
"am I being compiled" queries, typing.cast, profiler ranges, foreach ops, autocast queries."""
import typing

import pytest
import torch

import bytegraph
from helpers import check, compile_counted


def _helper(x):
    return x * torch.finfo(x.dtype).eps + torch.iinfo(torch.int8).min


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.bfloat16])
def test_finfo_attributes(dtype):
    def fn(x):
        fi = torch.finfo(x.dtype)
        return x.clamp(min=fi.tiny, max=fi.max) * fi.eps + fi.bits + (fi.dtype == "float32") + fi.resolution

    check(fn, torch.randn(4).to(dtype), graphs=1, fullgraph=True)


def test_iinfo_attributes():
    def fn(x):
        ii = torch.iinfo(torch.int32)
        jj = torch.iinfo(x.dtype)
        return x.clamp(min=jj.min, max=jj.max) + ii.bits + (ii.max > 2 ** 30)

    check(fn, torch.arange(6, dtype=torch.int16), graphs=1, fullgraph=True)


def test_finfo_guarded_by_dtype():
    fn, counter = compile_counted(lambda x: x * torch.finfo(x.dtype).eps)
    for dtype in (torch.float32, torch.float64):
        x = torch.ones(2, dtype=dtype)
        torch.testing.assert_close(fn(x), x * torch.finfo(dtype).eps)
    assert counter.frame_count == 2


def test_finfo_inside_inlined_helper_and_across_break():
    def fn(x):
        y = _helper(x)
        bytegraph.graph_break()
        return _helper(y) + torch.finfo(torch.float16).max

    check(fn, torch.randn(3), graphs=2)


def test_finfo_bad_argument_raises_like_eager():
    check(lambda x: x + torch.finfo(torch.int32).eps, torch.randn(2))


def test_device_construction_attributes_equality():
    def fn(x):
        d = torch.device("cpu")
        e = torch.device("cpu", 0)
        f = torch.device(type="cpu")
        y = x.to(d) + (x.device == d) + (d == f) + (e.index or 0) + (d.index is None) + len(d.type)
        return y, str(e), d

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_device_in_factory_and_across_break():
    def fn(x):
        d = torch.device(x.device.type)
        x = x + 1
        bytegraph.graph_break()
        return torch.zeros(2, device=d) + x.sum(), d

    check(fn, torch.randn(3), graphs=2)


def test_dtype_attributes():
    def fn(x, i):
        d = x.dtype
        return (x * d.itemsize + d.is_floating_point + d.is_complex + d.is_signed,
                i + i.dtype.itemsize + i.dtype.is_floating_point + torch.complex64.is_complex + d.to_complex().itemsize)

    check(fn, torch.randn(3), torch.arange(3), graphs=1, fullgraph=True)


def test_is_compiling_true_inside_capture():
    def fn(x):
        if torch.compiler.is_compiling():
            return x + 1
        return x - 1

    compiled, counter = compile_counted(fn, fullgraph=True)
    torch.testing.assert_close(compiled(torch.zeros(2)), torch.ones(2))
    assert counter.frame_count == 1
    assert fn(torch.zeros(2)).eq(-1).all()  # eagerly: False


def test_jit_queries_and_tracing_state_folded():
    def fn(x):
        y = x + torch.jit.is_scripting() + torch.jit.is_tracing() + torch._C._is_tracing()
        return y + (torch._C._get_tracing_state() is None) + torch.compiler.is_dynamo_compiling()

    compiled, counter = compile_counted(fn, fullgraph=True)
    torch.testing.assert_close(compiled(torch.zeros(2)), torch.full((2,), 2.0))
    assert counter.frame_count == 1


def test_typing_cast_returns_its_value():
    def fn(x, xs):
        y = typing.cast(torch.Tensor, x)
        zs = typing.cast("list[torch.Tensor]", xs)
        zs.append(y)
        return y is x, len(zs), y + 1

    check(fn, torch.randn(2), [torch.randn(2)], graphs=1, fullgraph=True)


@pytest.mark.parametrize("record_function", [torch.autograd.profiler.record_function,
                                             torch.profiler.record_function])
def test_record_function_is_a_no_op(record_function):
    def fn(x):
        with record_function("outer"):
            y = x.sin()
            with record_function("inner") as r:
                y = y * 2
        return y + 1, r is not None

    result = check(fn, torch.randn(3, requires_grad=True), graphs=1, fullgraph=True)
    assert [str(op) for op in result.counter.ops()] == ["sin", "<built-in function mul>", "<built-in function add>"]


def _profiled_helper(x):
    with torch.profiler.record_function("helper"):
        return x.cos()


def test_record_function_across_break_and_in_helper():
    def fn(x):
        with torch.autograd.profiler.record_function("block"):
            y = _profiled_helper(x)
            bytegraph.graph_break()
            y = _profiled_helper(y) + 1
        return y

    check(fn, torch.randn(3, requires_grad=True), graphs=2)


def test_foreach_out_of_place():
    def fn(a, b, c):
        xs = torch._foreach_add([a, b], [c, c])
        ys = torch._foreach_mul(xs, 2.0)
        zs = torch._foreach_sqrt(torch._foreach_abs(ys))
        return zs, torch._foreach_norm([a, b])

    check(fn, torch.randn(3, requires_grad=True), torch.randn(3), torch.randn(3), graphs=1, fullgraph=True)


def test_foreach_in_place_mutates_inputs():
    def fn(a, b, c):
        alias = a
        torch._foreach_mul_([a, b], 0.5)
        torch._foreach_addcmul_([a, b], [c, c], [c, c], value=2.0)
        torch._foreach_add_([a, b], [c, c], alpha=0.1)
        torch._foreach_lerp_([a, b], [c, c], 0.3)
        return alias + b

    check(fn, torch.randn(3), torch.randn(3), torch.randn(3), graphs=1, fullgraph=True)


def test_foreach_in_place_across_break():
    def fn(xs, c):
        torch._foreach_add_(xs, 1.0)
        bytegraph.graph_break()
        torch._foreach_mul_(xs, [c, c])
        return xs[0] + xs[1]

    check(fn, [torch.randn(2), torch.randn(2)], torch.randn(2), graphs=2)


def test_inplace_ops_with_zero_dim_tensor_scalars():
    def fn(a, b, t0, t1):
        a.addcmul_(b, b, value=t0)
        a.addcdiv_(b, b.abs() + 1, value=t1)
        a.add_(b, alpha=t0)
        a.mul_(t1)
        a.lerp_(b, t0)
        a.sub_(b, alpha=t1)
        return a, torch.addcmul(b, a, a, value=t1), torch.add(a, b, alpha=t0), torch.addcdiv(b, a, t1 + 3, value=t0)

    check(fn, torch.randn(3), torch.randn(3, requires_grad=True), torch.tensor(0.5), torch.tensor(-2.0),
          graphs=1, fullgraph=True)


def test_zero_dim_scalar_that_requires_grad_raises_like_eager():
    check(lambda a, b, t: a.addcmul(b, b, value=t), torch.randn(3), torch.randn(3),
          torch.tensor(2.0, requires_grad=True))


def test_foreach_with_zero_dim_tensor_alpha():
    def fn(a, b, t0):
        torch._foreach_add_([a], [b], alpha=t0)
        return a

    check(fn, torch.randn(3), torch.randn(3), torch.tensor(0.5), graphs=1, fullgraph=True)


def test_autocast_queries_folded_and_guarded():
    def fn(x):
        return x + torch.is_autocast_enabled("cpu") + (torch.get_autocast_dtype("cpu") == torch.bfloat16) \
            + torch.is_autocast_cpu_enabled() + (torch.get_autocast_cpu_dtype() == torch.bfloat16)

    compiled, counter = compile_counted(fn, fullgraph=True)
    x = torch.zeros(2)
    torch.testing.assert_close(compiled(x), fn(x))
    with torch.autocast("cpu", dtype=torch.bfloat16):
        torch.testing.assert_close(compiled(x), fn(x))
        assert fn(x).eq(4).all()
    torch.testing.assert_close(compiled(x), fn(x))
    assert counter.frame_count == 2


def test_grad_of_inputs_is_read_and_guarded():
    def fn(p, q):
        g = p.grad
        return (p - 0.1 * g if g is not None else p), q.grad is None

    p = torch.randn(3, requires_grad=True)
    p.grad = torch.randn(3)
    check(fn, p, torch.randn(2, requires_grad=True), graphs=1, fullgraph=True, grads=False)
    compiled, counter = compile_counted(fn)
    q = torch.randn(2, requires_grad=True)
    compiled(p, q)
    q.grad = torch.ones(2)
    assert compiled(p, q)[1] is False  # the `q.grad is None` guard fails: recompiled
    assert counter.frame_count == 2


def test_grad_in_place_update_is_mutation():
    def fn(p):
        p.grad.mul_(0.5)
        return p.grad + 1

    p = torch.randn(3, requires_grad=True)
    p.grad = torch.randn(3)
    compiled, counter = compile_counted(fn, fullgraph=True)
    expected_grad = p.grad * 0.5
    out = compiled(p)
    torch.testing.assert_close(p.grad, expected_grad)
    torch.testing.assert_close(out, expected_grad + 1)
    assert counter.frame_count == 1


def test_autocast_region_inside_is_captured():
    def fn(x):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = torch.mm(x, x)
        return y

    check(fn, torch.randn(3, 3), graphs=1, fullgraph=True)  # was a clean break; tests/test_autocast.py has the rest
