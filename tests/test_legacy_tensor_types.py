"""Legacy tensor types (`torch.FloatTensor`, `torch.HalfTensor`, `torch.cuda.LongTensor`, ...:
`torch._tensor_classes`) in traced code (`vars/legacy_tensor_types.py`): `x.type(T)` is one
graph (the node spells the type by its name: FX code cannot spell the class, which made
invalid graph code), `isinstance(x, T)` answers by the tensor's dtype and backend as the
metaclass does, a call `T(data)` / `T(*sizes)` is a graph op, the class attributes fold;
a legacy type passed to any other op breaks cleanly. Differential: outputs, grads, errors;
torch.compile with fullgraph=True is the reference for `x.type(T)`."""
import re

import pytest
import torch

import bytegraph
from helpers import check

CPU_TYPES = sorted((t for t in torch._tensor_classes if t.__module__ == "torch"), key=lambda t: t.__name__)


def _x(*shape):
    return torch.randn(*shape, requires_grad=True)


def type_round_trip(a, b):
    m = a.type(torch.HalfTensor)
    return b.type(m.type())


def test_type_with_a_legacy_type_is_one_graph_as_torch_compile():
    torch._dynamo.reset()
    torch.compile(type_round_trip, backend="eager", fullgraph=True)(torch.randn(3), torch.randn(3))
    check(type_round_trip, _x(3), _x(3), graphs=1, fullgraph=True)


@pytest.mark.parametrize("legacy", CPU_TYPES, ids=lambda t: t.__name__)
def test_type_to_each_cpu_legacy_type(legacy):
    check(lambda x: (x * 4).type(legacy), torch.randn(2, 3), graphs=1, fullgraph=True)


def test_type_by_keyword_and_by_name():
    def fn(x):
        return x.type(dtype=torch.DoubleTensor), x.type("torch.IntTensor"), x.type(torch.float16)

    check(fn, _x(3), graphs=1, fullgraph=True)


def test_isinstance_answers_by_dtype_and_backend():
    def fn(x):
        h = x.half()
        return (x * 2, isinstance(x, torch.FloatTensor), isinstance(x, torch.DoubleTensor),
                isinstance(h, torch.HalfTensor), isinstance(h, (torch.FloatTensor, torch.HalfTensor)),
                isinstance(x, torch.cuda.FloatTensor), isinstance(x, torch.sparse.FloatTensor),
                isinstance(x, (torch.Tensor, torch.LongTensor)), isinstance(1.5, torch.FloatTensor),
                isinstance(x.long(), torch.LongTensor | torch.IntTensor))

    res = check(fn, _x(3), graphs=1, fullgraph=True)
    assert res.compiled.out[1:] == (True, False, True, True, False, False, True, False, True)


def test_calls_are_graph_ops():
    def fn(x):
        a = torch.FloatTensor([1.0, 2.0, 3.0])
        b = torch.LongTensor([[1, 2, 3]])
        c = torch.BoolTensor([True, False, True])
        d = torch.HalfTensor(2, 3)  # uninitialized: only its metadata is compared
        return x + a * b + c, d.shape, d.dtype

    check(fn, _x(3), graphs=1, fullgraph=True)


def test_class_attributes_fold():
    def fn(x):
        return (x.to(torch.HalfTensor.dtype), torch.cuda.FloatTensor.is_cuda, torch.sparse.FloatTensor.is_sparse,
                torch.LongTensor.dtype)

    check(fn, _x(3), graphs=1, fullgraph=True)


def test_a_type_this_build_lacks_raises_as_eager():
    """The fake run raises eager's TypeError (an op's error: the frame runs eagerly, docs/known-gaps.md)."""
    if torch.cuda.is_available():
        pytest.skip("needs a build without CUDA")
    check(lambda x: x + torch.cuda.FloatTensor(3), _x(3))


def test_legacy_type_passed_to_another_op_breaks_cleanly():
    fn = lambda x: x.to(torch.HalfTensor)  # noqa: E731
    check(fn, _x(3))  # eager's TypeError, raised by the call run eagerly at the break
    with pytest.raises(bytegraph.Unsupported, match=r"FX code cannot spell the class torch\.HalfTensor"):
        bytegraph.compile(fn, fullgraph=True)(_x(3))


def test_any_class_passed_to_an_op_breaks_cleanly():
    class Marker:
        pass

    def fn(x):
        try:
            return x.to(Marker)
        except TypeError:
            return x - 1

    check(fn, _x(3))
    reasons = [b.reason for b in bytegraph.explain(fn)(_x(3)).break_reasons]
    assert any(re.search(r"FX code cannot spell the class .*Marker", r) for r in reasons), reasons


def test_call_on_an_argument_tensor_aliases_it_as_eager():
    check(lambda x: torch.FloatTensor(x).mul_(2), torch.randn(3), graphs=1, fullgraph=True)


def test_call_on_a_list_of_tensors_breaks_with_the_reason():
    fn = lambda x: torch.FloatTensor([x[0], x[1]]) + 1  # noqa: E731
    check(fn, torch.randn(3))
    reasons = [b.reason for b in bytegraph.explain(fn)(torch.randn(3)).break_reasons]
    assert any("torch.FloatTensor() called on a sequence holding tensors" in r for r in reasons), reasons
