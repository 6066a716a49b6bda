"""nn.Module hooks: what of them the trace captures, and the graph breaks for the rest.

A call of a module with forward pre-hooks or forward hooks (its own, `with_kwargs`,
`always_call`, or global ones: `register_module_forward_hook`) traces
`Module._call_impl` itself (vars/nn_module.py), so the hooks run inside the graph with
eager's semantics; the hook dicts it reads are guarded up to a renaming of their handle
ids (Note [Hook registries] in vars/hooks/registry.py), so a hook added, removed or replaced
between calls recompiles and the same hook registered again does not, and a call of a module
without hooks guards that it has none (Note [Module call guard]).

Not captured, each a graph break with its reason:
- calling a module with backward hooks (`register_full_backward_hook`,
  `register_full_backward_pre_hook`, `register_backward_hook`, or global ones): eager's
  `BackwardHook` wraps the call's inputs and outputs in an autograd function and hooks
  its nodes, an autograd graph the compiled graph does not keep (hooks on intermediates,
  issue 17). The call runs eagerly at the break, so the hooks fire as in eager and the
  warnings eager emits are emitted; the guard that it has them makes a removed hook
  recompile;
- registering a module hook (a module's `register_*hook` methods, torch's global
  `register_module_*hook` functions) inside the compiled region: the hook dicts decide how
  later calls trace, so the registration runs eagerly at the break and the code after it
  (a resume function) sees the hook.

Note [Hooks run eagerly around a compiled forward]
FSDP2's `fully_shard` hooks (forward pre-hook and forward hook) unshard and reshard the
parameters, run collectives and attach autograd hooks; torch marks them as not for compilers
(`_fsdp_common._dynamo_disable`: each calls `torch._dynamo.disable(hook)`), and torch.compile
runs them eagerly and compiles the module's `forward` frame. Tracing one here breaks inside
`_call_impl`'s closure `inner`, where no resume function can continue, so the capture
restarts breaking at the call of the module (Note [Speculation log]). For a module with such
a hook (`has_skipped_hooks`), the residual code then calls
`forward_hooks_around(<the class's forward, compiled by bytegraph>, module)`: the module's
call as `Module._call_impl` runs it eagerly (pre-hooks, `forward`, forward hooks, the
`always_call` ones on an exception) with the compiled `forward` in place of
`module.forward`, so the hooks run eagerly and the forward is a graph of its own. What that
helper does not model it leaves to `module(...)` itself, checked at each call: backward
hooks (module or global), an instance `forward`, `_compiled_call_impl`, a TorchScript trace,
or a class whose `__call__`/`_call_impl` are not nn.Module's. A call of a module whose hook
breaks for another reason still runs eagerly as a whole at the break.
"""
from __future__ import annotations

import functools
import types
import warnings

import torch
from torch.nn.modules import module as _module_mod

from ...guards.sources import GuardExpressionSource, ObjectSource
from ...guards.guard import Guard, GuardKind

REGISTRATION_METHODS = frozenset(name for name in dir(torch.nn.Module)
                                 if name.startswith(("register_", "_register_")) and name.endswith("hook"))
_GLOBAL_BACKWARD = ("_global_backward_pre_hooks", "_global_backward_hooks")
_REGISTRATION_HINT = "register module hooks before calling the compiled function"


def registration_break(tx, what: str, name: str) -> None:
    tx.unsupported(f"{what}.{name}() registers a module hook inside the compiled region",
                   category="module hook registration", hint=_REGISTRATION_HINT)


def _global_registration(fn):
    def handler(tx, args, kwargs):
        registration_break(tx, "torch.nn.modules.module", fn.__name__)
    return handler


MODULE_HOOK_SPECIAL = {fn: _global_registration(fn) for name, fn in vars(_module_mod).items()
                       if name.startswith("register_module_") and name.endswith("hook") and callable(fn)}


def break_on_backward_hooks(tx, module_vt) -> None:
    """Break before calling `module_vt` if it (or the global dicts) has backward hooks,
    guarded to stay so; no-op (and no guard) when it has none."""
    d = module_vt.value.__dict__
    if d["_backward_hooks"] or d["_backward_pre_hooks"]:
        source = GuardExpressionSource("bool({0}['_backward_hooks'] or {0}['_backward_pre_hooks'])",
                                       (module_vt.dict_src,), f"backward hooks of {module_vt.source.describe()}")
        owner = "registered on it"
    elif any(getattr(_module_mod, name) for name in _GLOBAL_BACKWARD):
        source = GuardExpressionSource("bool({} or {})",
                                       tuple(ObjectSource(getattr(_module_mod, n)) for n in _GLOBAL_BACKWARD),
                                       "global nn.Module backward hooks")
        owner = "the global nn.Module hooks"
    else:
        return
    tx.output.add_guard(Guard(GuardKind.CONSTANT_MATCH, source, True, tx.guard_location()))
    tx.unsupported(f"calling {module_vt.describe()} with backward hooks ({owner}): they attach to the "
                   "autograd graph of the call's inputs and outputs, which the compiled graph does not keep",
                   category="module backward hooks",
                   hint="the call runs eagerly at a graph break; use tensor hooks on the inputs/outputs to "
                        "keep it in the graph")


