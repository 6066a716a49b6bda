"""`torch._higher_order_ops.wrap.wrap(fn, *args, **kwargs)` and
`torch.utils.checkpoint.checkpoint(fn, *args, use_reentrant=False, **kwargs)`.

Both trace `fn` once (vars/hops/body.py) with the tensors of its arguments as the body's
placeholders (Python constants among them are passed as they are) into a subgraph:
- `wrap` into `wrap_body_N`, called through `torch.ops.higher_order.wrap` with the body's
  free variables lifted to explicit operands, the node torch.compile makes (the op calls the
  body as it is, in every backend);
- `checkpoint` into `checkpoint_body_N`, called through
  `torch.ops.higher_order.tag_activation_checkpoint`, which runs it under non-reentrant
  activation checkpointing (recomputed in backward; aot_autograd traces it as torch.compile
  does). Only `use_reentrant=False` is captured; any other checkpoint option breaks.
Either returns the body's pytree: tensors as the node's outputs, constants as they are.
"""
from __future__ import annotations

import importlib

import torch

from ..base import CallableValueVariable
from ..containers import DictVariable, TupleVariable
from .body import body_graph, emit, flatten, fresh_fake, speculate, trace_body, unflatten

CHECKPOINT_OP = torch.ops.higher_order.tag_activation_checkpoint
WRAP_OP = torch.ops.higher_order.wrap
_CHECKPOINT_OPTIONS = ("context_fn", "determinism_check", "debug", "early_stop", "preserve_rng_state")


class _BodyCallVariable(CallableValueVariable):
    """A higher-order op calling its body once with the given arguments."""

    __slots__ = ()
    prefix = ""

    def _call_body(self, tx, fn, args, kwargs):
        op = self.describe()
        leaves, spec = flatten(tx, TupleVariable([TupleVariable(list(args)), DictVariable(dict(kwargs))]),
                               f"the arguments of {op}", constants=True)
        return speculate(tx, op, lambda: self._capture(tx, fn, leaves, spec))

    def _capture(self, tx, fn, leaves, spec):
        def arguments(placeholders):
            call_args, call_kwargs = unflatten(spec, iter(placeholders)).items
            return list(call_args.items), dict(call_kwargs.items)

        body = trace_body(tx, fn, f"the body of {self.describe()} ({fn.describe()})", [v.example for v in leaves],
                          arguments, constants=True)
        extra = [outer for outer, _ in body.lifted]
        output = tx.output
        name = output.add_submodule(self.prefix, body_graph(body, extra))
        nodes = tuple(leaf.as_fx_arg(tx) for leaf in leaves) + tuple(output.lift(n) for n in extra)
        outs = [fresh_fake(e, e.requires_grad) for e in body.examples]
        return self._emit(tx, name, nodes, outs, body.spec)


class WrapVariable(_BodyCallVariable):
    """`torch._higher_order_ops.wrap.wrap`."""

    __slots__ = ()
    prefix = "wrap_body"

    def call_function(self, tx, args, kwargs):
        if not args:
            tx.unsupported("wrap() called without a function", category="higher-order op")
        return self._call_body(tx, args[0], args[1:], kwargs)

    def _emit(self, tx, name, nodes, outs, spec):
        return emit(tx, WRAP_OP, (tx.output.graph.get_attr(name), *nodes), outs, spec)

    def describe(self) -> str:
        return "torch._higher_order_ops.wrap.wrap"


class CheckpointVariable(_BodyCallVariable):
    """`torch.utils.checkpoint.checkpoint` (non-reentrant)."""

    __slots__ = ()
    prefix = "checkpoint_body"

    def call_function(self, tx, args, kwargs):
        kwargs = dict(kwargs)
        reentrant = kwargs.pop("use_reentrant", None)
        if reentrant is None or not reentrant.is_python_constant() or reentrant.as_python_constant() is not False:
            tx.unsupported("torch.utils.checkpoint.checkpoint without use_reentrant=False", category="higher-order op",
                           hint="pass use_reentrant=False (the reentrant variant is not captured)")
        options = sorted(set(kwargs) & set(_CHECKPOINT_OPTIONS))
        if options:
            tx.unsupported(f"torch.utils.checkpoint.checkpoint with {', '.join(options)}", category="higher-order op",
                           hint="only use_reentrant=False is captured")
        if not args:
            tx.unsupported("torch.utils.checkpoint.checkpoint called without a function", category="higher-order op")
        return self._call_body(tx, args[0], args[1:], kwargs)

    def _emit(self, tx, name, nodes, outs, spec):
        return emit(tx, CHECKPOINT_OP, (tx.output.graph.get_attr(name), *nodes), outs, spec)

    def describe(self) -> str:
        return "torch.utils.checkpoint.checkpoint"


def wrap_callables() -> dict:
    """Callable -> tracker for wrap and checkpoint."""
    return {importlib.import_module("torch._higher_order_ops.wrap").wrap: WrapVariable,
            importlib.import_module("torch.utils.checkpoint").checkpoint: CheckpointVariable}
