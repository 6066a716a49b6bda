"""Pure view ops answered by their meta kernels (graph/fake_mode.py, Note [Direct views]):
the answer is the fake tensor torch's own fake dispatch makes (metadata, storage, autograd
view state), torch's dispatch is skipped for it, and compiled programs that view, write
through views and read strides behave as eager."""
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from bytegraph.graph import fake_mode as fm
from helpers import check

aten = torch.ops.aten

_VIEWS = {
    "view": lambda x: x.view(2, 3, 2, 2),
    "view-size-1": lambda x: x[:, :1].view(2, 1, 4),
    "transpose": lambda x: x.transpose(0, 2),
    "permute": lambda x: x.permute(2, 0, 1),
    "t": lambda x: x[0].t(),
    "slice": lambda x: x[:, 1:3],
    "slice-step": lambda x: x[:, ::2, 1:],
    "select": lambda x: x[1],
    "unsqueeze": lambda x: x[None, :, None],
    "squeeze": lambda x: x[:, :1].squeeze(1),
    "squeeze-all": lambda x: x[:, :1].squeeze(),
    "squeeze-dims": lambda x: x[:, :1, :1].squeeze((1, 2)),
    "narrow": lambda x: x.narrow(2, 1, 2),
    "alias": lambda x: aten.alias.default(x),
    "reshape_alias": lambda x: aten._reshape_alias.default(x, [6, 4], [4, 1]),
    "expand": lambda x: x[:, :1].expand(2, 5, 4),
    "as_strided": lambda x: x.as_strided((3, 2), (1, 3), 1),
    "unfold": lambda x: x.unfold(2, 2, 1),
    "diagonal": lambda x: x.diagonal(0, 1, 2),
    "split": lambda x: x.split(2, 1),
    "split_with_sizes": lambda x: x.split([1, 2], 1),
    "unbind": lambda x: x.unbind(1),
}


def _state(t):
    return (type(t), t.shape, t.stride(), t.storage_offset(), t.dtype, t.device, t.requires_grad, t.is_leaf,
            t.grad_fn is None, t._is_view())


def _results(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def _run(make_mode, view, grad: bool, requires_grad: bool):
    mode = make_mode()
    with mode:
        leaf = mode.from_tensor(torch.randn(2, 3, 4, requires_grad=requires_grad))
        with torch.set_grad_enabled(grad):
            x = leaf * 1  # a non-leaf (a view of a leaf that requires grad may not be written)
            return x, _results(view(x))


@pytest.fixture
def torch_dispatch_calls(monkeypatch):
    """The view ops that reached `FakeTensorMode.dispatch` (torch's path)."""
    seen = []
    original = FakeTensorMode.dispatch

    def spy(self, func, types, args=(), kwargs=None):
        if func in fm._DIRECT_VIEWS:
            seen.append(func)
        return original(self, func, types, args, kwargs or {})

    monkeypatch.setattr(FakeTensorMode, "dispatch", spy)
    return seen


@pytest.mark.parametrize("grad,requires_grad", [(False, False), (True, True), (False, True)])
@pytest.mark.parametrize("name", list(_VIEWS))
def test_direct_view_is_torch_s_fake_view(name, grad, requires_grad, torch_dispatch_calls):
    view = _VIEWS[name]
    base, expected = _run(FakeTensorMode, view, grad, requires_grad)
    assert torch_dispatch_calls, "torch's own fake dispatch is the reference here"
    torch_dispatch_calls.clear()
    x, answers = _run(fm.make_fake_mode, view, grad, requires_grad)
    assert torch_dispatch_calls == []
    eager = _results(view(torch.randn(2, 3, 4)))
    assert len(answers) == len(expected) == len(eager)
    for got, want, real in zip(answers, expected, eager):
        assert _state(got) == _state(want)
        assert (got.shape, got.stride(), got.storage_offset()) == (real.shape, real.stride(), real.storage_offset())
        assert got._base is x and got.untyped_storage()._cdata == x.untyped_storage()._cdata
        assert got.fake_mode is x.fake_mode and got.__dict__.keys() == want.__dict__.keys()
    version = x._version
    with torch.no_grad():
        answers[0].add_(1)  # writes through the view count on the base's version counter
    assert x._version == version + 1


def test_view_made_under_no_grad_refuses_an_in_place_op_needing_grad():
    mode = fm.make_fake_mode()
    with mode:
        x = mode.from_tensor(torch.randn(3, 4, requires_grad=True)) * 1
        with torch.no_grad():
            v = x.transpose(0, 1)
        with pytest.raises(RuntimeError, match="no_grad mode"):
            v.mul_(2)


@pytest.mark.parametrize("case", ["symbolic sizes", "symbolic size argument", "constant tensor"])
def test_other_calls_take_torch_s_path(case, torch_dispatch_calls):
    from torch.fx.experimental.symbolic_shapes import ShapeEnv

    mode = fm.make_fake_mode()
    mode.shape_env, mode.static_shapes = ShapeEnv(), False  # as graph/shapes.py makes it symbolic
    constant, symbolic, static = torch.arange(4.0), torch.randn(4, 6), torch.randn(4, 6)
    with mode:
        if case == "symbolic sizes":
            x = mode.from_tensor(symbolic)
            assert x._has_symbolic_sizes_strides
            x.view(-1)
        elif case == "symbolic size argument":
            n = mode.from_tensor(symbolic).shape[0]
            x = mode.from_tensor(static, static_shapes=True)
            assert type(n) is torch.SymInt and not x._has_symbolic_sizes_strides
            x.view(n, 6)
        else:
            x = mode.fake_tensor_converter.from_real_tensor(mode, constant, make_constant=True)
            assert x.constant is not None
            x.view(2, 2)
    assert torch_dispatch_calls


def test_device_query_is_answered_as_torch_answers_it():
    mode = fm.make_fake_mode()
    with mode:
        x = mode.from_tensor(torch.randn(2))
        assert torch.ops.prim.device.default(x) == torch.device("cpu")
        assert x[0].device == torch.device("cpu")


# ---- compiled programs ---------------------------------------------------------------

def test_writes_through_views_reach_the_base():
    def f(x):
        y = x.clone()
        y[:, 1:3].mul_(2)
        y.transpose(0, 1)[0].add_(10)
        a, b = y.split(2, 1)
        b.sub_(1)
        return y, a, b

    check(f, torch.randn(3, 4), graphs=1)


def test_strides_and_offsets_of_views_are_eager_s():
    def f(x):
        v = x[:, :1].view(3, 1, 1, 2)
        w = x.transpose(0, 1)[1:, None]
        return v * 2, v.stride(), w.stride(), w.storage_offset(), w.is_contiguous()

    check(f, torch.randn(3, 1, 2), graphs=1)


def test_views_of_parameters_under_grad_mode_carry_gradients():
    lin = torch.nn.Linear(4, 6)

    def f(x):
        w = lin.weight.t()
        halves = lin.weight.unbind(1)
        return x @ w + halves[0].unsqueeze(0), w.requires_grad, w.is_leaf

    check(f, torch.randn(2, 4, requires_grad=True), graphs=1)


def test_a_view_the_shape_does_not_allow_raises_eager_s_error():
    def f(x):
        return x.transpose(0, 1).view(-1)

    result = check(f, torch.randn(3, 4))
    assert isinstance(result.eager.exc, RuntimeError) and "view size is not compatible" in str(result.eager.exc)
