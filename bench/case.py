"""What a benchmark workload is: `Case` (the callable to compile and the arguments to call it
with), `Workload` (a named `build()` with its targets), the registry `WORKLOADS` and the
`@workload` decorator that fills it, and the seeded-input helpers the workload modules share.

It imports nothing of bench: `bench.workloads` and the workload modules it imports
(`break_workloads`, `compiled_autograd_workloads`, `dynamic_workloads`, `hop_workloads`,
`model_workloads`) all define their workloads with what is here, so no import circle runs
through the aggregator.
"""

from dataclasses import dataclass, field
from typing import Any, Callable

import torch

CAPTURE_RATIO_TARGET = 0.25
OVERHEAD_RATIO_TARGET = 0.5


def _same(value: Any) -> Any:
    return value


@dataclass(frozen=True)
class Case:
    """`fn(*args, **kwargs)`, run with grad mode `grad`; `comparable(output)` is what is checked
    against eager's (the default compares the output itself)."""

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)
    grad: bool = True
    comparable: Callable[[Any], Any] = _same

    def __call__(self, fn: Callable[..., Any] | None = None) -> Any:
        """Call `fn` (default: the eager `self.fn`) on this case's arguments, in its grad mode."""
        with torch.set_grad_enabled(self.grad):
            return (self.fn if fn is None else fn)(*self.args, **self.kwargs)


@dataclass(frozen=True)
class Workload:
    """`captures` overrides the run's fresh captures per system (slow workloads take fewer);
    `rounds` is the least number of timing rounds it takes (a workload judged on an overhead
    of a few µs takes more, so the median of paired differences resolves it); `timed_with`
    names a workload whose bytegraph entry is timed in this one's rounds too, so that a ratio
    check between the two overheads compares the same rounds (bench.run._ratio_checks); the
    targets are the bytegraph / torch.compile ratios this workload must stay under."""

    name: str
    description: str
    build: Callable[[], Case]
    captures: int | None = None
    rounds: int | None = None
    timed_with: str | None = None
    capture_target: float = CAPTURE_RATIO_TARGET
    overhead_target: float = OVERHEAD_RATIO_TARGET


WORKLOADS: dict[str, Workload] = {}


def workload(name: str, description: str, **options: Any) -> Callable[[Callable[[], Case]], Callable[[], Case]]:
    """Register `build` under `name` (`options`: Workload's optional fields); names are unique
    and keep registration order."""

    def register(build: Callable[[], Case]) -> Callable[[], Case]:
        if name in WORKLOADS:
            raise ValueError(f"workload {name!r} is registered twice")
        WORKLOADS[name] = Workload(name, description, build, **options)
        return build

    return register


def seeded_inputs(*shapes: tuple[int, ...]) -> tuple[torch.Tensor, ...]:
    """Random tensors of these shapes, the same ones at every call (one generator seeded 0)."""
    generator = torch.Generator().manual_seed(0)
    return tuple(torch.randn(shape, generator=generator) for shape in shapes)


def seeded_module(make: Callable[[], torch.nn.Module]) -> torch.nn.Module:
    """`make()` under `torch.manual_seed(0)`: the same initial weights at every build."""
    torch.manual_seed(0)
    return make()
