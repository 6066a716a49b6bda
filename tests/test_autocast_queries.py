"""Queries of the autocast state in traced code beyond the CPU's (`vars/autocast/trackers.py`):
torch's per-device spellings (`torch.get_autocast_gpu_dtype()`, `is_autocast_ipu_enabled()`,
`get_autocast_xla_dtype()`, ..., deprecated aliases of `get_autocast_dtype(device)`), and
`torch._C._is_any_autocast_enabled()`. Folded: the CPU's answer from the traced state, any
other device's from the real state, guarded, so a change of it recompiles. Differential:
outputs as eager, one graph (torch.compile folds them too, fullgraph=True)."""
import warnings

import pytest
import torch

from helpers import check, compile_counted


@pytest.fixture(autouse=True)
def _quiet_and_restored():
    """The per-device spellings warn (deprecated); the autocast state a test changes is put back."""
    saved = {d: (torch.is_autocast_enabled(d), torch.get_autocast_dtype(d)) for d in ("cpu", "cuda")}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield
    for device, (enabled, dtype) in saved.items():
        torch.set_autocast_enabled(device, enabled)
        torch.set_autocast_dtype(device, dtype)


def _x(*shape):
    return torch.randn(*shape, requires_grad=True)


def test_gpu_dtype_casts_in_one_graph():
    def fn(x):
        dtype = torch.get_autocast_gpu_dtype()
        return x.type(dtype)

    check(fn, _x(3), graphs=1, fullgraph=True)


@pytest.mark.parametrize("query", [
    torch.get_autocast_gpu_dtype, torch.get_autocast_ipu_dtype, torch.get_autocast_xla_dtype,
    torch.get_autocast_cpu_dtype, torch.is_autocast_ipu_enabled, torch.is_autocast_xla_enabled,
    torch.is_autocast_cpu_enabled, torch._C._is_any_autocast_enabled,
], ids=lambda q: q.__name__)
def test_every_device_query_folds(query):
    check(lambda x: (x * 2, query()), _x(3), graphs=1, fullgraph=True)


def test_gpu_dtype_is_guarded():
    def fn(x):
        return x.to(torch.get_autocast_gpu_dtype()) * 2

    compiled, counter = compile_counted(fn)
    x = torch.randn(3)
    assert compiled(x).dtype == torch.float16
    torch.set_autocast_dtype("cuda", torch.bfloat16)
    assert compiled(x).dtype == torch.bfloat16  # eager's answer now: recompiled
    assert counter.frame_count == 2


def is_any(x):
    if torch._C._is_any_autocast_enabled():
        return x + 1
    return x - 1


def test_is_any_autocast_enabled_in_a_branch():
    check(is_any, _x(3), graphs=1, fullgraph=True)


def test_is_any_autocast_enabled_follows_the_traced_cpu_blocks():
    def fn(x):
        outside = torch._C._is_any_autocast_enabled()
        with torch.autocast("cpu", dtype=torch.bfloat16):
            inside = torch._C._is_any_autocast_enabled()
            with torch.autocast("cpu", enabled=False):
                off = torch._C._is_any_autocast_enabled()
        return x * 2, outside, inside, off

    res = check(fn, _x(3), graphs=1, fullgraph=True)
    assert res.compiled.out[1:] == (False, True, False)


def test_is_any_autocast_enabled_sees_another_device_and_is_guarded():
    for on in (False, True):
        check(is_any, _x(3), graphs=1, fullgraph=True, setup=lambda: torch.set_autocast_enabled("cuda", on))
    compiled, counter = compile_counted(is_any)
    x = torch.ones(2)
    for on in (False, True, False, True):  # the same compiled function, CUDA autocast switched between calls
        torch.set_autocast_enabled("cuda", on)
        torch.testing.assert_close(compiled(x), is_any(x))
    assert counter.frame_count == 2


def test_is_any_autocast_enabled_inside_a_cpu_block_with_another_device_on():
    def fn(x):
        with torch.autocast("cpu", enabled=False):
            return x * 2, torch._C._is_any_autocast_enabled()

    check(fn, _x(3), graphs=1, fullgraph=True, setup=lambda: torch.set_autocast_enabled("cuda", True))
