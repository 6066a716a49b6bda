"""The functions bytegraph compiles in place of a user's own frame: `forward_call`, the root
frame of a compiled module (`bytegraph.compile(module)`), by which the module wrapper calls
it and tooling (verify mode's reports) recognises a module's compiled call. And the hooks
tooling listens on: `LISTENERS`, the callables told of each new cache entry (counters,
explain, the compile report, tests' recorders), and `RECOMPILE_LISTENERS`, told of each
recompile before it captures (the compile report); with none, a recompile computes nothing
for them.
"""
from __future__ import annotations

LISTENERS: list = []  # callables (compiled_function, entry, graph_break | None) told of each new entry
# callables (compiled_function, failures, values) told of a miss that recompiles, before it captures:
# `failures` are runtime/recompiles.py's (the first failing guard of each entry), `values` the call's locals
RECOMPILE_LISTENERS: list = []


def forward_call(self, *args, **kwargs):
    """The root frame of a compiled module: one call of the module."""
    return self(*args, **kwargs)
