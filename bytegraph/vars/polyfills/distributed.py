"""The in-place collectives of `torch.distributed`, traced as torch's functional ones.

`dist.all_reduce(t)` and its siblings hand a tensor to a process group's backend and write
the result into it: an effect no graph can hold. torch states each one's functional form
itself (`torch.distributed._functional_collectives`: `all_reduce_inplace` is
`tensor.copy_(all_reduce(tensor, op, group))`, the op a `_c10d_functional` graph op followed
by its `wait_tensor`), and lists which legacy function each stands for
(`traceable_collective_remaps`). A call of one of those legacy functions is traced as its
functional form: the collective and the copy back into the caller's tensor are graph ops,
so eager's aliasing is kept (the same tensor holds the result). The bodies model the legacy
signature: `async_op=True` (the caller gets a `Work` handle to wait on) and a group the rank
is not in (eager warns and does nothing) are breaks, the call then runs eagerly; a
`ReduceOp` is given by its name (`REDUCE_OP_TO_STR`). `broadcast` has a functional form but
no entry in torch's table: its body is written the same way. `barrier` synchronizes the
real processes and stays a break (`trace_rules.KNOWN_BREAKS`).
"""
from __future__ import annotations

import torch.distributed as dist

from .registry import polyfill, trace_time, unsupported

_ASYNC = ("with async_op=True: the Work handle it returns to wait on is not traced",
          "call it with async_op=False (the default) inside the compiled function, or use the functional "
          "collectives of torch.distributed._functional_collectives")

_NOT_IN_GROUP = "a collective on a group this rank is not in (eager warns and does nothing)"
_UNKNOWN_OP = "a reduce op the functional collectives lack (they take sum, avg, product, min, max, band, bor, bxor)"

if dist.is_available():
    from torch.distributed import _functional_collectives as fcol

    @trace_time
    def _op_name(op):
        """The functional collectives' name of a `ReduceOp`, or None for one they lack."""
        return fcol.REDUCE_OP_TO_STR.get(op) if type(op) is dist.ReduceOp.RedOpType else None

    @trace_time
    def _group_rank(group, src):
        """Global rank `src` as a rank of `group` (the functional broadcast's), or None if it is
        not in the group."""
        if group is None:
            return src
        ranks = dist.get_process_group_ranks(group)
        return ranks.index(src) if src in ranks else None

    @trace_time
    def _usable_group(group) -> bool:
        """Whether the call can be traced on `group`: the default one (None) or a process group
        of this rank (not `GroupMember.NON_GROUP_MEMBER`, on which eager warns and returns)."""
        return group is None or isinstance(group, dist.ProcessGroup)

    @polyfill(dist.all_reduce)
    def all_reduce(tensor, op=dist.ReduceOp.SUM, group=None, async_op=False, *, _fc=fcol, _op=_op_name,
                   _group=_usable_group):
        """`dist.all_reduce`: `tensor.copy_(all_reduce(tensor, op, group))` in the graph."""
        if async_op:
            unsupported(*_ASYNC)
        if not _group(group):
            unsupported(_NOT_IN_GROUP)
        name = _op(op)
        if name is None:
            unsupported(_UNKNOWN_OP)
        _fc.all_reduce_inplace(tensor, name, group)

    @polyfill(dist.all_gather_into_tensor, dist._all_gather_base)
    def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False, *, _fc=fcol,
                               _group=_usable_group):
        """`dist.all_gather_into_tensor`: the gathered tensor copied into `output_tensor`."""
        if async_op:
            unsupported(*_ASYNC)
        if not _group(group):
            unsupported(_NOT_IN_GROUP)
        _fc.all_gather_tensor_inplace(output_tensor, input_tensor, group)

    @polyfill(dist.reduce_scatter_tensor, dist._reduce_scatter_base)
    def reduce_scatter_tensor(output, input, op=dist.ReduceOp.SUM, group=None, async_op=False, *, _fc=fcol,
                              _op=_op_name, _group=_usable_group):
        """`dist.reduce_scatter_tensor`: this rank's reduced shard copied into `output`."""
        if async_op:
            unsupported(*_ASYNC)
        if not _group(group):
            unsupported(_NOT_IN_GROUP)
        name = _op(op)
        if name is None:
            unsupported(_UNKNOWN_OP)
        _fc.reduce_scatter_tensor_inplace(output, input, name, group)

    def _broadcast_inplace(tensor, src, group):
        """`dist.broadcast`'s functional form (torch has none in its table), traced: `src` is the
        group's rank."""
        return tensor.copy_(fcol.broadcast(tensor, src, group or dist.group.WORLD))

    @polyfill(dist.broadcast)
    def broadcast(tensor, src=None, group=None, async_op=False, group_src=None, *, _inplace=_broadcast_inplace,
                  _group=_usable_group, _rank=_group_rank):
        """`dist.broadcast`: `tensor.copy_(broadcast(tensor, src, group))` in the graph (`src` a
        global rank, as eager takes it; the functional op takes the group's rank)."""
        if async_op:
            unsupported(*_ASYNC)
        if group_src is not None or src is None:
            unsupported("with group_src (or no src): only a global src rank is traced")
        if not _group(group):
            unsupported(_NOT_IN_GROUP)
        root = _rank(group, src)
        if root is None:
            unsupported("from a rank outside the group (eager raises)")
        _inplace(tensor, root, group)

    @polyfill(dist.barrier)
    def barrier(group=None, async_op=False, device_ids=None, timeout=None):
        """`dist.barrier`: waits for the real processes; never a graph op."""
        unsupported("waits for the other processes: it runs eagerly at a graph break",
                    "keep barriers outside the compiled function")
