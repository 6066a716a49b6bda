"""Programs that call collectives, run on every rank of a real process group by
`rank_runner.run_on_ranks` (the children import this module): each eagerly, under bytegraph
and under torch.compile (the reference for graph counts), from fresh inputs, with what each
returned and how each captured it reported back to the test (`test_collectives.py`)."""
from __future__ import annotations

import torch
import torch.distributed as dist
import torch.distributed._functional_collectives as fcol

import bytegraph

SUBGROUP = None  # dist.new_group([0, 1]), made by every rank before the cases run


def all_reduce_in_place(x):
    y = x * 2
    dist.all_reduce(y)
    return y + 1


def all_reduce_max_in_place(x):
    y = x * 2
    dist.all_reduce(y, op=dist.ReduceOp.MAX)
    return y - x


def all_reduce_in_place_keeps_aliases(x):
    y = x * 2
    view = y[1:]
    dist.all_reduce(y, dist.ReduceOp.SUM)
    return view * 1, y


def all_gather_into_tensor_in_place(x):
    out = torch.empty(x.shape[0] * dist.get_world_size(), dtype=x.dtype)
    dist.all_gather_into_tensor(out, x * 3)
    return out - 1


def reduce_scatter_tensor_in_place(x):
    out = torch.empty(x.shape[0] // dist.get_world_size())
    dist.reduce_scatter_tensor(out, x + 1)
    return out * 2


def broadcast_in_place(x):
    y = x.clone()
    dist.broadcast(y, src=dist.get_world_size() - 1)
    return y * 5


def functional_all_reduce(x):
    return fcol.all_reduce(x * 2, "sum", dist.group.WORLD) + 1


def functional_all_gather_tensor(x):
    return fcol.all_gather_tensor(x * 2, 0, dist.group.WORLD) + 1


def functional_reduce_scatter_tensor(x):
    return fcol.reduce_scatter_tensor(x * 2, "sum", 0, dist.group.WORLD) + 1


def functional_all_to_all_single(x):
    return fcol.all_to_all_single(x * 2, None, None, dist.group.WORLD) + 1


def functional_broadcast(x):
    return fcol.broadcast(x * 2, 0, dist.group.WORLD) + 1


def rank_and_world_size(x):
    return x * dist.get_rank() + dist.get_world_size()


def barrier_between(x):
    y = x + 1
    dist.barrier()
    return y * 2


def async_all_reduce(x):
    y = x * 2
    work = dist.all_reduce(y, async_op=True)
    work.wait()
    return y + 1


def subgroup_all_reduce(x):
    y = x * 2
    dist.all_reduce(y, group=SUBGROUP)  # ranks outside the subgroup: eager warns and does nothing
    return y + 1


CASES = [all_reduce_in_place, all_reduce_max_in_place, all_reduce_in_place_keeps_aliases,
         all_gather_into_tensor_in_place, reduce_scatter_tensor_in_place, broadcast_in_place,
         functional_all_reduce, functional_all_gather_tensor, functional_reduce_scatter_tensor,
         functional_all_to_all_single, functional_broadcast, rank_and_world_size, barrier_between,
         async_all_reduce, subgroup_all_reduce]


def _input(rank: int, world: int) -> torch.Tensor:
    return torch.arange(4.0 * world) + 100 * rank


def run_core_cases(rank: int, world: int) -> dict:
    """The in-place collectives and the subgroup, without the reference (more ranks than cores)."""
    return run_cases(rank, world, ("all_reduce_in_place", "all_gather_into_tensor_in_place",
                                   "reduce_scatter_tensor_in_place", "broadcast_in_place", "subgroup_all_reduce"),
                     with_reference=False)


def _same(a, b) -> bool:
    if isinstance(a, tuple):
        return type(b) is tuple and len(a) == len(b) and all(map(_same, a, b))
    return torch.equal(torch.as_tensor(a), torch.as_tensor(b))


def _torch_compile_graphs(fn, x) -> tuple:
    import torch._dynamo  # the reference only
    from torch._dynamo.testing import CompileCounter

    torch._dynamo.reset()
    counter = CompileCounter()
    out = torch.compile(fn, backend=counter)(x)
    return out, counter.frame_count


def run_cases(rank: int, world: int, names=None, with_reference: bool = True) -> dict:
    """The cases `names` (all: None) on this rank: eager, bytegraph twice (the second call must
    not recompile) and, with `with_reference`, torch.compile; the results compared here, the counts
    returned."""
    global SUBGROUP
    SUBGROUP = dist.new_group([0, 1])
    report = {}
    for fn in CASES if names is None else [f for f in CASES if f.__name__ in names]:
        x = _input(rank, world)
        eager = fn(x.clone())
        bytegraph.reset()
        explained = bytegraph.explain(fn)(x.clone())
        bytegraph.reset()
        compiled = bytegraph.compile(fn)
        first, second = compiled(x.clone()), compiled(x.clone())
        reference, tc_graphs = _torch_compile_graphs(fn, x.clone()) if with_reference else (eager, None)
        report[fn.__name__] = dict(
            same=_same(eager, first) and _same(eager, second), same_as_reference=_same(eager, reference),
            graphs=explained.graph_count, breaks=[str(r.reason) for r in explained.break_reasons],
            tc_graphs=tc_graphs, recompiled=len(compiled.__bg_compiled__.entries) > 1)
    return report
