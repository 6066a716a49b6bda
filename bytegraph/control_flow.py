"""`bytegraph.cond` and `bytegraph.map`: control-flow operators with torch's signatures.

Called eagerly they run in plain Python (`cond` calls the chosen branch, and copies an
output that is, or is a view of, an operand or an earlier output, since the captured op
returns new tensors; `map` calls the body on each slice of the leading dimension and
stacks the results), never through a compiler; inside a compiled function they are
captured exactly like `torch.cond` and `torch._higher_order_ops.map.map` (vars/hops/): one
`cond` / `map_impl` node with the bodies as subgraphs.
"""
from __future__ import annotations

import torch
import torch.utils._pytree as pytree
from torch.multiprocessing.reductions import StorageWeakRef


def cond(pred, true_fn, false_fn, operands=()):
    """`true_fn(*operands)` if `pred` (a bool or a one-element tensor), else `false_fn(*operands)`."""
    if isinstance(pred, torch.Tensor):
        if pred.numel() != 1:
            raise RuntimeError(f"Expected pred to be bool or single-element tensor, but got {pred}.")
        pred = bool(pred)
    elif not isinstance(pred, (bool, int, float)):
        raise RuntimeError(f"Expected pred to be bool or tensor, but got {pred}.")
    if not callable(true_fn) or not callable(false_fn):
        raise RuntimeError("Expect both branches to be callable.")
    if not isinstance(operands, (tuple, list)):
        raise RuntimeError(f"Expect operands to be a tuple or list, but got {operands}.")
    result = true_fn(*operands) if pred else false_fn(*operands)
    return _copy_aliases(result, operands)


def _copy_aliases(result, operands):
    """`result` with a copy of each tensor sharing storage with an operand or an earlier
    output (captured, `cond` never returns an alias: as torch.cond under torch.compile,
    its outputs are new tensors)."""
    seen = {StorageWeakRef(t.untyped_storage()) for t in pytree.tree_leaves(operands) if isinstance(t, torch.Tensor)}

    def fresh(t):
        if not isinstance(t, torch.Tensor):
            return t
        key = StorageWeakRef(t.untyped_storage())
        if key in seen:
            return t.clone()
        seen.add(key)
        return t
    return pytree.tree_map(fresh, result)


def map(fn, xs, *args):
    """`stack([fn(x, *args) for x in xs])` over the leading dimension of every tensor of pytree `xs`."""
    flat_xs, spec = pytree.tree_flatten(xs)
    if not flat_xs or not all(isinstance(t, torch.Tensor) for t in flat_xs):
        raise RuntimeError(f"Mapped xs can only consist of tensors. Got xs {flat_xs}.")
    n = flat_xs[0].shape[0]
    if n == 0 or any(t.shape[0] != n for t in flat_xs):
        raise RuntimeError(f"Leading dimensions of mapped xs must be consistent and non-zero. "
                           f"Got shapes {[t.shape for t in flat_xs]}.")
    results = [fn(pytree.tree_unflatten([t[i] for t in flat_xs], spec), *args) for i in range(n)]
    flat, out_spec = zip(*(pytree.tree_flatten(r) for r in results))
    return pytree.tree_unflatten([torch.stack(column) for column in zip(*flat)], out_spec[0])
