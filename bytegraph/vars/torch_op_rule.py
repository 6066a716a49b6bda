"""The rule that says which torch callables are graph ops, derived from torch's runtime.

A callable is a torch op when it is
- a C function of one of torch's operator namespaces, reached as that namespace's own
  attribute: the namespaces are those holding the C functions `torch.overrides` lists
  (`torch._C._VariableFunctions`, whose members are `torch.*`; `torch._C._nn`, `_linalg`,
  `_fft`, `_special`), so `torch._weight_norm`, `torch._C._nn._parse_to` or any op a new
  torch adds there is one without being named here; or
- an operator of the dispatcher: a `torch._ops.OpOverload` or `OpOverloadPacket`
  (`torch.ops.aten.add.Tensor`, `torch.ops.mylib.op`), or a `torch.library.custom_op`
  object (`CustomOpDef`, recorded as its `OpOverload`);
and it is not in `NOT_GRAPH_OPS` (each entry says why) nor in `torch_functions.SPECIAL`
(which `trace_rules.RULES` consults first). The Python functions and Tensor methods that
`torch.overrides` lists are graph ops too (`torch_functions.GRAPH_OPS`).

A call of a torch op runs on fake tensors (`OutputGraph.call_op`) and becomes a graph node;
an op fake propagation cannot run (no fake or meta kernel) is a graph break naming it.
Which arguments a dispatcher op writes comes from its schema (`written_arguments`).
"""
from __future__ import annotations

import types

import torch
import torch._library.custom_ops as custom_ops
import torch._library.utils as library_utils
import torch._ops

_VF = torch._C._VariableFunctions

# The dispatcher's operator objects (torch.ops.*), and torch.library.custom_op's.
DISPATCHER_OP_TYPES = (torch._ops.OpOverload, torch._ops.OpOverloadPacket)
CUSTOM_OP_TYPES = (custom_ops.CustomOpDef,)
OP_CLASSES = DISPATCHER_OP_TYPES + CUSTOM_OP_TYPES  # their subclasses too (`TorchBindOpOverload`)
OP_TYPES = frozenset(OP_CLASSES)


def _namespace(fn):
    """The operator namespace object `fn` would belong to (not yet checked to hold it):
    a module of `torch._C`, or `_VariableFunctions` for its static methods (bound to no object)."""
    owner = fn.__self__
    if owner is None:
        return _VF
    return owner if type(owner) is types.ModuleType else None


def _op_namespaces() -> frozenset:
    """The namespaces of the C functions torch.overrides lists (by id: `_VariableFunctions`
    is a class, the others are modules)."""
    found = set()
    for fns in torch.overrides.get_overridable_functions().values():
        for fn in fns:
            if type(fn) is types.BuiltinFunctionType and _namespace(fn) is not None:
                found.add(id(_namespace(fn)))
    return frozenset(found)


OP_NAMESPACES = _op_namespaces()

# Torch C functions of the op namespaces that must not become graph ops: fake propagation
# would run them at trace time for real, or their answer depends on what no guard watches.
NOT_GRAPH_OPS = {
    _VF._print: "it prints (I/O): it runs eagerly",
    _VF.from_file: "it reads a file (I/O): it runs eagerly",
    _VF.from_numpy: "its result shares a NumPy array's memory: it runs eagerly",
    _VF.frombuffer: "its result shares a Python buffer's memory: it runs eagerly",
    _VF._from_blob: "its result shares memory at a raw address: it runs eagerly",
    _VF._cufft_set_plan_cache_max_size: "it changes the cuFFT plan cache (global state)",
    _VF._cufft_clear_plan_cache: "it clears the cuFFT plan cache (global state)",
    _VF._cufft_get_plan_cache_size: "it reads the cuFFT plan cache (global state no guard watches)",
    _VF._cufft_get_plan_cache_max_size: "it reads the cuFFT plan cache (global state no guard watches)",
    _VF._fused_sdp_choice: "its answer reads the global attention-backend flags, which no guard watches",
    _VF._use_cudnn_ctc_loss: "its answer reads the global cuDNN flags, which no guard watches",
    _VF._use_cudnn_rnn_flatten_weight: "its answer reads the global cuDNN flags, which no guard watches",
    _VF._use_miopen_ctc_loss: "its answer reads the global MIOpen flags, which no guard watches",
    _VF.cudnn_is_acceptable: "its answer reads the global cuDNN flags, which no guard watches",
    # Tensor methods torch.overrides lists, called unbound (`torch.Tensor.item(x)`): the
    # tensor tracker models what they do (vars/tensor.py), a graph node would not.
    torch.Tensor.backward: "it runs autograd (compiled autograd traces it, runtime/compiled_autograd.py)",
    torch.Tensor.register_hook: "it registers a hook (vars/hooks/tensor.py)",
    torch.Tensor.item: "its result is tensor data (data-dependent)",
    torch.Tensor.tolist: "its result is tensor data (data-dependent)",
    torch.Tensor.numpy: "its result is a NumPy array sharing the tensor's memory",
    torch.Tensor.retain_grad: "it changes autograd metadata (vars/tensor.py)",
    torch.Tensor.requires_grad_: "it changes autograd metadata (vars/tensor.py)",
    torch.Tensor.data_ptr: "its result is a memory address",
    torch.Tensor._is_view: "its answer is autograd view metadata a fake tensor does not share",
    torch.Tensor.is_set_to: "its answer compares storages a fake tensor does not share",
    torch.autocast: "a context manager (vars/autocast/)",
}


