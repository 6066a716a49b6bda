"""Workloads for the cost of a graph break deep in a call chain (issue 4).

`depth5_break` and `depth5_nobreak` run the same tensor work through five nested user
functions; the first breaks at the innermost level (an unknown C call, which both
systems run eagerly). bytegraph's target: capture with the break ≤ 1.5 × without.
"""
from __future__ import annotations

import os

import torch

from bench.case import Case, seeded_inputs, workload


def _work(x):
    for _ in range(4):
        x = torch.sin(x) * 1.5 + torch.cos(x)
    return x


def _level5(x, brk):
    x = _work(x)
    if brk:
        os.getpid()  # a C function neither tracer knows: a graph break
    return _work(x)


def _level4(x, brk):
    return _work(_level5(_work(x), brk))


def _level3(x, brk):
    return _work(_level4(_work(x), brk))


def _level2(x, brk):
    return _work(_level3(_work(x), brk))


def _level1(x, brk):
    return _work(_level2(_work(x), brk))


def depth5_break(x):
    return _level1(x, True)


def depth5_nobreak(x):
    return _level1(x, False)


@workload("depth5_nobreak", "5 nested user calls, 10 tensor-op blocks, no break")
def _build_nobreak() -> Case:
    return Case(depth5_nobreak, seeded_inputs((16, 16)))


@workload("depth5_break", "the same with one graph break at call depth 5")
def _build_break() -> Case:
    return Case(depth5_break, seeded_inputs((16, 16)))


RATIO_CHECKS = [("capture_ms", "depth5_break", "depth5_nobreak", 1.5,
                 "bytegraph capture with one break at call depth 5 / without the break")]
