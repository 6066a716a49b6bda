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


class FunctionCtxVariable(VariableTracker):
    """The `ctx` a traced `Function.forward` (or `backward`) receives."""

    __slots__ = ("ctx_type", "needs_input_grad", "attrs", "saved", "dirty", "non_differentiable",
                 "materialize_grads", "in_backward")

    _NO_OPS = frozenset({"save_for_forward"})
    _METHODS = _NO_OPS | {"save_for_backward", "mark_dirty", "mark_non_differentiable", "set_materialize_grads"}

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
        if name in self._METHODS:
            return MethodOfVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name: str, args: list, kwargs: dict) -> VariableTracker:
        if name in self.attrs:
            return self.attrs[name].call_function(tx, args, kwargs)
        if name in self._METHODS - self._NO_OPS and not kwargs:
            tx.output.side_effects.mutate(self)  # Note [Mutation barrier]
            if name == "save_for_backward":
                self.saved = list(args)
            elif name == "mark_dirty":
                self.dirty.extend(args)
            elif name == "mark_non_differentiable":
                self.non_differentiable.extend(args)
            else:
                if len(args) != 1 or not args[0].is_python_constant():
                    tx.unsupported("ctx.set_materialize_grads with a value that is not a constant",
                                   category="unsupported call")
                self.materialize_grads = bool(args[0].as_python_constant())
            return ConstantVariable(None)
        if name in self._NO_OPS:
            return ConstantVariable(None)
        return super().call_method(tx, name, args, kwargs)

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
