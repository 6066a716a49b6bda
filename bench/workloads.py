"""The benchmark workloads: a registry of named programs that both systems compile.

A workload is a `build()` that returns a fresh `Case`: the callable to compile (a function or
an `nn.Module`) and the arguments to call it with. `build()` is called once per fresh capture,
so a workload that mutates its inputs or module state starts from the same state every time,
and every build with the same name gives the same inputs (seeded).

To add a workload, write a function that returns a `Case` and decorate it with
`@workload("name", "one line saying what it stresses")`; `bench.run` picks it up. Helpers the
workloads call live at module level here, as user code would.
"""

from dataclasses import dataclass
from typing import Any, Callable

import torch


@dataclass(frozen=True)
class Case:
    fn: Callable[..., Any]
    args: tuple[Any, ...]


@dataclass(frozen=True)
class Workload:
    name: str
    description: str
    build: Callable[[], Case]


WORKLOADS: dict[str, Workload] = {}


def workload(name: str, description: str) -> Callable[[Callable[[], Case]], Callable[[], Case]]:
    """Register `build` under `name`; names are unique and keep registration order."""

    def register(build: Callable[[], Case]) -> Callable[[], Case]:
        if name in WORKLOADS:
            raise ValueError(f"workload {name!r} is registered twice")
        WORKLOADS[name] = Workload(name, description, build)
        return build

    return register


def _inputs(*shapes: tuple[int, ...]) -> tuple[torch.Tensor, ...]:
    generator = torch.Generator().manual_seed(0)
    return tuple(torch.randn(shape, generator=generator) for shape in shapes)


# --- (a) the smallest program -------------------------------------------------------------


def add_one(x):
    return x + 1


@workload("add_one", "x + 1: fixed cost of a capture and of a guarded call")
def _build_add_one() -> Case:
    return Case(add_one, _inputs((16, 16)))


# --- (b) a Python loop over tensor ops ----------------------------------------------------


def loop_of_ops(x):
    for _ in range(20):
        x = torch.sin(x)
        x = x * 0.5
        x = x + 0.1
        x = torch.relu(x)
        x = x - 0.2
        x = torch.cos(x)
        x = x / 2
        x = torch.exp(x)
        x = torch.clamp(x, -1.0, 1.0)
        x = x * 0.9
    return x


@workload("loop_200_ops", "20 loop iterations x 10 tensor ops: per-instruction and per-op cost")
def _build_loop_of_ops() -> Case:
    return Case(loop_of_ops, _inputs((16, 16)))


# --- (c) user helper functions with default and keyword arguments -------------------------


def scale(x, factor=2.0):
    return x * factor


def shift(x, *, offset=1.0):
    return x + offset


def mix(a, b, weight=0.5):
    return a * weight + b * (1 - weight)


def squash(x, lo=-1.0, hi=1.0):
    return torch.clamp(x, min=lo, max=hi)


def normalize(x, eps=1e-5, *, center=True):
    if center:
        x = x - x.mean()
    return x / (x.std() + eps)


def call_helpers(x, y):
    a = scale(x)
    b = shift(y, offset=0.5)
    c = mix(a, b, weight=0.25)
    d = squash(c, hi=0.75)
    return normalize(d, center=True)


@workload("helpers_5", "5 inlined user helpers with defaults and keywords: call binding cost")
def _build_call_helpers() -> Case:
    return Case(call_helpers, _inputs((16, 16), (16, 16)))
