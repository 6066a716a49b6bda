"""Training-step workloads with backward hooks (issue 17).

Registered in `bench.workloads` (so `make bench` runs it): `mlp_hook_train_step`, a 2-layer MLP
step whose forward registers a gradient hook on its activation and whose `loss.backward()`
runs inside the compiled function (both systems break there and run the backward eagerly;
bytegraph keeps the hook in its forward graph, torch.compile breaks at `register_hook` on an
intermediate).

`python -m bench.compiled_autograd_workloads` runs the same step under compiled autograd,
side by side: bytegraph (`bytegraph.compile` forward, `bytegraph.compiled_autograd.enable`
backward) against torch.compile + `torch._dynamo.compiled_autograd` (the reference, used only
here), both with the `eager` backend: capture time (the first step: forward and backward
graphs) and steady per-step time, with the weights after the steps checked against eager.
The registry's `Case` gives both systems one function to compile, which cannot express a
context manager around the backward per system, hence the separate runner.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import torch

import bytegraph
from bench.case import Case, workload


def _mlp() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))


def _data() -> tuple[torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    return torch.randn(32, 64, generator=generator), torch.randn(32, 10, generator=generator)


def scale_grad(g):
    return g * 0.5


def forward_loss(model, x, t):
    h = model[1](model[0](x))
    h.register_hook(scale_grad)
    return ((model[2](h) - t) ** 2).mean()


def mlp_hook_train_step(model, x, t):
    loss = forward_loss(model, x, t)
    loss.backward()
    return loss.detach()


def _build_mlp_hook_train_step() -> Case:
    return Case(mlp_hook_train_step, (_mlp(), *_data()))


workload("mlp_hook_train_step", "MLP training step: a grad hook on an activation, backward in the "
         "function")(_build_mlp_hook_train_step)


# ---- compiled autograd, side by side ----------------------------------------------------------


def _sgd(model) -> None:
    with torch.no_grad():
        for p in model.parameters():
            p -= 0.01 * p.grad
            p.grad = None


def _step(forward, model, x, t) -> None:
    forward(model, x, t).backward()
    _sgd(model)


def _bytegraph_system():
    bytegraph.reset()
    return bytegraph.compile(forward_loss, backend="eager"), lambda: bytegraph.compiled_autograd.enable("eager")


def _torch_system():
    import torch._dynamo
    import torch._dynamo.compiled_autograd

    torch._dynamo.reset()
    torch._dynamo.compiled_autograd.reset()
    return (torch.compile(forward_loss, backend="eager"),
            lambda: torch._dynamo.compiled_autograd._enable(torch.compile(backend="eager")))


def measure(system, steps: int) -> dict:
    forward, enable = system()
    model = _mlp()
    x, t = _data()
    with enable():
        start = time.perf_counter()
        _step(forward, model, x, t)
        capture_ms = (time.perf_counter() - start) * 1e3
        times = []
        for _ in range(steps - 1):
            start = time.perf_counter()
            _step(forward, model, x, t)
            times.append((time.perf_counter() - start) * 1e6)
    return {"capture_ms": capture_ms, "step_us": statistics.median(times), "model": model}


def _eager(steps: int) -> dict:
    model = _mlp()
    x, t = _data()
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        _step(forward_loss, model, x, t)
        times.append((time.perf_counter() - start) * 1e6)
    return {"step_us": statistics.median(times[1:]), "model": model}


def _same_weights(a, b) -> bool:
    return all(torch.allclose(p, q, atol=1e-5) for p, q in zip(a.parameters(), b.parameters()))


def _one_system(name: str, steps: int) -> None:
    """Measure one system in this process (the engine binds its node functions to the first
    compiled-autograd compiler of a process, so each system gets a process of its own)."""
    eager = _eager(steps)
    row = measure(_SYSTEMS[name], steps)
    print(json.dumps({"capture_ms": row["capture_ms"], "step_us": row["step_us"], "eager_step_us": eager["step_us"],
                      "same_weights": _same_weights(eager["model"], row["model"])}))


_SYSTEMS = {"bytegraph": _bytegraph_system, "torch.compile": _torch_system}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--system", choices=list(_SYSTEMS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.system is not None:
        return _one_system(args.system, args.steps)
    rows = {}
    for name in _SYSTEMS:
        out = subprocess.run([sys.executable, "-m", "bench.compiled_autograd_workloads", "--system", name,
                              "--steps", str(args.steps)], capture_output=True, text=True, check=True)
        rows[name] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"compiled-autograd MLP training step, {args.steps} steps (eager step "
          f"{rows['bytegraph']['eager_step_us']:.0f} µs), backend eager")
    print(f"{'system':<14} {'capture ms':>11} {'step µs':>9}  weights == eager")
    for name, row in rows.items():
        print(f"{name:<14} {row['capture_ms']:>11.1f} {row['step_us']:>9.0f}  {row['same_weights']}")
    ours, theirs = rows["bytegraph"], rows["torch.compile"]
    print(f"capture ratio {ours['capture_ms'] / theirs['capture_ms']:.2f}, "
          f"step ratio {ours['step_us'] / theirs['step_us']:.2f}")


if __name__ == "__main__":
    main()
