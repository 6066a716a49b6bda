"""Compiled autograd: `bytegraph.compiled_autograd.enable(backend)` captures `backward()`
as an FX graph through the autograd engine's C++ compiled-autograd interface
(`torch._C._dynamo.compiled_autograd.set_autograd_compiler`: the engine's hook, not
torch._dynamo), and compiles that graph with bytegraph, so hook bodies are traced into it.

Note [Compiled autograd]
The engine calls a compiler object (`AutogradCapture`, one per new autograd-graph shape)
while it walks the graph once with fake tensors: `begin_capture` (the lifted inputs:
saved tensors, parameters, gradients), `bind_function`/`apply_functional` (each built-in
node's functional backward, recorded as one call of an `AutogradOp`), `validate_outputs`,
`accumulate`, `tensor_pre_hook`/`pre_hook`/`post_hook` (a call of the runtime hook list's
entry, `call_hook(hooks[i], ...)`), `accumulate_grad`, `post_acc_grad_hook`, `end_capture`.
The graph it builds takes `(inputs, sizes, scalars, hooks, packed_data)`. `end_capture`
returns `(runtime_wrapper, graph)`; the engine calls the wrapper on every backward with the
graph and the real values.

The graph is compiled by `bytegraph.compile(graph, backend=...)` on its first run, where the
real hooks are known: each `call_hook(hooks[i], grad)` inlines the user's hook (guarded like
any function read from an input: a new hook object of the same code does not recompile), so
its ops join the backward graph and its writes to Python state are replayed after it by the
side-effect log, in order; a hook bytegraph cannot trace breaks the graph with its reason
(`bytegraph.explain`-style logs under `graph_breaks`), or with `enable(fullgraph=True)` makes
`backward()` raise `bytegraph.Unsupported` before the graph runs (no hook has run, no
`.grad` was written), as torch's compiled autograd with a `fullgraph=True` compiler does. A hook node of an intermediate
(Note [Intermediate hook node]) reaches the engine as a tensor pre-hook; the wrapper
replaces it by the user's function (or a no-op once its handle was removed) before the
call, so its body is traced the same way. Recompiles of the backward graph follow
bytegraph's guards and are reported by the `recompiles` log; an autograd graph of another
shape is a new capture (the engine's own cache, kept across `enable()` blocks of the same
backend and `fullgraph`, cleared when they change).

Gradients accumulate into `.grad` after the graph, in the engine's order, by the engine's
own `AccumulateGrad` functional (eager's stealing and layout rules), then that parameter's
post-accumulate-grad hooks run (eagerly). A custom `autograd.Function`'s backward
(`register_full_backward_hook`'s `BackwardHookFunction` included) is a call of
`call_backward(ctx, saved_tensors, *grads)`, its Python body traced by bytegraph with the
real ctx read from the hook list. Not captured (an error from `backward()`, never a silent
fallback): the backward of a forward compiled by AOT autograd (compile the forward with the
`eager` backend under compiled autograd), C++ custom autograd nodes, in-place ops on views
(CopySlices), saved-tensor hooks.

Whether the engine's C++ side imports torch._dynamo's Python modules: its only calls into
Python go to the compiler object (the methods above) and to the runtime wrapper; with every
`torch._dynamo*` module replaced by a spy, a cached backward touches none of them, and a new
capture touches only `torch._dynamo.source`/`torch._dynamo.config`, read by torch's own
fake-tensor code (`FakeTensorMode.from_tensor`), which bytegraph uses everywhere. bytegraph
itself imports no torch._dynamo module (tests/test_layering.py).
"""
from __future__ import annotations

import contextlib
import functools
import itertools
import types

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.proxy_tensor import (PythonKeyTracer, ProxyTorchDispatchMode, disable_proxy_modes_tracing,
                                                fetch_object_proxy, track_tensor_tree)

from ..graph.backends import lookup_backend
from ..vars.autograd_ops import AutogradOp
from ..ops.hooks import intermediate_hook_of
from .compiled_function import CompiledFunction
from .logs import logger

