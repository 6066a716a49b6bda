"""TorchFunctionMode context managers in the trace (`with mode:`): bytegraph does not run a
mode's `__torch_function__` around the torch calls of its block, so entering one is a graph
break that says so (not "calling C function _push_on_torch_function_stack, which bytegraph
does not know"), and the block's results are eager's. torch.compile traces the mode's
`__torch_function__` (transformers' `TransformGetItemToIndex` around vmapped masks: t5gemma2,
unlimited_ocr): a known gap, kept as a strict xfail."""
import pytest
import torch
from torch.overrides import TorchFunctionMode

import bytegraph
from helpers import check


class _AddOne(TorchFunctionMode):
    """Adds one to every `torch.mul` result."""

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        return out + 1 if func is torch.mul else out


def _fn(x):
    y = x * 2
    with _AddOne():
        z = torch.mul(y, 3)
    return z - x


def test_entering_a_mode_breaks_with_the_reason_and_results_are_eagers():
    reasons = [b.reason for b in bytegraph.explain(_fn, torch.randn(3)).break_reasons]
    assert reasons and all("does not know" not in r for r in reasons), reasons
    assert any("TorchFunctionMode" in r and "__torch_function__" in r for r in reasons), reasons
    check(_fn, torch.randn(3))


def test_device_context_manager_stays_one_graph():
    def fn(x):
        with torch.device("cpu"):
            y = torch.ones(3)
        return x + y

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


@pytest.mark.xfail(strict=True, reason="a TorchFunctionMode's __torch_function__ is not traced around the torch "
                                       "calls of its block (torch.compile traces it)")
def test_mode_block_in_one_graph():
    check(_fn, torch.randn(3), graphs=1, fullgraph=True)
