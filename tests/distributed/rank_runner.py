"""Real process groups for tests: `run_on_ranks(target, world)` spawns `world` processes
joined in a gloo process group over 127.0.0.1 (a free port each time), runs
`target(rank, world)` in each and returns what each returned, in rank order. A rank that
raises fails the call with that rank's traceback; a rank that has not finished within
`timeout` seconds (a hung collective) fails it too, after every rank is killed, so a test
never hangs CI. `target` must be a module-level function (the children import it)."""
from __future__ import annotations

import os
import queue
import socket
import time
import traceback

import torch.distributed as dist
import torch.multiprocessing as mp


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _child(rank: int, world: int, port: int, target, results) -> None:
    try:
        os.environ["MASTER_ADDR"] = "127.0.0.1"
        os.environ["MASTER_PORT"] = str(port)
        dist.init_process_group("gloo", rank=rank, world_size=world)
        try:
            results.put((rank, "ok", target(rank, world)))
        finally:
            dist.destroy_process_group()
    except BaseException:  # reported to the parent, which fails the test with it
        results.put((rank, "raised", traceback.format_exc()))


class RankFailure(AssertionError):
    """A rank raised, or did not finish in time."""


def run_on_ranks(target, world: int = 2, timeout: float = 180.0) -> list:
    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_child, args=(rank, world, port, target, results), daemon=True)
             for rank in range(world)]
    for p in procs:
        p.start()
    got: dict = {}
    deadline = time.monotonic() + timeout
    try:
        while len(got) < world:
            left = deadline - time.monotonic()
            if left <= 0:
                raise RankFailure(f"ranks {sorted(set(range(world)) - set(got))} of {world} did not finish "
                                  f"within {timeout:.0f} s (a hung collective?)")
            try:
                rank, status, value = results.get(timeout=min(left, 1.0))
            except queue.Empty:
                dead = [r for r, p in enumerate(procs) if p.exitcode not in (None, 0) and r not in got]
                if dead:
                    raise RankFailure(f"rank {dead[0]} died with exit code {procs[dead[0]].exitcode}") from None
                continue
            if status == "raised":
                raise RankFailure(f"rank {rank} of {world} raised:\n{value}")
            got[rank] = value
    finally:
        for p in procs:
            if p.is_alive():
                p.join(timeout=5 if len(got) == world else 0)
            if p.is_alive():
                p.kill()
                p.join()
    return [got[r] for r in range(world)]
