"""Static vs dynamic shapes of one function (issue 16): `shapes_static` captures it on plain
inputs, `shapes_dynamic` on the same inputs with the batch and sequence dimensions marked
dynamic (for both systems: `bytegraph.mark_dynamic`, `torch._dynamo.mark_dynamic`), so its
graph takes symbolic sizes and its guard checks them. Targets: capture of the dynamic one at
most 2x the static one, per-call overhead of the dynamic entry within 1.5x of the static one's.
Both overheads are ~2 µs on a ~40 µs call, where 7 rounds leave the median of paired
differences ~0.5 µs apart from run to run, and two workloads timed one after the other see
the machine at different speeds: the pair takes `ROUNDS` timing rounds, and `shapes_dynamic`
times a static entry of the same function in its own rounds, which the per-call check uses.
"""
import torch

import bytegraph
from bench.case import Case, workload

_W1 = torch.randn(16, 32, generator=torch.Generator().manual_seed(1))
_W2 = torch.randn(32, 16, generator=torch.Generator().manual_seed(2))


def attention_block(x):
    b, t, d = x.shape
    h = (x.reshape(b * t, d) @ _W1).relu() @ _W2
    h = h.view(b, t, d)
    scores = (h @ h.transpose(1, 2)) / d ** 0.5
    mask = torch.ones(t, t).tril() == 0
    out = scores.masked_fill(mask, float("-inf")).softmax(-1) @ h
    return out[:, : t // 2].sum(1) + torch.arange(d) * b


ROUNDS = 31


def _x() -> torch.Tensor:
    return torch.randn(4, 8, 16, generator=torch.Generator().manual_seed(0))  # small: per call is overhead


@workload("shapes_static", "a (b, t, d) attention block with static shapes (pair of shapes_dynamic)", rounds=ROUNDS)
def _build_static() -> Case:
    return Case(attention_block, (_x(),))


@workload("shapes_dynamic", "the same block, b and t marked dynamic: capture <= 2x static, per call <= 1.5x",
          rounds=ROUNDS, timed_with="shapes_static")
def _build_dynamic() -> Case:
    import torch._dynamo

    x = _x()
    bytegraph.mark_dynamic(x, [0, 1])
    torch._dynamo.mark_dynamic(x, [0, 1])
    return Case(attention_block, (x,))


# bytegraph-only targets of issue 16 item 4 (reported under the table by bench.run)
RATIO_CHECKS = [
    ("capture_ms", "shapes_dynamic", "shapes_static", 2.0, "bytegraph capture, dynamic / static shapes"),
    ("overhead_us", "shapes_dynamic", "shapes_static", 1.5, "bytegraph per-call overhead, dynamic / static entry"),
]
