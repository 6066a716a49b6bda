"""The object `bytegraph.compile(module)` returns behaves like the module: attributes,
parameters, state dicts with the original keys, train/eval, to(), hooks, pickling."""
from __future__ import annotations

import copy
import io
import pickle

import pytest
import torch
from helpers import CompileCounter, assert_same
from torch import nn

import bytegraph


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Dropout(0.5), nn.Linear(8, 2))
        self.register_buffer("shift", torch.zeros(2))
        self.gain = 1.0

    def forward(self, x):
        return self.body(x) * self.gain + self.shift


def _pair():
    torch.manual_seed(0)
    m = Net()
    counter = CompileCounter()
    return m, bytegraph.compile(m, backend=counter), counter


def test_isinstance_and_repr():
    m, c, _ = _pair()
    assert isinstance(c, Net) and isinstance(c, nn.Module)
    assert "Net" in repr(c)
    assert c._orig_mod is m


def test_call_compiles_once_and_matches_eager():
    m, c, counter = _pair()
    m.eval()
    x = torch.randn(3, 4)
    assert_same(m(x), c(x), "first call")
    assert_same(m(x), c(x), "second call")
    assert counter.frame_count == 1


def test_attribute_reads_and_writes_pass_through():
    m, c, counter = _pair()
    m.eval()
    assert c.gain == 1.0 and c.body is m.body
    x = torch.randn(3, 4)
    assert_same(m(x), c(x), "before the write")
    c.gain = 3.0
    assert m.gain == 3.0
    assert_same(m(x), c(x), "after the write through the wrapper")
    c.extra = "new"
    assert m.extra == "new"
    del c.extra
    assert not hasattr(m, "extra")
    c.body[3] = nn.Linear(8, 2)
    assert_same(m(x), c(x), "after replacing a submodule through the wrapper")
    # gain changed: a recompile; the new Linear has the same type and parameter shapes, and
    # parameters are graph inputs, so the entry is reused
    assert counter.frame_count == 2


def test_parameters_modules_and_state_dict_keys_are_the_originals():
    m, c, _ = _pair()
    assert [id(p) for p in c.parameters()] == [id(p) for p in m.parameters()]
    assert [n for n, _ in c.named_modules()] == [n for n, _ in m.named_modules()]
    assert list(c.state_dict()) == list(m.state_dict())
    assert not any(k.startswith("_orig_mod") for k in c.state_dict())


def test_load_state_dict_through_the_wrapper_is_used_without_recompiling():
    m, c, counter = _pair()
    m.eval()
    x = torch.randn(3, 4)
    c(x)
    torch.manual_seed(1)
    other = Net().eval()
    c.load_state_dict(other.state_dict())
    assert_same(other(x), c(x), "after load_state_dict")
    assert counter.frame_count == 1


def test_train_eval_return_the_wrapper_and_switch_the_module():
    m, c, counter = _pair()
    assert c.eval() is c and not m.training and not m.body[2].training
    x = torch.randn(3, 4)
    assert_same(m(x), c(x), "eval")
    assert c.train() is c and m.training
    torch.manual_seed(3)
    expected = m(x)
    torch.manual_seed(3)
    assert_same(expected, c(x), "train (dropout with the same seed)")
    assert counter.frame_count == 2


def test_to_returns_the_wrapper():
    m, c, _ = _pair()
    m.eval()
    assert c.to(torch.float64) is c
    assert m.body[0].weight.dtype == torch.float64
    x = torch.randn(3, 4, dtype=torch.float64)
    assert_same(m(x), c(x), "float64")


def test_hook_registered_on_the_wrapper_fires():
    m, c, _ = _pair()
    m.eval()
    x = torch.randn(3, 4)
    handle = c.register_forward_hook(lambda mod, inp, out: out + 100)
    assert_same(m(x), c(x), "with the hook")
    assert (c(x) > 50).all()
    handle.remove()
    assert_same(m(x), c(x), "hook removed")


def test_original_module_still_pickles_and_runs_eagerly():
    m, c, _ = _pair()
    m.eval()
    x = torch.randn(3, 4)
    c(x)
    buf = io.BytesIO()
    torch.save(m, buf)
    buf.seek(0)
    restored = torch.load(buf, weights_only=False)
    assert_same(m(x), restored(x), "restored module")
    assert type(pickle.loads(pickle.dumps(m))) is Net


def test_wrapper_pickles_and_deepcopies_as_a_compiled_copy():
    m, c, _ = _pair()
    m.eval()
    x = torch.randn(3, 4)
    expected = c(x)
    for clone in (pickle.loads(pickle.dumps(c)), copy.deepcopy(c)):
        assert isinstance(clone, Net)
        assert clone._orig_mod is not m
        assert_same(expected, clone(x), "copy")
        assert clone._bg_compiled.entries  # it was compiled, not run eagerly


def test_container_protocol():
    seq = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    c = bytegraph.compile(seq)
    assert len(c) == 2 and c[1] is seq[1] and list(c) == list(seq)


def test_compiling_a_compiled_module_wraps_the_original():
    m, c, _ = _pair()
    again = bytegraph.compile(c)
    assert again._orig_mod is m


def test_fullgraph_error_names_the_module_code():
    class Bad(nn.Module):
        def forward(self, x):
            return x.item()

    with pytest.raises(bytegraph.Unsupported, match="item"):
        bytegraph.compile(Bad(), fullgraph=True)(torch.ones(()))
