"""Tensors in the graph: `TensorVariable` (an FX node plus its fake example value) and
`TensorMethodVariable` (a bound method such as `x.relu`, not yet called).

Metadata that static shapes make constant (shape, dtype, device, ndim, numel(),
requires_grad, ...) is folded from the example value; the tensor's own guard already
pins it. Data-dependent reads (`item()`, `tolist()`, `bool(x)`) break the graph, except the
reads `config.capture_scalar_outputs` captures (vars/scalar_reads.py).
"""
from __future__ import annotations

import operator

import torch

from .. import config
from ..guards.guard import Guard, GuardKind
from ..guards.sources import AttrSource, MethodResultSource
from .base import MethodOfVariable, VariableTracker
from .constant import ConstantVariable
from .containers import SizeVariable, TupleVariable
from .dict_keys import TrackerKey
from .registry import register
from .requires_grad import set_requires_grad
from .scalar_reads import read_scalar
from .symbolic import tensor_metadata
from .hooks.tensor import HOOK_METHODS, register_tensor_hook
from .tensor_scalar_args import rewrite_method
from . import factory
from .hooks.intermediate import register_hook

# Attributes whose value only depends on what the tensor guard pins.
_METADATA_ATTRS = frozenset({
    "dtype", "device", "ndim", "requires_grad", "is_leaf", "layout", "is_cuda", "is_cpu",
    "is_sparse", "is_quantized", "is_meta", "is_mkldnn", "is_complex_dtype", "is_nested",
    "itemsize", "nbytes",
})
# Methods whose result only depends on metadata.
_METADATA_METHODS = frozenset({
    "dim", "ndimension", "numel", "nelement", "stride", "is_floating_point", "is_complex",
    "is_contiguous", "element_size", "get_device", "is_signed", "storage_offset",
    "is_inference", "has_names",
})
# Metadata the tensor guard does not pin: read from an input tensor, it is guarded then.
_PINNED_ON_READ_ATTRS = frozenset({"is_leaf", "is_sparse", "is_quantized", "is_meta", "is_mkldnn", "is_nested",
                                   "layout"})
_PINNED_ON_READ_METHODS = frozenset({"storage_offset", "is_inference", "is_contiguous", "has_names"})
# Methods whose result holds SymInts when the tensor's sizes are symbolic (vars/symbolic.py).
_SYMBOLIC_METHODS = frozenset({"size", "stride", "numel", "nelement", "storage_offset"})
# Attributes computed by a graph op.
_GRAPH_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag"})

_DATA_DEPENDENT = {
    "item": "reads a tensor's value into Python",
    "tolist": "reads a tensor's values into Python",
    "numpy": "converts a tensor to a NumPy array",
    "__bool__": "uses a tensor's value as a Python bool",
    "__int__": "reads a tensor's value into a Python int",
    "__float__": "reads a tensor's value into a Python float",
    "__index__": "uses a tensor's value as a Python index",
}
# What `config.capture_scalar_outputs` captures (vars/scalar_reads.py)
_SCALAR_READS = frozenset({"item", "tolist", "__int__", "__float__", "__index__"})
_NOT_CAPTURED = {
    "backward": "calls backward() inside the compiled region",
    "retain_grad": "changes autograd state of a tensor",
    "data_ptr": "reads a tensor's storage address",
    "untyped_storage": "reads a tensor's storage",
    "storage": "reads a tensor's storage",
    "__setattr__": "sets an attribute on a tensor",
    "set_": "swaps a tensor's storage",
    "_is_view": "reads whether a tensor is a view (tensor guards do not pin it)",
    "is_set_to": "compares tensors' storages (tensor guards do not pin sharing)",
}
_UNSUPPORTED_ATTRS = {
    "grad": "reads .grad of a tensor",
    "data": "reads .data of a tensor",
    "grad_fn": "reads the autograd graph of a tensor",
    "_version": "reads a tensor's version counter",
    "_base": "reads a view's base",
}


