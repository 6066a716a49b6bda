"""The warning `bytegraph.compile(module)` gives when global module hooks are registered.

torch.compile warns at every call of a compiled module while any global module hook
(`torch.nn.modules.module.register_module_forward_hook` and the other
`register_module_*hook` functions) is registered, because its wrapper, `OptimizedModule`,
is itself a module: the hooks fire one extra time, for the wrapper. bytegraph's wrapper is
not a module, so the hooks fire as in eager, but they still change how every module call
is compiled: forward hooks are traced into the graph, backward hooks make each module call
a graph break, and the hook dicts are guarded, so registering or removing one recompiles.
The warning says so, once per capture of a compiled module's call while such hooks exist
(every change of the global hooks makes a compiled module recapture: its guards read
them), pointing at the user's call; Python's default filter shows it once per call site.
"""
from __future__ import annotations

import os
import sys
import warnings

from torch.nn.modules import module as _module_mod

from .root_frames import LISTENERS, forward_call

_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
_KINDS = {"_global_forward_pre_hooks": "forward pre-hook", "_global_forward_hooks": "forward hook",
          "_global_backward_pre_hooks": "backward pre-hook", "_global_backward_hooks": "backward hook"}


class GlobalModuleHooksWarning(UserWarning):
    """`bytegraph.compile(module)` was called while global module hooks are registered."""


def message() -> str:
    """What the user should know, naming the global hooks registered now."""
    found = [f"{len(d)} {kind}{'s' if len(d) > 1 else ''}" for name, kind in _KINDS.items()
             if (d := getattr(_module_mod, name))]
    return ("bytegraph: a module compiled by bytegraph.compile(module) was called while there are global hooks "
            f"on modules ({', '.join(found)}, e.g. from `register_module_forward_hook`). They fire as in eager, for "
            "the module and each submodule it calls, and not for the compiled wrapper, which is not a module "
            "(unlike torch.compile(module), whose OptimizedModule fires them an extra time). Forward hooks are "
            "traced into the graph, backward hooks make every module call a graph break that runs eagerly, and "
            "registering or removing a global hook recompiles every compiled module. To keep hooks to the "
            "modules they concern, register them per module (`module.register_forward_hook`).")


def _user_stacklevel() -> int:
    """The `stacklevel` naming the first frame outside bytegraph (the user's call): not in
    the package, nor code it generates (`<bytegraph wrapper of ...>`)."""
    frame, level = sys._getframe(1), 1
    while frame is not None and (frame.f_code.co_filename.startswith("<bytegraph")
                                 or os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE)):
        frame, level = frame.f_back, level + 1
    return level


def _warn_on_capture(compiled, entry, graph_break) -> None:
    if compiled.fn is not forward_call or not _module_mod._has_any_global_hook():
        return
    warnings.warn(message(), GlobalModuleHooksWarning, stacklevel=_user_stacklevel())


LISTENERS.append(_warn_on_capture)
