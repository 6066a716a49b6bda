"""User-tunable settings (`bytegraph.config`). Plain module attributes, read at trace time.

The data-dependent switches, `automatic_dynamic_shapes` and `verify` start from the environment
(`BYTEGRAPH_CAPTURE_SCALAR_OUTPUTS=1`, `BYTEGRAPH_CAPTURE_DYNAMIC_OUTPUT_SHAPE_OPS=1`,
`BYTEGRAPH_AUTOMATIC_DYNAMIC_SHAPES=0`, `BYTEGRAPH_VERIFY=1|warn`; the first three as torch.compile's
`TORCHDYNAMO_*`/`TORCH_DYNAMO_*` variables), read once at import; setting the attribute later
overrides them; so does `cache_dir` (`BYTEGRAPH_CACHE_DIR`, the persistent capture cache). The
recompile and dynamic-shape knobs have torch.compile's names and meanings
(`torch._dynamo.config`); `cache_size_limit` is another name of `recompile_limit`, as in torch."""

import os
import sys
import types

recompile_limit = 8
"""Cache entries per code object (Note [Recompile limit] in runtime/code_state.py): a miss past it
runs the frame eagerly, with one `RecompileLimitWarning`, while the entries compiled so far keep
serving their calls; under `fullgraph=True` (or `fail_on_recompile_limit_hit`) it raises
`bytegraph.FailOnRecompileLimitHit` instead. `cache_size_limit` reads and writes this value."""

accumulated_recompile_limit = 256
"""A cap on the entries of one code object whatever `recompile_limit` says."""

fail_on_recompile_limit_hit = False
"""Raise `bytegraph.FailOnRecompileLimitHit` at the miss past `recompile_limit` instead of running
eagerly (a check that a program's recompiles stay as few as it expects)."""

automatic_dynamic_shapes = os.environ.get("BYTEGRAPH_AUTOMATIC_DYNAMIC_SHAPES", "1") == "1"
"""A miss caused by a size (or an int read from outside) that differs from the one an earlier
capture of the code saw recompiles with it symbolic (Note [Symbolic sizes] in graph/shapes.py).
False: it recompiles with the new value static, one entry per value (until `recompile_limit`)."""

assume_static_by_default = True
"""Sizes and ints start static (symbolic only once they change, or when marked); False makes every
size of an input tensor and every int read from outside symbolic from the first capture, as
`compile(dynamic=True)` does."""

force_parameter_static_shapes = True
"""The sizes of `nn.Parameter`s and of modules' parameters and buffers stay static, even under
automatic dynamic shapes or `dynamic=True`: a change recompiles static."""

allow_ignore_mark_dynamic = False
"""A dimension marked with `mark_dynamic` that the trace specializes (a branch on its value) raises
`ConstraintViolationError` at the capture; True lets it specialize silently (`maybe_mark_dynamic`)."""

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

reuse_repeated_blocks = False
"""A later call of the same `nn.Module` class's `forward` in one capture, on a module whose
attributes, parameters and inputs the first call's trace read match, replays the first call's
recorded ops instead of tracing its bytecode again (Note [Repeated blocks] in
vars/repeated_blocks.py says when, and what it proves first)."""

optimize_ddp = True
"""A graph whose parameters belong to a `DistributedDataParallel` module (`compile(DDP(m))`, or
`DDP(compile(m))`) is split where DDP's gradient buckets end, each piece compiled by the backend,
so that DDP's all-reduce of a bucket overlaps the backward of the earlier pieces (Note [DDP bucket
splits] in graph/ddp_split.py). False: one graph, as without DDP. torch.compile's name."""

cache_dir = os.path.expanduser(os.environ.get("BYTEGRAPH_CACHE_DIR", "~/.cache/bytegraph"))
"""The persistent capture cache (Note [Capture cache] in runtime/capture_cache.py): what a capture
made is kept under `<cache_dir>/captures/`, and a later process whose first call passes the stored
guards runs without tracing. `BYTEGRAPH_CACHE_DIR` sets it at import (default `~/.cache/bytegraph`);
`""` turns the cache off. Read at each first call of a compiled function."""

cache_size_bytes = 1 << 30
"""The capture cache's size cap: past it, the least recently used entries are removed."""


def _alias(target: str) -> property:
    """A module attribute that reads and writes setting `target` (a data descriptor of the
    module's class, so `setattr`, `monkeypatch` and `unittest.mock.patch` see one value)."""
    return property(lambda module: getattr(module, target), lambda module, value: setattr(module, target, value),
                    lambda module: delattr(module, target), f"Another name of `{target}` (torch.compile's older name).")


class _Config(types.ModuleType):
    """This module's class: torch's older names read and write the settings they alias."""

    cache_size_limit = _alias("recompile_limit")
    accumulated_cache_size_limit = _alias("accumulated_recompile_limit")
    fail_on_cache_limit_hit = _alias("fail_on_recompile_limit_hit")


sys.modules[__name__].__class__ = _Config
