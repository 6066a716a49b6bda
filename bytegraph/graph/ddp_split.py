"""DDP bucket-aware graph splitting: a captured graph whose parameters belong to a
`DistributedDataParallel` module is cut where DDP's gradient buckets end, each piece compiled by
the backend, and the pieces run in order from one outer GraphModule (`compile_graph`, called by
`translate/capture.py` instead of the backend; `config.optimize_ddp` turns it off).

Note [DDP bucket splits]
Why: DDP all-reduces a bucket of gradients as soon as all its gradients are ready, so that
communication overlaps the rest of the backward pass. Under AOT autograd one graph's backward is
one autograd node: every gradient becomes ready when the whole backward has run, and no all-reduce
overlaps anything. Cut into pieces whose parameters form whole buckets, the last piece's backward
runs first, its bucket's all-reduce starts, and the earlier pieces' backward runs meanwhile (the
rule of torch.compile's DDPOptimizer, written here from its description).
Which DDP module: the one DDP's own forward marks active while it calls the wrapped module
(`DistributedDataParallel._get_active_ddp_module()`: `DDP(compile(m))`, read when the capture
starts), or a DDP module among the root frame's arguments (`compile(DDP(m))`: the trace runs DDP's
forward; the real active marker is not set while tracing). Either is used only if parameters of
its wrapped module are inputs of the graph; only the parameters DDP reduces count (requiring grad,
not in its `parameters_to_ignore` nor marked `_ddp_ignored`), at `numel * element_size` bytes, as
DDP's reducer sizes them.
The rule: walk the graph's ops from the last to the first (the order gradients become ready);
each op joins the current bucket, adding the parameters it reads that no later op read (a
parameter counts once, where the walk meets it first). Before an op joins, a bucket holding at
least its cap is closed, if one of its ops has a user outside it (else the piece would have no
output: it grows until one does, as torch's). The first bucket's cap is DDP's first-bucket cap
(`dist._DEFAULT_FIRST_BUCKET_BYTES` when the user set no `bucket_cap_mb`, else `bucket_bytes_cap`,
as DDP's `_BucketCapacityConfig`), then `bucket_bytes_cap` (with `bucket_cap_mb_list`: the list in
order, its last cap repeated). torch.compile's DDPOptimizer always takes 1 MB for the first: with
`bucket_cap_mb=8` and 4 MB layers it cuts the last layer alone, where DDP's first bucket holds
two (`bench/ddp_step.py`: 5 graphs there, 4 here). Ops left before the first parameter of the
forward order join the first piece.
Not split, with the reason on the `ddp` log (the graph then goes whole to the backend, which is
correct, only without the overlap): a graph captured with grad mode off (no backward), one whose
parameters fit one bucket, a graph holding bodies of higher-order ops (`get_attr`) or of repeated
blocks (`call_module`), a grad-mode or autocast switch (state that crosses pieces), or where a
value passed between pieces aliases another one or an input, or has no example value. Each piece
gets, as example inputs, the graph's own for its inputs and, for values made by an earlier piece:
with static shapes (real example inputs) a real zero tensor of the value's size, stride and
`requires_grad`, with symbolic sizes the capture's fake value; with symbolic sizes, a size symbol
no input carries alone becomes an input of the pieces (`_size_inputs`), read from the graph's
inputs per call.
Every piece returns a tuple, as every captured graph. Read at capture: the switch, the DDP
module and its caps; an entry once split stays split.
Counting: `explain` and a counting backend see one graph per piece (as torch.compile's);
`counters["stats"]["unique_graphs"]` counts the captured graph once (as torch's `unique_graphs`),
`counters["ddp"]` counts the graphs split and their pieces; the captured graph's meta
`bg_ddp_splits` (the entry's `graph_module`) says where and why each piece starts. The capture
cache keeps no split graph and is not read for a call under DDP (`runtime/capture_cache.py`).
DDP itself rebuilds its buckets after the first step in the order gradients became ready; within
a piece that order is AOT autograd's, so DDP's buckets may straddle two pieces (the MLP test: 5
buckets for 4 pieces): the all-reduce still overlaps the earlier pieces' backward, as under
torch.compile, whose DDPOptimizer has the same limit.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field

import sympy
import torch
import torch.distributed as dist
import torch.fx
from torch.fx.passes.split_module import split_module
from torch.multiprocessing.reductions import StorageWeakRef

from .. import config

_log = logging.getLogger("bytegraph.ddp")

_STATE_SWITCHES = (torch._C._set_grad_enabled, torch.amp._enter_autocast, torch.amp._exit_autocast,
                   torch.clear_autocast_cache)


def candidates(values: tuple) -> tuple:
    """The DDP modules a capture of a frame called with `values` may belong to (Note [DDP bucket
    splits]): the active one, then those among `values`; none when the switch is off or no
    process group is up (nothing to ask for in a program that does not train distributed)."""
    if not config.optimize_ddp or not dist.is_available() or not dist.is_initialized():
        return ()
    ddp_class = torch.nn.parallel.DistributedDataParallel
    active = ddp_class._get_active_ddp_module()
    found = [] if active is None else [active]
    found.extend(v for v in values if isinstance(v, ddp_class) and v is not active)
    return tuple(found)


@dataclass
class _Bucket:
    cap: int
    nbytes: int = 0
    params: list = field(default_factory=list)  # placeholder names, in the walk's order
    nodes: list = field(default_factory=list)   # in the walk's order: last op first
    grown: int = 0                               # ops added past the cap so that the piece has an output

    def take(self, node: torch.fx.Node, params: dict, counted: set) -> None:
        """Add op `node` and the parameters it reads that no later op read (`counted`)."""
        for arg in node.all_input_nodes:
            if arg in params and arg not in counted:
                counted.add(arg)
                self.nbytes += params[arg].numel() * params[arg].element_size()
                self.params.append(arg.name)
        self.nodes.append(node)

    def feeds_outside(self) -> bool:
        inside = set(self.nodes)
        return any(user not in inside for node in self.nodes for user in node.users)


def compile_graph(gm: torch.fx.GraphModule, example_inputs: list, reals: list, backend, ddp_modules: tuple):
    """`backend(gm, example_inputs)`, or, when a DDP module of `ddp_modules` owns parameters among
    the graph's inputs (`reals`: the real tensor of each placeholder), the outer GraphModule's
    forward over the pieces, each compiled by `backend` (Note [DDP bucket splits])."""
    # No cell in this function and nothing allocated before the backend's call when nothing is
    # split: collection is back on here, and a capture's own work must not start one (Note [GC
    # paused during a capture]).
    if not ddp_modules:
        return backend(gm, example_inputs)
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    ddp, params = _owner(ddp_modules, placeholders, reals)
    if ddp is None:
        return backend(gm, example_inputs)
    if not torch.is_grad_enabled():
        _log.info("graph not split at DDP buckets: grad mode is off (no backward for DDP's all-reduce to overlap)")
        return backend(gm, example_inputs)
    buckets, why_not = _buckets(gm, params, _caps(ddp))
    partition = {node: i for i, bucket in enumerate(buckets or ()) for node in bucket.nodes}
    if why_not is None:
        why_not = _crossing_problem(gm, partition)
    if why_not is not None:
        _log.info("graph not split at DDP buckets: %s", why_not)
        return backend(gm, example_inputs)
    if len(buckets) == 1:
        _log.info("graph not split: its %d parameters (%s) fit one DDP bucket", len(buckets[0].params),
                  _mb(buckets[0].nbytes))
        return backend(gm, example_inputs)
    descriptions = _describe(buckets)
    for line in descriptions:
        _log.info("%s", line)
    gm.meta["bg_ddp_splits"] = descriptions
    sizes = _size_inputs(gm, placeholders)
    try:
        outer = split_module(gm, None, partition.__getitem__, keep_original_order=True, tuple_return=True)
    finally:
        for node, _, _ in sizes:
            gm.graph.erase_node(node)
    examples = _examples(gm, placeholders, example_inputs)
    examples.update((node.name, node.meta["example_value"]) for node, _, _ in sizes)
    for node in outer.graph.nodes:
        if node.op == "call_module":
            piece = getattr(outer, node.target)
            outer.add_submodule(node.target, _Compiled(backend(piece, _piece_inputs(piece, examples))))
    outer.recompile()
    return _with_sizes(outer, [(index, dim) for _, index, dim in sizes]) if sizes else outer.forward


def _piece_inputs(piece: torch.fx.GraphModule, examples: dict) -> list:
    return [examples[p.name] for p in piece.graph.nodes if p.op == "placeholder"]


def _with_sizes(outer: torch.fx.GraphModule, size_of: list):
    """`outer` called with the sizes its pieces take as inputs, read from the graph's inputs."""
    def forward(*args):
        return outer(*args, *[args[index].size(dim) for index, dim in size_of])

    return forward