_engine = torch._C._dynamo.compiled_autograd
_capture_ids = itertools.count()
_PLACEHOLDERS = ("inputs", "sizes", "scalars", "hooks", "packed_data")


_OPS: dict = {}  # name -> AutogradOp (the engine binds each name once per process)
_enabled_with: list = []  # [(backend, fullgraph)] of the last enable(): the engine's cache was made for them


def _op(name: str) -> AutogradOp:
    op = _OPS.get(name)
    if op is None:  # the engine binds each node's function once per process, to the first compiler
        raise RuntimeError(f"bytegraph compiled autograd: the engine bound {name} to another compiled-autograd "
                           "compiler earlier in this process (torch._dynamo.compiled_autograd); use one of "
                           "them per process")
    return op


def call_hook(hook, *args, hook_type: str):
    """A hook's call in the backward graph: a None result keeps the first argument."""
    result = hook(*args)
    return args[0] if result is None else result


class SavedTensorsContext:
    """A custom Function's ctx as its backward sees it in the backward graph: the real ctx,
    with `saved_tensors` the graph's lifted ones."""

    def __init__(self, ctx, saved_tensors):
        self._ctx = ctx
        self.saved_tensors = tuple(saved_tensors)

    def __getattr__(self, name):
        return getattr(self._ctx, name)


def call_backward(ctx, saved_tensors, *grads):
    """A custom `autograd.Function` backward node in the backward graph."""
    result = ctx._forward_cls.backward(SavedTensorsContext(ctx, saved_tensors), *grads)
    return result if isinstance(result, tuple) else (result,)


