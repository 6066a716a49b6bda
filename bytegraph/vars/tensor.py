"""Tensors in the graph: `TensorVariable` (an FX node plus its fake example value) and
`TensorMethodVariable` (a bound method such as `x.relu`, not yet called).

Metadata that static shapes make constant (shape, dtype, device, ndim, numel(),
requires_grad, ...) is folded from the example value; the tensor's own guard already
pins it. Data-dependent reads (`item()`, `tolist()`, `bool(x)`) break the graph, except the
reads `config.capture_scalar_outputs` captures (vars/scalar_reads.py).
"""
from __future__ import annotations

import enum
import operator
from dataclasses import dataclass

import torch

from .. import config
from ..guards.guard import Guard, GuardKind
from ..guards.sources import AttrSource, MethodResultSource
from .base import MethodOfVariable, VariableTracker
from .constant import ConstantVariable
from .containers import SizeVariable, TupleVariable
from .dict_keys import TrackerKey
from .method_table import read_attr
from .registry import register
from .requires_grad import set_requires_grad
from .scalar_reads import read_scalar
from .symbolic import tensor_metadata
from .hooks.intermediate import register_hook
from .hooks.tensor import HOOK_METHODS, register_tensor_hook
from . import factory
from .tensor_scalar_args import rewrite_method
from .legacy_tensor_types import spelled_by_name

# Attributes whose value only depends on what the tensor guard pins.
_METADATA_ATTRS = frozenset({
    "dtype", "device", "ndim", "requires_grad", "is_leaf", "layout", "is_cuda", "is_cpu",
    "is_sparse", "is_quantized", "is_meta", "is_mkldnn", "is_complex_dtype", "is_nested",
    "itemsize", "nbytes",
})
# Metadata the tensor guard does not pin: read from an input tensor, it is guarded then.
_PINNED_ON_READ_ATTRS = frozenset({"is_leaf", "is_sparse", "is_quantized", "is_meta", "is_mkldnn", "is_nested",
                                   "layout"})
# Attributes computed by a graph op.
_GRAPH_ATTRS = frozenset({"T", "mT", "H", "mH", "real", "imag"})
_UNSUPPORTED_ATTRS = {
    "grad": "reads .grad of a tensor",
    "data": "reads .data of a tensor",
    "grad_fn": "reads the autograd graph of a tensor",
    "_version": "reads a tensor's version counter",
    "_base": "reads a view's base",
}


class How(enum.Enum):
    """How a call of a tensor method is traced."""
    GRAPH_OP = "a call_method node of the graph"
    METADATA = "folded from the example value's metadata"
    DATA_DEPENDENT = "a graph break: it reads the tensor's data into Python"
    NOT_CAPTURED = "a graph break: it is not captured"
    HOOK = "a hook registration (vars/tensor_hooks.py)"
    REQUIRES_GRAD = "a change of requires_grad (vars/requires_grad.py)"


@dataclass(frozen=True)
class TensorMethod:
    """The rule of a tensor method: how its calls are traced, and why."""
    how: How
    reason: str = ""  # DATA_DEPENDENT, NOT_CAPTURED: what the call does, in the break reason
    scalar_read: bool = False  # DATA_DEPENDENT: captured under config.capture_scalar_outputs (vars/scalar_reads.py)
    pinned: bool = False  # METADATA: not pinned by the tensor guard: read without arguments, guarded then
    symbolic: bool = False  # METADATA: its result holds SymInts when the sizes are symbolic (vars/symbolic.py)
    bare: bool = False  # METADATA only when called without arguments; else a graph op
    on_intermediate: bool = False  # HOOK: also on a tensor computed in the trace (vars/intermediate_hooks.py)
    node_args: object = None  # GRAPH_OP: (args, kwargs) -> how the node spells them (`type`: legacy types by name)


_GRAPH_OP = TensorMethod(How.GRAPH_OP)
_METADATA = TensorMethod(How.METADATA)
_HOOK = TensorMethod(How.HOOK)

# How each tensor method is traced; a method without a rule is a graph op.
TENSOR_METHODS: dict[str, TensorMethod] = {
    "item": TensorMethod(How.DATA_DEPENDENT, "reads a tensor's value into Python", scalar_read=True),
    "tolist": TensorMethod(How.DATA_DEPENDENT, "reads a tensor's values into Python", scalar_read=True),
    "numpy": TensorMethod(How.DATA_DEPENDENT, "converts a tensor to a NumPy array"),
    "__bool__": TensorMethod(How.DATA_DEPENDENT, "uses a tensor's value as a Python bool"),
    "__int__": TensorMethod(How.DATA_DEPENDENT, "reads a tensor's value into a Python int", scalar_read=True),
    "__float__": TensorMethod(How.DATA_DEPENDENT, "reads a tensor's value into a Python float", scalar_read=True),
    "__index__": TensorMethod(How.DATA_DEPENDENT, "uses a tensor's value as a Python index", scalar_read=True),
    "backward": TensorMethod(How.NOT_CAPTURED, "calls backward() inside the compiled region"),
    "retain_grad": TensorMethod(How.NOT_CAPTURED, "changes autograd state of a tensor"),
    "data_ptr": TensorMethod(How.NOT_CAPTURED, "reads a tensor's storage address"),
    "untyped_storage": TensorMethod(How.NOT_CAPTURED, "reads a tensor's storage"),
    "storage": TensorMethod(How.NOT_CAPTURED, "reads a tensor's storage"),
    "__setattr__": TensorMethod(How.NOT_CAPTURED, "sets an attribute on a tensor"),
    "set_": TensorMethod(How.NOT_CAPTURED, "swaps a tensor's storage"),
    "_is_view": TensorMethod(How.NOT_CAPTURED, "reads whether a tensor is a view (tensor guards do not pin it)"),
    "is_set_to": TensorMethod(How.NOT_CAPTURED, "compares tensors' storages (tensor guards do not pin sharing)"),
    "requires_grad_": TensorMethod(How.REQUIRES_GRAD),
    **dict.fromkeys(HOOK_METHODS, _HOOK),
    "register_hook": TensorMethod(How.HOOK, on_intermediate=True),
    **dict.fromkeys(("dim", "ndimension", "is_floating_point", "is_complex", "element_size", "get_device",
                     "is_signed"), _METADATA),
    "size": TensorMethod(How.METADATA, symbolic=True),
    "stride": TensorMethod(How.METADATA, symbolic=True),
    "numel": TensorMethod(How.METADATA, symbolic=True),
    "nelement": TensorMethod(How.METADATA, symbolic=True),
    "storage_offset": TensorMethod(How.METADATA, pinned=True, symbolic=True),
    "is_inference": TensorMethod(How.METADATA, pinned=True),
    "is_contiguous": TensorMethod(How.METADATA, pinned=True),
    "type": TensorMethod(How.METADATA, bare=True, node_args=spelled_by_name),
}


