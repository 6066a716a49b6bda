"""What the end of a graph and its residual code do for autocast: exit the graph's open
`_enter_autocast` nodes, and make the real state follow the trace after the graph (Note
[Autocast in the trace] in `vars/autocast/__init__.py`).
"""
from __future__ import annotations

from torch.amp.autocast_mode import _exit_autocast

from .state import enter_autocast_block


def close_graph(output) -> None:
    """Exit the graph's open autocast nodes, innermost first, before its output node."""
    trace = output.autocast
    if trace is not None:
        for node in reversed(trace.graph_open):
            output.root_graph.call_function(_exit_autocast, (node,))


def emit_real_transitions(cg, output, at_break: bool) -> None:
    """Residual code after the graph: the real exits of blocks entered before the capture
    that the trace left, then (at a break) the real enters of the blocks still open."""
    trace = output.autocast
    if trace is None:
        return
    for exit_ in trace.popped:
        cg.push_callable_const(exit_)
        for _ in range(3):
            cg.load_const(None)
        cg.call_and_pop(3)
    if at_break:
        for _, exit_ in trace.entered:
            cg.push_callable_const(enter_autocast_block)
            cg.load_const(exit_)
            cg.call_and_pop(1)
