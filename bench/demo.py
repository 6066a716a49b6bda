"""`make demo`: a guided tour of what bytegraph captures from a few small programs.

After one warm-up capture (so one-time imports are not counted), for each example: its source,
every FX graph bytegraph hands the backend (recorded by a backend that keeps the graph and runs it
as is), the guards of each cache entry, the capture time (first call), whether the output matches
eager, and the steady-state time per call compiled vs eager.
An example bytegraph cannot compile yet is reported as not yet supported and the tour goes on.
"""

import inspect
import statistics
import textwrap
import time
import traceback
from dataclasses import dataclass
from typing import Any, Callable

import torch
from torch import nn

import bytegraph


def python_loop(x, w):
    for step in range(3):
        x = torch.relu(x @ w + step)
        x = x * 0.5
    return x.sum(dim=1)


def with_graph_break(x):
    y = torch.sin(x) + 1
    print("  (user print: a graph break, run eagerly between two graphs)")
    return torch.cos(y) * 2


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))

    def forward(self, x):
        return torch.softmax(self.layers(x), dim=-1)


class GraphRecorder:
    """A bytegraph backend that keeps every graph it is handed and runs it unchanged."""

    def __init__(self) -> None:
        self.graphs: list[torch.fx.GraphModule] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs: list[Any]) -> Callable[..., Any]:
        self.graphs.append(gm)
        return gm.forward


@dataclass(frozen=True)
class Example:
    title: str
    target: Callable[..., Any]
    args: tuple[Any, ...]
    timed: bool = True  # False where calling it in a loop would flood the output


def _examples() -> list[Example]:
    torch.manual_seed(0)
    return [
        Example("a Python loop over tensor ops", python_loop, (torch.randn(4, 8), torch.randn(8, 8))),
        Example("a graph break (print)", with_graph_break, (torch.randn(4),), timed=False),
        Example("an nn.Module MLP", MLP(), (torch.randn(4, 8),)),
    ]


def _matches(actual: Any, expected: Any) -> bool:
    try:
        torch.testing.assert_close(actual, expected)
    except AssertionError:
        return False
    return True


def per_call_us(fn: Callable[..., Any], args: tuple[Any, ...], calls: int = 500, rounds: int = 5) -> float:
    samples = []
    for _ in range(rounds):
        start = time.perf_counter()
        for _ in range(calls):
            fn(*args)
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def print_guards(target: Callable[..., Any], args: tuple) -> None:
    """Print the guards (and any graph breaks) of a fresh capture, via `bytegraph.explain`."""
    out = bytegraph.explain(target)(*args)
    for reason in out.break_reasons:
        print(f"graph break: {reason}")
    print("guards:")
    for guard in out.guards:
        print(f"    {guard}")


def show(example: Example) -> None:
    target, args = example.target, example.args
    print(f"\n=== {example.title} ===")
    source = inspect.getsource(type(target) if isinstance(target, nn.Module) else target)
    print(textwrap.indent(source.rstrip(), "    "))
    recorder = GraphRecorder()
    try:
        bytegraph.reset()
        compiled = bytegraph.compile(target, backend=recorder)
        start = time.perf_counter()
        out = compiled(*args)
        capture_ms = (time.perf_counter() - start) * 1e3
    except Exception as exc:
        print(f"not yet supported: {type(exc).__name__}: {exc}")
        print(textwrap.indent("".join(traceback.format_exc(limit=-3)), "    "))
        return
    for i, gm in enumerate(recorder.graphs):
        print(f"captured graph {i}:")
        print(textwrap.indent(gm.code.strip(), "    "))
    if not recorder.graphs:
        print("not yet supported: no graph captured, bytegraph ran this eagerly")
    print_guards(target, args)
    print(f"matches eager: {_matches(out, target(*args))}")
    print(f"capture (first call): {capture_ms:.2f} ms, {len(recorder.graphs)} graph(s)")
    if not example.timed:
        print("per call: not timed (it would print on every call)")
        return
    compiled_us, eager_us = per_call_us(compiled, args), per_call_us(target, args)
    print(f"per call: compiled {compiled_us:.1f} µs, eager {eager_us:.1f} µs, "
          f"overhead {compiled_us - eager_us:+.1f} µs")


def _warm_up() -> None:
    """Pay bytegraph's one-time costs (lazy imports, fake-tensor set-up) before any timing."""
    try:
        bytegraph.compile(lambda x: (x * 2).sum() - 1, backend=GraphRecorder())(torch.ones(4))
    except Exception as exc:
        print(f"warning: warm-up failed: {type(exc).__name__}: {exc}")


def main() -> None:
    print(f"bytegraph demo (torch {torch.__version__})")
    _warm_up()
    for example in _examples():
        show(example)


if __name__ == "__main__":
    main()