def _size_inputs(gm: torch.fx.GraphModule, placeholders: list) -> list:
    """With symbolic sizes: an input placeholder (made now, after the graph's own) for each symbol
    of an input tensor's sizes that no input is, as (node, index of the tensor input, dim):
    `split_module` passes a symbol to the pieces that need it only from a node whose value it is
    (the capture makes an input of a size only when an op reads it). The caller removes them
    once the pieces are made: the captured graph stays as it was."""
    bound = {x.node.expr for x in (n.meta.get("example_value") for n in placeholders) if isinstance(x, torch.SymInt)}
    made, last = [], placeholders[-1]
    for index, node in enumerate(placeholders):
        value = node.meta.get("example_value")
        for dim, size in enumerate(value.shape if isinstance(value, torch.Tensor) else ()):
            symbol = size.node.expr if isinstance(size, torch.SymInt) else None
            if isinstance(symbol, sympy.Symbol) and symbol not in bound:
                bound.add(symbol)
                with gm.graph.inserting_after(last):
                    last = gm.graph.placeholder(f"{node.name}_size_{dim}")
                last.meta["example_value"] = size
                made.append((last, index, dim))
    return made


class _Compiled(torch.nn.Module):
    """A piece as the backend compiled it, where the outer GraphModule calls the piece."""

    def __init__(self, compiled):
        super().__init__()
        self.compiled = compiled

    def forward(self, *args):
        return self.compiled(*args)


