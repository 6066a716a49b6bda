"""The transformers models of `bench.hf_models.ONE_GRAPH` as `make bench` workloads (issue 13).

One workload `hf_NAME` per model bytegraph captures whole: the tiny-config model (seeded random
weights, nothing downloaded) called on its inputs as keywords under `torch.no_grad()`, eval mode;
every output tensor is compared with eager's. Issue 13's targets: capture ≤ 0.1 × torch.compile's
and a call no slower than torch.compile's (a per-call target of 1, `bench.run.SAME_SPEED`:
judged by the median over timing rounds of bytegraph's µs per call minus torch.compile's in the
same round, as both systems' rounds vary by more than they differ). They take 9 fresh captures
per system, the first of them cold (other workloads take 5): a model's ratio is near its target, and on
this VM one system's warm captures of one model spread up to 3x, so the median of four warm
captures swung by ±15% between runs. Likewise they take at least 21 per-call timing rounds
(others 7): a model's call is 1-8 ms, mostly its graph, which is the same graph in both
systems, so their per-call times differ by less than the VM moves one round of 50 ms against
the next; within a round the systems take turns call by call (`bench.run.CHUNK_SECONDS`;
docs/performance.md, "Session 14" and "Session 15").
Without transformers the workloads are not registered and `SKIPPED` says why.
"""
from __future__ import annotations

import importlib.util

import torch

from bench.case import Case, workload

CAPTURE_RATIO_TARGET = 0.1
OVERHEAD_RATIO_TARGET = 1.0
CAPTURES = 9
ROUNDS = 21
PREFIX = "hf_"

SKIPPED: str | None = None


def _model_workload(name: str) -> None:
    from bench.hf_models import MODELS, output_tensors

    @workload(f"{PREFIX}{name}", f"transformers {name} (tiny config) in one graph, no_grad, eval",
              capture_target=CAPTURE_RATIO_TARGET, overhead_target=OVERHEAD_RATIO_TARGET,
              captures=CAPTURES, rounds=ROUNDS)
    def _build() -> Case:
        torch.manual_seed(0)  # the same random weights in every build
        model, inputs = MODELS[name].build()
        return Case(model, (), inputs, grad=False, comparable=output_tensors)


if importlib.util.find_spec("transformers") is None:
    SKIPPED = "transformers models skipped: transformers is not installed (pip install -e .[dev])"
else:
    import transformers

    from bench.hf_models import ONE_GRAPH

    transformers.logging.set_verbosity_error()
    for _name in ONE_GRAPH:
        _model_workload(_name)
