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
"""
from __future__ import annotations

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
