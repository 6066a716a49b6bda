"""`op_node` makes the node `Graph.create_node` makes (Note [Op nodes], graph/fx_nodes.py)."""
import operator

import pytest
import torch
import torch.fx

from bytegraph.graph.fx_nodes import op_node


def _sin_of_a_lambda():
    return lambda t: t.sin()


CALLS = [
    ("call_function", torch.add, lambda x, y: ((x, 1), {"alpha": y})),
    ("call_function", torch.ops.aten.mm.default, lambda x, y: ((x, y), {})),
    ("call_function", operator.getitem, lambda x, y: ((x, 0), {})),
    ("call_function", torch.nn.functional.scaled_dot_product_attention, lambda x, y: ((x, x, y), {"is_causal": True})),
    ("call_function", _sin_of_a_lambda(), lambda x, y: ((y,), {})),
    ("call_method", "masked_fill", lambda x, y: ((x, y, 0.0), {})),
    ("call_method", "__add__", lambda x, y: ((x,), {"other": y})),
    ("call_function", torch._C._set_grad_enabled, lambda x, y: ((False,), {})),
]


def _build(make):
    graph = torch.fx.Graph()
    x, y = graph.placeholder("x"), graph.placeholder("y")
    for kind, target, arguments in CALLS * 2:  # twice: the second of each name is deduplicated
        args, kwargs = arguments(x, y)
        make(graph, kind, target, args, kwargs)
    graph.output(None)
    return graph


def _describe(graph):
    return [(n.name, n.op, n.target, n.args, dict(n.kwargs), type(n.args), type(n.kwargs), list(n.users),
             n.all_input_nodes) for n in graph.nodes]


def test_op_nodes_are_the_nodes_create_node_makes():
    ours = _build(op_node)
    theirs = _build(lambda graph, kind, target, args, kwargs: graph.create_node(kind, target, args, kwargs))
    assert str(ours) == str(theirs)
    assert repr(_describe(ours)) == repr(_describe(theirs))
    assert ours.python_code("self").src == theirs.python_code("self").src


def test_a_target_fx_cannot_name_fails_as_in_create_node():
    graph = torch.fx.Graph()
    with pytest.raises(AttributeError):
        graph.create_node("call_function", functools_partial_of_add(), (), {})
    with pytest.raises(AttributeError):
        op_node(graph, "call_function", functools_partial_of_add(), ())


def functools_partial_of_add():
    import functools

    return functools.partial(torch.add, other=1)
