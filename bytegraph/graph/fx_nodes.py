"""Adding an op's node to an FX graph: the node `Graph.create_node` makes, for less.

Note [Op nodes]
`Graph.create_node` derives the node's name from its target on every call (`__name__`,
then a snake-case regex) and walks its arguments with pytree to warn of a raw `SymInt`
among them (an argument of a trace is a node or a constant, never a raw `SymInt`): about
half of the ~40 µs a model's op node costs in a capture (hf_gptj, 175 nodes). `op_node`
gives `create_node` the name FX derives, remembered per target name, and no arguments,
then sets the arguments through the node's public setters, which do the bookkeeping of
inputs and users that `Node.__init__` does (`_update_args_kwargs`): the same node, the
same name, the same users in the same order (tests/test_fx_nodes.py).
"""
from __future__ import annotations

import torch.fx

_CANDIDATES: dict = {}  # a callable target's __name__, or (a method name,) -> FX's name candidate


def op_node(graph: torch.fx.Graph, kind: str, target, args: tuple, kwargs: dict | None = None) -> torch.fx.Node:
    """`graph.create_node(kind, target, args, kwargs)` (Note [Op nodes])."""
    key = target.__name__ if callable(target) else (target,)
    candidate = _CANDIDATES.get(key)
    if candidate is None:
        candidate = _CANDIDATES[key] = graph._target_to_str(target)
    node = graph.create_node(kind, target, (), None, name=candidate)
    if kwargs:
        node.kwargs = kwargs
    if args:
        node.args = args
    return node
