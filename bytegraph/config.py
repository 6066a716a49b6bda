"""User-tunable settings (`bytegraph.config`). Plain module attributes, read at trace time.

The two data-dependent switches and `verify` start from the environment (`BYTEGRAPH_CAPTURE_SCALAR_OUTPUTS=1`,
`BYTEGRAPH_CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS=1`, `BYTEGRAPH_VERIFY=1|warn`; the first two as torch.compile's
`TORCHDYNAMO_*` variables), read once at import; setting the attribute later overrides them."""

import os

cache_size_limit = 8
"""Compiled entries kept per code object; past it the frame runs eagerly with one warning."""

inline_depth_limit = 32
"""Deepest chain of inlined user calls; deeper calls make the frame fall back."""

debug = False
"""Lint every FX graph and verify every generated code object (slower captures)."""

capture_scalar_outputs = os.environ.get("BYTEGRAPH_CAPTURE_SCALAR_OUTPUTS") == "1"
"""Capture `t.item()`, `int(t)`, `float(t)` and `t.tolist()` as graph ops whose results are
unbacked symbolic numbers (torch's ShapeEnv), instead of a graph break (Note [Data-dependent
capture] in graph/shapes.py). A Python branch on such a value still breaks."""

capture_dynamic_output_shape_ops = os.environ.get("BYTEGRAPH_CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS") == "1"
"""Capture ops whose output shape depends on tensor data (`nonzero`, `masked_select`, boolean-mask
indexing, `unique`) with unbacked symbolic sizes, instead of a graph break."""

verify = {"1": True, "warn": "warn"}.get(os.environ.get("BYTEGRAPH_VERIFY", ""), False)
"""Verify mode (`runtime/verify.py`): every call of a top-level compiled function that runs a
compiled entry also runs the original function eagerly on deep copies of its arguments and of
the globals and cells it can reach, and compares outputs, arguments after the call, globals and
exceptions. `True` (`BYTEGRAPH_VERIFY=1`): the first difference raises `bytegraph.VerifyError`
after the compiled call; `"warn"` (`BYTEGRAPH_VERIFY=warn`): it is logged as an error on the
`verify` topic and counted in `bytegraph.counters["verify"]["differences"]`. Slow: a debugging aid."""
