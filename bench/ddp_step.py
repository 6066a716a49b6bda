"""A DDP training step on 2 ranks (issue 40 item 5): `python -m bench.ddp_step [--backends
aot_eager,inductor] [--steps N] [--model mlp|transformer] [--layers L] [--width W]
[--bucket-cap-mb MB] [--ways W,...] [--separate N]` (`make bench-dist`).

Two processes (gloo over 127.0.0.1) train an MLP of `--layers` (8) x (Linear(W, W) + ReLU), W =
`--width` (1024), batch 64, or (`--model transformer`) `--layers` pre-norm transformer blocks of
width W (attention with 4 heads, MLP 4x), batch 8 x 32 tokens, SGD, in DistributedDataParallel
with `bucket_cap_mb` (8): eagerly, as `DDP(bytegraph.compile(m))` split at DDP's buckets
(`config.optimize_ddp`, Note [DDP bucket splits]) and unsplit, and as `DDP(torch.compile(m))` (the
reference, split by its DDPOptimizer, and unsplit with `torch._dynamo.config.optimize_ddp =
False`), for each backend. Each way is built and warmed up by 3 steps (the compile, DDP's bucket
rebuild; each way's switch read then), then `--steps` (10) rounds time one step of every way, the
order rotating (the ways' times share the machine's drift); printed, from rank 0: the median step
time, the graphs the backend got, and the overlap, the share of the all-reduce time (a comm hook's
start to its future's completion, per bucket) that falls before the backward reaches the input (a
hook on the input's gradient: the backward's compute is over), averaged over the timed steps,
and each bytegraph way's step against torch.compile's in the same round. Both ranks run on a
shared machine's cores: rough figures.

In one process the two systems' models slow each other: with identical AOT graphs (the same
partition, Note [Inputs that live across calls]) bytegraph's backward measured 3-4 ms slower than
torch.compile's beside it on the transformer, and as fast or faster each in a process of its own.
`--separate N` therefore runs every way in a pair of rank processes of its own, N rounds, each
bytegraph way right next to its torch.compile way, which goes first alternating (ABBA), and
prints each round's median step per way and bytegraph's minus torch.compile's, round by round.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

import bytegraph
from bytegraph.graph.backends import lookup_backend

WAYS = ("eager", "bytegraph split", "bytegraph unsplit", "torch.compile split", "torch.compile unsplit")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _mlp(layers: int, width: int):
    torch.manual_seed(0)
    return nn.Sequential(*[m for _ in range(layers) for m in (nn.Linear(width, width), nn.ReLU())])


class _Block(nn.Module):
    """A pre-norm transformer block: self-attention (scaled_dot_product_attention) and an MLP."""

    def __init__(self, width: int, heads: int = 4):
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.up, self.down = nn.Linear(width, 4 * width), nn.Linear(4 * width, width)

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, t, 3, self.heads, c // self.heads).unbind(2)
        a = nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2),
                                                       is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
        return x + self.down(nn.functional.gelu(self.up(self.norm2(x))))


def _transformer(layers: int, width: int):
    torch.manual_seed(0)
    return nn.Sequential(*[_Block(width) for _ in range(layers)])


def _input(args) -> torch.Tensor:
    shape = (64, args.width) if args.model == "mlp" else (8, 32, args.width)
    return torch.randn(*shape, requires_grad=True)


def _model(way: str, backend: str, args, graphs: list):
    """The DDP module of `way`; each graph a backend compiles is appended to `graphs`. The
    switch a way sets is read when its model first runs (`_Way` warms it up right away)."""
    mlp = (_mlp if args.model == "mlp" else _transformer)(args.layers, args.width)
    if way == "eager":
        return DDP(mlp, bucket_cap_mb=args.bucket_cap_mb)
    if way.startswith("bytegraph"):
        inner = lookup_backend(backend)
        bytegraph.config.optimize_ddp = way == "bytegraph split"
        compiled = bytegraph.compile(mlp, backend=lambda gm, ex: graphs.append(gm) or inner(gm, ex))
        return DDP(compiled, bucket_cap_mb=args.bucket_cap_mb)
    import torch._dynamo  # the reference only
    from torch._dynamo.backends.registry import lookup_backend as torch_backend

    torch._dynamo.config.optimize_ddp = way == "torch.compile split"
    inner = torch_backend(backend)
    compiled = torch.compile(mlp, backend=lambda gm, ex: graphs.append(gm) or inner(gm, ex))
    return DDP(compiled, bucket_cap_mb=args.bucket_cap_mb)


class _Way:
    """One way of training: its DDP model (compiled by its own backend callable, so no two
    ways share a compiled entry), its optimizer, and its timed steps and overlap shares."""

    def __init__(self, way: str, backend: str, args, rank: int):
        self.way, self.backend, self.args, self.rank = way, backend, args, rank
        self.graphs = []
        self.model = _model(way, backend, args, self.graphs)
        self.spans, self.reached, self.times, self.forwards, self.overlaps = [], [], [], [], []
        self.model.register_comm_hook(None, self._comm_hook)
        self.opt = torch.optim.SGD(self.model.parameters(), lr=0.01)
        for step in range(3):  # the compile, DDP's bucket rebuild
            self.step(step, timed=False)

    def _comm_hook(self, state, bucket):
        start = time.perf_counter()
        fut = dist.all_reduce(bucket.buffer().div_(dist.get_world_size()), async_op=True).get_future()

        def done(f):
            self.spans.append((start, time.perf_counter()))
            return f.value()[0]

        return fut.then(done)

    def step(self, step: int, timed: bool = True) -> None:
        torch.manual_seed(self.rank * 1000 + step)
        x = _input(self.args)
        x.register_hook(lambda g: self.reached.append(time.perf_counter()))
        self.spans.clear()
        self.reached.clear()
        dist.barrier()
        started = time.perf_counter()
        self.opt.zero_grad()
        out = self.model(x)
        forward = time.perf_counter() - started
        out.pow(2).mean().backward()
        self.opt.step()
        elapsed = time.perf_counter() - started
        if timed:
            self.times.append(elapsed)
            self.forwards.append(forward)
            total = sum(end - start for start, end in self.spans)
            before = sum(max(0.0, min(end, self.reached[0]) - start) for start, end in self.spans)
            self.overlaps.append(before / total if total else 0.0)

    def row(self) -> dict:
        return dict(way=self.way, backend="-" if self.way == "eager" else self.backend,
                    ms=statistics.median(self.times) * 1e3, forward_ms=statistics.median(self.forwards) * 1e3,
                    graphs=len(self.graphs), overlap=statistics.mean(self.overlaps), times=self.times,
                    forwards=self.forwards, overlaps=self.overlaps)


def _rank(rank: int, world: int, port: int, args, out_path: str) -> None:
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    backends = args.backends.split(",")
    try:
        ways = [_Way(way, backend, args, rank) for backend in backends for way in args.ways.split(",")
                if way != "eager" or backend == backends[0]]
        for step in range(args.steps):  # a step of every way per round, the order rotating
            for i in range(len(ways)):
                ways[(step + i) % len(ways)].step(3 + step)
    finally:
        dist.destroy_process_group()
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump([way.row() for way in ways], f)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="aot_eager")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--model", choices=("mlp", "transformer"), default="mlp")
    parser.add_argument("--bucket-cap-mb", type=float, default=8)
    parser.add_argument("--ways", default=",".join(WAYS), help=f"comma-separated, of: {', '.join(WAYS)}")
    parser.add_argument("--separate", type=int, default=0, metavar="N",
                        help="run each way in processes of its own, N rounds, each bytegraph way next to its "
                             "torch.compile way, their order alternating (models of the two systems in one "
                             "process slow each other)")
    args = parser.parse_args(argv)
    ways = args.ways.split(",")
    if unknown := set(ways) - set(WAYS):
        parser.error(f"unknown ways: {', '.join(sorted(unknown))}")
    model = f"MLP {args.layers} x Linear({args.width}, {args.width}) + ReLU, batch 64" if args.model == "mlp" \
        else f"transformer {args.layers} blocks of width {args.width} (4 heads, MLP 4x), batch 8 x 32 tokens"
    if args.separate:
        runs = []
        for r in range(args.separate):  # a bytegraph way and its torch.compile way back to back, ABBA
            for way in ways:
                if way.startswith("torch.compile"):
                    continue
                other = _reference(way)
                pair = [way, other] if other in ways else [way]
                for one in (pair if r % 2 == 0 else pair[::-1]):
                    runs.append(_spawn(args, [one]))
        rows = _merged(runs)
        how = f"{args.steps} steps x {args.separate} runs, each way in processes of its own"
    else:
        rows = _spawn(args, ways)
        how = f"median of {args.steps} steps"
    print(f"DDP step, 2 ranks (gloo), {model}, bucket_cap_mb={args.bucket_cap_mb:g}, {how}")
    print(f"{'way':<24}{'backend':<11}{'step ms':>9}{'forward':>9}{'graphs':>8}{'overlap':>9}")
    for row in rows:
        print(f"{row['way']:<24}{row['backend']:<11}{row['ms']:>9.1f}{row['forward_ms']:>9.2f}{row['graphs']:>8}"
              f"{row['overlap']:>9.0%}")
    if args.separate:
        _print_runs(runs)
    else:
        _print_paired(rows)


def _spawn(args, ways: list) -> list:
    """The rows of `ways` timed in one pair of rank processes."""
    args = argparse.Namespace(**{**vars(args), "ways": ",".join(ways)})
    with tempfile.TemporaryDirectory() as tmp:
        out_path = os.path.join(tmp, "rows.json")
        mp.spawn(_rank, args=(2, _free_port(), args, out_path), nprocs=2, join=True)
        with open(out_path) as f:
            return json.load(f)


def _merged(runs: list) -> list:
    """One row per way over every run's steps (medians of all of them, the overlap's mean)."""
    rows = {}
    for run in runs:
        for row in run:
            merged = rows.setdefault((row["way"], row["backend"]), dict(row, times=[], forwards=[], overlaps=[]))
            for key in ("times", "forwards", "overlaps"):
                merged[key] += row[key]
    order = {way: i for i, way in enumerate(WAYS)}
    out = sorted(rows.values(), key=lambda row: (row["backend"] != "-", row["backend"], order[row["way"]]))
    for row in out:
        row.update(ms=statistics.median(row["times"]) * 1e3, forward_ms=statistics.median(row["forwards"]) * 1e3,
                   overlap=statistics.mean(row["overlaps"]))
    return out


def _print_runs(runs: list) -> None:
    """Per run, each way's median step; bytegraph's against torch.compile's of the same round."""
    medians = {}
    for run in runs:
        for row in run:
            medians.setdefault((row["way"], row["backend"]), []).append(row["ms"])
    print("median step of each run, ms; bytegraph minus torch.compile, run by run:")
    for way, backend, ours, theirs in _pairs(medians):
        diffs = [a - b for a, b in zip(ours, theirs)]
        print(f"  {way.split()[1]:<8} {backend:<10} bytegraph {' '.join(f'{m:.1f}' for m in ours)} | torch.compile "
              f"{' '.join(f'{m:.1f}' for m in theirs)} | differences {' '.join(f'{d:+.1f}' for d in diffs)}")


