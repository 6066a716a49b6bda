"""Lazy modules (`torch.nn.LazyLinear`, any `LazyModuleMixin`) called before their
parameters exist.

Note [Lazy module initialization]
A lazy module's first call runs its forward pre-hook `LazyModuleMixin._infer_parameters`
first: `initialize_parameters(*args, **kwargs)` materializes the parameters from the
inputs' shapes (drawing their initial values from the random generator), removes the hook
and turns the module into its `cls_to_become` (`LazyLinear` into `Linear`). Materializing
real parameters is no graph op: when the trace reaches such a call, the hook runs for
real, on the call's arguments as fake tensors (their shapes are all it may read), with
the fake mode off, and the capture restarts (`tx.restart_capture`): the next attempt
reads the initialized module like any other and guards what it finds, so the entry
serves every later call. That is eager's behaviour when nothing the trace did before the
call depends on the order, which is checked; otherwise the call is a graph break (it runs
eagerly, initializing as eager does) with the reason:
- another hook runs before the initialization (a global forward pre-hook, a pre-hook
  prepended to it): they would run after it;
- the graph so far may draw random numbers (vars/random_draws.py), or calls wait to be
  replayed after it: eager's draws would come before the initial values, here after;
- the trace read something of the module already (an attribute, a submodule): it would
  see the module after its initialization;
- the call is inside a higher-order op's body (the branch eager may not take);
- the initialization raises (it runs again eagerly and raises there), keeps a value
  computed from the inputs (a fake tensor: what the module holds must be real), or leaves
  the hook registered; each is rolled back first (`_Snapshot`: the module tree's dicts,
  classes, tensor data and the random state).
Symbolic sizes cannot be materialized (an error: rolled back, the call breaks), as under
torch.compile. `initialize_parameters` is assumed to change only its own module, as
LazyModuleMixin documents it (one that changes state the trace read before the call is
not detected).
"""
from __future__ import annotations

import torch
from torch._subclasses.fake_tensor import is_fake, unset_fake_temporarily
from torch.nn.modules.lazy import LazyModuleMixin
from torch.nn.modules import module as _module_mod

from .containers import DictVariable
from .dict_keys import has_tracker_keys
from .random_draws import first_drawing_node

_INFER = LazyModuleMixin._infer_parameters
_CATEGORY = "lazy module initialization"
_HINT = "call the module once before compiling, or run the initialization outside the compiled function"


def pending_hook(module):
    """The initialization hook a lazy `module` still runs at its next call, or None."""
    for hook in module.__dict__["_forward_pre_hooks"].values():
        if getattr(hook, "__func__", None) is _INFER and getattr(hook, "__self__", None) is module:
            return hook
    return None


def initialize(tx, module_vt, hook, args: list, kwargs: dict) -> None:
    """Run the pending initialization of the module at `module_vt` for this call and restart
    the capture, or break with the reason it cannot (Note [Lazy module initialization])."""
    module = module_vt.value
    what = f"initializing lazy {module_vt.describe()}"
    _check_order(tx, module_vt, hook, what)
    fake_args = tuple(_example(tx, a) for a in args)
    fake_kwargs = {k: _example(tx, v) for k, v in kwargs.items()}
    with unset_fake_temporarily():  # the real world: real parameters, the real random state
        why = _run(module, hook, fake_args, fake_kwargs)
    if why is not None:
        tx.unsupported(f"{what} {why}", category=_CATEGORY, hint=_HINT)
    tx.restart_capture(f"{what} materialized its parameters")


def _run(module, hook, args: tuple, kwargs: dict) -> str | None:
    """Run `hook` for real; None if its effects may stay, else why not (they are rolled back)."""
    snapshot = _Snapshot(module)
    try:
        hook(module, args, kwargs)
    except Exception as e:  # the initialization's own error: it runs again eagerly and raises there
        snapshot.restore()
        return f"raised {type(e).__name__}: {e}"
    if snapshot.holds_fake():
        snapshot.restore()
        return "kept a value computed from the call's inputs (it may only read their shapes)"
    if pending_hook(module) is not None:
        snapshot.restore()
        return "left its initialization hook registered"
    return None


