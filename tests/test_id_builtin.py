"""`id()` in traced code: the id of an object that existed before the call is a constant,
guarded by identity (another object at the same place recompiles); the id of an object the
traced code makes is a graph break with its reason. Differential: eager vs compiled."""
import pytest
import torch

import bytegraph
from tests.helpers import check, compile_counted


def _scale(x):
    return x * 2


def _shift(x):
    return x + 1


class Routed(torch.nn.Module):
    """The `kernels` package pattern: a registry keyed by `id()` of functions and modules."""

    def __init__(self):
        super().__init__()
        self.inner = torch.nn.Linear(3, 3)

    def forward(self, x):
        table = {id(_scale): _shift, id(self.inner): "inner"}
        fn = table.get(id(_scale), _scale)
        tag = table.get(id(self.inner))
        return fn(self.inner(x)), tag


def test_id_of_global_function_and_submodule_is_a_constant():
    torch.manual_seed(0)
    model = Routed()
    check(model, torch.randn(2, 3), graphs=1, fullgraph=True)


_REGISTRY = {}


def _register(obj, value):
    _REGISTRY[id(obj)] = value


def test_id_keys_a_registry_filled_before_the_call():
    _register(_scale, 3.0)

    def fn(x, f):
        return x * _REGISTRY.get(id(f), 1.0)

    check(fn, torch.randn(4), _scale, graphs=1, fullgraph=True)


def test_id_of_an_argument_is_guarded_by_identity():
    weights = {}
    a, b = object(), object()
    weights[id(a)], weights[id(b)] = 2.0, 5.0

    def fn(x, key):
        return x * weights[id(key)]

    compiled, counter = compile_counted(fn, fullgraph=True)
    x = torch.ones(2)
    torch.testing.assert_close(compiled(x, a), fn(x, a))
    torch.testing.assert_close(compiled(x, b), fn(x, b))  # another object: the guard fails
    torch.testing.assert_close(compiled(x, a), fn(x, a))
    assert counter.frame_count == 2


def test_id_of_a_tensor_argument():
    def fn(x, seen):
        return x + 1, id(x) in seen

    x = torch.randn(3)
    compiled = bytegraph.compile(fn, fullgraph=True)
    for seen in ({id(x)}, set()):
        want, got = fn(x, seen), compiled(x, seen)
        torch.testing.assert_close(got[0], want[0])
        assert got[1] is want[1]


def test_id_of_none_and_bools():
    def fn(x):
        return x + (id(None) == id(None)) + (id(True) != id(False))

    check(fn, torch.randn(2), graphs=1, fullgraph=True)


def test_id_of_an_object_made_in_the_trace_is_a_graph_break():
    def fn(x):
        made = [x]
        return x + 1, isinstance(id(made), int)

    check(fn, torch.randn(2))
    explained = bytegraph.explain(fn, torch.randn(2))
    assert [r.reason for r in explained.break_reasons] == [
        "id() of a list value made inside the compiled code"]
    with pytest.raises(bytegraph.Unsupported, match="made inside the compiled code"):
        bytegraph.compile(fn, fullgraph=True)(torch.randn(2))


def test_id_with_wrong_arguments_raises_as_eager():
    def fn(x):
        return id(x, x)

    check(fn, torch.randn(2))
