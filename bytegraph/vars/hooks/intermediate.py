"""`y.register_hook(fn)` on a tensor computed in the trace (no source), without a graph
break: the opaque hook node of Note [Intermediate hook node] (ops/hooks.py) in the
graph, the function rebuilt and attached by the residual code, the handle a tracker that
the residual code rebuilds as the real `RemovableHandle`.

Per capture, one `IntermediateHooksVariable` stands for the call's slot: a local
`__bg_hooks` of the residual code, made while the graph's inputs load (its token is an
unguarded graph input, `IntermediateHookTokenSource`). Each `register_hook` call adds a
hook node and an `IntermediateHookHandleVariable` (index `i`) to it, through the mutation
barrier, so speculation undoes it and a higher-order op body refuses it (a graph break).
`h.remove()` in the trace marks the handle removed (barrier): that hook is never attached.
The side-effect replay attaches the live functions in one call,
`__bg_hooks.attach((fn_0, None, fn_2, ...))`; a handle the program keeps is
`__bg_hooks.handle(i)`, the real one, so `remove()` after the call works as in eager.

A function is attached when residual code can rebuild it: one with a source (a global
function, a bound method of an input object), or made in the trace (a lambda, a nested
function, a `functools.partial`, a bound method) from parts it can rebuild; anything else
breaks the graph at `register_hook` with a reason naming the function.
"""
from __future__ import annotations

import torch
from torch.utils.hooks import RemovableHandle

from ...guards.sources import HOOKS_SLOT_LOCAL, IntermediateHookTokenSource, IntermediateHooksSource
from ..base import REPLAY_OBJECT, MethodOfVariable, VariableTracker
from ..constant import ConstantVariable
from ...ops.hooks import IntermediateHooks, hook_op



class IntermediateHooksVariable(VariableTracker):
    """The hooks registered on graph tensors in this capture, in registration order."""

    __slots__ = ("token", "handles")
    replay_phase = REPLAY_OBJECT

    def __init__(self, token):
        super().__init__(IntermediateHooksSource())
        self.token = token          # the TensorVariable of the token graph input
        self.handles: list = []     # IntermediateHookHandleVariable, by index

    def python_type(self) -> type:
        return IntermediateHooks

    def live_functions(self) -> list:
        return [h.fn for h in self.handles if not h.removed]

    def children(self):
        return self.live_functions()

    def replayed_values(self):
        return self.live_functions()

    def replay_records(self, cg) -> list:
        """`__bg_hooks.attach((fn_0, None, ...))`: None for a handle removed while traced."""
        handles = list(self.handles)

        def push():
            cg.push_callable(lambda: (cg.load_fast(HOOKS_SLOT_LOCAL), cg.load_attr("attach")))
            for h in handles:
                if h.removed:
                    cg.load_const(None)
                else:
                    cg.reconstruct(h.fn)
            cg.build("BUILD_TUPLE", len(handles))
        return [(push, lambda: cg.call_and_pop(1))]


class IntermediateHookHandleVariable(VariableTracker):
    """The handle `register_hook` returned for hook `index` of the capture: `remove()` in
    the trace; rebuilt as the real `RemovableHandle` (`__bg_hooks.handle(index)`)."""

    __slots__ = ("index", "fn", "removed")
    rebuilt_as_new_object = True

    def __init__(self, index: int, fn: VariableTracker):
        super().__init__(None)
        self.index = index
        self.fn = fn
        self.removed = False

    def python_type(self) -> type:
        return RemovableHandle

    def describe(self) -> str:
        return f"the handle of hook {self.fn.describe()}"

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name == "remove":
            return MethodOfVariable(self, name)
        return super().var_getattr(tx, name)

    def call_method(self, tx, name: str, args: list, kwargs: dict) -> VariableTracker:
        if name == "remove" and not args and not kwargs:
            tx.output.side_effects.mutate(self)
            self.removed = True
            return ConstantVariable(None)
        tx.unsupported(f"{name}() of {self.describe()}", category="unsupported hook handle",
                       hint="only remove() of a hook handle is captured")

    def reconstruct(self, cg) -> None:
        cg.push_callable(lambda: (cg.load_fast(HOOKS_SLOT_LOCAL), cg.load_attr("handle")))
        cg.load_const(self.index)
        cg.call(1)


def register_hook(tx, tensor, args: list, kwargs: dict) -> VariableTracker:
    """`tensor.register_hook(fn)` for `tensor` computed in the trace: a hook node, and the
    handle tracker (see the module docstring)."""
    fn = _hook_argument(tx, args, kwargs)
    example = tensor.example
    if not example.requires_grad:
        tx.raise_user_error(RuntimeError("cannot register a hook on a tensor that doesn't require gradient"))
    if example.grad_fn is None:
        tx.unsupported(f"register_hook() on {tensor.describe()}, a leaf made in the compiled function",
                       category="unsupported tensor hook")
    why = _not_rebuildable(fn)
    if why is not None:
        tx.unsupported(f"register_hook({fn.describe()}) on {tensor.describe()}: the hook cannot be rebuilt "
                       f"after the graph ({why})", category="unsupported tensor hook",
                       hint="use a module-level function, a bound method, a functools.partial or a closure "
                            "over values the compiled function can rebuild")
    slot = _slot(tx)
    tx.output.side_effects.mutate(slot)
    handle = IntermediateHookHandleVariable(len(slot.handles), fn)
    slot.handles.append(handle)
    graph = tx.output.graph
    node = graph.call_function(hook_op, (tensor.as_fx_arg(tx), slot.token.as_fx_arg(tx), handle.index))
    node.meta["example_value"] = None
    node.meta["bg_frames"] = tx.frames()
    return handle


def _hook_argument(tx, args: list, kwargs: dict) -> VariableTracker:
    if len(args) == 1 and not kwargs:
        return args[0]
    if not args and set(kwargs) == {"hook"}:
        return kwargs["hook"]
    tx.raise_user_error(TypeError("register_hook() takes exactly one argument (hook)"))


def _slot(tx) -> IntermediateHooksVariable:
    """This capture's slot tracker, made (with its token input) on first use; a checkpoint
    restore that erased the token input makes a new one."""
    output = tx.output
    slot = output.intermediate_hooks
    if slot is None or output.real_input(slot.token) is None:
        token = output.add_input(IntermediateHookTokenSource(), torch.tensor(0), guarded=False)
        slot = IntermediateHooksVariable(token)
        output.set_intermediate_hooks(slot)
    return slot


def _not_rebuildable(vt, seen=None) -> str | None:
    """Why residual code cannot rebuild `vt` (None if it can): every part must have a
    source, be a graph tensor or a constant, or be a kind that rebuilds itself."""
    if vt.source is not None or vt.is_tensor or vt.is_python_constant():
        return None
    if type(vt).reconstruct is VariableTracker.reconstruct:
        return f"{vt.describe()} was made in the compiled function and has no Python equivalent"
    seen = set() if seen is None else seen
    if id(vt) in seen:
        return None
    seen.add(id(vt))
    for child in vt.children():
        why = _not_rebuildable(child, seen)
        if why is not None:
            return why
    return None