def _read_shape(tx, t, name):
    if tx.output.shapes is not None:  # sizes may be symbolic (Note [Symbolic sizes])
        return tensor_metadata(tx, t, "size", (), t.example.shape)
    return SizeVariable([ConstantVariable(s) for s in t.example.shape])


def _read_unsupported(tx, t, name):
    tx.unsupported(f"code {_UNSUPPORTED_ATTRS[name]} ({t.describe()})", category="unsupported tensor attribute")


def _read_grad_fn(tx, t, name):
    if t._grad_fn_is_none(tx):
        return ConstantVariable(None)
    return _read_unsupported(tx, t, name)


def _read_grad(tx, t, name):
    grad = t._input_grad(tx)
    return grad if grad is not None else _read_unsupported(tx, t, name)


# How each tensor attribute is read (the pinned-on-read metadata is not folded from the
# example alone; .grad_fn and .grad are read where they are known, else break).
TENSOR_ATTRS = {
    "shape": _read_shape,
    **dict.fromkeys(_METADATA_ATTRS, lambda tx, t, name: ConstantVariable(getattr(t.example, name))),
    **dict.fromkeys(_PINNED_ON_READ_ATTRS, lambda tx, t, name: ConstantVariable(t._pinned(tx, AttrSource, name))),
    **dict.fromkeys(_GRAPH_ATTRS, lambda tx, t, name: tx.output.call_op("call_function", getattr,
                                                                        [t, ConstantVariable(name)], {})),
    **dict.fromkeys(_UNSUPPORTED_ATTRS, _read_unsupported),
    "grad_fn": _read_grad_fn,
    "grad": _read_grad,
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
        value = read_attr(tx, self, TENSOR_ATTRS, name)
        if value is not None:
            return value
        if name in TENSOR_METHODS or callable(getattr(torch.Tensor, name, None)):
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
        rule = TENSOR_METHODS.get(name, _GRAPH_OP)
        if rule.how is How.DATA_DEPENDENT:
            return self._data_dependent(tx, name, rule, args, kwargs)
        if rule.how is How.NOT_CAPTURED:
            tx.unsupported(f"{name}() {rule.reason}", category="unsupported tensor method")
        if rule.how is How.REQUIRES_GRAD:
            return set_requires_grad(tx, self, args, kwargs)
        if rule.how is How.HOOK:
            if self.source is None:  # a hook on an intermediate (issue 17)
                if rule.on_intermediate:
                    return register_hook(tx, self, args, kwargs)
                tx.unsupported(f"{name}() registers a tensor hook", category="unsupported tensor method")
            return register_tensor_hook(tx, self, name, args, kwargs)
        if rule.how is How.METADATA and not (rule.bare and (args or kwargs)):
            return self._metadata(tx, name, rule, args, kwargs)
        if kwargs:
            rewritten = rewrite_method(tx, name, [self, *args], kwargs)
            if rewritten is not None:
                return rewritten
        if rule.node_args is not None:
            args, kwargs = rule.node_args(args, kwargs)
        return tx.output.call_op("call_method", name, [self, *args], kwargs)

    def _data_dependent(self, tx, name: str, rule: TensorMethod, args: list, kwargs: dict):
        """A read of the tensor's data: captured (a scalar read the config captures), else a break."""
        captured = rule.scalar_read and not args and not kwargs
        if captured and config.capture_scalar_outputs:
            value = read_scalar(tx, self, name)
            if value is not None:
                return value
        hint = "keep the value as a tensor (e.g. use torch.where) or move this line outside the compiled function"
        if captured and not config.capture_scalar_outputs:
            hint = "set bytegraph.config.capture_scalar_outputs = True to capture it, or " + hint
        tx.unsupported(f"{self.describe()}.{name}() {rule.reason}", category="data-dependent", hint=hint)

    def _metadata(self, tx, name: str, rule: TensorMethod, args: list, kwargs: dict):
        """A metadata method, folded from the example (guarded where the tensor guard does not
        pin it; symbolic where the sizes are)."""
        if rule.pinned and not args and not kwargs:
            return _wrap_metadata(self._pinned(tx, MethodResultSource, name))
        if rule.symbolic and not kwargs and tx.output.shapes is not None:
            values = [a.as_python_constant() for a in args]
            return tensor_metadata(tx, self, name, tuple(values), getattr(self.example, name)(*values))
        return factory.fold_call(tx, getattr(self.example, name), args, kwargs, f"Tensor.{name}",
                                 wrap_result=_wrap_metadata)

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
