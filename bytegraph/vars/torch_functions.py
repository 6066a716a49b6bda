"""torch functions: the graph-op tracker, the special cases that are no graph ops
(grad-mode context managers, RNG state, `torch.Size`), and the grad-mode trackers.

Which torch callables are graph ops is a rule (`vars/torch_op_rule.py`): a C function of
torch's operator namespaces, a dispatcher op or custom op, and what `torch.overrides`
lists (`GRAPH_OPS`: its Python functions and Tensor methods too), minus `NOT_GRAPH_OPS`.
Anything else from torch's C side (global state setters, RNG seeding, I/O) is not run at
trace time: it breaks the graph. `GRAPH_OPS` and `SPECIAL` are data of `vars/trace_rules.py`.
"""
from __future__ import annotations

import functools
import types
import typing

import torch
import torch._refs
import torch.overrides

from .base import CallableValueVariable, VariableTracker
from ..guards.guard import GuardKind
from ..guards.sources import AttrSource
from .constant import ConstantVariable
from .functions import UserFunctionVariable
from .registry import guard, register
from .tensor_scalar_args import rewrite_function
from .autocast.trackers import SPECIAL as AUTOCAST_SPECIAL, state_query
from .hooks.module import MODULE_HOOK_SPECIAL
from .torch_contexts import null_context
from .torch_op_rule import NOT_GRAPH_OPS, graph_target, missing_fake_kernel, op_name
from . import factory
from .tensor import TensorVariable
from .symbolic import is_unbacked
from .containers import SizeVariable
from .functions import BaseFunctionVariable

def _graph_ops() -> frozenset:
    """What torch.overrides lists (every tensor op of `torch.*`, `torch.nn.functional.*`,
    Tensor methods), minus what must not be a graph op."""
    ops = set()
    for fns in torch.overrides.get_overridable_functions().values():
        ops.update(fns)
    ops.difference_update(NOT_GRAPH_OPS)
    return frozenset(ops)


GRAPH_OPS = _graph_ops()


def _op_argument(vt) -> bool:
    """Whether `vt` can be an argument of a graph node run on fake tensors: a tensor, a symbolic
    or constant value, or a list/tuple of them."""
    if vt.is_tensor or vt.is_symbolic() or vt.is_python_constant():
        return True
    items = vt.sequence_items()
    return items is not None and all(_op_argument(i) for i in items)


class TorchFunctionVariable(CallableValueVariable):
    """A torch op: calling it adds a `call_function` node (a custom op's node calls its
    `OpOverload`); a custom op without a fake kernel breaks the graph. A Python function of
    torch (`torch.nn.functional.*`, not a C op) given an argument no node can take (a module
    or function as `triplet_margin_with_distance_loss`'s `distance_function`, an object) is
    traced as Python instead: its body calls that argument."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs):
        rewritten = rewrite_function(tx, self.fn, args, kwargs)
        if rewritten is not None:
            return rewritten
        if type(self.fn) is types.FunctionType and not all(_op_argument(a) for a in (*args, *kwargs.values())):
            return tx.inline_call(UserFunctionVariable(self.fn, self.source), args, kwargs)
        missing = missing_fake_kernel(self.fn)
        if missing is not None:
            tx.unsupported(f"{op_name(self.fn)}(): {missing}", category="unsupported op",
                           hint="register one with `register_fake` (torch.library) to keep the call in the graph")
        if self.fn is torch.tensor and args and _holds_symbolic(args[0]):
            # torch's C `tensor` cannot take SymInts (it would guard their values, or fail on a
            # SymBool); its Python reference builds the tensor from them, as under torch.compile
            return tx.output.call_op("call_function", torch._refs.tensor, args, kwargs)
        return tx.output.call_op("call_function", graph_target(self.fn), args, kwargs)

    def var_getattr(self, tx, name: str) -> VariableTracker:
        """An overload of a dispatcher op packet: `torch.ops.aten.add.Tensor`."""
        if type(self.fn) is not torch._ops.OpOverloadPacket or name not in self.fn.overloads():
            return super().var_getattr(tx, name)
        return tx.wrap(getattr(self.fn, name), AttrSource(self.source, name) if self.source is not None else None)

    def describe(self) -> str:
        return f"torch function {op_name(self.fn)}"


def _holds_symbolic(vt) -> bool:
    """Whether `vt` (the data of `torch.tensor`) is, or nests, a symbolic number."""
    if vt.is_symbolic():
        return True
    items = vt.sequence_items()
    return items is not None and any(_holds_symbolic(i) for i in items)


class TorchSpecialVariable(CallableValueVariable):
    """A torch callable with trace-time semantics of its own (see SPECIAL)."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs):
        return SPECIAL[self.fn](tx, args, kwargs)

    def describe(self) -> str:
        return f"{getattr(self.fn, '__module__', 'torch')}.{getattr(self.fn, '__qualname__', self.fn)}"


