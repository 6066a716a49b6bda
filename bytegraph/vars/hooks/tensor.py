"""Tensor hooks registered in the trace on tensors that have a source, and their handles.

`x.register_hook(fn)` (or `p.register_post_accumulate_grad_hook(fn)`) on a tensor with a
source (an argument, a parameter or buffer, a tensor reached from an argument, a global,
a module attribute) is not a graph op: it changes the autograd state of the real tensor.
It is recorded in the side-effect log as a `HookRecord` (`SideEffects.record_hook`) and
replayed on the real tensor by the residual code right after the graph call (Note [Hook
replay]): sound, because that tensor is alive in the caller's world there and backward
can only run after the compiled region. A hook on a tensor without a source (an
intermediate) is issue 17's (`vars/tensor.py` dispatches; today it breaks the graph).

`RemovableHandleVariable` is the handle: one made by a traced registration stands for
the `RemovableHandle` the replayed call returns (held in a temporary of the residual
code, so it lands wherever user code put it: a local across a graph break, the return
value, a list, a dict or an attribute); one from outside (source) stands for itself.
`h.remove()` (also `with x.register_hook(fn):`) is a record of the same log, replayed in
order, so a hook registered and removed in one call never fires. `h.id` of a handle made
in the trace is a value only the replay knows: it flows to Python state as
`<handle>.id`, and using it as a constant breaks the graph.

The hook function is rebuilt by the replay like any value: one from outside reloads from
its source (a module-level function, a bound method, an attribute), so a new closure
object of the same code is registered as itself without a recompile (its tracker's
guards are on code and what the trace read, Note [Modules are guarded by type, not
identity] and vars/functions.py); lambdas, nested functions and `functools.partial`
objects made in the trace are rebuilt with their closures.

# Note [Hook replay]
Every hook record is emitted once, in log order, before anything else the residual code
rebuilds (`SideEffects.emit_hooks`, called by the first handle rebuilt or by the replay):
a handle returned, stored or live at a break must be the result of its own registration,
and registrations of several hooks on one tensor must keep eager's order, whichever
handle is rebuilt first. A removal of a handle from outside is deferred the same way,
unless the trace reads the dict it removes from (a module hook dict: it breaks).
"""
from __future__ import annotations

import operator

from torch.utils.hooks import RemovableHandle

from ...guards.guard import GuardKind
from ...guards.sources import AttrSource
from ..base import MethodOfVariable, VariableTracker
from ..constant import ConstantVariable
from ..lazy_int import UnpinnedIntVariable, wrap_int
from ..registry import guard, register
from ..method_table import dispatch, no_arguments, row

HOOK_METHODS = frozenset({"register_hook", "register_post_accumulate_grad_hook"})


class HookRecord:
    """One entry of the side-effect log's hook records: `tensor.<method>(fn)` whose result
    is `handle`, or (`method` None) `handle.remove()`."""

    __slots__ = ("tensor", "method", "fn", "handle")

    def __init__(self, tensor, method, fn, handle):
        self.tensor = tensor
        self.method = method
        self.fn = fn
        self.handle = handle

    def replayed_values(self) -> tuple:
        """The trackers the replay rebuilds (graph tensors among them are graph outputs)."""
        return (self.fn,) if self.method is not None else ()

    def emit(self, cg) -> None:
        """Stack-neutral residual code: the registration (its handle kept in a temporary)
        or the removal."""
        if self.method is None:
            cg.push_callable(lambda: (cg.reconstruct(self.handle), cg.load_attr("remove")))
            cg.call(0)
            cg.pop_top()
            return
        cg.push_callable(lambda: (cg.reconstruct(self.tensor), cg.load_attr(self.method)))
        cg.reconstruct(self.fn)
        cg.call(1)
        name = f"__bg_hook_{len(cg.tempvars)}"
        cg.tempvars[id(self.handle)] = name
        cg.store_fast(name)


def register_tensor_hook(tx, tensor, method: str, args: list, kwargs: dict) -> VariableTracker:
    """`tensor.<method>(fn)` on a tensor with a source: recorded, replayed after the graph."""
    if len(args) + len(kwargs) != 1 or (kwargs and "hook" not in kwargs):
        tx.unsupported(f"{method}() called with arguments other than one hook", category="unsupported tensor method")
    if not tensor.example.requires_grad:
        tx.raise_user_error(RuntimeError("cannot register a hook on a tensor that doesn't require gradient"))
    if method == "register_post_accumulate_grad_hook" and not tensor._grad_fn_is_none(tx):
        tx.raise_user_error(RuntimeError("post accumulate grad hooks cannot be registered on non-leaf tensors"))
    fn = args[0] if args else kwargs["hook"]
    if fn.source is None and type(fn).reconstruct is VariableTracker.reconstruct:
        tx.unsupported(f"{method}() with hook {fn.describe()}, which residual code cannot rebuild",
                       category="unsupported tensor method")
    handle = RemovableHandleVariable()
    tx.output.side_effects.record_hook(HookRecord(tensor, method, fn, handle))
    return handle