def _check_order(tx, module_vt, hook, what: str) -> None:
    module = module_vt.value
    if next(iter(module.__dict__["_forward_pre_hooks"].values())) is not hook or \
            _module_mod._global_forward_pre_hooks:
        tx.unsupported(f"{what}: other forward pre-hooks run before its initialization hook",
                       category=_CATEGORY, hint=_HINT)
    if tx.output.in_subgraph() or tx.output.side_effects.current_scope:
        tx.unsupported(f"{what} inside the body of a higher-order op", category=_CATEGORY, hint=_HINT)
    drawing = first_drawing_node(tx.output.root_graph)
    if drawing is not None:
        tx.unsupported(f"{what} after `{drawing.format_node()}`, which may draw random numbers: eager draws "
                       "the initial values after it", category=_CATEGORY, hint=_HINT)
    if tx.output.side_effects.calls:
        tx.unsupported(f"{what} while calls wait to be replayed after the graph: eager runs them first",
                       category=_CATEGORY, hint=_HINT)
    for source in tx.output.tracked:
        if source != module_vt.source and _reads_through(source, module_vt.source):
            tx.unsupported(f"{what} after the trace read {source.describe()}, which its initialization may "
                           "change", category=_CATEGORY, hint=_HINT)


def _reads_through(source, module_source) -> bool:
    """Whether `source` is read through the module at `module_source`."""
    while source is not None:
        if source == module_source:
            return True
        source = source.prefix()
    return False


def _example(tx, vt):
    """The Python value of argument tracker `vt` with fake tensors (what the initialization
    reads: shapes, dtypes, the structure of lists, tuples, namedtuples and dicts)."""
    if vt.is_tensor:
        return vt.example
    items = vt.sequence_items()
    if items is not None:
        kind = vt.python_type()
        values = [_example(tx, i) for i in items]
        return kind(*values) if hasattr(kind, "_fields") else kind(values)
    if isinstance(vt, DictVariable) and not has_tracker_keys(vt.items):
        return vt.python_type()((k, _example(tx, v)) for k, v in vt.items.items())
    if vt.is_python_constant():
        return vt.as_python_constant()
    tx.unsupported(f"initializing a lazy module with {vt.describe()} as an argument", category=_CATEGORY,
                   hint=_HINT)


class _Snapshot:
    """The state an initialization may change, to put back if it must not stay: the
    classes and `__dict__`s of the module tree, the contents of the dicts they hold, the
    class and data of their tensors, and the random state."""

    def __init__(self, module):
        self.root = module
        self.modules = [(m, type(m), dict(m.__dict__),
                         {name: dict(d) for name, d in m.__dict__.items() if isinstance(d, dict)})
                        for m in module.modules()]
        self.tensors = [(t, type(t), t.data) for m in module.modules()
                        for d in (m._parameters, m._buffers) for t in d.values() if t is not None]
        self.rng = torch.get_rng_state()
        self.cuda_rng = torch.cuda.get_rng_state_all() if torch.cuda.is_initialized() else None

    def holds_fake(self) -> bool:
        """Whether the module tree now holds a fake tensor (a parameter, buffer or attribute)."""
        for m in self.root.modules():
            values = (*m._parameters.values(), *m._buffers.values(), *m.__dict__.values())
            if any(isinstance(v, torch.Tensor) and is_fake(v) for v in values):
                return True
        return False

    def restore(self) -> None:
        for m, cls, attrs, dicts in self.modules:
            m.__class__ = cls
            m.__dict__.clear()
            m.__dict__.update(attrs)
            for name, content in dicts.items():
                attrs[name].clear()
                attrs[name].update(content)
        for t, cls, data in self.tensors:
            t.__class__ = cls
            t.data = data
        torch.set_rng_state(self.rng)
        if self.cuda_rng is not None:
            torch.cuda.set_rng_state_all(self.cuda_rng)
