"""A nested break that cannot resume where it is (a frame waiting for it is inside a `try`
block, whose handler must see what the rest raises) breaks at the call of the deepest frame
that can resume after it (`breaks.call_depth`, Note [Speculation log]), not at the root's:
the frames outside it still resume in one graph and the frame in the `try` block runs
compiled on its own, its own break resuming inside its block."""
import pytest
import torch

import bytegraph
from helpers import check, explain_counts


def inner(x, fail):
    x = x + 1
    bytegraph.graph_break()
    if fail:
        raise ValueError("raised after the break")
    return x + 1


def middle(x, fail):
    x = x + 1
    x = inner(x, fail)
    return x + 1


def in_try(x, fail):
    x = x + 1
    try:
        x = x + 1
        x = middle(x, fail)
        x = x + 1
    except ValueError:
        x = x - 100
    return x + 1


def outer(x, fail):
    x = x + 1
    x = in_try(x, fail)
    return x + 1


def root(x, fail):
    x = x + 1
    x = outer(x, fail)
    return x + 1


@pytest.mark.parametrize("fail", [False, True])
def test_break_under_a_try_block_two_frames_up(fail):
    check(root, torch.randn(3, requires_grad=True), fail)


def test_frames_outside_the_try_block_resume_in_one_graph():
    # root+outer before the call of in_try | in_try's prefix | middle+inner before the break |
    # inner+middle after it | in_try's rest | outer+root after in_try: 6 (8 breaking at the root's call)
    graphs, breaks, ops = explain_counts(root, torch.zeros(3), False)
    assert (graphs, breaks) == (6, 3)
    assert ops == [2, 2, 2, 2, 2, 2]