class GradModeVariable(VariableTracker):
    """`torch.no_grad()` / `enable_grad()` / `set_grad_enabled(b)` objects.

    Entering records a `torch._C._set_grad_enabled` node and sets the tracer's grad
    mode (fake propagation follows it); exiting restores the mode seen on entry.
    `set_grad_enabled(b)` switches on construction, like eager. A `no_grad()` or
    `enable_grad()` object never entered in the trace is rebuilt by calling its class again
    (it holds no state until entered) when residual code needs it: one made before a break
    and entered after it.
    """

    __slots__ = ("target", "prior", "switch_on_init", "entered")

    def __init__(self, target: bool, prior: bool, switch_on_init: bool = False):
        super().__init__(None)
        self.target = target
        self.prior = prior
        self.switch_on_init = switch_on_init
        self.entered = False

    def python_type(self) -> type:
        return torch.set_grad_enabled if self.switch_on_init else (
            torch.no_grad if not self.target else torch.enable_grad)

    def enter_with(self, tx) -> tuple:
        return WithExitVariable(self), self.enter(tx)

    def enter(self, tx) -> VariableTracker:
        tx.output.side_effects.touch(self)
        self.entered = True
        self.prior = tx.output.grad_enabled if not self.switch_on_init else self.prior
        tx.output.set_grad_enabled(self.target)
        return ConstantVariable(None)

    def exit(self, tx) -> VariableTracker:
        tx.output.set_grad_enabled(self.prior)
        return ConstantVariable(False)

    def call_function(self, tx, args, kwargs):
        (fn,) = args

        if not isinstance(fn, BaseFunctionVariable):
            return super().call_function(tx, args, kwargs)
        return GradModeWrappedFunction(self, fn)

    def reconstruct(self, cg) -> None:
        if self.switch_on_init or self.entered:  # its real object would hold the mode it saw
            super().reconstruct(cg)
            return
        cg.push_callable_const(self.python_type())
        cg.call(0)


class RestoreGradMode:
    """The `__exit__` of a grad-mode block, rebuilt by residual code at a graph break:
    restores the grad mode seen when the block was entered."""

    __slots__ = ("prior",)

    def __init__(self, prior: bool):
        self.prior = prior

    def __call__(self, *exc_info) -> bool:
        torch._C._set_grad_enabled(self.prior)
        return False

    def __repr__(self) -> str:
        return f"<restore grad mode {self.prior}>"


class WithExitVariable(VariableTracker):
    """The `__exit__` that BEFORE_WITH leaves on the stack for a grad-mode context; a
    `RestoreGradMode` handed to a resume function inside the block is wrapped as one."""

    __slots__ = ("ctx",)
    kept_in_block = True

    def __init__(self, ctx, source=None):
        super().__init__(source)
        self.ctx = ctx

    def python_type(self) -> type:
        return type(self.ctx)

    @property
    def restored_grad_mode(self) -> bool:
        return self.ctx.prior

    def call_function(self, tx, args, kwargs):
        return self.ctx.exit(tx)

    def reconstruct(self, cg) -> None:
        cg.load_const(RestoreGradMode(self.ctx.prior))


@register(RestoreGradMode, exact=True)
def build_restore_grad_mode(tx, value, source, do_guard: bool) -> VariableTracker:
    """A grad-mode `with` block's exit handed to a resume function (Note [Breaks inside blocks])."""
    guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
    return WithExitVariable(GradModeVariable(not value.prior, value.prior), source)


