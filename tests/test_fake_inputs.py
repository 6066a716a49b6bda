"""Fakes of graph inputs (graph/fake_inputs.py): the cheap path for plain tensors gives what
`FakeTensorMode.from_tensor` gives, under static and under symbolic sizes, and tensors that
share storage still go through it."""
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import bytegraph
from bytegraph.graph.fake_inputs import _is_plain, fake_input, symbolic_fake_input
from helpers import assert_same

PLAIN = {
    "float": lambda: torch.randn(3, 4),
    "parameter": lambda: torch.nn.Parameter(torch.randn(3, 4)),
    "frozen_parameter": lambda: torch.nn.Parameter(torch.randn(3, 4), requires_grad=False),
    "leaf_requiring_grad": lambda: torch.randn(2, 5, requires_grad=True),
    "int": lambda: torch.arange(6),
    "bool": lambda: torch.ones(3, dtype=torch.bool),
    "zero_dim": lambda: torch.tensor(1.5),
    "empty": lambda: torch.empty(0, 3),
    "channels_last": lambda: torch.randn(2, 3, 4, 5).to(memory_format=torch.channels_last),
}
NOT_PLAIN = {
    "view": lambda: torch.randn(4, 3).t(),
    "non_leaf": lambda: torch.randn(3, requires_grad=True) * 2,
    "offset": lambda: torch.empty(0).set_(torch.randn(6).untyped_storage(), 2, (2,), (1,)),
    "conj": lambda: torch.randn(3, dtype=torch.complex64).conj(),
    "subclass": lambda: torch.randn(3).as_subclass(type("Sub", (torch.Tensor,), {})),
}


def _state(f):
    return (type(f), f.shape, f.stride(), f.storage_offset(), f.dtype, f.device, f.requires_grad, f.is_leaf,
            f.grad_fn is None, isinstance(f, torch.nn.Parameter), f.is_contiguous(),
            f.is_contiguous(memory_format=torch.channels_last), f._is_view(), torch._C._dispatch_keys(f))


@pytest.mark.parametrize("make", list(PLAIN.values()), ids=list(PLAIN))
def test_plain_tensor_fake_matches_from_tensor(make):
    real = make()
    assert _is_plain(real)
    assert _state(fake_input(FakeTensorMode(), real)) == _state(FakeTensorMode().from_tensor(real, static_shapes=True))


@pytest.mark.parametrize("make", list(NOT_PLAIN.values()), ids=list(NOT_PLAIN))
def test_other_tensors_go_through_from_tensor(make):
    assert not _is_plain(make())


def _symbolic_state(f):
    def expr(s):
        return str(s.node.expr) if isinstance(s, torch.SymInt) else s

    return (type(f), [expr(s) for s in f.shape], [expr(s) for s in f.stride()], expr(f.storage_offset()), f.dtype,
            f.device, f.requires_grad, f.is_leaf, f.grad_fn is None, isinstance(f, torch.nn.Parameter), f._is_view(),
            torch._C._dispatch_keys(f), sorted(f.__dict__), f.constant)


def _symbolic_fake(real, fast: bool):
    from torch.fx.experimental.symbolic_shapes import DimDynamic, StatelessSymbolicContext

    from bytegraph.graph.fake_mode import make_fake_mode
    from bytegraph.graph.shapes import Shapes, _TorchSource

    mode = make_fake_mode()
    env = Shapes(mode).env
    context = StatelessSymbolicContext(dynamic_sizes=[DimDynamic.DUCK] * real.dim())
    source = _TorchSource("x")
    fake = symbolic_fake_input(mode, real, source, context) if fast else \
        mode.from_tensor(real, source=source, symbolic_context=context)
    facts = (dict(env.backed_var_to_val), dict(env.var_to_range),
             {s: [src.name for src in sources] for s, sources in env.var_to_sources.items()})
    return fake, env, facts


@pytest.mark.parametrize("name", ["float", "parameter", "frozen_parameter", "leaf_requiring_grad", "int", "bool",
                                  "channels_last"])
def test_plain_tensor_symbolic_fake_matches_from_tensor(name):
    real = PLAIN[name]()
    got, env, got_facts = _symbolic_fake(real, fast=True)
    want, _, want_facts = _symbolic_fake(real, fast=False)
    assert any(isinstance(s, torch.SymInt) for s in got.shape)
    assert _symbolic_state(got) == _symbolic_state(want)
    assert got_facts == want_facts
    nbytes, expected = got.untyped_storage().nbytes(), want.untyped_storage().nbytes()
    assert env.simplify(nbytes.node.expr - expected.node.expr) == 0 and nbytes.node.hint == expected.node.hint


def test_tensor_sharing_its_storage_goes_through_from_tensor():
    base = torch.randn(4)
    alias = base.detach()  # not a view, but the same storage
    assert not _is_plain(base) and not _is_plain(alias)
    del alias
    assert _is_plain(base)


def test_input_and_a_view_of_it_stay_one_storage():
    def f(base, view, w):
        view.mul_(w)  # through the view, `base` now requires grad
        return base.requires_grad, base * 2

    def args():
        base = torch.ones(4)
        return base, base[1:], torch.full((3,), 2.0, requires_grad=True)

    assert_same(f(*args()), bytegraph.compile(f)(*args()), "base after an in-place op on its view")
