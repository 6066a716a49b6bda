"""Higher-order ops captured by speculation: `torch.cond` (cond.py), `map` (map.py),
`wrap` and `torch.utils.checkpoint.checkpoint` (wrap.py), on the shared body machinery of
body.py (subgraphs, lifting, speculation scopes, rollback).

`HIGHER_ORDER_OPS` is their trace-rules table (vars/trace_rules.py): callable -> tracker.
"""
from __future__ import annotations

from .cond import CondVariable, cond_callables
from .map import MapVariable, map_callables
from .wrap import wrap_callables

HIGHER_ORDER_OPS = {**{fn: CondVariable for fn in cond_callables()}, **{fn: MapVariable for fn in map_callables()},
                    **wrap_callables()}
