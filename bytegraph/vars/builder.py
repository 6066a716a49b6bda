"""`wrap(tx, value, source)`: the one place that turns a real Python value into a
tracker and installs the guards that make the trace valid for it.

Also builds trackers for values computed at trace time: folded constants
(`fold_call`) and graph-op results (`wrap_op_result`, from fake example values).
Trackers built from a source are memoized per source for the whole capture, so one
global read twice is one tracker with one set of guards.
"""
from __future__ import annotations

import collections
import enum
import functools
import types
import weakref

import torch

from ..guards.guard import Guard, GuardKind
from ..guards.sources import (AttrSource, ContainerOfSource, ItemSource, IteratorIndexSource, IteratorSeqSource,
                              MethodResultSource, container_of)
from .base import VariableTracker
from .builtins import BuiltinVariable, is_builtin
from .constant import ConstantVariable, is_constant_value
from .containers import DictVariable, ListVariable, NamedTupleVariable, SetVariable, SizeVariable, TupleVariable
from .functions import MethodDescriptorVariable, MethodObjectVariable, PartialVariable, UserFunctionVariable
from .dict_views import DictViewVariable
from .iterators import HashedIteratorVariable, SequenceIteratorVariable, constant_sequence
from .nn_module import build_module
from .classes import ClassVariable
from .objects import OpaqueCallableVariable, PythonModuleVariable, UserObjectVariable
from .tensor import TensorVariable
from .torch_functions import (GradModeVariable, RestoreGradMode, TorchFunctionVariable, TorchSpecialVariable,
                              WithExitVariable, is_graph_op, is_special)


def wrap(tx, value, source=None, guard: bool = True) -> VariableTracker:
    """A tracker for the real `value` found at `source` (None: made during tracing)."""
    if source is not None:
        cached = tx.output.tracked.get(source)
        if cached is not None:
            return cached
        side_effects = tx.output.side_effects
        known = side_effects.tracker_for(value)
        if known is not None:
            # One real mutable object reached by a second path is the same tracker, so a
            # mutation through one path is seen through the other; guarded to stay aliased.
            if guard:
                tx.output.add_guard(Guard(GuardKind.SAME_OBJECT, source, known.source, tx.guard_location()))
            tx.output.tracked[source] = known
            return known
    vt = _build(tx, value, source, guard and source is not None)
    if source is not None:
        tx.output.tracked[source] = vt
        if isinstance(vt, _IDENTITY_TRACKED):
            side_effects.remember(value, vt)
    return vt


_IDENTITY_TRACKED = (ListVariable, DictVariable, SetVariable, UserObjectVariable, SequenceIteratorVariable,
                     HashedIteratorVariable)


def _guard(tx, do_guard: bool, kind: GuardKind, source, expected=None) -> None:
    if do_guard:
        tx.output.add_guard(Guard(kind, source, expected, tx.guard_location()))


