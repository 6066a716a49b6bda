"""The opaque hook node of a tensor hook registered on an intermediate (a tensor computed
in the graph, without a source), and the per-call runtime state it reads.

Note [Intermediate hook node]
`y.register_hook(fn)` on a graph tensor `y` becomes one node of the forward graph,
`bytegraph_hook(y, token, index)`: a HigherOrderOperator defined here, never traced into.
`token` is a 0-dim int64 graph input made per call by the residual code (a new
`IntermediateHooks` slot: `token` holds its id); `index` numbers the `register_hook`
calls of the capture. The node attaches a hook to `y` *where autograd sees it*:
- run by the `eager` backend (real tensors), its Autograd-key implementation registers
  `_fire(token, index)` on the real `y`: backward fires it on `y`'s summed gradient,
  before `y`'s grad_fn, exactly where eager fires `fn`;
- traced by AOT autograd (`aot_eager`, `inductor`), the same implementation registers
  `_fire` on the traced `y` of the joint graph, so when AOT traces the backward the hook
  fires there and records `bytegraph_call_hook(grad, token, index)`: a second opaque
  HigherOrderOperator, kept as one node of the backward graph (inductor runs it as a
  fallback kernel, `register_inductor_fallback`). The forward node itself leaves no op.
At run time both look up the slot by the token's value and call the user's function that
the residual code attached after the graph (`IntermediateHooks.attach`), unless its
handle was removed; a hook returning a tensor replaces the gradient, as in eager. The
residual code makes the slot's `RemovableHandle`s in registration order, so `h.remove()`
outside the compiled function works on the real handle. The slot lives as long as its
token: the eager backend's registered hook and AOT's saved tensors hold it.

Two consequences, where torch.compile differs (issue 42 item 4). The hook is never traced in the
forward, so a hook that branches on its gradient's metadata (`grad.layout`, `is_contiguous()`,
`stride()`) is captured: it runs on the real gradient, or compiled autograd traces it in the
backward graph where the gradient has the metadata the backward ops give it
(tests/intermediate_hooks/test_hook_layout_branches.py). torch.compile traces the body in the
forward, where that metadata is unknown, and refuses such hooks. The other side of the same
choice is the token: the functions the residual code attaches differ per call (closures over
per-call values), and a graph input is the one per-call value that reaches the node (AOT saves
it for the backward graph), so `bytegraph_hook_token` is a graph input where torch.compile's
graph (its hook body a subgraph, the closure's values lifted as inputs) has none.
"""
from __future__ import annotations

import functools
import itertools
import weakref
from collections import OrderedDict

import torch
from torch._C import DispatchKey
from torch._ops import HigherOrderOperator
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import ProxyTorchDispatchMode, disable_proxy_modes_tracing, track_tensor_tree
from torch.utils.hooks import RemovableHandle

_SLOTS: dict = {}           # slot id -> IntermediateHooks, while its token lives
_slot_ids = itertools.count(1)


class IntermediateHooks:
    """The hooks of one call of a graph with intermediate hook nodes: the handles (made in
    `register_hook` order) and the functions attached to them; `new_token()` names it."""

    __slots__ = ("hooks", "handles")

    def __init__(self):
        self.hooks: OrderedDict = OrderedDict()  # handle id -> function (a handle removes its id)
        self.handles: list = []

    def new_token(self) -> torch.Tensor:
        """The graph input naming this slot; the slot stays registered while it lives (the
        slot itself does not hold it)."""
        sid = next(_slot_ids)
        token = torch.scalar_tensor(sid, dtype=torch.int64)
        _SLOTS[sid] = self
        weakref.finalize(token, _SLOTS.pop, sid, None)
        return token

    def handle(self, index: int) -> RemovableHandle:
        """The handle of the `index`-th `register_hook` call (earlier ones made first, so
        handle ids follow registration order as in eager)."""
        while len(self.handles) <= index:
            self.handles.append(RemovableHandle(self.hooks))
        return self.handles[index]

    def attach(self, fns: tuple) -> None:
        """Attach `fns[i]` to the `i`-th hook node (None: its handle was removed while traced)."""
        for index, fn in enumerate(fns):
            handle = self.handle(index)
            if fn is not None:
                self.hooks[handle.id] = fn

    def hook(self, index: int):
        handles = self.handles
        return self.hooks.get(handles[index].id) if index < len(handles) else None


