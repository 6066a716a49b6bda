"""Fake tensors made without dispatching (graph/fake_alloc.py): `new_fake` makes the fake
tensor `FakeTensor(...)` makes, and `empty_symbolic_fake` the one a meta `empty_strided`
over the same SymInts makes (Note [Symbolic allocation]): same dispatch keys, metadata,
storage size and behaviour under ops, with nothing shared between two of them."""
import pytest
import sympy
import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

from bytegraph.graph import fake_alloc
from bytegraph.graph.fake_mode import make_fake_mode
from bytegraph.graph.shapes import Shapes
from bytegraph.guards.sources import LocalSource

_CPU = torch.device("cpu")


def _state(t):
    return (type(t), t.shape, t.stride(), t.storage_offset(), t.dtype, t.device, t.requires_grad, t.is_leaf,
            t.grad_fn is None, t._is_view(), t.is_contiguous(), t.dim())


def test_new_fake_is_torch_s_fake_tensor():
    mode = FakeTensorMode()
    meta = torch.empty_strided((2, 3), (1, 2), device="meta", requires_grad=True)
    want = FakeTensor(mode, meta, _CPU)
    fake_alloc.new_fake(mode, torch.empty(1, device="meta"), _CPU)  # the template
    got = fake_alloc.new_fake(mode, meta, _CPU)
    assert type(got) is FakeTensor and got.__dict__ == want.__dict__
    assert _state(got) == _state(want)
    assert torch._C._dispatch_keys(got) == torch._C._dispatch_keys(want)


def _symbolic_input():
    mode = make_fake_mode()
    shapes = Shapes(mode)
    x = shapes.fake_tensor(mode, torch.randn(3, 5, 4), LocalSource("x"), [True, True, False])
    return mode, shapes, x


_LAYOUTS = {
    "contiguous": lambda b, t: ((b, t, 8), (t * 8, 8, 1)),
    "transposed": lambda b, t: ((t, b), (1, t)),
    "flattened": lambda b, t: ((b * t, 3), (3, 1)),
    "size one": lambda b, t: ((b, 1, t), (t, t, 1)),
    "static sizes": lambda b, t: ((2, 3), (3, 1)),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int64, torch.bool])
@pytest.mark.parametrize("layout", list(_LAYOUTS))
def test_symbolic_fake_is_the_one_empty_strided_makes(layout, dtype):
    mode, shapes, x = _symbolic_input()
    b, t = x.shape[0], x.shape[1]
    shape, stride = _LAYOUTS[layout](b, t)
    want = fake_alloc.empty_fake(mode, shape, stride, dtype, _CPU)
    nbytes = want.untyped_storage().nbytes()
    version = shapes.version()
    got = fake_alloc.empty_symbolic_fake(mode, shape, stride, nbytes, dtype, _CPU)
    assert shapes.version() == version, "allocating taught the ShapeEnv a fact"
    assert _state(got) == _state(want)
    assert torch._C._dispatch_keys(got) == torch._C._dispatch_keys(want)
    assert got.__dict__.keys() == want.__dict__.keys() and got.fake_mode is mode and got.fake_device == _CPU
    assert got.untyped_storage().nbytes() == nbytes
    assert sympy.simplify(sympy.sympify(got.numel()) - sympy.sympify(want.numel())) == 0
    assert not torch._C._is_alias_of(got, want)
    again = fake_alloc.empty_symbolic_fake(mode, shape, stride, nbytes, dtype, _CPU)
    assert not torch._C._is_alias_of(got, again)
    with mode:
        for made in (got, want):
            assert _state(made + 1) == _state(want + 1)
            assert _state(made.transpose(0, -1)) == _state(want.transpose(0, -1))
            assert _state(made.sum(0)) == _state(want.sum(0))
        before = again._version
        got.copy_(want)
        assert got._version == before + 1 and again._version == before  # no shared version counter


def test_symbolic_fake_takes_part_in_autograd():
    mode, shapes, x = _symbolic_input()
    b, t = x.shape[0], x.shape[1]
    with mode:
        w = mode.from_tensor(torch.randn(4, 4, requires_grad=True))
    got = fake_alloc.empty_symbolic_fake(mode, (b, t, 4), (t * 4, 4, 1), b * t * 16, torch.float32, _CPU)
    with mode:
        out = got @ w
        assert out.requires_grad and out.grad_fn is not None and not got.requires_grad
        assert out.shape == (b, t, 4)
