"""Queries of global state that torch's and libraries' code asks (functorch transforms
active, a CUDA graph being captured): folded to the current answer and guarded per call,
declared in `torch_functions.SPECIAL` (so in the trace rules)."""
import torch

import bytegraph
from bytegraph.vars.trace_rules import Kind, lookup
from helpers import check


def _functorch_active():  # an inlined helper
    return torch._C._are_functorch_transforms_active()


def test_functorch_query_folded_one_graph():
    def fn(x):
        return x * 2 if not _functorch_active() else x

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_functorch_query_across_a_break():
    def fn(x):
        x = x + _functorch_active()
        bytegraph.graph_break()
        return x * (1 + _functorch_active())

    check(fn, torch.randn(3), graphs=2)


def test_functorch_query_guarded():
    out = bytegraph.explain(lambda x: x + _functorch_active(), torch.ones(2))
    assert any("_are_functorch_transforms_active" in g for g in out.guards), out.guards


def test_cuda_capture_query_like_eager():
    """On a build without CUDA the query raises RuntimeError, in eager and compiled alike."""
    def fn(x):
        try:
            capturing = torch.cuda.is_current_stream_capturing()
        except RuntimeError as e:
            return x - 1, type(e).__name__
        return x + capturing, "ok"

    check(fn, torch.randn(2), graphs=1)


def test_queries_have_rules():
    for fn in (torch._C._are_functorch_transforms_active, torch.cuda.is_current_stream_capturing,
               torch._C._is_tracing, torch.Tensor.masked_fill):
        assert lookup(fn).kind in (Kind.BUILTIN, Kind.GRAPH_OP), fn


def test_masked_fill_with_finfo_min_one_graph():
    """The masking utilities' pattern: fill with the dtype's most negative value."""
    def fn(scores, mask):
        return torch.softmax(scores.masked_fill(~mask, torch.finfo(scores.dtype).min), dim=-1)

    mask = torch.tensor([[True, False, True], [True, True, False]])
    check(fn, torch.randn(2, 3), mask, graphs=1, fullgraph=True)