class GradModeWrappedFunction(VariableTracker):
    """A function decorated with a grad-mode object (`@torch.no_grad()`)."""

    __slots__ = ("mode", "fn")

    def __init__(self, mode, fn):
        super().__init__(None)
        self.mode = mode
        self.fn = fn

    def python_type(self) -> type:
        return type(self.fn)

    def call_function(self, tx, args, kwargs):
        prior = tx.output.grad_enabled
        tx.output.set_grad_enabled(self.mode.target)
        result = self.fn.call_function(tx, args, kwargs)
        tx.output.set_grad_enabled(prior)
        return result


def _no_grad(tx, args, kwargs):
    return GradModeVariable(False, tx.output.grad_enabled)


def _enable_grad(tx, args, kwargs):
    return GradModeVariable(True, tx.output.grad_enabled)


def _set_grad_enabled(tx, args, kwargs):
    mode = (args[0] if args else kwargs["mode"]).as_python_constant()
    ctx = GradModeVariable(bool(mode), tx.output.grad_enabled, switch_on_init=True)
    tx.output.set_grad_enabled(bool(mode))
    return ctx


def _switch_grad_mode(tx, args, kwargs):
    """`torch._C._set_grad_enabled(mode)`, as the `__enter__`/`__exit__` of a real
    `no_grad()`/`enable_grad()` object call it: the traced switch."""
    if kwargs or len(args) != 1 or not args[0].is_python_constant() or type(args[0].as_python_constant()) is not bool:
        tx.unsupported("torch._C._set_grad_enabled() with other than one bool argument", category="unsupported call",
                       hint="pass a constant True or False, or use torch.set_grad_enabled(mode)")
    tx.output.set_grad_enabled(args[0].as_python_constant())
    return ConstantVariable(None)


def _is_grad_enabled(tx, args, kwargs):
    return ConstantVariable(tx.output.grad_enabled)


def _size(tx, args, kwargs):
    items = args[0].unpack(tx) if args else []
    if not all(i.is_python_constant() for i in items):
        tx.unsupported("torch.Size of non-constant values", category="data-dependent")
    return SizeVariable(items)


def _is_tensor(tx, args, kwargs):
    return ConstantVariable(isinstance(args[0], TensorVariable))


def _default_dtype(tx, args, kwargs):
    return ConstantVariable(torch.get_default_dtype())


def _check(tx, args, kwargs):
    """`torch._check(cond)` on a condition over a number from tensor data: a fact the trace
    assumes from here on, checked by the graph (the ShapeEnv's deferred runtime assert, Note
    [Data-dependent capture] in graph/shapes.py); any other call runs torch's Python, inlined."""
    if len(args) == 1 and not kwargs and is_unbacked(args[0]) and args[0].python_type() is bool:
        torch._check(args[0].example)
        return ConstantVariable(None)
    return UserFunctionVariable(torch._check).call_function(tx, args, kwargs)


def _rng(tx, args, kwargs):
    tx.unsupported("changing or reading the global RNG state inside the compiled function",
                   category="unsupported call", hint="seed the generator outside the compiled function")


def _no_torch_function(of_iterable: bool):
    """A handler for `has_torch_function(tensors)` (`of_iterable`) and its `_unary(obj)` /
    `_variadic(*objs)` forms: False for plain tensors, parameters and constants."""
    def handler(tx, args, kwargs):
        if kwargs or (of_iterable and len(args) != 1):
            tx.unsupported("has_torch_function() with unexpected arguments", category="unsupported call")
        items = args[0].unpack(tx) if of_iterable else args
        plain = (torch.Tensor, torch.nn.Parameter)
        for item in items:
            if isinstance(item, TensorVariable) and item.python_type() not in plain:
                tx.unsupported("has_torch_function() on a tensor subclass", category="unsupported call")
            if not isinstance(item, TensorVariable) and not item.is_python_constant():
                tx.unsupported(f"has_torch_function() on {item.describe()}", category="unsupported call")
        return ConstantVariable(False)
    return handler


def _torch_function_mode(tx, args, kwargs):
    """Pushing or popping a TorchFunctionMode (`with mode:` of a `TorchFunctionMode`
    subclass, e.g. torch's `TransformGetItemToIndex` around transformers' vmapped masks): a
    graph break with the reason. Modelling it would run the mode's `__torch_function__`
    around every torch call of the block (and `has_torch_function` would answer True)."""
    tx.unsupported("entering or leaving a TorchFunctionMode (`with <mode>:`): bytegraph does not run a "
                   "mode's __torch_function__ around the torch calls of its block",
                   category="unsupported call",
                   hint="enter the mode outside the compiled function, or call what its __torch_function__ "
                        "does directly")


