"""Graphs split at DDP's bucket boundaries (`graph/ddp_split.py`, Note [DDP bucket splits]) on
real process groups of 2 and 4 ranks (gloo over 127.0.0.1, `rank_runner`): `compile(DDP(m))`
and `DDP(compile(m))` of a 4 x (Linear(512, 512) + ReLU) MLP with `bucket_cap_mb=1` give one
graph per bucket (torch.compile: 4 for `DDP(compile(m))`), eager DDP's weights after 3 SGD
steps on every rank, and DDP's all-reduce of the last buckets before the backward reaches the
input (the overlap the split is for); `config.optimize_ddp = False` gives one graph and the same
weights; other caps split where DDP's buckets end; `explain` and the `ddp` log say where and why.
The ranks spawn once per fixture (the cases are batched in `ddp_cases.run_ddp_cases`)."""
from __future__ import annotations

import pytest
import torch.distributed as dist

import ddp_cases
from rank_runner import run_on_ranks

pytestmark = [pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available"),
              pytest.mark.xdist_group("process_groups")]  # one worker runs the module: its ranks spawn once

WAYS = ("compile(DDP)", "DDP(compile)")


@pytest.fixture(scope="module")
def two_ranks():
    return run_on_ranks(ddp_cases.run_ddp_cases, world=2)


@pytest.fixture(scope="module")
def four_ranks():
    return run_on_ranks(ddp_cases.run_four_ranks, world=4)


@pytest.mark.parametrize("way", WAYS)
def test_one_graph_per_bucket_and_eager_weights(two_ranks, way):
    for rank, report in enumerate(two_ranks):
        case = report[way]
        assert case["graphs"] == 4, f"rank {rank}: {case['graphs']} graphs, {case['splits']}"
        assert len(case["splits"]) == 4, case["splits"]
        assert case["counted"] == {"graphs_split": 1, "splits": 4}, case["counted"]
        assert case["max_weight_difference"] == 0.0, f"rank {rank}: {case['max_weight_difference']}"
        assert case["ops"] == [["linear", "relu"], ["linear", "relu_1"], ["linear", "relu"], ["linear", "relu"]]


def test_as_many_graphs_as_torch_compile(two_ranks):
    for report in two_ranks:
        assert report["DDP(compile)"]["graphs"] == report["DDP(compile)"]["tc_graphs"] == 4
        # torch.compile(DDP(m)) gives its counting backend no graph (recorded, not asserted as a target)
        assert report["compile(DDP)"]["graphs"] >= report["compile(DDP)"]["tc_graphs"]


@pytest.mark.parametrize("way", WAYS)
def test_all_reduce_overlaps_backward(two_ranks, way):
    """In the last step (DDP's buckets rebuilt in the order gradients became ready) buckets are
    all-reduced before the backward reaches the input: as eager DDP, unlike one graph."""
    for report in two_ranks:
        split = report[way]["events"]
        assert split.index("backward reached the input") >= 2, split
        assert report["eager events"].index("backward reached the input") >= 2, report["eager events"]
        whole = report[f"{way}, optimize_ddp off"]["events"]
        assert whole[0] == "backward reached the input", whole


@pytest.mark.parametrize("way", WAYS)
def test_switch_off_one_graph_same_weights(two_ranks, way):
    for report in two_ranks:
        case = report[f"{way}, optimize_ddp off"]
        assert (case["graphs"], case["splits"]) == (1, []), case
        assert not case["counted"], case["counted"]
        assert case["max_weight_difference"] == 0.0, case["max_weight_difference"]


@pytest.mark.parametrize("cap, graphs", [
    ("bucket_cap_mb=2", 2),  # two layers (2 MB and a bias) a bucket
    ("default caps", 2),     # first bucket 1 MB (DDP's _DEFAULT_FIRST_BUCKET_BYTES), the rest in one 25 MB bucket
])
def test_other_caps(two_ranks, cap, graphs):
    for report in two_ranks:
        case = report[f"compile(DDP), {cap}"]
        assert case["graphs"] == graphs, case["splits"]
        assert case["max_weight_difference"] == 0.0, case["max_weight_difference"]


def test_explain_and_log_say_where_and_why(two_ranks):
    for report in two_ranks:
        text = report["explain"]
        assert "Graph count: 4" in text, text
        assert "DDP bucket splits:" in text, text
        assert "split 2 of 4 at node linear_1: bucket 2, full (1.0 MB of its 1.0 MB cap)" in text, text
        assert any(line.startswith("split 4 of 4 at node linear_3: bucket 0, full") for line in report["log"]), \
            report["log"]


def test_four_ranks(four_ranks):
    for rank, report in enumerate(four_ranks):
        for way in WAYS:
            case = report[way]
            assert case["graphs"] == 4, f"rank {rank}, {way}: {case['splits']}"
            # 4 ranks: gloo may sum a value in another order when the buckets differ
            assert case["max_weight_difference"] <= 1e-6, f"rank {rank}, {way}: {case['max_weight_difference']}"


def test_symbolic_sizes(two_ranks):
    """`dynamic=True`: the pieces get the capture's fake values as example inputs."""
    for report in two_ranks:
        case = report["compile(DDP), dynamic=True"]
        assert case["graphs"] == 4, case["splits"]
        assert case["max_weight_difference"] == 0.0, case["max_weight_difference"]


def test_not_split_says_why(two_ranks):
    """A grad-mode switch in the graph: one graph (correct, without the overlap), the log says why."""
    for report in two_ranks:
        case = report["DDP(compile), a no_grad block"]
        assert case["graphs"] == 1, case["splits"]
        assert case["max_weight_difference"] == 0.0, case["max_weight_difference"]
        assert any("not split at DDP buckets: it switches grad mode" in line for line in case["log"]), case["log"]


def test_each_graph_of_a_break_split(two_ranks):
    """A graph break between the halves: each graph (two layers, 2 MB) is cut in two."""
    for report in two_ranks:
        case = report["DDP(compile), a graph break"]
        assert case["graphs"] == 4, case["splits"]
        assert [line.split(":")[0] for line in case["splits"]] == \
            ["split 1 of 2 at node linear", "split 2 of 2 at node linear_1"] * 2, case["splits"]
        assert case["max_weight_difference"] == 0.0, case["max_weight_difference"]
