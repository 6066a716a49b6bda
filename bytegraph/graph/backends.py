"""Backends: turn a captured `GraphModule` into a callable (the torch.compile protocol
`backend(gm, example_inputs) -> callable`).

Named backends: "eager" runs the GraphModule's own forward, "aot_eager" runs torch's
AOT autograd with no-op compilers (as torch.compile's "aot_eager": the min-cut partitioner, which
recomputes cheap ops in the backward rather than saving them, and in-place updates of inputs
kept in an inference graph), "inductor" runs torch's inductor `compile_fx`.

Note [Inputs that live across calls]
A graph input that is a module's parameter, buffer or tensor attribute (or any Parameter)
lives across calls: saving it for the backward costs no memory, where saving a view or a
value computed from it does. AOT autograd's min-cut partitioner weighs that when told which
primal inputs they are (`static_lifetime_input_indices`); torch.compile tells it through its
own graph metadata, and bytegraph marks such placeholders (`LIVES_ACROSS_CALLS` in their
meta, set by `OutputGraph.add_input`; split_module copies placeholder meta into the DDP
pieces) and gives the "aot_eager" partitioner their indices: the same forward and backward
graphs as torch.compile's "aot_eager" (on a transformer block it saved transposed weights
where torch.compile recomputes the transpose).

Note [Inductor's caches]
torch's FX graph cache and AOT autograd cache serve `compile_fx` only inside a
`TracingContext` whose fake mode has a `ShapeEnv` (their entries may carry guards on sizes);
without one both are bypassed and every process compiles every graph again. The inductor
backend therefore calls `compile_fx` in such a context: the capture's own fake mode when the
example inputs are its fakes (symbolic sizes), else a new mode and the real inputs as fakes
of static sizes (as torch.compile passes them). A warm start from the capture cache
(`runtime/capture_cache.py`) gives the same graph to this same call, and finds their entries.
"""
from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv

from ..ops.hooks import hook_op, register_inductor_fallback


def _eager(gm: torch.fx.GraphModule, example_inputs):
    return gm.forward


def _nop(gm: torch.fx.GraphModule, example_inputs):
    from torch._functorch.aot_autograd import make_boxed_func  # local: start-up cost, only for this backend

    return make_boxed_func(gm.forward)


LIVES_ACROSS_CALLS = "bg_lives_across_calls"  # placeholder meta: Note [Inputs that live across calls]


def _aot_eager(gm: torch.fx.GraphModule, example_inputs):
    from torch._functorch.aot_autograd import aot_module_simplified  # local: start-up cost, only for this backend
    from torch._functorch.partitioners import min_cut_rematerialization_partition  # local: as above

    # AOT autograd's primal inputs: the module's own parameters and buffers, then the placeholders
    first = len(list(gm.parameters())) + len(list(gm.buffers()))
    lasting = [first + i for i, node in enumerate(gm.graph.find_nodes(op="placeholder"))
               if node.meta.get(LIVES_ACROSS_CALLS)]

    def partition(joint, joint_inputs, *, static_lifetime_input_indices=None, **kwargs):
        indices = sorted({*(static_lifetime_input_indices or ()), *range(first), *lasting})
        return min_cut_rematerialization_partition(joint, joint_inputs, static_lifetime_input_indices=indices,
                                                   **kwargs)

    return aot_module_simplified(gm, example_inputs, fw_compiler=_nop, bw_compiler=_nop, partition_fn=partition,
                                 keep_inference_input_mutations=True)


def _inductor(gm: torch.fx.GraphModule, example_inputs):
    from torch._inductor.compile_fx import compile_fx  # local: start-up cost (inductor), only for this backend

    if any(node.target is hook_op for node in gm.graph.nodes):
        register_inductor_fallback()  # Note [Intermediate hook node]
    fake_mode = next((x.fake_mode for x in example_inputs if isinstance(x, FakeTensor)), None)
    if fake_mode is None:  # static sizes: the real inputs as fakes of static sizes
        fake_mode = FakeTensorMode(shape_env=ShapeEnv())
        example_inputs = [fake_mode.from_tensor(x, static_shapes=True) if isinstance(x, torch.Tensor) else x
                          for x in example_inputs]
    with torch._guards.tracing(torch._guards.TracingContext(fake_mode)):  # Note [Inductor's caches]
        return compile_fx(gm, example_inputs)


BACKENDS = {"eager": _eager, "aot_eager": _aot_eager, "inductor": _inductor}


def lookup_backend(backend):
    """The backend callable for a name or a callable; bad input raises ValueError/TypeError."""
    if isinstance(backend, str):
        try:
            return BACKENDS[backend]
        except KeyError:
            raise ValueError(f"unknown backend {backend!r}; valid names are: "
                             f"{', '.join(sorted(BACKENDS))}, or pass a callable "
                             f"backend(gm, example_inputs) -> callable") from None
    if not callable(backend):
        raise TypeError(f"backend must be a backend name ({', '.join(sorted(BACKENDS))}) or a callable "
                        f"backend(gm, example_inputs) -> callable, not {type(backend).__name__}")
    return backend
