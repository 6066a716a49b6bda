"""A workload for higher-order ops (issue 14): a model whose forward makes 10 `torch.cond`s.

`cond_10` is captured by both systems as one graph with 10 cond nodes (each with its two
branch subgraphs, closing over the model's parameters); bytegraph's target: capture cost
<= 0.15 x torch.compile's. The parameters are frozen (an inference model): with a tensor
that requires grad, torch's cond operator re-traces both branches with make_fx on every
eager call (`gen_schema`, to refuse in-place training mutations), a cost of running the
captured graph that both systems pay alike and that would swamp the capture being measured.
"""
from __future__ import annotations

import torch

from bench.case import Case, seeded_inputs, seeded_module, workload


class CondStack(torch.nn.Module):
    """10 blocks, each `torch.cond(h.mean() > 0, scale-and-shift, linear)` on the running `h`."""

    def __init__(self, width: int = 16, depth: int = 10):
        super().__init__()
        self.linears = torch.nn.ModuleList(torch.nn.Linear(width, width) for _ in range(depth))
        self.scales = torch.nn.ParameterList(torch.nn.Parameter(torch.ones(width)) for _ in range(depth))

    def forward(self, x):
        h = x
        for linear, scale in zip(self.linears, self.scales):
            h = torch.cond(h.mean() > 0, lambda a: (a * scale).tanh(), lambda a: linear(a).relu(), (h,))
        return h


@workload("cond_10", "a module with 10 torch.cond blocks (branches close over parameters): HOP capture cost")
def _build_cond_10() -> Case:
    return Case(seeded_module(CondStack).requires_grad_(False), seeded_inputs((8, 16)))
