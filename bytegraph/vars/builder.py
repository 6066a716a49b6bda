"""`wrap(tx, value, source)`: the one place that turns a real Python value into a
tracker and installs the guards that make the trace valid for it.

Which tracker a value gets is decided by its type, through the builder registry
(`vars/registry.py`): every tracker kind's module registers a builder for the types it
models; this module registers those of containers and iterators. Callables that can have
a trace rule (`vars/trace_rules.py`: graph op, builtin handler, polyfill) get the rule's
tracker first. Builders are resolved once per type and cached.

Also builds trackers for values computed at trace time: folded constants
(`fold_call`) and graph-op results (`wrap_op_result`, from fake example values).
Trackers built from a source are memoized per source for the whole capture, so one
global read twice is one tracker with one set of guards.
"""
from __future__ import annotations

import collections
import enum

import torch

from ..guards.guard import Guard, GuardKind
from ..guards.sources import (ContainerOfSource, EnumerateCountSource, ItemSource, IteratorIndexSource,
                              IteratorSeqSource, MethodResultSource, ObjectSource, container_of)
from . import keyed_dicts, registry
from .hooks import registry as hook_registry
from .typing_forms import TYPING_FORMS
from .factory import provides
from .base import VariableTracker
from .classes import ClassVariable
from .constant import ConstantVariable, constant_sequence, is_constant_value
from .containers import DictVariable, ListVariable, NamedTupleVariable, SetVariable, SizeVariable, TupleVariable
from .counter import CounterVariable
from .deque import DequeVariable
from .dict_keys import fixed_key
from .dict_views import DictViewVariable
from .globals_dict import GlobalsDictVariable, is_module_namespace
from .iterators import EnumerateIteratorVariable, HashedIteratorVariable, SequenceIteratorVariable
from .lazy_list import LazyListVariable
from .objects import build_user_object, same_callable_guard
from .registry import guard as _guard, register
from .symbolic import SYM_TYPES, wrap_symbolic
from .tensor import TensorVariable
from .trace_rules import RULE_TYPES, RULES, table_rule
import operator


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
            tx.output.source_objects[source] = value
            return known
    vt = _build(tx, value, source, guard and source is not None)
    if source is not None:
        tx.output.tracked[source] = vt
        tx.output.source_objects[source] = value
        if vt.identity_tracked:
            side_effects.remember(value, vt)
    return vt


def _build(tx, value, source, do_guard: bool) -> VariableTracker:
    value_type = type(value)
    build = _BY_TYPE.get(value_type) or _builder_for(value_type)
    return build(tx, value, source, do_guard)


_BY_TYPE: dict = {}  # type -> its builder, resolved once (types stay alive, as guards keep them)


def _builder_for(value_type: type):
    build = registry.resolve(value_type)
    if any(cls in RULE_TYPES for cls in value_type.__mro__[:-1]):  # functions, C functions, classes
        build = _rule_first(build)
    _BY_TYPE[value_type] = build
    return build


def _rule_first(build):
    """`build`, after the trace rules: a callable with a table rule (a graph op, a builtin
    handler, a polyfill) or a derived torch-op rule gets that rule's tracker, guarded to
    stay that callable."""
    def build_callable(tx, value, source, do_guard: bool) -> VariableTracker:
        rule = table_rule(value)
        if rule is None or rule.tracker is None:
            return build(tx, value, source, do_guard)
        _guard(tx, do_guard, same_callable_guard(value), source, value)
        return rule.tracker(value, source)
    return build_callable


# ---- containers and iterators ----------------------------------------------------------

@register(tuple, frozenset, exact=True)
def _build_constant_or_sequence(tx, value, source, do_guard: bool) -> VariableTracker:
    if is_constant_value(value):  # a tuple or frozenset of constants
        _guard(tx, do_guard, GuardKind.CONSTANT_MATCH, source, value)
        return ConstantVariable(value, source)
    if type(value) is frozenset:
        if all(is_constant_value(v) or _hashed_by_identity(v) for v in value):
            # immutable: its identity pins its contents (`type(x) in _ATOMIC_TYPES`, 3.12's dataclasses)
            _guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
            return ConstantVariable(value, source)
        return build_user_object(tx, value, source, do_guard)
    return _build_sequence(tx, value, source, do_guard)


def _hashed_by_identity(value) -> bool:
    """A class whose metaclass keeps `type`'s hash and equality: by identity."""
    return isinstance(value, type) and type(value).__hash__ is type.__hash__ and type(value).__eq__ is type.__eq__