def _build(tx, value, source, do_guard: bool) -> VariableTracker:
    if isinstance(value, torch.Tensor):
        if source is None:
            tx.unsupported("a tensor reached without a source (e.g. a constant tensor attribute "
                           "of an object created in the compiled function)", category="unsupported value")
        return tx.output.add_input(source, value)
    value_type = type(value)
    if is_constant_value(value) and not isinstance(value, enum.Enum):
        _guard(tx, do_guard, GuardKind.CONSTANT_MATCH, source, value)
        return ConstantVariable(value, source)
    if value_type is RestoreGradMode:  # a grad-mode `with` block's exit (Note [Breaks inside blocks])
        _guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
        return WithExitVariable(GradModeVariable(not value.prior, value.prior), source)
    if value_type is torch.Size:
        _guard(tx, do_guard, GuardKind.CONSTANT_MATCH, source, value)
        return SizeVariable([ConstantVariable(v) for v in value], source)
    if value_type in (tuple, list) or (isinstance(value, tuple) and hasattr(value_type, "_fields")):
        _guard(tx, do_guard, GuardKind.TYPE_MATCH, source, value_type)
        _guard(tx, do_guard, GuardKind.LEN_MATCH, source, len(value))
        items = [wrap(tx, v, ItemSource(source, i) if source is not None else None, do_guard)
                 for i, v in enumerate(value)]
        if value_type is list:
            return ListVariable(items, source)
        if value_type is tuple:
            return TupleVariable(items, source)
        return NamedTupleVariable(items, value_type, source)
    if value_type in (dict, collections.OrderedDict):
        if not all(is_constant_value(k) for k in value):
            tx.unsupported("a dict with non-constant keys", category="unsupported value")
        _guard(tx, do_guard, GuardKind.TYPE_MATCH, source, value_type)
        _guard(tx, do_guard, GuardKind.DICT_KEYS, source, tuple(value))
        items = {k: wrap(tx, v, ItemSource(source, k) if source is not None else None, do_guard)
                 for k, v in value.items()}
        return DictVariable(items, source, value_type)
    if value_type in _SEQUENCE_ITERATORS and source is not None:
        return _build_sequence_iterator(tx, value, source, do_guard)
    if value_type in _DICT_VIEWS and source is not None:
        return _build_dict_view(tx, value, source, do_guard)
    if value_type in _HASHED_ITERATORS and source is not None:
        return _build_hashed_iterator(tx, value, source, do_guard)
    if value_type is set:
        _guard(tx, do_guard, GuardKind.TYPE_MATCH, source, set)
        _guard(tx, do_guard, GuardKind.SET_MATCH, source, frozenset(value))
        return SetVariable([ConstantVariable(v) for v in value], source, tx)
    return _build_object(tx, value, source, do_guard)


# real iterators that `__reduce__` to `(iter or reversed, (sequence,), index)`
_SEQUENCE_ITERATORS = {type(iter(())): False, type(iter([])): False, type(iter(range(0))): False,
                       type(iter("")): False, type(iter("\u00e9")): False, type(iter(b"")): False,
                       type(reversed([])): True, type(reversed(())): True}


def _build_sequence_iterator(tx, value, source, do_guard: bool) -> VariableTracker:
    """A real tuple/list/range/str iterator from outside (e.g. a for-loop iterator handed to
    a resume function): its sequence (the real list itself, for a list iterator) and
    position are read through `__reduce__`, the sequence guarded like any value, the
    position by value (Note [Live iterators] in vars/iterators.py)."""
    reduced = value.__reduce__()
    if len(reduced) != 3:
        tx.unsupported(f"an exhausted {type(value).__name__} read from outside", category="unsupported value")
    _, (seq,), index = reduced
    _guard(tx, do_guard, GuardKind.TYPE_MATCH, source, type(value))
    _guard(tx, do_guard, GuardKind.CONSTANT_MATCH, IteratorIndexSource(source), index)
    seq_vt = wrap(tx, seq, IteratorSeqSource(source), do_guard)
    if not isinstance(seq_vt, (ListVariable, TupleVariable)) and not constant_sequence(seq_vt):
        tx.unsupported(f"a {type(value).__name__} over {seq_vt.describe()}", category="unsupported value")
    return SequenceIteratorVariable(seq_vt, reverse=_SEQUENCE_ITERATORS[type(value)], index=index, source=source)


_DICT_VIEWS = {type(getattr(d, kind)()): kind for d in ({}, collections.OrderedDict())
               for kind in ("keys", "values", "items")}
# real dict/set iterators: (view kind, reversed); an OrderedDict's are one type for every kind
_HASHED_ITERATORS = {type(iter({})): (None, False), type(iter({}.values())): ("values", False),
                     type(iter({}.items())): ("items", False), type(reversed({})): (None, True),
                     type(reversed({}.values())): ("values", True), type(reversed({}.items())): ("items", True),
                     type(iter(set())): (None, False)}


