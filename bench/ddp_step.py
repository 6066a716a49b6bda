"""A DDP training step on 2 ranks (issue 40 item 5): `python -m bench.ddp_step [--backends
aot_eager,inductor] [--steps N] [--model mlp|transformer] [--layers L] [--width W]
[--bucket-cap-mb MB]` (`make bench-dist`).

Two processes (gloo over 127.0.0.1) train an MLP of `--layers` (8) x (Linear(W, W) + ReLU), W =
`--width` (1024), batch 64, or (`--model transformer`) `--layers` pre-norm transformer blocks of
width W (attention with 4 heads, MLP 4x), batch 8 x 32 tokens, SGD, in DistributedDataParallel
with `bucket_cap_mb` (8): eagerly, as `DDP(bytegraph.compile(m))` split at DDP's buckets
(`config.optimize_ddp`, Note [DDP bucket splits]) and unsplit, and as `DDP(torch.compile(m))` (the
reference, split by its DDPOptimizer, and unsplit with `torch._dynamo.config.optimize_ddp =
False`), for each backend. Each way: 3 warm-up steps (the compile, DDP's bucket rebuild), then
`--steps` (10) timed steps; printed, from rank 0: the median step time, the graphs the backend
got, and the overlap, the share of the all-reduce time (a comm hook's start to its future's
completion, per bucket) that falls before the backward reaches the input (a hook on the input's
gradient: the backward's compute is over), averaged over the timed steps. Both ranks run on a
shared machine's cores: rough figures.
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
    """The DDP module of `way`; each graph a backend compiles is appended to `graphs`."""
    mlp = (_mlp if args.model == "mlp" else _transformer)(args.layers, args.width)
    if way == "eager":
        return DDP(mlp, bucket_cap_mb=args.bucket_cap_mb)
    if way.startswith("bytegraph"):
        inner = lookup_backend(backend)
        bytegraph.reset()
        bytegraph.config.optimize_ddp = way == "bytegraph split"
        compiled = bytegraph.compile(mlp, backend=lambda gm, ex: graphs.append(gm) or inner(gm, ex))
        return DDP(compiled, bucket_cap_mb=args.bucket_cap_mb)
    import torch._dynamo  # the reference only
    from torch._dynamo.backends.registry import lookup_backend as torch_backend

    torch._dynamo.reset()
    torch._dynamo.config.optimize_ddp = way == "torch.compile split"
    inner = torch_backend(backend)
    compiled = torch.compile(mlp, backend=lambda gm, ex: graphs.append(gm) or inner(gm, ex))
    return DDP(compiled, bucket_cap_mb=args.bucket_cap_mb)


def _step_times(model, args, rank: int) -> tuple:
    """(the timed steps' seconds, their overlap shares)."""
    world = dist.get_world_size()
    spans, reached = [], []

    def comm_hook(state, bucket):
        start = time.perf_counter()
        fut = dist.all_reduce(bucket.buffer().div_(world), async_op=True).get_future()

        def done(f):
            spans.append((start, time.perf_counter()))
            return f.value()[0]

        return fut.then(done)

    model.register_comm_hook(None, comm_hook)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    times, overlaps = [], []
    for step in range(3 + args.steps):
        torch.manual_seed(rank * 1000 + step)
        x = _input(args)
        x.register_hook(lambda g: reached.append(time.perf_counter()))
        spans.clear()
        reached.clear()
        dist.barrier()
        started = time.perf_counter()
        opt.zero_grad()
        model(x).pow(2).mean().backward()
        opt.step()
        elapsed = time.perf_counter() - started
        if step >= 3:
            times.append(elapsed)
            total = sum(end - start for start, end in spans)
            before = sum(max(0.0, min(end, reached[0]) - start) for start, end in spans)
            overlaps.append(before / total if total else 0.0)
    return times, overlaps


def _rank(rank: int, world: int, port: int, args, out_path: str) -> None:
    torch.set_num_threads(1)
    os.environ["MASTER_ADDR"], os.environ["MASTER_PORT"] = "127.0.0.1", str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    rows = []
    try:
        for backend in args.backends.split(","):
            for way in WAYS:
                if way == "eager" and backend != args.backends.split(",")[0]:
                    continue
                graphs = []
                model = _model(way, backend, args, graphs)
                times, overlaps = _step_times(model, args, rank)
                rows.append(dict(way=way, backend="-" if way == "eager" else backend,
                                 ms=statistics.median(times) * 1e3, graphs=len(graphs),
                                 overlap=statistics.mean(overlaps)))
    finally:
        dist.destroy_process_group()
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump(rows, f)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backends", default="aot_eager")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--model", choices=("mlp", "transformer"), default="mlp")
    parser.add_argument("--bucket-cap-mb", type=float, default=8)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        out_path = os.path.join(tmp, "rows.json")
        mp.spawn(_rank, args=(2, _free_port(), args, out_path), nprocs=2, join=True)
        with open(out_path) as f:
            rows = json.load(f)
    model = f"MLP {args.layers} x Linear({args.width}, {args.width}) + ReLU, batch 64" if args.model == "mlp" \
        else f"transformer {args.layers} blocks of width {args.width} (4 heads, MLP 4x), batch 8 x 32 tokens"
    print(f"DDP step, 2 ranks (gloo), {model}, bucket_cap_mb={args.bucket_cap_mb:g}, median of {args.steps} steps")
    print(f"{'way':<24}{'backend':<11}{'step ms':>9}{'graphs':>8}{'overlap':>9}")
    for row in rows:
        print(f"{row['way']:<24}{row['backend']:<11}{row['ms']:>9.1f}{row['graphs']:>8}{row['overlap']:>9.0%}")


if __name__ == "__main__":
    main(sys.argv[1:])