@register(torch.Size, exact=True)
def _build_size(tx, value, source, do_guard: bool) -> VariableTracker:
    _guard(tx, do_guard, GuardKind.CONSTANT_MATCH, source, value)
    return SizeVariable([ConstantVariable(v) for v in value], source)


@register(list, exact=True)
@register(tuple, when=lambda cls: hasattr(cls, "_fields"))  # named tuples (tuple itself: above)
def _build_sequence(tx, value, source, do_guard: bool) -> VariableTracker:
    value_type = type(value)
    _guard(tx, do_guard, GuardKind.TYPE_MATCH, source, value_type)
    if value_type is list and source is not None:  # length and items guarded when read
        return LazyListVariable(tx.output, value, source, do_guard)
    _guard(tx, do_guard, GuardKind.LEN_MATCH, source, len(value))
    items = [wrap(tx, v, ItemSource(source, i) if source is not None else None, do_guard)
             for i, v in enumerate(value)]
    if value_type is list:
        return ListVariable(items, source)
    if value_type is tuple:
        return TupleVariable(items, source)
    return NamedTupleVariable(items, value_type, source)


@register(dict, collections.OrderedDict, exact=True)
def build_dict(tx, value, source, do_guard: bool) -> VariableTracker:
    """A dict or OrderedDict from outside (guarded by type and keys); Counter's builder uses it
    too. A module's globals dict is a GlobalsDictVariable (read and written as the globals)."""
    if source is not None and type(value) is dict and is_module_namespace(tx, value):
        return _build_globals_dict(tx, value, source, do_guard)
    if not all(fixed_key(k) for k in value):
        return keyed_dicts.build_keyed_dict(tx, value, source, do_guard)
    if source is not None and do_guard and hook_registry.is_registry(value, source):
        return hook_registry.build_registry(tx, value, source, do_guard)  # Note [Hook registries]
    value_type = type(value)
    _guard(tx, do_guard, GuardKind.TYPE_MATCH, source, value_type)
    _guard(tx, do_guard, GuardKind.DICT_KEYS, source, tuple(value))
    items = {k: wrap(tx, v, ItemSource(source, k) if source is not None else None, do_guard)
             for k, v in value.items()}
    return DictVariable(items, source, value_type)


def _build_globals_dict(tx, value, source, do_guard: bool) -> VariableTracker:
    """Module globals reached at `source`: tracked at the dict's first source in this trace
    (Note [Globals sources]), guarded to be that same dict."""
    _guard(tx, do_guard, GuardKind.TYPE_MATCH, source, dict)
    canonical = tx.output.globals_sources.setdefault(id(value), source)
    if canonical != source and do_guard:
        tx.output.add_guard(Guard(GuardKind.SAME_OBJECT, source, canonical, tx.guard_location()))
    return GlobalsDictVariable(value, canonical)


@register(set, exact=True)
def _build_set(tx, value, source, do_guard: bool) -> VariableTracker:
    if any(isinstance(v, torch.Tensor) for v in value):  # Note [Sets of tensors]: made in the trace only
        tx.unsupported(f"a set holding tensors read from outside ({source.describe() if source else 'a value'}): "
                       "its members have no source to read them again", category="unsupported value",
                       hint="pass the tensors in a list or tuple")
    _guard(tx, do_guard, GuardKind.TYPE_MATCH, source, set)
    _guard(tx, do_guard, GuardKind.SET_MATCH, source, frozenset(value))
    return SetVariable([ConstantVariable(v) for v in value], source, tx)


# real iterators that `__reduce__` to `(iter or reversed, (sequence,), index)`: reversed?
_SEQUENCE_ITERATORS = {type(iter(())): False, type(iter([])): False, type(iter(range(0))): False,
                       type(iter("")): False, type(iter("\u00e9")): False, type(iter(b"")): False,
                       type(reversed([])): True, type(reversed(())): True}


@register(*_SEQUENCE_ITERATORS, exact=True)
def _build_sequence_iterator(tx, value, source, do_guard: bool) -> VariableTracker:
    """A real tuple/list/range/str iterator from outside (e.g. a for-loop iterator handed to
    a resume function): its sequence (the real list itself, for a list iterator) and
    position are read through `__reduce__`, the sequence guarded like any value, the
    position by value (Note [Live iterators] in vars/iterators.py)."""
    if source is None:
        return build_user_object(tx, value, source, do_guard)
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
    if not isinstance(container_vt, kinds) or isinstance(container_vt, keyed_dicts.PartialDictVariable):
        tx.unsupported(f"a {type(value).__name__} over {container_vt.describe()}", category="unsupported value")
    return container_vt