# (module, qualified name) of the wrapper FSDP2 marks its hooks with as not for compilers
# (`_fsdp_common._dynamo_disable`), by name so that bytegraph never imports FSDP2.
SKIPPED_HOOK_WRAPPER = ("torch.distributed.fsdp._fully_shard._fsdp_common", "_dynamo_disable.<locals>.wrapper")


def _is_skipped_hook(hook) -> bool:
    fn = getattr(hook, "__func__", hook)
    if not isinstance(fn, types.FunctionType):
        return False
    return (fn.__globals__.get("__name__"), fn.__code__.co_qualname) == SKIPPED_HOOK_WRAPPER


def has_skipped_hooks(module) -> bool:
    """Whether a forward (pre-)hook of `module` is one torch marks as not for compilers
    (Note [Hooks run eagerly around a compiled forward])."""
    d = module.__dict__
    return any(map(_is_skipped_hook, (*d["_forward_pre_hooks"].values(), *d["_forward_hooks"].values())))


def forward_hooks_around(forward, module):
    """`module`'s call with `forward` (its class's, compiled) between its forward hooks,
    run eagerly (Note [Hooks run eagerly around a compiled forward])."""
    return functools.partial(_call_with_forward_hooks, forward, module)


def _runs_call_impl_as_is(module) -> bool:
    """Whether `module(...)` does something `_call_with_forward_hooks` does not model."""
    d, m = module.__dict__, _module_mod
    cls = type(module)
    return bool(d["_backward_hooks"] or d["_backward_pre_hooks"] or m._global_backward_hooks
                or m._global_backward_pre_hooks or "forward" in d or d.get("_compiled_call_impl") is not None
                or torch._C._get_tracing_state() or cls.__call__ is not torch.nn.Module.__call__
                or cls._call_impl is not torch.nn.Module._call_impl)


def _call_with_forward_hooks(forward, module, *args, **kwargs):
    """`Module._call_impl` for a module without backward hooks, calling `forward(module, ...)`."""
    if _runs_call_impl_as_is(module):
        return module(*args, **kwargs)
    m = _module_mod
    result = None
    called_always = set()
    try:
        for hook_id, hook in (*m._global_forward_pre_hooks.items(), *module._forward_pre_hooks.items()):
            if hook_id in module._forward_pre_hooks_with_kwargs:
                new = hook(module, args, kwargs)
                if new is not None:
                    if not (isinstance(new, tuple) and len(new) == 2):
                        raise RuntimeError("forward pre-hook must return None or a tuple "
                                           f"of (new_args, new_kwargs), but got {new}.")
                    args, kwargs = new
            else:
                new = hook(module, args)
                if new is not None:
                    args = new if isinstance(new, tuple) else (new,)
        result = forward(module, *args, **kwargs)
        for hook_id, hook in (*m._global_forward_hooks.items(), *module._forward_hooks.items()):
            if hook_id in module._forward_hooks_always_called or hook_id in m._global_forward_hooks_always_called:
                called_always.add(hook_id)
            if hook_id in module._forward_hooks_with_kwargs or hook_id in m._global_forward_hooks_with_kwargs:
                new = hook(module, args, kwargs, result)
            else:
                new = hook(module, args, result)
            if new is not None:
                result = new
        return result
    except Exception:
        _always_called_hooks(module, args, kwargs, result, called_always)
        raise


def _always_called_hooks(module, args, kwargs, result, called: set) -> None:
    """The `always_call` forward hooks not run yet, after the call raised (their own
    exceptions silenced with eager's warning): the global ones (never given kwargs), then the
    module's, as `Module._call_impl` runs them."""
    m = _module_mod
    tables = ((m._global_forward_hooks, m._global_forward_hooks_always_called, (), "global module forward hook"),
              (module._forward_hooks, module._forward_hooks_always_called, module._forward_hooks_with_kwargs,
               "module forward hook"))
    for hooks, always_called, with_kwargs, what in tables:
        for hook_id, hook in hooks.items():
            if hook_id in always_called and hook_id not in called:
                try:
                    new = hook(module, args, kwargs, result) if hook_id in with_kwargs else hook(module, args, result)
                    if new is not None:
                        result = new
                except Exception as e:
                    warnings.warn(f"{what} with ``always_call=True`` raised an exception that was silenced as "
                                  f"another error was raised in forward: {str(e)}", stacklevel=3)
