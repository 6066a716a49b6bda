"""Whether the ops an FX graph records so far may draw from torch's random generators.

torch marks every dispatcher operator that draws random numbers with the tag
`torch.Tag.nondeterministic_seeded` (`aten.bernoulli_`, `aten.native_dropout`,
`aten.randn`, ...). A graph node calls a torch-level callable (`F.dropout`, a Tensor
method, a Python function of torch.nn.functional), whose dispatcher ops depend on its
arguments (`training=False` draws nothing); so each node is run again on meta tensors of
its inputs' metadata, under a dispatch mode that records the tagged operators it reaches.
Meta tensors hold no data and never touch a generator. A higher-order op's bodies are not
looked into (it may draw); an op that cannot run on meta tensors may draw; the other
nodes bytegraph records (grad-mode and autocast transitions, arithmetic on sizes) draw
nothing.

Used before work that draws at trace time for real (a lazy module's parameter
initialization, vars/lazy_modules.py): it keeps eager's order of draws only if the graph
has none before it.
"""
from __future__ import annotations

import torch
from torch._ops import HigherOrderOperator, OpOverload, OpOverloadPacket
from torch._subclasses.fake_tensor import unset_fake_temporarily
from torch.utils._python_dispatch import TorchDispatchMode

from .torch_functions import GRAPH_OPS
from .torch_op_rule import is_torch_op

_SEEDED = torch.Tag.nondeterministic_seeded


class _SeededOps(TorchDispatchMode):
    """Records the first dispatcher op tagged `nondeterministic_seeded` that runs under it."""

    def __init__(self):
        super().__init__()
        self.seen = None

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if self.seen is None and _SEEDED in func.tags:
            self.seen = func
        return func(*args, **(kwargs or {}))


def _meta(value):
    """`value` (an FX argument) with every node replaced by a meta tensor like its example."""
    if isinstance(value, torch.fx.Node):
        value = value.meta.get("example_value")
        if isinstance(value, torch.Tensor):
            return torch.empty_strided(value.shape, value.stride(), dtype=value.dtype, device="meta")
        return _meta(value)
    if isinstance(value, (list, tuple)):
        items = [_meta(v) for v in value]
        return type(value)(*items) if hasattr(type(value), "_fields") else type(value)(items)
    if isinstance(value, dict):
        return {k: _meta(v) for k, v in value.items()}
    return value


def _draws(node: torch.fx.Node) -> bool:
    target = node.target
    if node.op == "call_function":
        if isinstance(target, HigherOrderOperator):
            return True  # its bodies are subgraphs: not looked into
        if isinstance(target, OpOverload) and _SEEDED in target.tags:
            return True
        if isinstance(target, OpOverloadPacket) and any(_SEEDED in getattr(target, o).tags
                                                        for o in target.overloads()):
            return True
        if not (is_torch_op(target) or target in GRAPH_OPS):
            return False  # a grad-mode or autocast transition, arithmetic on sizes
    elif node.op != "call_method":
        return False
    recorder = _SeededOps()
    try:
        with unset_fake_temporarily(), recorder:
            args, kwargs = _meta(node.args), _meta(node.kwargs)
            if node.op == "call_method":
                getattr(args[0], target)(*args[1:], **kwargs)
            else:
                target(*args, **kwargs)
    except Exception:  # no meta kernel, symbolic metadata, ...: it may draw
        return True
    return recorder.seen is not None


def first_drawing_node(graph: torch.fx.Graph) -> torch.fx.Node | None:
    """The first node of `graph` that may draw random numbers, or None."""
    for node in graph.nodes:
        if node.op in ("call_function", "call_method") and _draws(node):
            return node
    return None