class TensorVariable(VariableTracker):
    __slots__ = ("node", "example", "cls")
    is_tensor = True

    def __init__(self, node, example, source=None, cls=torch.Tensor):
        super().__init__(source)
        self.node = node
        self.example = example
        self.cls = cls

    def python_type(self) -> type:
        return self.cls

    def describe(self) -> str:
        e = self.example
        what = self.source.describe() if self.source is not None else f"tensor '{self.node.name}'"
        return f"{what} (shape {tuple(e.shape)}, {e.dtype})"

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name == "shape":
            if tx.output.shapes is not None:  # sizes may be symbolic (Note [Symbolic sizes])
                return tensor_metadata(tx, self, "size", (), self.example.shape)
            return SizeVariable([ConstantVariable(s) for s in self.example.shape])
        if name in _PINNED_ON_READ_ATTRS:
            return ConstantVariable(self._pinned(tx, AttrSource, name))
        if name in _METADATA_ATTRS:
            return ConstantVariable(getattr(self.example, name))
        if name in _GRAPH_ATTRS:
            return tx.output.call_op("call_function", getattr, [self, ConstantVariable(name)], {})
        if name == "grad_fn" and self._grad_fn_is_none(tx):
            return ConstantVariable(None)
        if name == "grad" and (grad := self._input_grad(tx)) is not None:
            return grad
        if name in _UNSUPPORTED_ATTRS:
            tx.unsupported(f"code {_UNSUPPORTED_ATTRS[name]} ({self.describe()})",
                           category="unsupported tensor attribute")
        if name in _NOT_CAPTURED or name in _DATA_DEPENDENT or callable(getattr(torch.Tensor, name, None)):
            return TensorMethodVariable(self, name)
        if not hasattr(self.cls, name) and (value := self.instance_attr(tx, name)) is not None:
            return value
        tx.unsupported(f"attribute '{name}' of {self.describe()}", category="unsupported tensor attribute",
                       hint="only standard torch.Tensor attributes are captured")

    def store_attr(self, tx, name: str, value: VariableTracker) -> None:
        """`t.data = t` changes nothing (`Module._apply` does it for a conversion that returns
        the parameter itself: `.to()` of its own dtype and device, `.float()` of a float
        module); any other attribute write is not modelled."""
        if name == "data" and value is self:
            return
        if name == "requires_grad":
            set_requires_grad(tx, self, [value], {}, what="setting .requires_grad")
            return
        super().store_attr(tx, name, value)

    def _input_grad(self, tx):
        """`.grad` of a graph input: None (guarded to stay None) or the real gradient, itself
        a graph input (guarded like any). None for other tensors (their `.grad` is unsupported)."""
        real = tx.output.real_input(self) if self.source is not None else None
        if real is None:
            return None
        return tx.wrap(real.grad, AttrSource(self.source, "grad"))

    def hasattr_impl(self, tx, name: str) -> bool:
        """`hasattr(x, name)`: a torch.Tensor attribute, or one that user code set on it."""
        if hasattr(self.cls, name):
            return hasattr(self.example, name)
        return self.instance_attr(tx, name) is not None

    def instance_attr(self, tx, name: str) -> VariableTracker | None:
        """Attribute `name` that user code set on the tensor (`x.tag = n`; not a torch.Tensor
        attribute), None if it has none. An input tensor's is the real tensor's, guarded
        (absent: `name not in x.__dict__`; present: its value, through `x.name`), so the
        next call sees it come or go; a tensor computed in the trace is a new object without
        any (setting one breaks the graph)."""
        if self.source is None:
            return None
        real = tx.output.real_input(self)
        if real is None:
            tx.unsupported(f"attribute '{name}' of {self.describe()}", category="unsupported tensor attribute")
        if name in real.__dict__:
            return tx.wrap(real.__dict__[name], AttrSource(self.source, name))
        tx.guard_attr_presence(self.source, name, False)
        return None

    def call_method(self, tx, name: str, args: list, kwargs: dict) -> VariableTracker:
        if name in _DATA_DEPENDENT:
            captured = name in _SCALAR_READS and not args and not kwargs
            if captured and config.capture_scalar_outputs:
                value = read_scalar(tx, self, name)
                if value is not None:
                    return value
            hint = "keep the value as a tensor (e.g. use torch.where) or move this line outside the compiled function"
            if captured and not config.capture_scalar_outputs:
                hint = "set bytegraph.config.capture_scalar_outputs = True to capture it, or " + hint
            tx.unsupported(f"{self.describe()}.{name}() {_DATA_DEPENDENT[name]}", category="data-dependent",
                           hint=hint)
        if name == "register_hook" and self.source is None:
            return register_hook(tx, self, args, kwargs)
        if name in _NOT_CAPTURED:
            tx.unsupported(f"{name}() {_NOT_CAPTURED[name]}", category="unsupported tensor method")
        if name == "requires_grad_":
            return set_requires_grad(tx, self, args, kwargs)
        if name in HOOK_METHODS:
            if self.source is None:  # a hook on an intermediate (issue 17)
                tx.unsupported(f"{name}() registers a tensor hook",
                               category="unsupported tensor method")
            return register_tensor_hook(tx, self, name, args, kwargs)
        if name in _METADATA_METHODS or (name == "size") or (name == "type" and not args and not kwargs):
            if name in _PINNED_ON_READ_METHODS and not args and not kwargs:
                return _wrap_metadata(self._pinned(tx, MethodResultSource, name))
            if name in _SYMBOLIC_METHODS and not kwargs and tx.output.shapes is not None:
                values = [a.as_python_constant() for a in args]
                return tensor_metadata(tx, self, name, tuple(values), getattr(self.example, name)(*values))

            return factory.fold_call(tx, getattr(self.example, name), args, kwargs, f"Tensor.{name}",
                             wrap_result=_wrap_metadata)
        if kwargs:
            rewritten = rewrite_method(tx, name, [self, *args], kwargs)
            if rewritten is not None:
                return rewritten
        return tx.output.call_op("call_method", name, [self, *args], kwargs)

    def _pinned(self, tx, source_kind, name: str, real=None):
        """Attribute (or no-argument method result) `name` that the tensor guard does not pin:
        for an input tensor (`real`, looked up when not given), the real tensor's value,
        guarded from now on (its fake may differ: a non-leaf input's fake is a leaf); for a
        graph result, the fake's."""
        if real is None and self.source is not None:
            real = tx.output.real_input(self)
        value = getattr(real if real is not None else self.example, name)
        if callable(value):
            value = value()
        if real is not None:
            tx.output.add_guard(Guard(GuardKind.CONSTANT_MATCH, source_kind(self.source, name), value,
                                      tx.guard_location()))
        return value

    def _grad_fn_is_none(self, tx) -> bool:
        """`x.grad_fn is None` (a leaf or a tensor without history); guarded for an input."""
        real = tx.output.real_input(self) if self.source is not None else None
        if (real if real is not None else self.example).grad_fn is not None:
            return False
        if real is not None:
            self._pinned(tx, AttrSource, "grad_fn", real)
        return True

    def unpack(self, tx) -> list:
        if self.example.dim() == 0:
            tx.unsupported("iterating over a 0-d tensor", category="user error")
        return [tx.output.call_op("call_function", operator.getitem, [self, ConstantVariable(i)], {})
                for i in range(self.len_impl(tx).as_python_constant())]

    def truth(self, tx) -> bool:
        tx.unsupported(f"`if`/`while`/`and`/`or` on {self.describe()} depends on tensor data",
                       category="data-dependent",
                       hint="use torch.where / torch.cond, or compute the condition outside")

    def len_impl(self, tx) -> VariableTracker:
        if self.example.dim() == 0:
            tx.raise_user_error(TypeError("len() of a 0-d tensor"))
        if tx.output.shapes is not None:
            return tensor_metadata(tx, self, "size", (0,), self.example.shape[0])
        return ConstantVariable(self.example.shape[0])

    def contains_impl(self, tx, item) -> VariableTracker:
        tx.unsupported("`in` on a tensor depends on tensor data", category="data-dependent")

    def getitem_impl(self, tx, key) -> VariableTracker:
        return tx.output.call_op("call_function", operator.getitem, [self, key], {})

    def setitem_impl(self, tx, key, value) -> None:
        tx.output.call_op("call_function", operator.setitem, [self, key, value], {})

    def key_impl(self, tx):
        """A tensor hashes by identity: as a dict key it stands for itself (vars/dict_keys.py)."""
        return TrackerKey(self)

    def as_fx_arg(self, tx):
        node = self.node
        if node.graph is not tx.output.graph:  # a value of an enclosing graph used in a subgraph
            return tx.output.lift(node)
        return node

    # An in-place op (`x.unsqueeze_(0)`) or `requires_grad_()` changes the fake example's
    # metadata: the barrier (OutputGraph._before_inplace) saves it, a restore puts it back on
    # the same fake.
    def _save_state(self):
        e = self.example
        return tuple(e.size()), e.stride(), e.storage_offset(), e.requires_grad

    def _restore_state(self, state) -> None:
        e = self.example
        if (tuple(e.size()), e.stride(), e.storage_offset()) != state[:3]:
            with torch.no_grad():
                e.as_strided_(*state[:3])
        if e.requires_grad != state[3]:  # Note [requires_grad_ in the trace]
            e.requires_grad_(state[3])


_BOUND_TENSOR_METHOD = type(torch.empty(0).add)


class TensorMethodVariable(MethodOfVariable):
    """`tensor.method`, looked up but not yet called."""

    __slots__ = ()

    def python_type(self) -> type:
        return _BOUND_TENSOR_METHOD

    def describe(self) -> str:
        return f"Tensor.{self.name}"


def _wrap_metadata(value) -> VariableTracker:
    if isinstance(value, torch.Size):
        return SizeVariable([ConstantVariable(v) for v in value])
    if isinstance(value, tuple):
        return TupleVariable([ConstantVariable(v) for v in value])
    return ConstantVariable(value)



@register(torch.Tensor)
def build_tensor(tx, value, source, do_guard: bool) -> VariableTracker:
    """A tensor from the caller's world: a graph input, guarded by its metadata."""
    if source is None:
        tx.unsupported("a tensor reached without a source (e.g. a constant tensor attribute "
                       "of an object created in the compiled function)", category="unsupported value")
    return tx.output.add_input(source, value)