def _container(tx, value, source, do_guard: bool, kinds: tuple) -> VariableTracker:
    container = container_of(value)
    if container is None:
        tx.unsupported(f"an exhausted {type(value).__name__} read from outside", category="unsupported value")
    container_vt = wrap(tx, container, ContainerOfSource(source), do_guard)
    if not isinstance(container_vt, kinds):
        tx.unsupported(f"a {type(value).__name__} over {container_vt.describe()}", category="unsupported value")
    return container_vt


def _build_dict_view(tx, value, source, do_guard: bool) -> VariableTracker:
    """A real dict view from outside: live over the tracker of its (same) dict."""
    _guard(tx, do_guard, GuardKind.TYPE_MATCH, source, type(value))
    return DictViewVariable(_container(tx, value, source, do_guard, (DictVariable,)), _DICT_VIEWS[type(value)], source)


def _build_hashed_iterator(tx, value, source, do_guard: bool) -> VariableTracker:
    """A real dict/set iterator from outside (e.g. a for-loop iterator handed to a resume
    function): its container through `ContainerOfSource`, its position from the items its
    `__reduce__` lists (raising if the container changed size: then it breaks)."""
    kind, reverse = _HASHED_ITERATORS[type(value)]
    try:
        remaining = value.__reduce__()[1][0]
    except RuntimeError:
        tx.unsupported(f"a {type(value).__name__} whose container changed size", category="unsupported value")
    _guard(tx, do_guard, GuardKind.TYPE_MATCH, source, type(value))
    _guard(tx, do_guard, GuardKind.CONSTANT_MATCH, MethodResultSource(source, "__length_hint__"), len(remaining))
    if not remaining:  # a stale iterator's length hint is 0 too; its `__reduce__` raises
        _guard(tx, do_guard, GuardKind.CONSTANT_MATCH, MethodResultSource(source, "__reduce__"), value.__reduce__())
    container_vt = _container(tx, value, source, do_guard, (DictVariable, SetVariable))
    it = HashedIteratorVariable(container_vt, kind, reverse, len(container_vt.items) - len(remaining), source)
    if not it.walks(remaining):
        tx.unsupported(f"a {type(value).__name__} whose container changed during the iteration",
                       category="unsupported value")
    return it


def _build_object(tx, value, source, do_guard: bool) -> VariableTracker:
    original = getattr(value, "__bg_original__", None) if isinstance(value, types.FunctionType) else None
    if original is not None:
        _guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
        return UserFunctionVariable(original, None)
    if is_special(value):
        _guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
        return TorchSpecialVariable(value, source)
    if is_graph_op(value):
        _guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
        return TorchFunctionVariable(value, source)
    if is_builtin(value):
        _guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
        return BuiltinVariable(value, source)
    if isinstance(value, types.CellType):  # cells are reached through their functions (`__closure__`)
        tx.unsupported("a closure cell reached other than through its function", category="unsupported value")
    if isinstance(value, types.FunctionType):
        # Code and globals, not identity: a lambda made anew per call is the same program;
        # its defaults and closure contents are guarded where the trace reads them.
        _guard(tx, do_guard, GuardKind.FUNCTION_MATCH, source, value)
        return UserFunctionVariable(value, source)
    if isinstance(value, types.MethodType):
        fn = wrap(tx, value.__func__, AttrSource(source, "__func__") if source else None, do_guard)
        obj = wrap(tx, value.__self__, AttrSource(source, "__self__") if source else None, do_guard)
        return MethodObjectVariable(fn, obj, source)
    if isinstance(value, types.ModuleType):
        _guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
        return PythonModuleVariable(value, source)
    if isinstance(value, type):
        _guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
        return ClassVariable(value, source)
    if isinstance(value, enum.Enum):
        _guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
        return ConstantVariable(value, source)
    if type(value) in (staticmethod, classmethod):
        _guard(tx, do_guard, GuardKind.TYPE_MATCH, source, type(value))
        fn = wrap(tx, value.__func__, AttrSource(source, "__func__") if source is not None else None, do_guard)
        return MethodDescriptorVariable(type(value), fn, source)
    if type(value) is functools.partial:
        _guard(tx, do_guard, GuardKind.TYPE_MATCH, source, functools.partial)
        sub = (lambda name: AttrSource(source, name)) if source is not None else (lambda name: None)
        fn = wrap(tx, value.func, sub("func"), do_guard)
        args = wrap(tx, value.args, sub("args"), do_guard)
        kwargs = wrap(tx, value.keywords, sub("keywords"), do_guard)
        return PartialVariable(fn, args.unpack(tx), kwargs.items, source)
    if isinstance(value, (types.BuiltinFunctionType, types.BuiltinMethodType, types.MethodWrapperType,
                          types.WrapperDescriptorType, types.MethodDescriptorType)):
        if source is None:
            tx.unsupported(f"C function {getattr(value, '__qualname__', value)!s} without a source",
                           category="unsupported value")
        _guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
        return OpaqueCallableVariable(value, source)
    if isinstance(value, (torch.nn.Module, weakref.ReferenceType)):  # vars/nn_module.py
        return build_module(tx, value, source, do_guard)
    if source is None:
        tx.unsupported(f"an object of type {type(value).__qualname__} made outside the trace without a source",
                       category="unsupported value")
    _guard(tx, do_guard, GuardKind.TYPE_MATCH, source, type(value))
    return UserObjectVariable(value, source)