def _remove_handle(tx, handle, name, args, kwargs) -> VariableTracker:
    handle._remove(tx)
    return ConstantVariable(None)


# a handle's methods: `remove()`, and `with handle:` (which removes the hook at its exit)
_HANDLE_METHODS = {
    "__enter__": row(lambda tx, handle, name, args, kwargs: handle, when=no_arguments),
    "remove": row(_remove_handle, when=no_arguments),
    "__exit__": row(_remove_handle, when=lambda handle, args, kwargs: len(args) == 3),
}


class RemovableHandleVariable(VariableTracker):
    """A `torch.utils.hooks.RemovableHandle`: made by a registration in the trace (no
    source; rebuilt as the replayed registration's result), or read from outside."""

    __slots__ = ("real",)

    def __init__(self, real=None, source=None):
        super().__init__(source)
        self.real = real

    def python_type(self) -> type:
        return RemovableHandle

    def describe(self) -> str:
        if self.source is not None:
            return f"hook handle {self.source.describe()}"
        return "a hook handle made in the compiled region"

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name in _HANDLE_METHODS:
            return MethodOfVariable(self, name)
        if name == "id":
            if self.source is not None:
                return wrap_int(tx, self.real.id, AttrSource(self.source, "id"))
            return HandleIdVariable(tx.output, self)
        tx.unsupported(f"attribute {name!r} of {self.describe()}", category="unsupported hook handle",
                       hint="only remove(), id and `with handle:` are captured")

    def hasattr_impl(self, tx, name: str) -> bool:
        return hasattr(RemovableHandle, name) or name in ("id", "hooks_dict_ref", "extra_dict_ref")

    def call_method(self, tx, name, args, kwargs):
        result = dispatch(tx, self, _HANDLE_METHODS, name, args, kwargs)
        if result is None:
            tx.unsupported(f"method {name}() of {self.describe()}", category="unsupported hook handle")
        return result

    def _remove(self, tx) -> None:
        if self.source is not None:
            hooks = self.real.hooks_dict_ref()
            if self.real.extra_dict_ref or (hooks is not None and tx.output.side_effects.tracker_for(hooks)):
                tx.unsupported(f"removing {self.describe()}, a module hook, inside the compiled region",
                               category="unsupported hook handle",
                               hint="remove module hooks outside the compiled function")
        tx.output.side_effects.record_hook(HookRecord(None, None, None, self))

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        cg.tx.output.side_effects.emit_hooks(cg)  # Note [Hook replay]
        name = cg.tempvars.get(id(self))
        if name is None:  # reached while rebuilding its own hook: the hook's closure holds it
            cg.tx.unsupported("a tensor hook whose closure holds the hook's own handle (residual code would "
                              "need the handle before the registration returns it)",
                              category="unsupported hook handle",
                              hint="pass the handle to the hook through an object attribute set after "
                                   "registering, outside the compiled function")
        cg.load_fast(name)


class HandleIdVariable(UnpinnedIntVariable):
    """`h.id` of a handle made in the trace: known only when the replay registers the hook,
    so it is rebuilt as `<handle>.id`; needing its value at trace time breaks the graph."""

    __slots__ = ()

    def __init__(self, output, handle: RemovableHandleVariable):
        super().__init__(0, output, None, operator.attrgetter("id"), (handle,))

    def pin(self) -> None:
        self.output.current_tx.unsupported("using the id of a hook handle made in the compiled region as a "
                                           "Python value", category="unsupported hook handle",
                                           hint="read handle.id outside the compiled function")


@register(RemovableHandle)
def build_handle(tx, value, source, do_guard: bool) -> RemovableHandleVariable:
    """A handle from outside: guarded by type; it stands for itself."""
    if source is None:
        tx.unsupported("a hook handle without a source", category="unsupported value")
    guard(tx, do_guard, GuardKind.TYPE_MATCH, source, RemovableHandle)
    return RemovableHandleVariable(value, source)

