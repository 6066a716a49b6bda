"""`torch.autocast` / `torch.amp.autocast` (CPU) inside the traced code, and the autocast
state queries (`torch.is_autocast_enabled`, `get_autocast_dtype`, ...): the capture's record
(`state.py`), the residual code's real transitions (`emit.py`) and the trackers (`trackers.py`).

Note [Autocast in the trace]
The capture keeps one immutable `AutocastTrace` record in `OutputGraph.autocast` (None
until the trace touches autocast; saved by checkpoints): the *ambient* CPU autocast state
the capture started in (guarded: enabled, dtype, weight-cache flag), the *traced* state
now, the graph's open `_enter_autocast` nodes, the blocks entered by the trace and still
open, and the blocks entered before the capture (a resume function's) that it exited.
- While tracing, the real thread-local state follows the traced one, so fake-tensor
  propagation gives autocast's dtypes (`x @ w` is bfloat16); the real weight cache is off
  meanwhile (fake tensors never enter it) and everything is put back when tracing ends.
  Fake results are not memoized under autocast (`OutputGraph._run_fake`).
- The graph records what torch.compile records: `n = _enter_autocast(device, dtype,
  enabled, cache)` at a block's start and `_exit_autocast(n)` at its end, so every backend
  (eager, aot_autograd, inductor) reproduces eager's dtypes. A graph is balanced: when it
  ends inside blocks, `_exit_autocast` of each open node is appended before its output.
- At a graph break inside a block (Note [Breaks inside blocks] in translate/breaks.py) the
  block's exit slot is rebuilt as an `AutocastExit` constant (the block's state and the
  state before it, identity-guarded by the resume function); the residual code enters the
  open blocks for real (`enter_autocast_block`) before the breaking instruction, so it and
  the resume function run under autocast as in eager. The resume function starts in that
  ambient state; the block's end calls the `AutocastExit` slot: the trace switches the
  graph to the prior state (one more `_enter_autocast` node, closed at the graph's end)
  and the residual code calls the real exit after the graph. The weight cache is cleared
  there too (a cast made inside the block must not serve a later block of another dtype).
Queries of the CPU state answer from the traced state; those of other devices read the
real state and guard it. torch's per-device spellings (`get_autocast_gpu_dtype()`,
`is_autocast_xla_enabled()`, ...: found in torch's namespace by their names) answer as the
generic query of their device (guarded through it: the spellings warn, deprecated; the
folded call does not), and `torch._C._is_any_autocast_enabled()` is the traced CPU state or
the other devices' real one (`state.other_devices_enabled`, guarded). Only
`device_type="cpu"` blocks are traced; others break.
- A capture that never touches autocast (no record) but calls a graph is traced with autocast
  off, so its graph's dtypes (and those folded at trace time: `y.dtype`) are autocast-off ones:
  its entry is guarded on `torch._C._is_any_autocast_enabled()` being False (`ambient_off_guard`,
  added when the guards are finished), so a call inside an autocast block recompiles there.
  An entry without a graph (pure Python) is not guarded: nothing in it depends on the state.
"""
