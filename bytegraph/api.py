"""The public entry points: `compile`, `reset`.

`compile` follows `torch.compile`'s calling convention: `compile(fn)`, `@compile`,
`@compile(backend=..., fullgraph=True)`.
"""
from __future__ import annotations

import functools
import inspect
import types

from .graph.backends import lookup_backend
from .runtime import compiled_autograd
from .runtime.compiled_function import CompiledFunction, reset_all
from .runtime.logs import logger
from .runtime.module_wrapper import CompiledModule, unwrap
import torch.nn

_GENERATOR_OR_ASYNC = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | \
    inspect.CO_ITERABLE_COROUTINE


def compile(fn=None, *, backend="eager", fullgraph: bool = False, dynamic=None):
    """Compile `fn` into guarded graphs on its first call(s); returns a drop-in callable.

    `dynamic` (Note [Symbolic sizes] in graph/shapes.py): None follows `config.automatic_dynamic_shapes`
    and `config.assume_static_by_default` (by default: static first, a size or int symbolic once it
    changes between calls); True makes every input size and int read from outside symbolic from
    the start; False never does, but for `mark_dynamic` dimensions (as torch.compile)."""
    backend_fn = lookup_backend(backend)
    if dynamic not in (None, True, False):
        raise TypeError(f"bytegraph.compile: dynamic must be None, True or False, not {dynamic!r}")
    if fn is None:
        return functools.partial(compile, backend=backend, fullgraph=fullgraph, dynamic=dynamic)
    if not callable(fn):
        raise TypeError(f"bytegraph.compile expects a callable (function, method or nn.Module), "
                        f"got {type(fn).__name__}")
    return _compile_callable(fn, backend_fn, fullgraph, dynamic)


def _compile_callable(fn, backend_fn, fullgraph: bool, dynamic=None):
    if isinstance(fn, types.MethodType):
        return types.MethodType(_compile_callable(fn.__func__, backend_fn, fullgraph, dynamic), fn.__self__)
    if isinstance(fn, types.FunctionType):
        if hasattr(fn, "__bg_compiled__"):
            fn = fn.__bg_original__
        if fn.__code__.co_flags & _GENERATOR_OR_ASYNC:
            logger("graph_breaks").debug("%s is a generator or coroutine function; it runs eagerly",
                                         fn.__qualname__)
            return fn
        return CompiledFunction(fn, backend_fn, fullgraph, dynamic, top_level=True).wrapper
    if _is_module(fn):
        return CompiledModule(unwrap(fn), backend_fn, fullgraph, dynamic)
    call = getattr(type(fn), "__call__", None)
    if isinstance(call, types.FunctionType):
        return types.MethodType(CompiledFunction(call, backend_fn, fullgraph, dynamic, top_level=True).wrapper, fn)
    raise TypeError(f"bytegraph.compile cannot trace {type(fn).__name__} objects (not Python code); "
                    "call it directly instead")


def _is_module(obj) -> bool:
    return isinstance(obj, torch.nn.Module)


def reset() -> None:
    """Forget every compiled entry (compiled autograd's backward graphs too); the next
    calls capture again."""
    reset_all()
    compiled_autograd.reset()
