"""torch.nn modules made in the trace: `nn.CrossEntropyLoss(ignore_index=-100)` inside a
forward (transformers' heads make their loss module per call).

Note [Modules made in the trace]
A module class of `torch.nn` itself, called with constant arguments, whose instance holds no
parameters, no buffers other than None and no submodules (losses, activations, dropout,
flatten, ...), is built for real while tracing (torch's constructor, with the fake mode off
and the random state restored after it: a stateless module only stores its arguments, one
found to hold parameters is dropped without having drawn from the generator) and traced like a module from outside, through a
`MadeModuleSource` that names that object. The object never reaches the program: where
residual code needs the module (it is returned, stored, or live at a graph break) it builds
a new one with the same arguments, so every call gets a fresh module as eager does. The
object the trace built is only read by the guards and is never written (a write to a
module attribute is a graph break before it happens), so reading it is reading a fresh
module's state. Anything else (a user class, a torch class with state, a non-constant
argument) is the graph break it was.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily

from ..guards.sources import ObjectSource


@dataclass(frozen=True, slots=True, eq=False)
class MadeModuleSource(ObjectSource):
    """A module the trace built (`obj`) for `cls(*args, **kwargs)`; residual code builds a new one."""

    args: tuple = ()
    kwargs: dict = field(default_factory=dict)

    def describe(self) -> str:
        return f"a {type(self.obj).__qualname__} made in the compiled function"

    def reconstruct(self, cg) -> None:
        cg.push_null()
        cg.load_const(type(self.obj))
        for value in (*self.args, *self.kwargs.values()):
            cg.load_const(value)
        if self.kwargs:
            cg.kw_names(tuple(self.kwargs))
        cg.call(len(self.args) + len(self.kwargs))


def is_torch_nn_module_class(cls: type) -> bool:
    return issubclass(cls, torch.nn.Module) and cls.__module__.startswith("torch.nn.")


def make_module(tx, cls: type, args: list, kwargs: dict):
    """The tracker of `cls(*args, **kwargs)` built now, or None when the module cannot be
    made in the trace (Note [Modules made in the trace])."""
    if not all(a.is_python_constant() and not a.is_symbolic() for a in (*args, *kwargs.values())):
        return None
    values = tuple(a.as_python_constant() for a in args)
    kw_values = {k: v.as_python_constant() for k, v in kwargs.items()}
    try:  # the random state is put back: a module with parameters drew its initial values
        with unset_fake_temporarily(), torch.random.fork_rng(devices=[]):
            module = cls(*values, **kw_values)
    except Exception as e:  # bad arguments: the user's error, raised at the call
        tx.raise_user_error(e)
    if module._parameters or module._modules or any(b is not None for b in module._buffers.values()):
        return None
    return tx.wrap(module, MadeModuleSource(module, values, kw_values))