@register(enumerate, exact=True)
def _build_enumerate(tx, value, source, do_guard: bool) -> VariableTracker:
    """A real enumerate from outside (a for-loop iterator handed to a resume function): its
    iterator and next count from `__reduce__`, the count guarded by value, the iterator
    built like any (a sequence or dict/set iterator; others are opaque: the enumerate is
    then a user object)."""
    if source is None:
        return build_user_object(tx, value, source, do_guard)
    _, (inner, count) = value.__reduce__()
    if type(inner) not in _SEQUENCE_ITERATORS and type(inner) not in _HASHED_ITERATORS:
        return build_user_object(tx, value, source, do_guard)
    _guard(tx, do_guard, GuardKind.TYPE_MATCH, source, enumerate)
    _guard(tx, do_guard, GuardKind.CONSTANT_MATCH, EnumerateCountSource(source), count)
    return EnumerateIteratorVariable(wrap(tx, inner, IteratorSeqSource(source), do_guard), count, source)


@register(*_DICT_VIEWS, exact=True)
def _build_dict_view(tx, value, source, do_guard: bool) -> VariableTracker:
    """A real dict view from outside: live over the tracker of its (same) dict."""
    if source is None:
        return build_user_object(tx, value, source, do_guard)
    _guard(tx, do_guard, GuardKind.TYPE_MATCH, source, type(value))
    return DictViewVariable(_container(tx, value, source, do_guard, (DictVariable,)), _DICT_VIEWS[type(value)], source)


@register(*_HASHED_ITERATORS, exact=True)
def _build_hashed_iterator(tx, value, source, do_guard: bool) -> VariableTracker:
    """A real dict/set iterator from outside (e.g. a for-loop iterator handed to a resume
    function): its container through `ContainerOfSource`, its position from the items its
    `__reduce__` lists (raising if the container changed size: then it breaks)."""
    if source is None:
        return build_user_object(tx, value, source, do_guard)
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


def fold_call(tx, fn, args, kwargs, what: str, wrap_result=None) -> VariableTracker:
    """Call a pure function on constant trackers at trace time and wrap its result."""
    if not all(a.is_python_constant() for a in args) or not all(v.is_python_constant() for v in kwargs.values()):
        tx.unsupported(f"{what}() on values that are not Python constants: "
                       + ", ".join(a.describe() for a in [*args, *kwargs.values()]),
                       category="unsupported call")
    # the values first, outside the `try`: specializing one can break the graph (a number from tensor data)
    values = [a.as_python_constant() for a in args]
    kw_values = {k: v.as_python_constant() for k, v in kwargs.items()}
    try:
        result = fn(*values, **kw_values)
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
    if type(value) is collections.deque:
        return DequeVariable([wrap_constant(v) for v in value], value.maxlen)
    if type(value) is collections.OrderedDict:
        return DictVariable({k: wrap_constant(v) for k, v in value.items()}, dict_type=collections.OrderedDict)
    if type(value) is collections.Counter:
        return CounterVariable({k: wrap_constant(v) for k, v in value.items()})
    if is_constant_value(value) or isinstance(value, (enum.Enum, *TYPING_FORMS)):  # `list[Tensor]`
        return ConstantVariable(value)
    if isinstance(value, type):  # a builtin class keeps its trace rule (`int(...)` is a handler)
        rule = RULES.get(value)
        return rule.tracker(value, ObjectSource(value)) if rule is not None else ClassVariable(value)
    raise TypeError(f"cannot wrap {type(value).__qualname__} computed at trace time")


def wrap_op_result(tx, node, example) -> VariableTracker:
    """The tracker for the output of graph op `node` whose fake result is `example`."""
    if isinstance(example, torch.Tensor):
        return TensorVariable(node, example)
    if type(example) in SYM_TYPES:  # `torch.numel(x)` of a tensor with symbolic sizes
        return wrap_symbolic(tx.output, example, node)
    if isinstance(example, (tuple, list)):
        items = []
        for i, item in enumerate(example):
            tensor = isinstance(item, torch.Tensor)
            if not tensor and type(item) not in SYM_TYPES:
                items.append(wrap_constant(item))
                continue
            item_node = tx.output.add_node("call_function", operator.getitem, (node, i))
            item_node.meta["example_value"] = item
            items.append(TensorVariable(item_node, item) if tensor else wrap_symbolic(tx.output, item, item_node))
        if hasattr(type(example), "__match_args__") or hasattr(type(example), "_fields"):
            return NamedTupleVariable(items, type(example))
        return TupleVariable(items) if isinstance(example, tuple) else ListVariable(items)
    return wrap_constant(example)


provides("fold_call")(fold_call)
provides("wrap_constant")(wrap_constant)
provides("build_dict")(build_dict)