def is_namespace_op(fn) -> bool:
    """Whether C function `fn` is an attribute of one of torch's operator namespaces."""
    if type(fn) is not types.BuiltinFunctionType:
        return False
    namespace = _namespace(fn)
    return (namespace is not None and id(namespace) in OP_NAMESPACES
            and getattr(namespace, fn.__name__, None) is fn)


def is_torch_op(fn) -> bool:
    """Whether `fn` is a torch op by the rule (NOT_GRAPH_OPS not yet subtracted)."""
    return isinstance(fn, OP_CLASSES) or is_namespace_op(fn)


def graph_target(fn):
    """What a graph node of a call of torch op `fn` calls: a custom op's `OpOverload`."""
    return fn._opoverload if isinstance(fn, CUSTOM_OP_TYPES) else fn


def op_name(fn) -> str:
    """How a break reason names torch callable `fn`."""
    if isinstance(fn, CUSTOM_OP_TYPES):
        return f"torch.ops.{fn._qualname.replace('::', '.')}"
    if isinstance(fn, DISPATCHER_OP_TYPES):
        return f"torch.ops.{fn}"
    module, name = getattr(fn, "__module__", None), getattr(fn, "__name__", None)
    return f"{module}.{name}" if module and name else f"torch.{getattr(fn, '__qualname__', fn)}"


def missing_fake_kernel(fn) -> str | None:
    """Why fake propagation cannot run custom op `fn` (None: it can, or `fn` is no custom op):
    a `torch.library.custom_op` without `register_fake` (whose fake kernel raises)."""
    if not isinstance(fn, OP_CLASSES):
        return None
    target = graph_target(fn)
    overloads = [getattr(target, name) for name in target.overloads()] \
        if isinstance(target, torch._ops.OpOverloadPacket) else [target]
    for op in overloads:
        if not isinstance(op, torch._ops.OpOverload):
            continue
        opdef = custom_ops.OPDEFS.get(op._name)
        if opdef is not None and opdef._abstract_fn is None and not library_utils.can_generate_trivial_fake_impl(op):
            return f"custom op {opdef._qualname} has no fake kernel"
    return None


def written_arguments(target) -> tuple | None:
    """(positions, names) of the arguments dispatcher op `target` writes by its schema
    (`Tensor(a!)`; for a packet, what any overload writes), or None for other callables."""
    if not isinstance(target, DISPATCHER_OP_TYPES):
        return None
    if isinstance(target, torch._ops.OpOverloadPacket):
        overloads = [getattr(target, name) for name in target.overloads()]
    elif isinstance(target, torch._ops.OpOverload):
        overloads = [target]
    else:
        return None
    positions, names = set(), set()
    for op in overloads:
        for i, arg in enumerate(op._schema.arguments):
            if arg.alias_info is not None and arg.alias_info.is_write:
                names.add(arg.name)
                if not arg.kwarg_only:
                    positions.add(i)
    return frozenset(positions), frozenset(names)
