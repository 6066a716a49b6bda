"""`CompiledModule`: what `bytegraph.compile(module)` returns.

A thin proxy that behaves like the module it wraps: every attribute read, write and
delete goes to the original module (so `parameters()`, `state_dict()` with the
original keys, `load_state_dict()`, `train()/eval()`, `to()` and attribute assignment
act on it), `isinstance(wrapper, type(module))` holds, and methods that return the
module itself (`train()`, `to()`, ...) return the wrapper instead, so chaining keeps
the compiled call. Calling the wrapper runs a compiled `forward_call(module, ...)`,
which the tracer inlines through the module's `__call__` semantics (hooks included).

The original module is left untouched (nothing is stored on it), so it can still be
pickled, deep-copied and called eagerly. Pickling or deep-copying the wrapper copies
the module and compiles the copy afresh.
"""
from __future__ import annotations

import functools
import inspect
import types

import torch

from .compiled_function import CompiledFunction
from .root_frames import forward_call


class CompiledModule:
    __slots__ = ("_bg_backend", "_bg_call", "_bg_compiled", "_bg_fullgraph", "_bg_module")
    __bg_module_wrapper__ = True

    def __init__(self, module: torch.nn.Module, backend, fullgraph: bool, dynamic=None):
        compiled = CompiledFunction(forward_call, backend, fullgraph, dynamic, top_level=True,
                                    code_key=_code_key(module))
        forward = inspect.unwrap(type(module).forward)  # the user's, under decorators that wrap it
        compiled.shown_as = (type(module).__qualname__, getattr(forward, "__code__", None))
        setattr_ = object.__setattr__
        setattr_(self, "_bg_module", module)
        setattr_(self, "_bg_compiled", compiled)
        setattr_(self, "_bg_call", types.MethodType(compiled.wrapper, module))
        setattr_(self, "_bg_backend", backend)
        setattr_(self, "_bg_fullgraph", fullgraph)

    def __call__(self, *args, **kwargs):
        return self._bg_call(*args, **kwargs)

    @property
    def __class__(self):  # isinstance(wrapper, nn.Linear) like the module
        return type(self._bg_module)

    @property
    def _orig_mod(self) -> torch.nn.Module:
        """The wrapped module (the name torch.compile's wrapper uses)."""
        return self._bg_module

    def __getattr__(self, name):
        value = getattr(self._bg_module, name)
        if isinstance(value, types.MethodType) and value.__self__ is self._bg_module:
            return _returning_wrapper(self, value)
        return value

    def __setattr__(self, name, value):
        setattr(self._bg_module, name, value)

    def __delattr__(self, name):
        delattr(self._bg_module, name)

    def __dir__(self):
        return dir(self._bg_module)

    def __repr__(self) -> str:
        return f"bytegraph.compile({self._bg_module!r})"

    def __len__(self):
        return len(self._bg_module)

    def __iter__(self):
        return iter(self._bg_module)

    def __getitem__(self, key):
        return self._bg_module[key]

    def __contains__(self, key):
        return key in self._bg_module

    def __reduce_ex__(self, protocol):
        return _rebuild, (self._bg_module, self._bg_backend, self._bg_fullgraph, self._bg_compiled.dynamic.mode)


def _code_key(module: torch.nn.Module):
    """What the recompile limit of a compiled module counts per (Note [Recompile limit] in
    runtime/code_state.py): its class's `forward` code, as torch.compile's cache is on it."""
    forward = getattr(type(module), "forward", None)
    return forward.__code__ if isinstance(forward, types.FunctionType) else type(module)


def _returning_wrapper(wrapper: CompiledModule, method: types.MethodType):
    module = method.__self__

    @functools.wraps(method)
    def call(*args, **kwargs):
        result = method(*args, **kwargs)
        return wrapper if result is module else result

    return call


def _rebuild(module, backend, fullgraph, dynamic=None):
    return CompiledModule(module, backend, fullgraph, dynamic)


def unwrap(obj):
    """The module inside a `CompiledModule`, or `obj` itself."""
    if type(obj) is CompiledModule:
        return object.__getattribute__(obj, "_bg_module")
    return obj
