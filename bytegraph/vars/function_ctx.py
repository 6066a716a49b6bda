"""The `ctx` of a traced custom `torch.autograd.Function`, and the C `apply`'s output processing.

`FunctionCtxVariable` is made in the trace, never rebuilt (a ctx escaping the apply breaks).
In `forward` it keeps what the Function gives it: `save_for_backward` (tensors or None),
`mark_dirty`, `mark_non_differentiable`, `set_materialize_grads`, attributes set on it
(trace-local), and answers `needs_input_grad`; `saved_tensors` read in `forward` breaks
(eager's is empty there). The one a traced `backward` receives (`for_backward`) holds the
backward body's placeholders of the saved tensors and of the tensors in its attributes,
answers `saved_tensors`, and refuses writes (it belongs to the caller's scope).

`wrap_outputs` is what the C `apply` does to `forward`'s result: an input tensor returned
unchanged and not marked dirty becomes `input.view_as(input)`, a new tensor.
"""
from __future__ import annotations

from .base import MethodOfVariable, VariableTracker
from .constant import ConstantVariable
from .containers import TupleVariable
from .method_table import dispatch, mutator, no_kwargs, row


def _save_for_backward(tx, ctx, name, args, kwargs) -> VariableTracker:
    ctx.saved = list(args)
    return ConstantVariable(None)


def _mark_dirty(tx, ctx, name, args, kwargs) -> VariableTracker:
    ctx.dirty.extend(args)
    return ConstantVariable(None)


def _mark_non_differentiable(tx, ctx, name, args, kwargs) -> VariableTracker:
    ctx.non_differentiable.extend(args)
    return ConstantVariable(None)


def _set_materialize_grads(tx, ctx, name, args, kwargs) -> VariableTracker:
    if len(args) != 1 or not args[0].is_python_constant():
        tx.unsupported("ctx.set_materialize_grads with a value that is not a constant", category="unsupported call")
    ctx.materialize_grads = bool(args[0].as_python_constant())
    return ConstantVariable(None)


class FunctionCtxVariable(VariableTracker):
    """The `ctx` a traced `Function.forward` (or `backward`) receives."""

    __slots__ = ("ctx_type", "needs_input_grad", "attrs", "saved", "dirty", "non_differentiable",
                 "materialize_grads", "in_backward")

    # what forward gives the ctx (positionally); `save_for_forward` (forward-mode AD) is a no-op
    METHODS = {
        "save_for_backward": mutator(_save_for_backward, when=no_kwargs),
        "mark_dirty": mutator(_mark_dirty, when=no_kwargs),
        "mark_non_differentiable": mutator(_mark_non_differentiable, when=no_kwargs),
        "set_materialize_grads": mutator(_set_materialize_grads, when=no_kwargs),
        "save_for_forward": row(lambda tx, ctx, name, args, kwargs: ConstantVariable(None)),
    }

    def __init__(self, ctx_type: type, needs_input_grad: tuple, saved: list | None = None,
                 attrs: dict | None = None, in_backward: bool = False):
        super().__init__()
        self.ctx_type = ctx_type  # the Function's `_backward_cls`, as in eager
        self.needs_input_grad = needs_input_grad
        self.attrs: dict = {} if attrs is None else attrs
        self.saved: list = [] if saved is None else saved
        self.dirty: list = []
        self.non_differentiable: list = []
        self.materialize_grads = True
        self.in_backward = in_backward

    @classmethod
    def for_backward(cls, forward_ctx: "FunctionCtxVariable", saved: list, attrs: dict) -> "FunctionCtxVariable":
        """The ctx `backward` receives: `forward_ctx`'s, with `saved` and `attrs` as the backward sees them."""
        return cls(forward_ctx.ctx_type, forward_ctx.needs_input_grad, saved, attrs, in_backward=True)

    def python_type(self) -> type:
        return self.ctx_type

    def children(self):
        return [*self.attrs.values(), *self.saved, *self.dirty, *self.non_differentiable]

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in self.attrs:
            return self.attrs[name]
        if name == "needs_input_grad":
            return ConstantVariable(self.needs_input_grad)
        if name == "saved_tensors" and self.in_backward:
            return TupleVariable(list(self.saved))
        if name in self.METHODS:
            return MethodOfVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name: str, args: list, kwargs: dict) -> VariableTracker:
        if name in self.attrs:
            return self.attrs[name].call_function(tx, args, kwargs)
        result = dispatch(tx, self, self.METHODS, name, args, kwargs)
        return result if result is not None else super().call_method(tx, name, args, kwargs)

    def store_attr(self, tx, name: str, value: VariableTracker) -> None:
        if hasattr(self.python_type(), name):
            tx.unsupported(f"setting attribute '{name}' of an autograd.Function ctx", category="side effect")
        tx.output.side_effects.mutate(self)  # Note [Mutation barrier]
        self.attrs[name] = value

    def describe(self) -> str:
        return "the ctx of a custom autograd.Function"


def wrap_outputs(tx, out, inputs: list, dirty: list) -> VariableTracker:
    """The C `apply`'s output processing: an input returned unchanged becomes a view of itself."""

    def wrap(vt):
        if vt.is_tensor and any(vt is i for i in inputs) and not any(vt is d for d in dirty):
            return tx.output.call_op("call_method", "view_as", [vt, vt], {})
        return vt

    items = out.sequence_items()
    if items is not None and out.python_type() is tuple:
        return TupleVariable([wrap(v) for v in items])
    return wrap(out)
