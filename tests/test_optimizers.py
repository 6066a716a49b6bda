"""torch.optim `step()` compiled on its own: params and optimizer state equal to eager's
after three steps, with the step captured whole (`fullgraph=True`)."""
import pytest
import torch

import bytegraph
from helpers import CompileCounter

_OPTIMIZERS = [
    (torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
    (torch.optim.Adam, dict(lr=0.1)),
    (torch.optim.AdamW, dict(lr=0.1, weight_decay=0.1)),
]


def _model_and_optimizer(cls, kwargs, foreach):
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 3)
    return model, cls(model.parameters(), foreach=foreach, **kwargs)


def _train(model, opt, step, x):
    for _ in range(3):
        opt.zero_grad()
        model(x).square().sum().backward()
        step()


def _assert_same(m1, o1, m2, o2):
    for p1, p2 in zip(m1.parameters(), m2.parameters()):
        torch.testing.assert_close(p2, p1)
        s1, s2 = o1.state[p1], o2.state[p2]
        assert s1.keys() == s2.keys()
        for key, value in s1.items():
            if isinstance(value, torch.Tensor):
                torch.testing.assert_close(s2[key], value)
            else:
                assert s2[key] == value


@pytest.mark.parametrize("foreach", [False, True], ids=["for-loop", "foreach"])
@pytest.mark.parametrize("cls,kwargs", _OPTIMIZERS, ids=[c.__name__ for c, _ in _OPTIMIZERS])
def test_step_one_graph_matches_eager(cls, kwargs, foreach):
    x = torch.randn(5, 4)
    m1, o1 = _model_and_optimizer(cls, kwargs, foreach)
    m2, o2 = _model_and_optimizer(cls, kwargs, foreach)
    _train(m1, o1, o1.step, x)
    counter = CompileCounter()
    bytegraph.reset()
    _train(m2, o2, bytegraph.compile(o2.step, backend=counter, fullgraph=True), x)
    _assert_same(m1, o1, m2, o2)
    assert counter.frame_count <= 2  # the first step creates the state; later steps reuse one graph


@pytest.mark.parametrize("foreach", [False, True], ids=["for-loop", "foreach"])
@pytest.mark.parametrize("cls,kwargs", _OPTIMIZERS, ids=[c.__name__ for c, _ in _OPTIMIZERS])
def test_step_without_fullgraph_matches_eager(cls, kwargs, foreach):
    x = torch.randn(5, 4)
    m1, o1 = _model_and_optimizer(cls, kwargs, foreach)
    m2, o2 = _model_and_optimizer(cls, kwargs, foreach)
    _train(m1, o1, o1.step, x)
    bytegraph.reset()
    _train(m2, o2, bytegraph.compile(o2.step, backend=CompileCounter()), x)
    _assert_same(m1, o1, m2, o2)


def test_step_one_graph_once_torch_dynamo_is_imported():
    """Importing torch._dynamo (a user's torch.compile elsewhere) makes torch.optim's
    `_disable_dynamo` helpers real `torch._dynamo.disable` wrappers: they are traced through."""
    import torch._dynamo  # noqa: F401  (the reference system; bytegraph never imports it)

    param = torch.nn.Parameter(torch.randn(4))
    expected = param.detach() - 0.1 * torch.ones(4)
    opt = torch.optim.SGD([param], lr=0.1)
    param.grad = torch.ones(4)
    bytegraph.compile(opt.step, fullgraph=True)()
    torch.testing.assert_close(param.detach(), expected)
