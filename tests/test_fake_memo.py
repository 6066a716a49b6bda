"""The fake-result memo (graph/fake_memo.py): what it answers, and that its answers have
the metadata and autograd state of the op's real fake result."""
import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

from bytegraph.graph import fake_memo
from helpers import check


@pytest.fixture
def mode(monkeypatch):
    monkeypatch.setattr(fake_memo, "_memo", {})
    fake_mode = FakeTensorMode()
    with fake_mode:
        yield fake_mode


def _call(mode, fn, *args, **kwargs):
    """Run `fn` as OutputGraph does: from the memo when it answers; returns (result, hit)."""
    key = fake_memo.memo_key("call_function", fn, args, kwargs)
    hit = fake_memo.lookup(mode, key, args, kwargs) if key is not None else None
    if hit is not None:
        return hit, True
    result = fn(*args, **kwargs)
    if key is not None:
        fake_memo.remember(key, args, kwargs, result)
    return result, False


def _state(t):
    return (type(t), t.shape, t.stride(), t.storage_offset(), t.dtype, t.device, t.requires_grad, t.is_leaf,
            t.grad_fn is None)


def test_result_requiring_grad_is_a_non_leaf(mode):
    x = mode.from_tensor(torch.randn(2, 5, 4))
    weight = mode.from_tensor(torch.nn.Parameter(torch.randn(3, 4)))
    bias = mode.from_tensor(torch.nn.Parameter(torch.randn(3)))
    real, hit = _call(mode, torch.nn.functional.linear, x, weight, bias)
    assert not hit and real._is_view()  # a view of a temporary the op made
    memo, hit = _call(mode, torch.nn.functional.linear, x, weight, bias)
    assert hit and _state(memo) == _state(real)
    memo.mul_(2)  # a non-leaf: in-place ops are allowed, as on the real result
    assert memo.requires_grad and not memo.is_leaf


def test_grad_mode_is_part_of_the_key(mode):
    x, w = mode.from_tensor(torch.randn(3, 4)), mode.from_tensor(torch.randn(4, 4, requires_grad=True))
    _call(mode, torch.matmul, x, w)
    with torch.no_grad():
        result, hit = _call(mode, torch.matmul, x, w)
    assert not hit and not result.requires_grad
    with torch.no_grad():
        result, hit = _call(mode, torch.matmul, x, w)
    assert hit and _state(result)[-3:] == (False, True, True)


@pytest.mark.parametrize("op", [lambda x: torch.transpose(x, 0, 1), torch.Tensor.detach,
                                lambda x: torch.add(x, 1, out=x), lambda x: x.add_(1)],
                         ids=["view", "detach", "out", "in-place"])
def test_results_sharing_storage_with_an_argument_are_not_memoized(mode, op):
    x = mode.from_tensor(torch.randn(3, 4))
    _call(mode, op, x)
    assert not _call(mode, op, x)[1]


def test_view_of_a_temporary_made_under_no_grad_is_answered_as_such_a_view(mode):
    x = mode.from_tensor(torch.randn(2, 5, 4))
    weight = mode.from_tensor(torch.nn.Parameter(torch.randn(3, 4)))
    bias = mode.from_tensor(torch.nn.Parameter(torch.randn(3)))
    with torch.no_grad():
        real, _ = _call(mode, torch.nn.functional.linear, x, weight, bias)
        answer, hit = _call(mode, torch.nn.functional.linear, x, weight, bias)
    assert hit
    assert _state(answer) == _state(real)
    assert answer._is_view() and real._is_view()
    assert _state(answer._base) == _state(real._base)
    for t in (real, answer):  # a view made under no_grad refuses an in-place op that needs grad
        with pytest.raises(RuntimeError, match="no_grad mode"):
            t.add_(weight[0])


def test_in_place_with_grad_on_a_no_grad_linear_raises_as_eager():
    lin = torch.nn.Linear(4, 4)

    def f(x, lin):
        with torch.no_grad():
            a = lin(x)
            b = lin(x)  # answered from the memo: still a view made under no_grad
        b.add_(lin.bias)
        return a, b

    check(f, torch.randn(2, 3, 4), lin)


def test_leaf_requiring_grad_is_not_memoized(mode):
    _call(mode, torch.zeros, 3, requires_grad=True)
    assert not _call(mode, torch.zeros, 3, requires_grad=True)[1]


def test_repeated_layers_with_parameters():
    lin = torch.nn.Linear(4, 4)

    def f(x, lin):
        a = lin(x)
        b = lin(x)  # the same op on the same metadata: answered from the memo
        b.mul_(2)
        return a.requires_grad, b.is_leaf, torch.matmul(a, b.transpose(1, 2)) + b.sum()

    check(f, torch.randn(2, 3, 4), lin, graphs=1)
    with torch.no_grad():
        check(f, torch.randn(2, 3, 4), lin, graphs=1)
