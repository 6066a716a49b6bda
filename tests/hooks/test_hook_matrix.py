"""The hook matrix: where a hook is attached (input tensor, parameter, module
forward, module backward) x when (registered before compiling, inside the compiled region,
after the first compiled call, registered before and removed between calls). Every cell:
three calls, outputs, gradients and the hook log equal to eager. README documents what
each cell captures in the graph."""
from __future__ import annotations

import pytest
import torch

from hook_helpers import differential, leaf

TARGETS = ("input", "parameter", "module_forward", "module_backward")
TIMINGS = ("before", "inside", "after", "removed")


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(3, 4)
        self.fc2 = torch.nn.Linear(4, 2)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def _register(target: str, x, net, log):
    """Attach the target's hook; returns its handle."""
    if target == "input":
        return x.register_hook(lambda g: log.append("input") or g * 2)
    if target == "parameter":
        return net.fc1.weight.register_hook(lambda g: log.append("parameter") or g * 0.5)
    if target == "module_forward":
        return net.fc1.register_forward_hook(lambda m, a, o: log.append("forward") or o * 2)
    return net.fc2.register_full_backward_hook(lambda m, gin, gout: log.append("backward"))


def _world(target: str, timing: str):
    def build():
        torch.manual_seed(0)
        net = Net()
        x = leaf(5, 3, seed=1)  # one input tensor for every call: a hook on it persists
        log = []
        handles = []
        if timing in ("before", "removed"):
            handles.append(_register(target, x, net, log))

        def f(x):
            if timing == "inside":
                _register(target, x, net, log)
            return net(x).sum()

        def after(i, args, out, world):
            if i == 0 and timing == "after":
                handles.append(_register(target, x, net, log))
            if i == 0 and timing == "removed":
                handles.pop().remove()
        build.after = after
        return f, lambda i: (x,), log
    return build


# Which cells compile once and never again: tensor hooks are not guarded (they never
# change the graph); a module hook added or removed between calls recompiles once
# (guards on the hook dicts); one registered inside the region each call grows the
# hook dict, which the code after the registration's break reads (a recompile per call).
def _steady(target: str, timing: str) -> bool:
    return target in ("input", "parameter") or timing == "before"


@pytest.mark.parametrize("timing", TIMINGS)
@pytest.mark.parametrize("target", TARGETS)
def test_hook_matrix(target, timing):
    build = _world(target, timing)

    def after(i, args, out, world):
        build.after(i, args, out, world)
    counter, comp = differential(build, backend="aot_eager", calls=3, steady=_steady(target, timing),
                                 after_call=after)
    fired = comp[-1]["log"]
    if timing != "removed":
        assert fired, "the hook never fired"
    if target in ("input", "parameter"):
        assert counter.frames == 1  # in the graph's residual code, no break
