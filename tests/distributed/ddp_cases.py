"""Training under DistributedDataParallel on every rank of a real process group (run by
`rank_runner.run_on_ranks`; the children import this module): a 4 x (Linear(512, 512) + ReLU)
MLP with `bucket_cap_mb=1` trained 3 SGD steps eagerly, as `compile(DDP(m))` and as
`DDP(compile(m))` (backend aot_eager, counted), with `config.optimize_ddp` on and off; what each
gave (graphs, weights compared with eager DDP's here, the DDP split lines, the order of the last
step's bucket all-reduces and the backward) reported back to `test_ddp_split.py`."""
from __future__ import annotations

import logging

import torch
import torch.nn as nn
from torch.distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
from torch.nn.parallel import DistributedDataParallel as DDP

import bytegraph
from bytegraph.graph.backends import lookup_backend
from bytegraph.runtime.root_frames import LISTENERS

STEPS = 3


def mlp(layers: int = 4, width: int = 512) -> nn.Module:
    torch.manual_seed(0)  # the same weights on every rank, and for every way of running
    return nn.Sequential(*[m for _ in range(layers) for m in (nn.Linear(width, width), nn.ReLU())])


class NoGradInside(nn.Module):
    """The MLP with a statistic taken under `torch.no_grad()` (a grad-mode switch in the graph)."""

    def __init__(self):
        super().__init__()
        self.body = mlp()

    def forward(self, x):
        with torch.no_grad():
            scale = x.abs().mean() + 1
        return self.body(x) / scale


class BreakInside(nn.Module):
    """The MLP with a graph break between its halves: two graphs, each split at its buckets."""

    def __init__(self):
        super().__init__()
        self.first, self.second = mlp(layers=2), mlp(layers=2)

    def forward(self, x):
        h = self.first(x)
        bytegraph.graph_break()
        return self.second(h)


def _train(model: nn.Module, ddp: DDP, rank: int) -> tuple:
    """3 SGD steps on this rank's data; (the weights after, the events of the last step)."""
    events = []

    def comm_hook(state, bucket):  # DDP calls it when a bucket's gradients are all ready
        events.append(f"all-reduce bucket {bucket.index()}")
        return allreduce_hook(state, bucket)

    ddp.register_comm_hook(None, comm_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for step in range(STEPS):
        torch.manual_seed(100 + rank * 10 + step)
        x = torch.randn(16, 512, requires_grad=True)
        events.clear()
        x.register_hook(lambda g: events.append("backward reached the input"))
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
    return [p.detach().clone() for p in ddp.module.parameters()], list(events)


def run(way: str, rank: int, optimize_ddp: bool = True, cap: dict | None = None, dynamic=None,
        make=None) -> dict:
    """Train `make()` (the MLP: None) one way ("eager", "compile(DDP)", "DDP(compile)") with DDP's
    bucket arguments `cap` (`bucket_cap_mb=1`: None); what it gave."""
    make = mlp if make is None else make
    cap = dict(bucket_cap_mb=1) if cap is None else cap
    graphs, splits = [], []
    aot_eager = lookup_backend("aot_eager")

    def backend(gm, example_inputs):
        graphs.append(gm)
        return aot_eager(gm, example_inputs)

    def listener(compiled, entry, brk):
        if entry.graph_module is not None:
            splits.extend(entry.graph_module.meta.get("bg_ddp_splits", ()))

    bytegraph.reset()
    bytegraph.counters.clear()
    bytegraph.config.optimize_ddp = optimize_ddp
    LISTENERS.append(listener)
    try:
        if way == "eager":
            ddp = model = DDP(make(), **cap)
        elif way == "compile(DDP)":
            ddp = DDP(make(), **cap)
            model = bytegraph.compile(ddp, backend=backend, dynamic=dynamic)
        else:
            model = ddp = DDP(bytegraph.compile(make(), backend=backend, dynamic=dynamic), **cap)
        weights, events = _train(model, ddp, rank)
    finally:
        LISTENERS.remove(listener)
        bytegraph.config.optimize_ddp = True
    return dict(graphs=len(graphs), weights=weights, splits=splits, events=events,
                counted=dict(bytegraph.counters["ddp"]),
                ops=[[n.name for n in gm.graph.nodes if n.op == "call_function"] for gm in graphs])


def _torch_compile_graphs(way: str) -> int:
    """How many graphs torch.compile's counting backend gets for one step (the reference)."""
    import torch._dynamo  # the reference only
    from torch._dynamo.testing import CompileCounter

    torch._dynamo.reset()
    counter = CompileCounter()
    if way == "compile(DDP)":
        model = torch.compile(DDP(mlp(), bucket_cap_mb=1), backend=counter)
    else:
        model = DDP(torch.compile(mlp(), backend=counter), bucket_cap_mb=1)
    model(torch.randn(16, 512)).sum().backward()
    return counter.frame_count


def _compared(got: dict, eager: dict) -> dict:
    worst = max((a - b).abs().max().item() for a, b in zip(got.pop("weights"), eager["weights"]))
    return dict(got, max_weight_difference=worst)


def _explained() -> str:
    """`bytegraph.explain` of one call of `compile(DDP(m))`."""
    bytegraph.reset()
    return str(bytegraph.explain(DDP(mlp(), bucket_cap_mb=1))(torch.randn(16, 512)))


def _log_lines(fn) -> tuple:
    """(what `fn()` returned, the `ddp` log's lines meanwhile)."""
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    log = logging.getLogger("bytegraph.ddp")
    log.addHandler(handler)
    bytegraph.set_logs("ddp")
    try:
        return fn(), [r.getMessage() for r in records]
    finally:
        bytegraph.set_logs()
        log.removeHandler(handler)


def run_ddp_cases(rank: int, world: int) -> dict:
    """Every way, split and unsplit, compared with eager DDP on this rank; other bucket caps;
    explain and the log; torch.compile's graph counts."""
    eager = run("eager", rank)
    report = {"eager events": eager["events"]}
    for way in ("compile(DDP)", "DDP(compile)"):
        report[way] = _compared(run(way, rank), eager)
        report[way + ", optimize_ddp off"] = _compared(run(way, rank, optimize_ddp=False), eager)
        report[way]["tc_graphs"] = _torch_compile_graphs(way)
    for name, cap in (("bucket_cap_mb=2", dict(bucket_cap_mb=2)), ("default caps", {})):
        report[f"compile(DDP), {name}"] = _compared(run("compile(DDP)", rank, cap=cap), run("eager", rank, cap=cap))
    report["compile(DDP), dynamic=True"] = _compared(run("compile(DDP)", rank, dynamic=True), eager)
    report["DDP(compile), a graph break"] = _compared(run("DDP(compile)", rank, make=BreakInside),
                                                      run("eager", rank, make=BreakInside))
    no_grad, no_grad_log = _log_lines(lambda: run("DDP(compile)", rank, make=NoGradInside))
    report["DDP(compile), a no_grad block"] = dict(_compared(no_grad, run("eager", rank, make=NoGradInside)),
                                                   log=no_grad_log)
    report["explain"], report["log"] = _log_lines(_explained)
    return report


def run_four_ranks(rank: int, world: int) -> dict:
    """`compile(DDP(m))` and its switch off on 4 ranks (no reference: more ranks than cores)."""
    eager = run("eager", rank)
    return {"compile(DDP)": _compared(run("compile(DDP)", rank), eager),
            "DDP(compile)": _compared(run("DDP(compile)", rank), eager)}

