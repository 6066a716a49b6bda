"""Views of an op's tensor argument answered above autograd under symbolic sizes (Note
[Views of arguments] in graph/fake_memo.py), op by op.

Each op runs on a symbolic fake as `OutputGraph._run_fake` runs it (key, kernel run,
remember with its lesson), then is answered from the memo: the answer must be the view the
op made (sizes, strides and offset as expressions, `_base`, storage, autograd state), write
through to its base's version counter, keep the creation mark of a view made under no_grad,
and teach the ShapeEnv exactly what the op's run taught it.
"""
import pytest
import torch

from bytegraph.graph import fake_memo, shapes
from bytegraph.graph.fake_mode import make_fake_mode
from bytegraph.guards.sources import LocalSource

_OPS = {
    "reshape": lambda x, b, t, half: x.reshape(b * t, 4),
    "reshape to -1": lambda x, b, t, half: x.reshape(b, -1),
    "view": lambda x, b, t, half: x.view(b, t * 4),
    "flatten": lambda x, b, t, half: x.flatten(0, 1),
    "unflatten": lambda x, b, t, half: x.unflatten(2, (2, 2)),
    "slice": lambda x, b, t, half: x[:, 1:],
    "slice to t // 2": lambda x, b, t, half: x[:, :half],
    "index with None and an ellipsis": lambda x, b, t, half: x[None, ..., 1],
    "select": lambda x, b, t, half: x[:, -1],
    "narrow": lambda x, b, t, half: x.narrow(1, 1, t - 2),
    "transpose": lambda x, b, t, half: x.transpose(1, 2),
    "movedim": lambda x, b, t, half: x.movedim(2, 0),
    "squeeze": lambda x, b, t, half: x[:, :1].squeeze(1),
    "expand": lambda x, b, t, half: x[:, :1].expand(b, t, 4),
    "diagonal": lambda x, b, t, half: x.diagonal(0, 1, 2),
    "as_strided": lambda x, b, t, half: x.as_strided((b, 2), (t * 4, 1), 1),
}


def _expr(s):
    return s.node.expr if isinstance(s, torch.SymInt) else s


def _view_state(t):
    return ([_expr(s) for s in t.shape], [_expr(s) for s in t.stride()], _expr(t.storage_offset()), t.dtype,
            t.requires_grad, t.is_leaf, t.grad_fn is None, t._is_view(), t.is_conj(), t.is_neg())


@pytest.fixture
def answers(monkeypatch):
    """How many calls were answered as views of their argument."""
    count = [0]
    answer = fake_memo._view_of_argument

    def counting(*args):
        count[0] += 1
        return answer(*args)

    monkeypatch.setattr(fake_memo, "_view_of_argument", counting)
    return count


def _symbolic(grad: bool, sizes=(3, 5, 4), dims=(True, True, False)):
    mode = make_fake_mode()
    env = shapes.Shapes(mode)
    leaf = env.fake_tensor(mode, torch.randn(*sizes, requires_grad=grad), LocalSource("x"), list(dims))
    return mode, env, leaf


def _traced(mode, env, op, args: tuple):
    """`op(*args)` as `_run_fake` runs it: answered from the memo when it can be."""
    key = fake_memo.memo_key("call_function", op, args, {}, env)
    assert key is not None
    answer = fake_memo.lookup(mode, key, args, {}, env)
    if answer is not None:
        return answer
    mark = env.mark()
    result = op(*args)
    lesson = env.lesson_since(mark)
    if lesson is not None:
        fake_memo.remember(key, args, {}, result, lesson)
    return result