def _owner(ddp_modules: tuple, placeholders: list, reals: list) -> tuple:
    """(the first DDP module of `ddp_modules` whose wrapped module's parameters are inputs, {its
    parameters' placeholder: the parameter}), or (None, {})."""
    for ddp in ddp_modules:
        reduced = getattr(ddp, "_module_parameters", None) or ddp.module.parameters()  # DDP's, ignored names out
        owned = {id(p) for p in reduced if p.requires_grad and not getattr(p, "_ddp_ignored", False)}
        params = {node: real for node, real in zip(placeholders, reals) if id(real) in owned}
        if params:
            return ddp, params
    return None, {}


def _caps(ddp) -> list:
    """The byte caps of DDP's buckets in order, the last one repeating (Note [DDP bucket splits])."""
    if getattr(ddp, "bucket_bytes_cap_list", None):
        return list(ddp.bucket_bytes_cap_list)
    first = dist._DEFAULT_FIRST_BUCKET_BYTES if ddp.bucket_bytes_cap_default else ddp.bucket_bytes_cap
    return [first, ddp.bucket_bytes_cap]


def _buckets(gm: torch.fx.GraphModule, params: dict, caps: list) -> tuple:
    """(the buckets in forward order, None), or (None, why the graph is not split)."""
    ops = [n for n in gm.graph.nodes if n.op not in ("placeholder", "output")]
    for node in ops:
        if node.op in ("get_attr", "call_module"):
            return None, f"it holds the body of a higher-order op or a repeated block ({node.target})"
        if node.op == "call_function" and node.target in _STATE_SWITCHES:
            return None, f"it switches grad mode or autocast ({node.name}), state the pieces would not share"
    buckets = [_Bucket(caps[0])]
    counted = set()
    for node in reversed(ops):
        bucket = buckets[-1]
        if bucket.nbytes >= bucket.cap:
            if bucket.feeds_outside():
                bucket = _Bucket(caps[min(len(buckets), len(caps) - 1)])
                buckets.append(bucket)
            else:
                bucket.grown += 1
        bucket.take(node, params, counted)
    if len(buckets) > 1 and not buckets[-1].params:  # ops before the first parameter: into the first piece
        buckets[-2].nodes.extend(buckets.pop().nodes)
    buckets.reverse()
    return buckets, None