def _no_tracing_state(tx, args, kwargs):
    return ConstantVariable(None)


def _constant(value):
    """A handler folding the call to `value`: what the call returns inside a capture."""
    return lambda tx, args, kwargs: ConstantVariable(value)


def _fold_value(fn):
    """A handler running `fn` on constant arguments at trace time (a dtype argument read
    from a tensor is guarded by the tensor's guards, a global one by its own)."""
    def fold(tx, args, kwargs):
        return factory.fold_call(tx, fn, args, kwargs, f"torch.{fn.__name__}", wrap_result=ConstantVariable)
    return fold


def _cast(tx, args, kwargs):
    """`typing.cast(typ, value)` returns `value`."""
    if len(args) != 2 or kwargs:
        tx.unsupported("typing.cast() with other than two positional arguments", category="unsupported call")
    return args[1]


def _guarded_query(fn):
    """A handler folding a call of `fn` (a query of global state, no arguments) to its
    current answer, guarded per call; a query that raises (CUDA queries on a build without
    CUDA) raises the user's error."""
    def query(tx, args, kwargs):
        if args or kwargs:
            tx.unsupported(f"{fn.__qualname__}() with arguments", category="unsupported call")
        try:
            fn()
        except Exception as e:
            tx.raise_user_error(e)
        return state_query(tx, fn, [])
    return query


SPECIAL = {
    **AUTOCAST_SPECIAL,  # torch.autocast blocks and the autocast state queries
    **MODULE_HOOK_SPECIAL,  # registering a global module hook: a graph break (vars/hooks/module.py)
    # Global state torch's and libraries' code asks about: functorch transforms (vmap, grad)
    # active, a CUDA graph being captured, the autograd engine running a backward with
    # `inputs=` (activation checkpointing refuses it).
    torch._C._are_functorch_transforms_active: _guarded_query(torch._C._are_functorch_transforms_active),
    torch.cuda.is_current_stream_capturing: _guarded_query(torch.cuda.is_current_stream_capturing),
    torch.autograd._is_checkpoint_valid: _guarded_query(torch.autograd._is_checkpoint_valid),
    # Immutable values made from constants (a dtype, a device string): folded.
    torch.finfo: _fold_value(torch.finfo),
    torch.iinfo: _fold_value(torch.iinfo),
    torch.device: _fold_value(torch.device),
    # What torch's own code asks to know whether it is being compiled or JIT-traced.
    torch.compiler.is_compiling: _constant(True),
    torch.compiler.is_dynamo_compiling: _constant(True),
    torch.jit.is_scripting: _constant(False),
    torch.jit.is_tracing: _constant(False),
    torch._C._is_tracing: _constant(False),
    # The name of the out-of-tree device backend, set once at startup (torch.optim asks it
    # which devices have foreach kernels): folded, as torch.compile folds it.
    torch._C._get_privateuse1_backend_name: _fold_value(torch._C._get_privateuse1_backend_name),
    typing.cast: _cast,
    # Profiler ranges: no-ops in the graph, as under torch.compile.
    torch.autograd.profiler.record_function:
        functools.partial(null_context, cls=torch.autograd.profiler.record_function),
    torch.overrides.has_torch_function: _no_torch_function(of_iterable=True),
    torch.overrides.has_torch_function_unary: _no_torch_function(of_iterable=False),
    torch.overrides.has_torch_function_variadic: _no_torch_function(of_iterable=False),
    torch._C._get_tracing_state: _no_tracing_state,
    torch._C._push_on_torch_function_stack: _torch_function_mode,
    torch._C._pop_torch_function_stack: _torch_function_mode,
    torch.no_grad: _no_grad,
    torch.enable_grad: _enable_grad,
    torch.set_grad_enabled: _set_grad_enabled,
    torch._C._set_grad_enabled: _switch_grad_mode,
    torch.is_grad_enabled: _is_grad_enabled,
    torch.Size: _size,
    torch.is_tensor: _is_tensor,
    torch.get_default_dtype: _default_dtype,
    torch._check: _check,
    torch.manual_seed: _rng,
    torch.seed: _rng,
    torch.get_rng_state: _rng,
    torch.set_rng_state: _rng,
    torch.random.fork_rng: _rng,
}
