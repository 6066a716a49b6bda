"""Tensor metadata read inside compiled functions (eager vs compiled)."""
import pytest
import torch

from helpers import check

META = {
    "shape": lambda x: (x.shape, x * x.shape[0]),
    "shape_unpack": lambda x: (lambda a, b: x.view(b, a))(*x.shape),
    "size": lambda x: (x.size(), x + x.size()[1]),
    "size_dim": lambda x: (x.size(1), x.size(-1), x.size(dim=0), x.reshape(x.size(0), -1)),
    "dtype": lambda x: (x.dtype, x.to(x.dtype) * 2, torch.zeros(2, dtype=x.dtype)),
    "device": lambda x: (x.device, torch.ones(2, device=x.device) + 1, str(x.device)),
    "ndim_dim": lambda x: (x.ndim, x.dim(), x.sum(dim=x.ndim - 1)),
    "numel": lambda x: (x.numel(), x.sum() / x.numel(), x.nelement()),
    "requires_grad": lambda x: (x.requires_grad, x * 2),
    "is_floating_point": lambda x: (x.is_floating_point(), x.is_complex(), torch.is_floating_point(x), x + 1),
    "is_contiguous_stride": lambda x: (x.is_contiguous(), x.t().is_contiguous(), x.stride(), x.t().stride(0), x - 1),
    "element_size_itemsize": lambda x: (x.element_size(), x.dtype.itemsize, x.dtype.is_floating_point, x * 3),
    "shape_arith": lambda x: x.view(x.shape[0] * x.shape[1]) / (x.shape[-1] // 2),
    "shape_compare": lambda x: (x.shape == (2, 6), x.shape[1:] == torch.Size([6]), x.shape != (1,), x + 0.5),
    "shape_index_negative_slice": lambda x: (x.shape[-1], x.shape[:-1], x.shape[::-1], x.mean()),
    "len_and_size_in_factory": lambda x: torch.arange(len(x)) + torch.zeros(x.size(0)),
    "is_leaf_grad_fn_none": lambda x: (x.is_leaf, x.grad_fn is None, x.sin()),
    "torch_numel_tensor_size": lambda x: (torch.numel(x), list(x.size()), tuple(x.shape), x.cos()),
}


@pytest.mark.parametrize("name", list(META))
def test_metadata(name):
    check(META[name], torch.randn(2, 6, requires_grad=True), graphs=1)


@pytest.mark.parametrize(
    "x",
    [torch.arange(6).view(2, 3), torch.ones(2, 3, dtype=torch.float16), torch.zeros(2, 3, dtype=torch.bool)],
    ids=["int64", "float16", "bool"],
)
def test_metadata_other_dtypes(x):
    def f(x):
        out = x.to(torch.float32) * 2
        if x.is_floating_point():
            out = out + 1
        if x.dtype == torch.bool:
            out = out - 3
        return out, x.dtype, x.element_size()

    check(f, x, graphs=1)


def test_metadata_of_intermediate():
    def f(x):
        y = x.unsqueeze(0).expand(3, *x.shape)
        return y.shape, y.stride(), y.is_contiguous(), y.requires_grad, y.dtype, y.sum(0)

    check(f, torch.randn(2, 2, requires_grad=True), graphs=1)


def test_metadata_only_function():
    # only metadata reads, no tensor op: nothing to put in a graph
    def f(x):
        return x.shape[0] * 2, x.dtype, x.ndim, x.numel(), x.requires_grad

    check(f, torch.randn(3, 5), graphs=0)


def test_requires_grad_of_outputs():
    def f(x, y):
        return x * 2, y * 2, (x + y).detach(), x.requires_grad, (x + y).requires_grad

    check(f, torch.randn(2, requires_grad=True), torch.randn(2), graphs=1)


def test_size_used_in_python_float_arith():
    def f(x):
        scale = x.shape[-1] ** -0.5
        half = x.shape[0] / 2
        return x * scale * half, scale, half, int(half), x.shape[0] // 3

    check(f, torch.randn(4, 9), graphs=1)


def test_scalar_tensor_metadata():
    def f(x):
        s = x.sum()
        return s.shape, s.dim(), s.numel(), s * 2, s.unsqueeze(0).shape

    check(f, torch.randn(3), graphs=1)


def test_metadata_the_tensor_guard_does_not_pin_is_guarded_when_read():
    # is_leaf, grad_fn, storage_offset() and is_inference() of an input are not in its tensor
    # guard: reading them pins them, so a later input that differs recompiles
    from helpers import check_sequence

    def f(x):
        return x * 2, x.is_leaf, x.storage_offset(), x.is_inference(), x.is_contiguous()

    base = torch.randn(10, requires_grad=True)
    r = check_sequence(f, [(torch.randn(6),), ((base * 2)[4:],), (torch.randn(6),)])
    assert r.counter.frame_count == 2


def test_is_inference_of_input_is_guarded():
    # (not through check_sequence: deep copies of inference tensors are normal tensors)
    import bytegraph
    from helpers import compile_counted

    def f(x):
        return x * 2, x.is_inference()

    compiled, counter = compile_counted(f)
    with torch.inference_mode():
        inference = torch.randn(3)
    for x in (torch.randn(3), inference, torch.randn(3)):
        assert compiled(x)[1] == f(x)[1] == x.is_inference()
    assert counter.frame_count == 2
    bytegraph.reset()


def test_grad_fn_of_input_read_as_none():
    from helpers import check_sequence

    def f(x):
        if x.grad_fn is None:
            return x + 1
        return x - 1

    base = torch.randn(4, requires_grad=True)
    check_sequence(f, [(torch.randn(4),), (base * 3,), (torch.randn(4),)])