def _crossing_problem(gm: torch.fx.GraphModule, piece: dict) -> str | None:
    """Why the values passed between pieces (`piece`: op node -> its piece) cannot get example
    inputs (None: they can)."""
    storages = {}
    for node in gm.graph.nodes:
        crosses = node.op == "placeholder" or any(
            user.op != "output" and piece[user] != piece[node] for user in node.users)
        if not crosses:
            continue
        if "example_value" not in node.meta:
            return f"{node.name}, passed between pieces, has no example value"
        value = node.meta["example_value"]
        if isinstance(value, torch.Tensor):
            key = StorageWeakRef(value.untyped_storage())
            if key in storages:
                return f"{node.name}, passed between pieces, aliases {storages[key]}"
            storages[key] = node.name
        elif node.op != "placeholder" and not isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
            return f"{node.name}, passed between pieces, is a {type(value).__name__}, not a tensor or a size"
    return None


def _examples(gm: torch.fx.GraphModule, placeholders: list, example_inputs: list) -> dict:
    """Example inputs of the pieces by node name: the graph's own for its inputs; for a value an
    earlier piece makes, a real zero tensor like it (static shapes) or its fake (symbolic)."""
    examples = {node.name: value for node, value in zip(placeholders, example_inputs)}
    real = not any(isinstance(x, torch._subclasses.FakeTensor) for x in example_inputs)
    for node in gm.graph.nodes:
        if node.op != "placeholder" and "example_value" in node.meta:
            value = node.meta["example_value"]
            examples[node.name] = _zeros_like(value) if real and isinstance(value, torch.Tensor) else value
    return examples


def _zeros_like(fake: torch.Tensor) -> torch.Tensor:
    """A real zero tensor with `fake`'s size, stride, offset, dtype, device and requires_grad."""
    storage = torch.zeros(fake.untyped_storage().nbytes() // fake.element_size(), dtype=fake.dtype,
                          device=fake.device)
    return storage.as_strided(fake.size(), fake.stride(), fake.storage_offset()).requires_grad_(fake.requires_grad)


def _mb(nbytes: int) -> str:
    return f"{nbytes / 2 ** 20:.1f} MB"


def _describe(buckets: list) -> list:
    """One line per piece, in forward order: where it starts and which DDP bucket it holds."""
    n = len(buckets)
    lines = []
    for i, bucket in enumerate(buckets):
        first = bucket.nodes[-1].name  # the walk added them last op first
        index = n - 1 - i  # DDP's order: the last piece's bucket is reduced first
        why = "the parameters left" if i == 0 else f"full ({_mb(bucket.nbytes)} of its {_mb(bucket.cap)} cap)"
        grown = f", grown by {bucket.grown} ops to have an output" if bucket.grown else ""
        lines.append(f"split {i + 1} of {n} at node {first}: bucket {index}, {why}{grown}, {_mb(bucket.nbytes)} "
                     f"in {len(bucket.params)} parameters: {', '.join(reversed(bucket.params))}")
    return lines
