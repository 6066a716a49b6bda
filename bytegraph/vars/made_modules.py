"""nn.Module instances made in the trace: `nn.CrossEntropyLoss(ignore_index=-100)` inside a
forward (transformers' heads make their loss module per call), `nn.GELU()`, transformers'
`ACT2FN["gelu"]` (a new `GELUActivation()` per call), a user module class made per call.

Note [Modules made in the trace]
A module class whose construction is traceable, called with constant arguments, whose
instance holds no parameters, no buffers other than None and no submodules (losses,
activations, dropout, flatten, a user module that only stores numbers, flags or functions),
is built for real while tracing (the constructor called with the fake mode off and the
random state restored after it: a stateless module only stores its arguments, one found to
hold parameters is dropped without having drawn from the generator) and traced like a
module from outside, through a `MadeModuleSource` that names that object. Traceable
construction: every `__init__` of the class's MRO written outside torch.nn is a Python
function whose body, traced first in a speculation scope on a scratch instance, writes
nothing but that instance (through `nn.Module.__setattr__`), records no tensor operation
and makes no replayed call; `nn.Module.__init__` itself (torch's constructor, which only
fills the new module's own dicts) is a trace rule there (`MODULE_INIT`), so the body's
`super().__init__()` is known. torch.nn's own classes are torch's constructors and are not
traced first. A construction that passes keeps the guards of what the `__init__`s read (a
global they store); nothing else of the speculation is left (the scratch instance has no
source: its writes replay nothing); one that fails is rolled back. The real constructor
runs once per trace. The object never reaches the program: where residual code needs the
module (it is returned, stored, or live at a graph break) it builds a new one with the same
arguments, so every call gets a fresh module as eager does. The object the trace built is
only read by the guards and is never written (a write to a module attribute is a graph
break before it happens), so reading it is reading a fresh module's state. Anything else (a
constructor with an effect, a module with state, a non-constant argument) is the graph
break it was.
"""
from __future__ import annotations

import types

import torch
from torch._subclasses.fake_tensor import unset_fake_temporarily

from ..errors import GraphBreak, TracedRaise
from ..guards.sources import MadeModuleSource
from . import factory
from .base import CallableValueVariable
from .class_lookup import class_lookup
from .constant import ConstantVariable
from .objects import NewObjectVariable


def is_module_class(cls: type) -> bool:
    return isinstance(cls, type) and issubclass(cls, torch.nn.Module)


def _is_torch_nn_class(cls: type) -> bool:
    return cls.__module__.startswith("torch.nn.")


_SCRATCH_SCOPE = "the __init__ of a module made in the compiled function"


class ModuleInitVariable(CallableValueVariable):
    """`nn.Module.__init__` (a trace rule, `MODULE_INIT`): reached by a traced
    `super().__init__()` only inside the speculative trace of a made module's `__init__`
    (Note [Modules made in the trace]), where it fills nothing (the scratch instance is
    dropped); anywhere else a graph break."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs):
        scratch = args[0] if args else None
        if not (isinstance(scratch, NewObjectVariable) and scratch.scope and len(args) == 1 and not kwargs
                and tx.output.side_effects.scope_name() == _SCRATCH_SCOPE):
            tx.unsupported("calling nn.Module.__init__ outside the construction of a module made in the "
                           "compiled function", category="unsupported call")
        return ConstantVariable(None)

    def describe(self) -> str:
        return "nn.Module.__init__"


_MODULE_INIT = torch.nn.Module.__init__
MODULE_INIT = {_MODULE_INIT: ModuleInitVariable}  # a table of vars/trace_rules.py


def _know_installed_module_init() -> None:
    """torch's own wrapper installed in place of `nn.Module.__init__` (torch._dynamo's
    generation tagging does so when it is imported, by a test's reference run for one) gets
    the rule of the function it wraps, so a traced `super().__init__()` reaches `_module_init`
    (the real construction runs the wrapper, as eager does)."""
    installed = torch.nn.Module.__dict__["__init__"]
    if installed is not _MODULE_INIT and getattr(installed, "__module__", "").startswith("torch."):
        factory.alias_trace_rule(installed, _MODULE_INIT)


def _construction_reason(tx, cls: type, args: list, kwargs: dict) -> str | None:
    """None when `cls(*args, **kwargs)` runs only traceable `__init__`s without effects
    (Note [Modules made in the trace]); else why not, with everything the check traced undone."""
    if _is_torch_nn_class(cls):
        return None
    init = class_lookup(cls, "__init__")[1]
    if init is torch.nn.Module.__init__:
        return None
    if not isinstance(init, types.FunctionType):
        return f"its __init__ ({type(init).__name__}) is not written in Python"
    if cls.__new__ is not object.__new__ or type(cls) is not type:
        return "its class has its own __new__ or metaclass"
    _know_installed_module_init()
    side_effects = tx.output.side_effects
    graph = tx.output.graph
    nodes, calls = len(graph.nodes), len(side_effects.calls)
    cp = tx.checkpoint()
    why = None
    try:
        with side_effects.scope(_SCRATCH_SCOPE):
            scratch = NewObjectVariable(object.__new__(cls))
            tx.wrap(init, None).call_function(tx, [scratch, *args], kwargs)
    except GraphBreak as brk:
        why = f"its __init__ breaks the graph ({brk.reason})"
    except TracedRaise:
        pass  # the real constructor raises it again, as the user's error
    else:
        if len(graph.nodes) != nodes:
            why = "its __init__ records tensor operations"
        elif len(side_effects.calls) != calls:
            why = "its __init__ makes calls replayed after the graph"
    if why is not None:
        tx.restore(cp)
    tx.release(cp)  # kept: the guards on what the __init__s read (a global), nothing else is left
    return why


def make_module(tx, cls: type, args: list, kwargs: dict) -> tuple:
    """(the tracker of `cls(*args, **kwargs)` built now, None), or (None, why the module
    cannot be made in the trace) (Note [Modules made in the trace])."""
    if not all(a.is_python_constant() and not a.is_symbolic() for a in (*args, *kwargs.values())):
        return None, "an argument is not a constant"
    why = _construction_reason(tx, cls, args, kwargs)
    if why is not None:
        return None, why
    values = tuple(a.as_python_constant() for a in args)
    kw_values = {k: v.as_python_constant() for k, v in kwargs.items()}
    try:  # the random state is put back: a module with parameters drew its initial values
        with unset_fake_temporarily(), torch.random.fork_rng(devices=[]):
            module = cls(*values, **kw_values)
    except Exception as e:  # bad arguments: the user's error, raised at the call
        tx.raise_user_error(e)
    if module._parameters or module._modules or any(b is not None for b in module._buffers.values()):
        return None, "it holds parameters, buffers or submodules"
    return tx.wrap(module, MadeModuleSource(module, values, kw_values)), None