def _run(op, grad: bool):
    """`op` on a non-leaf view-able symbolic fake in a fresh ShapeEnv: the result, its
    argument, and what the ShapeEnv learned."""
    mode, env, leaf = _symbolic(grad)
    b, t = leaf.shape[0], leaf.shape[1]
    with mode:
        x = leaf * 1  # a non-leaf: views of it may be written
        args = (x, b, t, t // 2)
        guards, axioms = len(env.env.guards), dict(env.env.axioms)
        out = _traced(mode, env, op, args)
    taught = ([g.expr for g in env.env.guards[guards:]], {k: v for k, v in env.env.axioms.items() if k not in axioms},
              dict(env.env.symbol_guard_counter))
    return mode, x, out, taught


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("name", list(_OPS))
def test_an_argument_view_answer_is_the_op_s_view(name, grad, empty_memo, answers):
    op = _OPS[name]
    _, base, expected, taught = _run(op, grad)
    assert answers[0] == 0
    mode, x, answer, answer_taught = _run(op, grad)  # the same state: answered from the memo
    assert answers[0] == 1, "the second run was not answered as a view of its argument"
    assert answer_taught == taught
    if name == "slice to t // 2":
        assert taught[0], "the slice no longer teaches a guard: this case needs another op"
    assert type(answer) is type(expected)
    assert _view_state(answer) == _view_state(expected)
    assert answer._base is x and expected._base is base
    assert answer.untyped_storage()._cdata == x.untyped_storage()._cdata and answer.fake_mode is mode
    assert answer.fake_device == expected.fake_device
    before = x._version
    with mode, torch.no_grad():
        answer.mul_(2)  # a write through the answer counts on its base's version counter
    assert x._version == before + 1


def test_a_view_made_under_no_grad_keeps_its_creation_mark(empty_memo, answers):
    mode, env, leaf = _symbolic(True)
    b, t = leaf.shape[0], leaf.shape[1]
    op = _OPS["reshape"]
    with mode:
        x = leaf * 1
        with torch.no_grad():
            expected = _traced(mode, env, op, (x, b, t, t // 2))
            answer = _traced(mode, env, op, (x, b, t, t // 2))
        assert answers[0] == 1
        errors = []
        for view in (expected, answer):
            with pytest.raises(RuntimeError) as error:
                view.add_(1)  # in grad mode: refused for a view made under no_grad
            errors.append(str(error.value))
    assert errors[0] == errors[1] and "no_grad" in errors[0]


def test_a_view_of_a_view_has_the_first_base(empty_memo, answers):
    mode, env, leaf = _symbolic(False)
    b, t = leaf.shape[0], leaf.shape[1]
    with mode:
        inner = leaf[:, 1:]
        expected = _traced(mode, env, _OPS["transpose"], (inner, b, t, t // 2))
        answer = _traced(mode, env, _OPS["transpose"], (inner, b, t, t // 2))
    assert answers[0] == 1
    assert answer._base is expected._base is leaf
    assert _view_state(answer) == _view_state(expected)


_NOT_ANSWERED = {
    "a view to another dtype": lambda x, b, t, half: x.view(torch.int32),
    "the argument itself": lambda x, b, t, half: x.contiguous(),
    "several views": lambda x, b, t, half: x.split(2, 2),
    "a copy": lambda x, b, t, half: x.transpose(1, 2).reshape(b, -1),
}


@pytest.mark.parametrize("name", list(_NOT_ANSWERED))
def test_other_results_are_not_answered_as_argument_views(name, empty_memo, answers):
    op = _NOT_ANSWERED[name]
    mode, env, leaf = _symbolic(False)
    b, t = leaf.shape[0], leaf.shape[1]
    with mode:
        first = _traced(mode, env, op, (leaf, b, t, t // 2))
        second = _traced(mode, env, op, (leaf, b, t, t // 2))
    assert answers[0] == 0
    if name == "the argument itself":
        assert first is leaf and second is leaf


def test_a_view_of_one_of_two_tensor_arguments_is_not_answered(empty_memo, answers):
    mode, env, leaf = _symbolic(False)
    with mode:
        column = leaf[:, :1]
        for _ in range(2):
            view = _traced(mode, env, torch.Tensor.expand_as, (column, leaf))
            assert view._base is leaf and view.shape == leaf.shape
    assert answers[0] == 0


def test_static_views_are_not_answered_above_autograd(empty_memo, answers):
    mode, env, leaf = _symbolic(False, dims=(False, False, False))
    assert not leaf._has_symbolic_sizes_strides
    op = _OPS["reshape"]
    with mode:
        args = (leaf, 3, 5, 2)
        key = fake_memo.memo_key("call_function", op, args, {}, env)
        fake_memo.remember(key, args, {}, op(*args))
        assert fake_memo.lookup(mode, key, args, {}, env) is None
    assert answers[0] == 0