def _reference(way: str) -> str:
    """torch.compile's way that bytegraph's `way` is measured against."""
    return way.replace("bytegraph", "torch.compile")


def _pairs(by_way: dict):
    """(way, backend, bytegraph's values, torch.compile's) for each bytegraph way of `by_way`
    ({(way, backend): values}) whose torch.compile way was measured too."""
    for (way, backend), ours in by_way.items():
        theirs = by_way.get((_reference(way), backend)) if way.startswith("bytegraph") else None
        if theirs is not None:
            yield way, backend, ours, theirs


def _print_paired(rows: list) -> None:
    """bytegraph's step minus torch.compile's in the same round, same backend and splitting: the
    two ran back to back, so the machine's drift cancels; the median difference and the rounds in
    which bytegraph's step was not slower."""
    by_way = {(row["way"], row["backend"]): row["times"] for row in rows}
    print("paired, bytegraph - torch.compile step in the same round:")
    for way, backend, times, other in _pairs(by_way):
        diffs = [(mine - theirs) * 1e3 for mine, theirs in zip(times, other)]
        kept = sum(d <= 0 for d in diffs)
        print(f"  {way.split()[1]:<8} {backend:<10} median {statistics.median(diffs):+.2f} ms, "
              f"bytegraph not slower in {kept} of {len(diffs)} rounds")


if __name__ == "__main__":
    main(sys.argv[1:])