def fold_call(tx, fn, args, kwargs, what: str, wrap_result=None) -> VariableTracker:
    """Call a pure function on constant trackers at trace time and wrap its result."""
    if not all(a.is_python_constant() for a in args) or not all(v.is_python_constant() for v in kwargs.values()):
        tx.unsupported(f"{what}() on values that are not Python constants: "
                       + ", ".join(a.describe() for a in [*args, *kwargs.values()]),
                       category="unsupported call")
    try:
        result = fn(*[a.as_python_constant() for a in args],
                    **{k: v.as_python_constant() for k, v in kwargs.items()})
    except Exception as e:  # the user's own code raises: reported as such, frame runs eagerly
        tx.raise_user_error(e)
    return (wrap_result or wrap_constant)(result)


def wrap_constant(value) -> VariableTracker:
    """A tracker for a value computed at trace time from constants."""
    if type(value) is torch.Size:
        return SizeVariable([ConstantVariable(v) for v in value])
    if type(value) in (tuple, list):
        items = [wrap_constant(v) for v in value]
        return TupleVariable(items) if type(value) is tuple else ListVariable(items)
    if type(value) is dict:
        return DictVariable({k: wrap_constant(v) for k, v in value.items()})
    if type(value) is set:
        return SetVariable([ConstantVariable(v) for v in value])
    if is_constant_value(value) or isinstance(value, enum.Enum):
        return ConstantVariable(value)
    if isinstance(value, type):
        return ClassVariable(value)
    raise TypeError(f"cannot wrap {type(value).__qualname__} computed at trace time")


def wrap_op_result(tx, node, example) -> VariableTracker:
    """The tracker for the output of graph op `node` whose fake result is `example`."""
    import operator

    if isinstance(example, torch.Tensor):
        return TensorVariable(node, example)
    if isinstance(example, (tuple, list)):
        items = []
        for i, item in enumerate(example):
            if isinstance(item, torch.Tensor):
                item_node = tx.output.graph.call_function(operator.getitem, (node, i))
                item_node.meta["example_value"] = item
                items.append(TensorVariable(item_node, item))
            else:
                items.append(wrap_constant(item))
        if hasattr(type(example), "__match_args__") or hasattr(type(example), "_fields"):
            return NamedTupleVariable(items, type(example))
        return TupleVariable(items) if isinstance(example, tuple) else ListVariable(items)
    return wrap_constant(example)
