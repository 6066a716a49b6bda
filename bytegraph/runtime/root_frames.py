"""The functions bytegraph compiles in place of a user's own frame: `forward_call`, the root
frame of a compiled module (`bytegraph.compile(module)`), by which the module wrapper calls
it and tooling (verify mode's reports) recognises a module's compiled call. And
`LISTENERS`: the callables told of each new cache entry (counters, tests' recorders).
"""
from __future__ import annotations

LISTENERS: list = []  # callables (compiled_function, entry, graph_break | None) told of each new entry


def forward_call(self, *args, **kwargs):
    """The root frame of a compiled module: one call of the module."""
    return self(*args, **kwargs)
