"""`bytegraph.counters`: process-wide event counts for tooling, as
`torch._dynamo.utils.counters` is for torch.compile.

A `collections.defaultdict(collections.Counter)`:
- `counters["graph_break"][reason]`: every graph break taken (a capture ending at a break,
  or a frame run eagerly because of one), keyed by the reason as `bytegraph.explain` shows
  it (`BreakReason.reason`);
- `counters["stats"]["unique_graphs"]`: graphs compiled; `counters["stats"]["calls_captured"]`:
  the call nodes (`call_function`/`call_method`/`call_module`) in them;
- `counters["blocks"]`: module calls "traced", "recorded" and "reused" (replayed without
  tracing their bytecode) under `config.reuse_repeated_blocks` (vars/repeated_blocks.py);
- `counters["ddp"]["graphs_split"]`: graphs split at DDP's bucket boundaries, `counters["ddp"]["splits"]`
  their pieces (each compiled by the backend; Note [DDP bucket splits] in graph/ddp_split.py): a split
  graph is still one of `unique_graphs`, as in torch's counters.
Counted when a cache entry is installed (a listener of `compiled_function.LISTENERS`), so a
call that hits an entry costs nothing. Like torch's, `reset()` leaves them alone: clear them
with `bytegraph.counters.clear()`.
"""
from __future__ import annotations

import collections

from .root_frames import LISTENERS

counters: collections.defaultdict = collections.defaultdict(collections.Counter)

_CALL_OPS = frozenset({"call_function", "call_method", "call_module"})


def _count(compiled, entry, graph_break) -> None:
    if graph_break is not None:
        counters["graph_break"][graph_break.reason] += 1
    if entry.graph_module is not None:
        stats = counters["stats"]
        stats["unique_graphs"] += 1
        stats["calls_captured"] += sum(1 for node in entry.graph_module.graph.nodes if node.op in _CALL_OPS)
        counters["blocks"].update(entry.graph_module.meta.get("bg_blocks", {}))
        splits = entry.graph_module.meta.get("bg_ddp_splits")
        if splits:
            counters["ddp"]["graphs_split"] += 1
            counters["ddp"]["splits"] += len(splits)


LISTENERS.append(_count)
