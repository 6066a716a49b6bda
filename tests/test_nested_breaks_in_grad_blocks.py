"""A graph break inside calls made in grad-mode `with` blocks resumes in the innermost frame,
as torch.compile's nested graph breaks do (Note [Nested breaks inside grad-mode blocks] in
translate/breaks.py): the frames' resume functions keep their blocks, and if the breaking call
or anything after it raises, the grad mode is the one eager's exits would leave. The shapes
are torch's test_nested_graph_breaks.py ones, with torch.compile's frame counts."""
import itertools

import pytest
import torch

import bytegraph
from helpers import CompileCounter, check

BLOCKS = {"no_grad": torch.no_grad, "enable_grad": torch.enable_grad,
          "set_grad_enabled(False)": lambda: torch.set_grad_enabled(False)}


@torch.compiler.disable
def eager_step(x, fail):
    if fail == "in the break":
        raise ValueError("raised by the call at the break")
    return x + 1


def _program(outer_block, inner_block):
    def inner(x, fail):
        with BLOCKS[inner_block]():
            y = eager_step(x + 2, fail) + 4
            if fail == "after the break":
                raise KeyError("raised by the resumed code")
            return y, torch.is_grad_enabled()

    def outer(x, fail):
        with BLOCKS[outer_block]():
            y, inner_mode = inner(x + 8, fail)
            return y + 16, inner_mode, torch.is_grad_enabled()
    return outer


@pytest.fixture
def restores_grad_mode():
    mode = torch.is_grad_enabled()
    yield
    torch._C._set_grad_enabled(mode)


@pytest.mark.usefixtures("restores_grad_mode")
@pytest.mark.parametrize("caller_grad", [True, False])
@pytest.mark.parametrize("outer_block,inner_block", list(itertools.product(BLOCKS, repeat=2)))
@pytest.mark.parametrize("fail", [None, "in the break", "after the break"])
def test_nested_break_in_grad_blocks(outer_block, inner_block, caller_grad, fail):
    fn = _program(outer_block, inner_block)
    x = torch.randn(3, requires_grad=True)
    result = check(fn, x, fail, setup=lambda: torch._C._set_grad_enabled(caller_grad),
                   state=torch.is_grad_enabled, rerun=fail is None)
    if fail is None:
        assert result.counter.frame_count == 2  # before the break, and the rest of both frames


def test_frame_and_op_counts_as_torch_compile():
    """torch's test_ctx_manager_active_in_nested_call (2 frames there too)."""
    def f2(x):
        with torch.no_grad():
            return eager_step(x + 2, None) + 4

    def f3(x):
        with torch.enable_grad():
            return f2(x + 8) + 16

    counter = CompileCounter()
    torch.testing.assert_close(bytegraph.compile(f3, backend=counter)(torch.zeros(3)), f3(torch.zeros(3)))
    assert counter.frame_count == 2


def test_try_block_in_a_waiting_frame_still_breaks_at_its_call():
    """An `except` of a waiting frame must see the exception: that frame is not resumed
    inside (its call runs compiled on its own)."""
    def f2(x, fail):
        return eager_step(x + 2, fail) * 3

    def f3(x, fail):
        try:
            return f2(x + 8, fail) + 16
        except ValueError:
            return x - 1

    for fail in (None, "in the break"):
        check(f3, torch.randn(3), fail)