class AutogradCapture:
    """The compiler object the engine drives for one new autograd-graph shape (Note [Compiled
    autograd])."""

    def __init__(self, backend, fullgraph: bool = False):
        self.backend = backend
        self.fullgraph = fullgraph
        self.stack = contextlib.ExitStack()
        self.close = self.stack.close
        self.fake_mode = FakeTensorMode(allow_non_fake_inputs=True)
        self.tracer = PythonKeyTracer()
        self.proxy_mode = ProxyTorchDispatchMode(self.tracer, "real")
        self.accumulations: list = []  # (input index of the variable, grad proxy, post-hook ids)
        self.input_index: dict = {}    # id(fake input) -> its index in `inputs`
        self.compiled = None           # the graph compiled by bytegraph, on its first run

    # ---- the capture -----------------------------------------------------------------
    def begin_capture(self, inputs, sizes, scalars, origins, accumulate_grad, check_nans):
        self.id = next(_capture_ids)
        logger("recompiles").debug("compiled autograd: capturing backward graph %d (an autograd graph "
                                   "of a new shape: node types, sizes, hooks or .grad states)", self.id)
        self.tracer.root = torch.nn.Module()
        self.tracer.graph = torch.fx.Graph(tracer_cls=PythonKeyTracer)
        self.tracer.tensor_attrs = {}
        args, self.sizes_proxy, self.scalars_proxy, self.hooks_proxy, self.packed_proxy = (
            self.tracer.create_proxy("placeholder", name, (), {}) for name in _PLACEHOLDERS)
        for i, x in enumerate(inputs):
            inputs[i] = self.fake_mode.from_tensor(x)
            self.input_index[id(inputs[i])] = i
        self._bind(inputs, [args[i] for i in range(len(inputs))])
        self.stack.enter_context(self.fake_mode)
        self.stack.enter_context(self.proxy_mode)
        return f"bytegraph compiled autograd {self.id}", inputs, list(sizes), list(scalars)

    def end_capture(self, outputs):
        self.stack.close()
        grads = [grad for _, grad, _ in self.accumulations]
        self.tracer.create_node("output", "output", (self.tracer.create_arg((self._proxy(outputs), grads)),), {})
        graph = torch.fx.GraphModule(self.tracer.root, self.tracer.graph, f"CompiledAutograd{self.id}")
        return functools.partial(_run_backward, self), graph

    # ---- nodes -----------------------------------------------------------------------
    def bind_function(self, fn_name, fn, is_custom_function, is_traceable):
        if is_custom_function:
            raise NotImplementedError(f"bytegraph compiled autograd: the C++ custom autograd node {fn_name}")
        if fn_name not in _OPS:
            _OPS[fn_name] = AutogradOp(fn_name, fn)
        return fn_name

    def apply_functional(self, fn_name, grads, args, output_metadata):
        return self._call(_op(fn_name), (grads, *args), len(output_metadata))

    def validate_outputs(self, _, outputs, args, output_metadata):
        proxies = self.tracer.create_proxy("call_function", _op("validate_outputs"),
                                           self._proxy((outputs, *args)), {})
        self._bind(outputs, [proxies[i] for i in range(len(outputs))])
        return outputs

    def accumulate(self, old_var, new_var):
        proxy = self.tracer.create_proxy("call_function", torch.add, (self._proxy(old_var), self._proxy(new_var)), {})
        result = self._dummy()
        self._bind([result], [proxy])
        return result

    def accumulate_grad(self, variable, variable_grad, grad, has_post_hooks=None):
        index = self.input_index.get(id(variable))
        if index is None:
            raise NotImplementedError("bytegraph compiled autograd: accumulating into a tensor that is not an input")
        self.accumulations.append((index, self._proxy(grad), []))
        result = self._dummy_like(variable)
        variable.grad = result
        return result

    def post_acc_grad_hook(self, input, hook_id):
        self.accumulations[-1][2].append(hook_id)
        with disable_proxy_modes_tracing():
            return [input]

    def tensor_pre_hook(self, inputs, hook_id, i):
        proxy = self._hook(hook_id, inputs[i], hook_type="tensor_pre_hook")
        inputs[i] = self._dummy_like(inputs[i])
        self._bind([inputs[i]], [proxy])
        return inputs

    def pre_hook(self, inputs, hook_id):
        proxies = self._hook(hook_id, inputs, hook_type="pre_hook")
        inputs = [self._dummy_like(x) if x is not None else None for x in inputs]
        self._bind(inputs, [proxies[i] for i in range(len(inputs))])
        return inputs

    def post_hook(self, outputs, inputs, hook_id):
        proxies = self._hook(hook_id, outputs, inputs, hook_type="post_hook")
        outputs = [self._dummy_like(x) if x is not None else None for x in outputs]
        self._bind(outputs, [proxies[i] for i in range(len(outputs))])
        return outputs

    def cpp_tensor_pre_hook(self, inputs, hook_id, i):
        proxy = self.tracer.create_proxy("call_function", _engine.call_cpp_tensor_pre_hooks,
                                         (hook_id, self._proxy(inputs[i])), {})
        inputs[i] = self._dummy_like(inputs[i])
        self._bind([inputs[i]], [proxy])
        return inputs

    def set_node_origin(self, node_name, nodecall_index, pyobj):
        pass

    def proxy_call_backward(self, inputs, output_metadatas, saved_tensors, backward_idx, ctx,
                            maybe_backward_state_idx, opaque_object_indices):
        """A custom `autograd.Function`'s backward: `call_backward(ctx, saved, *grads)`, with
        the real ctx from the hooks list at run time."""
        if hasattr(ctx._forward_cls, "_aot_id"):
            raise NotImplementedError("bytegraph compiled autograd: the backward of a graph compiled by AOT "
                                      "autograd (backend aot_eager/inductor); compile the forward with "
                                      "backend='eager' and give the backend to compiled_autograd.enable()")
        if maybe_backward_state_idx is not None or opaque_object_indices:
            raise NotImplementedError("bytegraph compiled autograd: autograd.Function backward state")
        proxy = self.tracer.create_proxy("call_function", call_backward,
                                         (self.hooks_proxy[backward_idx], self._proxy(saved_tensors),
                                          *self._proxy(inputs)), {})
        with disable_proxy_modes_tracing():
            grads = [None if meta is None else torch.empty(meta[3], dtype=meta[2], layout=meta[0], device=meta[1])
                     for meta in output_metadatas]
        for i, grad in enumerate(grads):
            if grad is not None:
                self._bind([grad], [proxy[i]])
        return tuple(grads)

    def call_copy_slices_prologue(self, *args):
        raise NotImplementedError("bytegraph compiled autograd: in-place ops on views (CopySlices)")

    call_copy_slices_epilogue = call_copy_slices_prologue

    def unpack_hook(self, hook_id, data_id):
        raise NotImplementedError("bytegraph compiled autograd: saved-tensor hooks")

    # ---- helpers ---------------------------------------------------------------------
    def allocate_dummy(self):
        return self._dummy()

    def _hook(self, hook_id, *args, hook_type):
        return self.tracer.create_proxy("call_function", call_hook,
                                        (self.hooks_proxy[hook_id], *self._proxy(args)), {"hook_type": hook_type})

    def _call(self, fn, args, count):
        proxy = self.tracer.create_proxy("call_function", fn, self._proxy(args), {})
        result = [self._dummy() for _ in range(count)]
        self._bind(result, [proxy[i] for i in range(count)])
        return result

    def _dummy(self):
        with disable_proxy_modes_tracing():
            return torch.zeros([0, 123456789])

    def _dummy_like(self, x):
        with disable_proxy_modes_tracing():
            return torch.empty_like(x)

    def _bind(self, objects, proxies) -> None:
        track_tensor_tree(objects, proxies, constant=None, tracer=self.tracer)

    def _proxy(self, value):
        if value is None or isinstance(value, (str, int, float, bool, torch.dtype, torch.device, torch.layout)):
            return value
        if isinstance(value, list):
            return [self._proxy(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self._proxy(v) for v in value)
        if isinstance(value, torch.Tensor):
            return fetch_object_proxy(self.tracer, value).proxy
        return value


def _run_backward(capture: AutogradCapture, graph, inputs, sizes, scalars, hooks, packed_data):
    """One backward through a captured graph: the graph compiled by bytegraph on first use,
    run with the intermediate hooks resolved, then the accumulations and their hooks."""
    compiled = capture.compiled
    if compiled is None:
        wrapper = CompiledFunction(type(graph).forward, lookup_backend(capture.backend), capture.fullgraph).wrapper
        compiled = capture.compiled = types.MethodType(wrapper, graph)
    hooks = [intermediate_hook_of(h) for h in hooks]
    variables = [inputs[index] for index, _, _ in capture.accumulations]
    outputs, grads = compiled(inputs, sizes, scalars, hooks, packed_data)
    accumulate = _op("AccumulateGrad")
    for variable, grad, (_, _, post_hooks) in zip(variables, grads, capture.accumulations):
        variable.grad = accumulate([grad], variable, variable.grad, bool(post_hooks))[0]
        for hook_id in post_hooks:
            hooks[hook_id](variable)
    return outputs


@contextlib.contextmanager
def enable(backend="eager", fullgraph: bool = False):
    """Capture every `backward()` in the block as a graph compiled with `backend`; with
    `fullgraph=True` a backward graph bytegraph cannot capture whole (a hook it cannot trace)
    makes `backward()` raise `bytegraph.Unsupported` before any of it runs, as
    `torch.compile(graph, fullgraph=True)` does for torch's compiled autograd."""
    lookup_backend(backend)
    if _enabled_with and _enabled_with[-1] != (backend, fullgraph):
        _engine.clear_cache()  # the engine's cached captures were compiled for the other settings
    _enabled_with[:] = [(backend, fullgraph)]
    prior = _engine.set_autograd_compiler(functools.partial(AutogradCapture, backend, fullgraph), False)
    try:
        with torch.autograd.set_multithreading_enabled(False):
            yield
    finally:
        _engine.set_autograd_compiler(*prior)


def reset() -> None:
    """Forget every captured backward graph (the engine's cache too)."""
    _engine.clear_cache()
    _enabled_with.clear()