def _run(token, index: int, grad):
    """The user's hook of node `index` of the call `token` names, on the real gradient."""
    slot = _SLOTS.get(int(token))
    fn = slot.hook(index) if slot is not None else None
    return None if fn is None else fn(grad)


def _fire(token, index: int, grad):
    """The autograd hook the node registers: a real gradient runs the user's hook; a
    traced one (AOT autograd tracing the backward) records the backward hook node."""
    if type(grad) is torch.Tensor and type(token) is torch.Tensor:
        return _run(token, index, grad)
    return call_hook(grad, token, index)


def _removed_hook(grad):
    return None


def intermediate_hook_of(hook):
    """For compiled autograd: the user's function behind hook `hook` when it is an
    intermediate hook node's (a no-op once its handle was removed), else `hook` itself."""
    if type(hook) is not functools.partial or hook.func is not _fire:
        return hook
    token, index = hook.args
    slot = _SLOTS.get(int(token))
    fn = slot.hook(index) if slot is not None else None
    return _removed_hook if fn is None else fn


class HookOp(HigherOrderOperator):
    """`bytegraph_hook(tensor, token, index)`: attach hook `index` of call `token` to `tensor`
    (Note [Intermediate hook node]). Returns None."""

    def __init__(self):
        super().__init__("bytegraph_hook")

    def __call__(self, tensor, token, index):
        if type(tensor) is torch.Tensor and not torch._C._len_torch_dispatch_stack():
            return _hook_autograd(tensor, token, index)  # real tensors (the eager backend): skip the dispatch
        return super().__call__(tensor, token, index)


class CallHookOp(HigherOrderOperator):
    """`bytegraph_call_hook(grad, token, index)`: the backward side of `bytegraph_hook`, the
    user's hook applied to `grad`; returns the new gradient (a fresh tensor)."""

    def __init__(self):
        super().__init__("bytegraph_call_hook")

    def __call__(self, grad, token, index):
        return super().__call__(grad, token, index)


hook_op = HookOp()
call_hook = CallHookOp()


@hook_op.py_impl(DispatchKey.Autograd)
def _hook_autograd(tensor, token, index):
    if tensor.requires_grad:
        tensor.register_hook(functools.partial(_fire, token, index))
    return None


def _hook_below_autograd(*args):
    return None


hook_op.py_impl(DispatchKey.CompositeExplicitAutograd)(_hook_below_autograd)
hook_op.py_impl(ProxyTorchDispatchMode)(_hook_below_autograd)
hook_op.py_impl(FakeTensorMode)(_hook_below_autograd)
hook_op.py_functionalize_impl(_hook_below_autograd)


@call_hook.py_impl(DispatchKey.CompositeExplicitAutograd)
def _call_hook_dense(grad, token, index):
    new = _run(token, index, grad)
    return grad.clone() if new is None or new is grad else new  # the graph sees a fresh tensor


@call_hook.py_impl(FakeTensorMode)
def _call_hook_fake(mode, grad, token, index):
    with mode:
        return torch.empty_like(grad)


@call_hook.py_impl(ProxyTorchDispatchMode)
def _call_hook_proxy(mode, grad, token, index):
    with disable_proxy_modes_tracing():
        out = call_hook(grad, token, index)
    unwrap = mode.tracer.unwrap_proxy
    proxy = mode.tracer.create_proxy("call_function", call_hook, (unwrap(grad), unwrap(token), index), {})
    return track_tensor_tree(out, proxy, constant=None, tracer=mode.tracer)


@call_hook.py_functionalize_impl
def _call_hook_functional(ctx, grad, token, index):
    grad, token = ctx.unwrap_tensors(grad), ctx.unwrap_tensors(token)
    with ctx.redispatch_to_next():
        out = call_hook(grad, token, index)
    return ctx.wrap_tensors(out)


call_hook.fallthrough(DispatchKey.AutogradCPU)
call_hook.fallthrough(DispatchKey.AutogradCUDA)

_inductor_fallback = []


def register_inductor_fallback() -> None:
    """Let inductor run the backward hook node as a fallback kernel (once per process)."""
    if not _inductor_fallback:
        from torch._inductor.lowering import make_fallback  # local: start-up cost (inductor), only with it

        make_fallback(call_hook)
        _inductor_fallback.append(True)
