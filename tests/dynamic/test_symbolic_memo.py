"""The fake-result memo under symbolic sizes (Note [Symbolic memo] in graph/fake_memo.py).

A second capture of a function, in a fresh compiled function, answers symbolic ops from the
memo; it must produce exactly the graph and the guard function the first capture (with an
empty memo) produced, since an answer may not drop a fact the ShapeEnv would have learned,
and the compiled function must then agree with eager on sizes the capture never saw
(including sizes a dropped guard would have rejected).
"""
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import bytegraph
from bytegraph.graph import fake_memo, shapes
from helpers import assert_same

torch.manual_seed(0)
_MLP = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 8))
_CONV = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.ReLU(), nn.Conv2d(4, 2, 3, stride=2))
_NORM = nn.LayerNorm(8)
_W = torch.randn(8, 8)


def attention(x):
    b, t, d = x.shape
    h = (x.reshape(b * t, d) @ _W).relu().view(b, t, d)
    scores = h @ h.transpose(1, 2) / math.sqrt(d)
    mask = torch.ones(t, t).tril() == 0
    out = scores.masked_fill(mask, float("-inf")).softmax(-1) @ h
    return out[:, : t // 2].sum(1) + torch.arange(d) * b


def mlp_norm(x):
    return _MLP(x) + _NORM(x).relu()


def conv(x):
    return _CONV(x).flatten(1).sum(-1)


def heads(x):
    b, t, d = x.shape
    q = x.view(b, t, 2, d // 2).transpose(1, 2)
    return F.scaled_dot_product_attention(q, q, q, is_causal=True).transpose(1, 2).reshape(b, t, d)


def shape_arithmetic(x):
    b, t = x.shape[0], x.shape[1]
    y = torch.cat([x, x[:, : t - 1]], dim=1)
    return y.reshape(b, -1).sum(-1) * (t + 1) + x.new_zeros(b).fill_(t)


def views(x):
    b, t, d = x.shape
    first, second = x.split(d // 2, 2)
    window = x[:, 1:].narrow(1, 0, t - 2).permute(2, 0, 1)
    wide = x[:, :1].expand(b, t, d) + x.view(b * t, d).view(b, t, d)
    return (first * second).sum(-1), x.unbind(2)[0].t(), window.sum(0), wide, x.unfold(1, 2, 1).sum(-1)


def writes(x):
    b, t, d = x.shape
    y = x * 1
    flat = y.reshape(b * t, d)
    flat[:, 0] = 0  # through a view of y: y changes too
    with torch.no_grad():
        frozen = y.flatten(0, 1)[: t // 2]
    y.unflatten(2, (2, d // 2))[..., 1].mul_(2)
    return y, frozen.sum(-1), flat.mean()


def training_step(x):
    loss = (_MLP(x) ** 2).mean()
    return loss


CASES = {
    "attention": (attention, lambda b, t: torch.randn(b, t, 8), [0, 1], [(3, 5), (2, 9), (6, 2)]),
    "mlp_norm": (mlp_norm, lambda b, t: torch.randn(b, t, 8), [0, 1], [(5, 3), (2, 2), (7, 4)]),
    "conv": (conv, lambda b, t: torch.randn(b, 3, t, t), [0, 2, 3], [(3, 7), (2, 5), (4, 10)]),
    "heads": (heads, lambda b, t: torch.randn(b, t, 8), [0, 1], [(3, 4), (2, 7)]),
    "shape_arithmetic": (shape_arithmetic, lambda b, t: torch.randn(b, t, 3), [0, 1], [(2, 6), (5, 3)]),
    "views": (views, lambda b, t: torch.randn(b, t, 8), [0, 1], [(3, 5), (2, 9), (5, 3)]),
    "writes": (writes, lambda b, t: torch.randn(b, t, 8), [0, 1], [(3, 5), (2, 9), (5, 3)]),
}


def _capture(fn, x, dims):
    x = x.clone()
    bytegraph.mark_dynamic(x, dims)
    # a backend of its own: a wrapper of the same function and backend would reuse the first
    # capture's entry (Note [Recompile limit] in runtime/code_state.py) instead of capturing again
    compiled = bytegraph.compile(fn, backend=lambda gm, example_inputs: gm.forward)
    compiled(x)
    (entry,) = compiled.__bg_compiled__.entries
    assert entry.kind == "compiled", entry.reason
    return compiled, entry.guards.source, entry.graph_module.code


@pytest.fixture
def symbolic_answers(monkeypatch):
    """How many memo answers had symbolic sizes."""
    count = [0]
    allocate = fake_memo._allocate

    def counting(fake_mode, spec):
        if isinstance(spec[0], fake_memo._SymbolicSizes):
            count[0] += 1
        return allocate(fake_mode, spec)

    monkeypatch.setattr(fake_memo, "_allocate", counting)
    return count


@pytest.fixture
def view_answers(monkeypatch):
    """How many view calls the memo answered, at the fake mode's dispatch (Note [Symbolic
    views]) or above autograd (Note [Views of arguments])."""
    count = [0]
    for name in ("_views_of", "_view_of_argument"):
        answer = getattr(fake_memo, name)

        def counting(*args, answer=answer):
            count[0] += 1
            return answer(*args)

        monkeypatch.setattr(fake_memo, name, counting)
    return count


@pytest.mark.parametrize("name", list(CASES))
def test_memo_answers_give_the_same_graph_and_guards(name, empty_memo, symbolic_answers, view_answers):
    fn, make, dims, later = CASES[name]
    x = make(4, 6)
    _, cold_guards, cold_graph = _capture(fn, x, dims)
    cold_answers, cold_views = symbolic_answers[0], view_answers[0]
    compiled, warm_guards, warm_graph = _capture(fn, x, dims)
    assert symbolic_answers[0] + view_answers[0] > cold_answers + cold_views, \
        "the second capture answered no symbolic op from the memo"
    if name in ("attention", "heads", "views", "writes"):
        assert view_answers[0] > cold_views, "the second capture answered no view from the memo"
    assert warm_graph == cold_graph
    assert warm_guards == cold_guards
    for size in later:
        y = make(*size)
        assert_same(fn(y), compiled(y), where=f"output at {tuple(y.shape)}")
    assert len(compiled.__bg_compiled__.entries) == 1 + sum(  # a size 1 or 0 recompiles, as without the memo
        1 for size in later if min(size) < 2)


def test_grad_results_rebuilt_from_the_memo(empty_memo, symbolic_answers):
    x = torch.randn(4, 6, 8)
    _, cold_guards, cold_graph = _capture(training_step, x, [0, 1])
    compiled, warm_guards, warm_graph = _capture(training_step, x, [0, 1])
    assert symbolic_answers[0] > 0
    assert (warm_graph, warm_guards) == (cold_graph, cold_guards)
    y = torch.randn(3, 5, 8)
    expected = training_step(y)
    expected.backward()
    grads = [p.grad.clone() for p in _MLP.parameters()]
    _MLP.zero_grad()
    actual = compiled(y)
    actual.backward()
    assert_same(expected, actual)
    for g, p in zip(grads, _MLP.parameters()):
        assert_same(g, p.grad, where="parameter grad")
    _MLP.zero_grad()


def test_a_run_that_adds_a_guard_is_not_remembered(empty_memo):
    def regroup(x):
        return x.t().reshape(-1, 3)  # a copy (not a view of x) that guards the size divisible by 3

    x = torch.randn(4, 6)
    compiled, cold_guards, _ = _capture(regroup, x, [0, 1])
    assert "% 3" in cold_guards, cold_guards
    compiled, warm_guards, _ = _capture(regroup, x, [0, 1])
    assert warm_guards == cold_guards
    y = torch.randn(5, 4)  # 20 is not divisible by 3: eager raises, and so must the compiled call
    with pytest.raises(RuntimeError) as eager_error:
        regroup(y)
    with pytest.raises(RuntimeError) as compiled_error:
        compiled(y)
    assert str(compiled_error.value) == str(eager_error.value)


def test_an_answer_is_only_reused_in_the_same_shape_facts(empty_memo):
    def regroup_twice(x):
        first = x.t().reshape(-1, 3)  # learns that the size is divisible by 3
        return first + x.t().reshape(-1, 3)  # the same op, now adding no guard: remembered

    def regroup(x):
        return x.t().reshape(-1, 3)  # without that fact: must not take the answer above

    x = torch.randn(4, 6)
    _capture(regroup_twice, x, [0, 1])
    compiled, guards, _ = _capture(regroup, x, [0, 1])
    assert "% 3" in guards, guards
    with pytest.raises(RuntimeError) as eager_error:
        regroup(torch.randn(5, 4))
    with pytest.raises(RuntimeError) as compiled_error:
        compiled(torch.randn(5, 4))
    assert str(compiled_error.value) == str(eager_error.value)


# ---- symbolic views, op by op (Note [Symbolic views]) --------------------------------------

_VIEWS = {
    "view": lambda x, b, t: x.view(b * t, 4),
    "reshape": lambda x, b, t: x.reshape(b, -1),
    "transpose": lambda x, b, t: x.transpose(0, 2),
    "permute": lambda x, b, t: x.permute(2, 0, 1),
    "slice": lambda x, b, t: x[:, 1:],
    "slice to a symbolic bound": lambda x, b, t: x[:, : t - 1],
    "slice with a step": lambda x, b, t: x[:, ::2, 1:],
    "select": lambda x, b, t: x[1],
    "unsqueeze": lambda x, b, t: x[None, :, None],
    "squeeze": lambda x, b, t: x[:, :1].squeeze(1),
    "expand": lambda x, b, t: x[:, :1].expand(b, t, 4),
    "narrow": lambda x, b, t: x.narrow(1, 1, t - 2),
    "split": lambda x, b, t: x.split(2, 2),
    "split_with_sizes": lambda x, b, t: x.split([1, 3], 2),
    "unbind": lambda x, b, t: x.unbind(2),
    "diagonal": lambda x, b, t: x.diagonal(0, 0, 2),
    "unfold": lambda x, b, t: x.unfold(2, 2, 1),
    "t": lambda x, b, t: x[0].t(),
    "as_strided": lambda x, b, t: x.as_strided((b, 2), (t * 4, 1), 1),
    "static base, symbolic size": lambda x, b, t: x[0, 0].expand(b, 4),
}


def _expr(s):
    return s.node.expr if isinstance(s, torch.SymInt) else s


def _view_state(t):
    return ([_expr(s) for s in t.shape], [_expr(s) for s in t.stride()], _expr(t.storage_offset()), t.dtype,
            t.device, t.requires_grad, t.is_leaf, t.grad_fn is None, t._is_view(), type(t._base))


@pytest.mark.parametrize("grad", [False, True])
@pytest.mark.parametrize("name", list(_VIEWS))
def test_symbolic_view_answer_is_torch_s_view(name, grad, empty_memo, view_answers):
    from bytegraph.graph.fake_mode import make_fake_mode
    from bytegraph.guards.sources import LocalSource

    view = _VIEWS[name]
    mode = make_fake_mode()
    env = shapes.Shapes(mode)
    leaf = env.fake_tensor(mode, torch.randn(3, 5, 4, requires_grad=grad), LocalSource("x"), [True, True, False])
    b, t = leaf.shape[0], leaf.shape[1]
    with mode, torch.set_grad_enabled(grad):
        x = leaf * 1  # a non-leaf: views of it may be written
        expected = view(x, b, t)  # torch's symbolic view kernels, remembered
        version = env.version()
        answers = view(x, b, t)
        assert view_answers[0] > 0, "the second call was not answered from the memo"
        assert env.version() == version, "an answer taught the ShapeEnv a fact"
    expected, answers = (list(r) if isinstance(r, (list, tuple)) else [r] for r in (expected, answers))
    assert len(answers) == len(expected)
    for got, want in zip(answers, expected):
        assert type(got) is type(want)
        assert _view_state(got) == _view_state(want)
        assert got._base is want._base is x
        assert got.untyped_storage()._cdata == x.untyped_storage()._cdata and got.fake_mode is mode
    before = x._version
    with mode, torch.no_grad():
        answers[0].mul_(2)  # a write through the answer counts on its base's version counter
    assert x._version == before + 1


def test_an_answer_teaches_the_guards_its_kernel_run_taught(empty_memo, view_answers):
    """Slicing to `t // 2` guards `t // 2 <= t` (the ShapeEnv cannot prove it): an answer in
    the same state adds that guard too, with its axioms, so the facts match a kernel run."""
    from bytegraph.graph.fake_mode import make_fake_mode
    from bytegraph.guards.sources import LocalSource

    def run():
        mode = make_fake_mode()
        env = shapes.Shapes(mode)
        x = env.fake_tensor(mode, torch.randn(3, 8, 4), LocalSource("x"), [True, True, False])
        with mode:
            half = x.shape[1] // 2
            before = len(env.env.guards)
            out = x[:, :half]
        return out, env.env, before

    cold, cold_env, cold_before = run()
    answers = view_answers[0]
    warm, warm_env, warm_before = run()
    assert view_answers[0] > answers, "the second slice was not answered from the memo"
    taught = [g.expr for g in cold_env.guards[cold_before:]]
    assert taught, "the slice no longer teaches a guard: this test needs another op"
    assert [g.expr for g in warm_env.guards[warm_before:]] == taught
    assert warm_env.axioms == cold_env.axioms
    assert dict(warm_env.symbol_guard_counter) == dict(cold_env.symbol_guard_counter)
    assert _view_state(warm) == _view_state(cold)


@pytest.mark.parametrize("fact,replayable", [
    ("a guard", True),  # the ShapeEnv only appends a guard and its axioms
    ("a replacement", False),  # n == x.size(1) replaces one symbol by the other
    ("a range", False),  # n > 3 refines n's range
])
def test_only_guards_make_a_lesson(fact, replayable):
    from bytegraph.graph.fake_mode import make_fake_mode
    from bytegraph.guards.sources import LocalSource

    mode = make_fake_mode()
    env = shapes.Shapes(mode)
    x = env.fake_tensor(mode, torch.randn(3, 5), LocalSource("x"), [True, True])
    n = env.symbol_for(5, LocalSource("n"))
    mark = env.mark()
    assert env.lesson_since(mark) == ()
    if fact == "a guard":
        assert bool(n // 2 <= n)
    elif fact == "a replacement":
        assert bool(n == x.shape[1])
    else:
        assert bool(n > 3)
    lesson = env.lesson_since(mark)
    assert (lesson is not None) == replayable, lesson
    if replayable:
        guards, axioms = lesson
        assert guards and axioms
