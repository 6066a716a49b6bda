"""Golden cases: torch.autocast (CPU) blocks in the graph and across a graph break
(Note [Autocast in the trace] in bytegraph/vars/autocast.py)."""
import torch

from .harness import case


def T(*shape, grad=False):
    return torch.randn(*shape, requires_grad=grad)


@case(lambda: (T(2, 3, grad=True), T(3, 3)), fullgraph=True)
def autocast_block(x, w):
    y = x @ w
    with torch.autocast("cpu", dtype=torch.bfloat16):
        z = torch.relu(y @ w)
        on = torch.is_autocast_enabled("cpu")
    return z + 1, on


@case(lambda: (T(3, 3, grad=True), T(3, 3)), rtol=2e-2, atol=2e-2)
def break_in_autocast(x, w):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ w
        print("inside autocast")
        y = y @ w
    return y, x @ w
