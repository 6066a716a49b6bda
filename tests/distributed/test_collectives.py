"""Collectives inside compiled code, on real process groups of 2 and 4 ranks (gloo over
127.0.0.1, `rank_runner`): the functional collectives and the in-place `torch.distributed` ones
are graph ops (`vars/polyfills/distributed.py`, `vars/process_groups.py`), one graph where
torch.compile has one; every rank's results equal eager's, with the second call not
recompiling; `barrier`, `async_op=True` and a group the rank is not in run eagerly at a break
with their reason. Without a process group, eager's error."""
from __future__ import annotations

import time

import pytest
import torch
import torch.distributed as dist

import distributed_cases
from distributed_cases import CASES
from helpers import check
from rank_runner import RankFailure, run_on_ranks

pytestmark = [pytest.mark.skipif(not dist.is_available(), reason="torch.distributed is not available"),
              pytest.mark.xdist_group("process_groups")]  # one worker runs the module: its ranks spawn once

ONE_GRAPH = [fn.__name__ for fn in CASES if fn.__name__ not in
             ("barrier_between", "async_all_reduce", "subgroup_all_reduce")]


@pytest.fixture(scope="module")
def two_ranks():
    return run_on_ranks(distributed_cases.run_cases, world=2)


@pytest.fixture(scope="module")
def four_ranks():
    return run_on_ranks(distributed_cases.run_core_cases, world=4)


@pytest.mark.parametrize("name", [fn.__name__ for fn in CASES])
def test_every_rank_matches_eager(two_ranks, name):
    for rank, report in enumerate(two_ranks):
        case = report[name]
        assert case["same"], f"rank {rank}: bytegraph's result differs from eager's"
        assert case["same_as_reference"], f"rank {rank}: torch.compile's result differs from eager's"
        assert not case["recompiled"], f"rank {rank}: the second call recompiled"


@pytest.mark.parametrize("name", ONE_GRAPH)
def test_collective_in_one_graph(two_ranks, name):
    for rank, report in enumerate(two_ranks):
        case = report[name]
        assert (case["graphs"], case["breaks"]) == (1, []), f"rank {rank}: {case}"
        assert case["graphs"] <= case["tc_graphs"], case  # dist.broadcast: torch.compile breaks (2 graphs)


@pytest.mark.parametrize("name, reason", [
    ("barrier_between", "waits for the other processes"),
    ("async_all_reduce", "async_op=True"),
])
def test_what_runs_eagerly_says_why(two_ranks, name, reason):
    for report in two_ranks:
        assert any(reason in why for why in report[name]["breaks"]), report[name]["breaks"]


def test_four_ranks(four_ranks):
    for rank, report in enumerate(four_ranks):
        for name, case in report.items():
            assert case["same"], f"rank {rank}, {name}: bytegraph's result differs from eager's"
        for name in set(ONE_GRAPH) & set(report):
            assert report[name]["graphs"] == 1, f"rank {rank}, {name}: {report[name]}"
        outside = report["subgroup_all_reduce"]["breaks"]
        assert (rank >= 2) == any("group this rank is not in" in why for why in outside), outside


def _all_reduce(x):
    y = x * 2
    dist.all_reduce(y)
    return y + 1


def test_without_a_process_group_eager_error():
    assert not dist.is_initialized()
    check(_all_reduce, torch.arange(3.0))


def _hangs(rank, world):
    if rank == 0:
        dist.barrier()  # rank 1 never joins it
    else:
        time.sleep(600)  # alive, so rank 0 waits instead of seeing its connection drop
    return rank


def test_a_hung_rank_fails_within_its_timeout():
    with pytest.raises(RankFailure, match="did not finish within"):
        run_on_ranks(_hangs, world=2, timeout=10)
