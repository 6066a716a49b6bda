"""User-tunable settings (`bytegraph.config`). Plain module attributes, read at trace time."""

cache_size_limit = 8
"""Compiled entries kept per code object; past it the frame runs eagerly with one warning."""

inline_depth_limit = 32
"""Deepest chain of inlined user calls; deeper calls make the frame fall back."""

debug = False
"""Lint every FX graph and verify every generated code object (slower captures)."""
