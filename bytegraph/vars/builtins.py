"""Builtin functions, builtin types and `operator.*`: one declarative table
(callable -> handler). Handlers get `(tx, args, kwargs)` trackers and return a tracker.

Policy, in order: a tensor operand makes a graph op (operators) or breaks (data-
dependent builtins); all-constant operands are folded by calling the real builtin;
containers are handled structurally.
"""
from __future__ import annotations

import builtins
import inspect
import functools
import math
import operator
import sys
import types

import torch

from ..guards.guard import Guard, GuardKind
from ..guards.sources import ObjectSource
from ..hints import graph_break
from . import builtin_methods
from . import dunders, factory
from .factory import fold, provides
from .registry import HANDLERS, handles
from .base import CallableValueVariable, VariableTracker
from .lazy_int import UNPINNED_OPS, unpinned_operator
from .symbolic import SymbolicSliceVariable, symbolic_operator
from .constant import ConstantVariable
from .functions import BoundMethodVariable, PartialVariable, UserFunctionVariable
from .containers import BaseListVariable, DictVariable, ListVariable, SetVariable, TupleVariable
from .dunders import handles_operator, is_user_instance, user_operator, user_str
from .exceptions import ExceptionVariable, TracebackVariable
from .iterators import (EnumerateIteratorVariable, FilterIteratorVariable, IteratorVariable, MapIteratorVariable,
                        ZipIteratorVariable, iterator_of)
from .tensor import TensorVariable
from .legacy_tensor_types import legacy_isinstance
from .objects import InstanceDictVariable
from .sorting import best_of
from .construction import new_object
from .classes import ClassVariable
from .functions import BaseFunctionVariable

class BuiltinVariable(CallableValueVariable):
    """A builtin function or type, or an `operator`/`math` function."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs):
        handler = HANDLERS.get(self.fn)
        if handler is None:
            tx.unsupported(f"builtin {self.describe()}", category="unsupported builtin")
        return handler(tx, self.fn, args, kwargs)

    def var_getattr(self, tx, name):
        if isinstance(self.fn, type):
            return ClassVariable(self.fn, self.source).var_getattr(tx, name)
        return super().var_getattr(tx, name)

    def hasattr_impl(self, tx, name: str) -> bool:
        if isinstance(self.fn, type):  # a builtin class (`int`): fixed for the life of the process
            return hasattr(self.fn, name)
        return super().hasattr_impl(tx, name)

    def describe(self) -> str:
        return getattr(self.fn, "__qualname__", repr(self.fn))


def is_builtin(value) -> bool:
    try:
        return value in HANDLERS
    except TypeError:
        return False


def _consts(args) -> bool:
    return all(a.is_python_constant() for a in args)


def _any_tensor(args) -> bool:
    return any(a.is_tensor for a in args)


# ---- operators ---------------------------------------------------------------------

_BINARY, _INPLACE = dunders.BINARY_OPERATORS, dunders.INPLACE_OPERATORS
_COMPARE = (operator.lt, operator.le, operator.eq, operator.ne, operator.gt, operator.ge)
_UNARY = (operator.neg, operator.pos, operator.invert, operator.abs, builtins.abs)


_SCALARS = frozenset({type(None), bool, int, float, str})


@handles(*_BINARY, *_COMPARE, *_UNARY)
def _operator(tx, fn, args, kwargs):
    if all(type(a) is ConstantVariable and type(a.value) in _SCALARS for a in args):
        try:  # `key != "attribute_map"`: what `fold` does, without asking every other rule first
            return ConstantVariable(fn(*[a.value for a in args]))
        except Exception as e:  # the user's own arithmetic raises (ZeroDivisionError, ...)
            tx.raise_user_error(e)
    if handles_operator(fn, args):
        return user_operator(tx, fn, args)
    if fn in UNPINNED_OPS:  # `self.calls + 1` stays unpinned (vars/lazy_int.py)
        lazy = unpinned_operator(tx, fn, args)
        if lazy is not None:
            return lazy
    if _any_tensor(args):
        target = operator.abs if fn is builtins.abs else fn
        return tx.output.call_op("call_function", target, args, kwargs)
    symbolic = symbolic_operator(tx, fn, args)  # a size or dynamic int (Note [Symbolic sizes])
    if symbolic is not None:
        return symbolic
    if _consts(args) and not any(_holds_symbolic(a) for a in args):
        return fold(tx, fn, args, kwargs)
    return _sequence_operator(tx, fn, args)


def _holds_symbolic(vt) -> bool:
    """A tuple or list with a symbolic item (`x.shape[1:] + (d,)`): handled item by item,
    as folding it would specialize every item."""
    return isinstance(vt, BaseListVariable) and any(i.is_symbolic() for i in vt.items)


@handles(*_INPLACE)
def _inplace_operator(tx, fn, args, kwargs):
    if handles_operator(fn, args):
        return user_operator(tx, fn, args)
    a, b = args
    if isinstance(a, TensorVariable):
        return tx.output.call_op("call_function", fn, args, kwargs)
    if isinstance(a, ListVariable) and fn is operator.iadd:
        return a.call_method(tx, "__iadd__", [b.unpack(tx)], {})
    method = _INPLACE_METHODS.get(fn)
    if method is not None and method in a.inplace_methods:
        return a.call_method(tx, method, [b], {})
    return _operator(tx, dunders.INPLACE_TO_BINARY[fn], args, kwargs)


_INPLACE_METHODS = {operator.imul: "__imul__", operator.ior: "__ior__", operator.iand: "__iand__",
                    operator.isub: "__isub__", operator.ixor: "__ixor__", operator.iadd: "__iadd__"}


def _sequence_operator(tx, fn, args):
    """A binary operator between builtin values: the left operand's kind, then the right's
    (reflected), then what holds for any two values (`==` of one tracker, or of a constant and
    a value that is not one)."""
    if len(args) == 2:
        a, b = args
        result = a.binary_op_impl(tx, fn, b)
        if result is None:
            result = b.binary_op_impl(tx, fn, a, reflected=True)
        if result is not None:
            return result
        if fn in (operator.eq, operator.ne):
            if a is b:
                return ConstantVariable(fn is operator.eq)
            if a.is_python_constant() != b.is_python_constant():
                return ConstantVariable(fn is operator.ne)
            tx.unsupported(f"comparing {a.describe()} with {b.describe()}", category="unsupported operator")
    tx.unsupported(f"operator {fn.__name__} on " + ", ".join(a.describe() for a in args),
                   category="unsupported operator")


@handles(operator.is_, operator.is_not)
def _identity(tx, fn, args, kwargs):
    a, b = args
    if a is b:
        same = True
    elif type(a) is InstanceDictVariable and type(b) is InstanceDictVariable:  # `o.__dict__ is p.__dict__`
        return _identity(tx, fn, [a.obj, b.obj], kwargs)
    elif type(a) in _CONTAINERS or type(b) in _CONTAINERS:  # one object, one tracker: distinct trackers differ
        if a.source is not None and b.source is not None and not _distinct_objects(tx, a, b):
            tx.unsupported("`is` between two values read from outside", category="unsupported operator")
        same = False
    elif a.is_python_constant() and b.is_python_constant():
        same = a.as_python_constant() is b.as_python_constant()  # constants, or identity-guarded objects
    elif isinstance(a, UserFunctionVariable) and isinstance(b, UserFunctionVariable):
        same = a.pinned(tx) is b.pinned(tx)
    elif a.source is None or b.source is None or isinstance(a, TensorVariable) or isinstance(b, TensorVariable):
        same = False  # distinct input tensors are pinned distinct by the no-aliasing guard
    elif _distinct_objects(tx, a, b):
        same = False
    else:
        tx.unsupported("`is` between two values read from outside", category="unsupported operator")
    return ConstantVariable(same if fn is operator.is_ else not same)


_CONTAINERS = (ListVariable, DictVariable, SetVariable)


def _distinct_objects(tx, a, b) -> bool:
    """Whether sourced trackers `a` and `b` are two objects: values of two (guarded) types
    are; and one real object reached through two sources of an identity-tracked kind is one
    tracker, so two such trackers are two objects, kept apart on later calls by a
    no-aliasing guard."""
    tracked = a.identity_tracked, b.identity_tracked
    if not all(t or v.is_python_constant() for t, v in zip(tracked, (a, b))):
        return False
    if a.python_type() is not b.python_type():
        return True  # the types of sourced containers, objects and constants are guarded
    if not all(tracked):
        return False
    tx.output.add_guard(Guard(GuardKind.NO_ALIASING, a.source, (a.source, b.source), tx.guard_location()))
    return True


@handles(operator.not_)
def _not(tx, fn, args, kwargs):
    return ConstantVariable(not args[0].truth(tx))


@handles(operator.truth, builtins.bool)
def _bool(tx, fn, args, kwargs):
    if not args:
        return ConstantVariable(False)
    return ConstantVariable(args[0].truth(tx))


@handles(operator.contains)
def _contains(tx, fn, args, kwargs):
    container, item = args
    return container.contains_impl(tx, item)


@handles(operator.getitem)
def _getitem(tx, fn, args, kwargs):
    obj, key = args
    return obj.getitem_impl(tx, key)


@handles(operator.setitem)
def _setitem(tx, fn, args, kwargs):
    obj, key, value = args
    obj.setitem_impl(tx, key, value)
    return ConstantVariable(None)


@handles(operator.delitem)
def _delitem(tx, fn, args, kwargs):
    obj, key = args
    return obj.call_method(tx, "__delitem__", [key], {})


@handles(operator.index)
def _index(tx, fn, args, kwargs):
    if len(args) == 1 and not kwargs:
        if args[0].is_tensor:  # `Tensor.__index__`: captured under config.capture_scalar_outputs, else a break
            return args[0].call_method(tx, "__index__", [], {})
        if args[0].is_symbolic() and args[0].python_type() is int:
            return args[0]  # an int already: its value is not needed (nor guarded)
    return fold(tx, fn, args, kwargs)


@handles(operator.itemgetter, operator.attrgetter)
def _getter_factory(tx, fn, args, kwargs):
    return fold(tx, fn, args, kwargs, wrap_result=lambda v: GetterVariable(v))


class GetterVariable(VariableTracker):
    """An `operator.itemgetter`/`attrgetter` object with constant keys."""

    __slots__ = ("getter",)

    def __init__(self, getter):
        super().__init__(None)
        self.getter = getter

    def python_type(self) -> type:
        return type(self.getter)

    def call_function(self, tx, args, kwargs):
        (obj,) = args
        fields = self.getter.__reduce__()[1]
        if isinstance(self.getter, operator.itemgetter):
            got = [obj.getitem_impl(tx, ConstantVariable(k)) for k in fields]
        else:
            got = []
            for path in fields:
                value = obj
                for part in path.split("."):
                    value = value.var_getattr(tx, part)
                got.append(value)
        return got[0] if len(got) == 1 else TupleVariable(got)


# ---- builtin functions ---------------------------------------------------------------

@handles(builtins.len, operator.length_hint)
def _len(tx, fn, args, kwargs):
    (obj,) = args
    return obj.len_impl(tx)


@handles(builtins.isinstance)
def _isinstance(tx, fn, args, kwargs):
    obj, classes = args
    cls = classes.as_python_constant()
    legacy = legacy_isinstance(obj, cls)  # `torch.FloatTensor`: its metaclass checks dtype and backend
    if legacy is not None:
        return ConstantVariable(legacy)
    try:
        return ConstantVariable(issubclass(obj.python_type(), cls))
    except TypeError as e:
        tx.raise_user_error(e)


@handles(builtins.issubclass)
def _issubclass(tx, fn, args, kwargs):
    return fold(tx, fn, args, kwargs)


@handles(builtins.callable)
def _callable(tx, fn, args, kwargs):
    (obj,) = args
    if obj.is_python_constant():
        return fold(tx, fn, args, kwargs)

    callable_kinds = (BaseFunctionVariable, BoundMethodVariable, PartialVariable, BuiltinVariable)
    return ConstantVariable(isinstance(obj, callable_kinds) or callable(getattr(obj.python_type(), "__call__", None))
                            and not isinstance(obj, (TensorVariable, BaseListVariable, DictVariable)))


@handles(builtins.type)
def _type(tx, fn, args, kwargs):
    if len(args) != 1:
        tx.unsupported("type() with three arguments creates a class", category="unsupported builtin")
    cls = args[0].python_type()
    return tx.wrap(cls, ObjectSource(cls), guard=False)


@handles(builtins.getattr)
def _getattr(tx, fn, args, kwargs):
    obj, name = args[0], args[1].as_python_constant()
    if len(args) == 3:
        if not obj.hasattr_impl(tx, name):
            return args[2]
    return obj.var_getattr(tx, name)


@handles(builtins.setattr)
def _setattr(tx, fn, args, kwargs):
    obj, name, value = args
    obj.store_attr(tx, name.as_python_constant(), value)
    return ConstantVariable(None)


@handles(builtins.delattr)
def _delattr(tx, fn, args, kwargs):
    args[0].delete_attr(tx, args[1].as_python_constant())
    return ConstantVariable(None)


@handles(object.__setattr__, object.__delattr__)
def _object_setattr(tx, fn, args, kwargs):
    """`object.__setattr__(obj, name, value)`, as a `__setattr__` written in Python (or a
    frozen dataclass's `__init__`) calls it: the write without the class's own hook."""
    if not is_user_instance(args[0]) or kwargs or not args[1].is_python_constant():
        tx.unsupported(f"{fn.__qualname__}() on {args[0].describe()}", category="unsupported call")
    if fn is object.__setattr__:
        args[0].generic_setattr(tx, args[1].as_python_constant(), args[2])
    else:
        args[0].generic_delattr(tx, args[1].as_python_constant())
    return ConstantVariable(None)


@handles(object.__getattribute__)
def _object_getattribute(tx, fn, args, kwargs):
    """`object.__getattribute__(obj, name)`, as a `__getattribute__` written in Python calls
    it (`super().__getattribute__(name)`): the lookup without the class's own hooks."""
    if not is_user_instance(args[0]) or kwargs or len(args) != 2 or not args[1].is_python_constant():
        tx.unsupported(f"object.__getattribute__() on {args[0].describe()}", category="unsupported call")
    return args[0].generic_getattr(tx, args[1].as_python_constant(), dynamic=False)


@handles(object.__init__)
def _object_init(tx, fn, args, kwargs):
    if len(args) != 1 or kwargs:
        tx.unsupported("object.__init__() with arguments", category="unsupported call")
    return ConstantVariable(None)


@handles(object.__new__)
def _object_new(tx, fn, args, kwargs):
    if not args:
        tx.raise_user_error(TypeError("object.__new__(): not enough arguments"))
    if not isinstance(args[0], ClassVariable):
        tx.raise_user_error(TypeError(f"object.__new__(X): X is not a type object ({args[0].python_type().__name__})"))
    return new_object(tx, args[0].cls, args[1:], kwargs)


@handles(builtins.globals)
def _globals(tx, fn, args, kwargs):
    """`globals()`: the calling frame's globals dict (vars/globals_dict.py)."""
    if args or kwargs:
        tx.raise_user_error(TypeError(f"globals() takes no arguments ({len(args) + len(kwargs)} given)"))
    return tx.wrap(tx.f_globals, tx.globals_source)


@handles(builtins.vars)
def _vars(tx, fn, args, kwargs):
    if len(args) != 1 or kwargs:
        tx.unsupported("vars() without an argument reads the frame's locals", category="unsupported builtin")
    return args[0].var_getattr(tx, "__dict__")


@handles(builtins.hasattr)
def _hasattr(tx, fn, args, kwargs):
    return ConstantVariable(args[0].hasattr_impl(tx, args[1].as_python_constant()))


@handles(builtins.min, builtins.max)
def _min_max(tx, fn, args, kwargs):
    key = kwargs.get("key")
    if key is not None and key.is_none():
        key = None
    items = _items_as_they_come(tx, args[0]) if len(args) == 1 else iter(args)
    best = best_of(tx, fn, items, key)
    if best is None:
        if "default" in kwargs:
            return kwargs["default"]
        tx.raise_user_error(ValueError(f"{fn.__name__}() arg is an empty sequence"))
    return best


def _items_as_they_come(tx, iterable):
    """The items of `iterable`, each taken from its iterator when the consumer asks (eager
    calls `key` and compares before taking the next)."""
    it = iterator_of(tx, iterable)
    while (item := it.next_item(tx)) is not None:
        yield item


@handles(builtins.sum)
def _sum(tx, fn, args, kwargs):
    it = iterator_of(tx, args[0])
    total = args[1] if len(args) > 1 else kwargs.get("start", ConstantVariable(0))
    while (item := it.next_item(tx)) is not None:  # each `+` as the item comes, like eager
        total = _operator(tx, operator.add, [total, item], {})
    return total


@handles(builtins.any, builtins.all)
def _any_all(tx, fn, args, kwargs):
    it = iterator_of(tx, args[0])
    stop = fn is builtins.any
    while (item := it.next_item(tx)) is not None:  # lazily: eager stops at the deciding item
        if item.truth(tx) == stop:
            return ConstantVariable(stop)
    return ConstantVariable(not stop)


# One-argument functions of a symbolic number that torch keeps symbolic (its `torch._sym_*`
# math functions, `sym_float`, and the rounding functions SymFloat implements); the graph
# (or residual code) calls the value on the right.
_SYMBOLIC_FUNCTIONS = {
    **{getattr(math, name): getattr(torch, f"_sym_{name}")
       for name in ("sqrt", "cos", "cosh", "sin", "sinh", "tan", "tanh", "asin", "acos", "atan", "log2")},
    math.floor: math.floor, math.ceil: math.ceil, math.trunc: math.trunc, builtins.float: torch.sym_float,
    builtins.int: torch.sym_int,
}


@handles(builtins.int, builtins.float, builtins.complex, builtins.str, builtins.repr, builtins.round,
         builtins.divmod, builtins.pow, builtins.chr, builtins.ord, builtins.hash, builtins.format,
         builtins.hex, builtins.oct, builtins.bin, builtins.ascii, *(
             getattr(math, name) for name in dir(math) if callable(getattr(math, name))
             and name != "prod"))  # math.prod: vars/polyfills/math.py
def _folded(tx, fn, args, kwargs):
    sym_fn = _SYMBOLIC_FUNCTIONS.get(fn)
    if sym_fn is not None and len(args) == 1 and not kwargs and args[0].is_symbolic():
        result = symbolic_operator(tx, sym_fn, args)  # stays symbolic: no guard on the value
        if result is not None:
            return result
    if (fn is builtins.str or fn is builtins.repr) and len(args) == 1 and isinstance(args[0], ExceptionVariable):
        return args[0].str_impl(tx, fn)
    if (fn is builtins.str or fn is builtins.repr) and len(args) == 1 and is_user_instance(args[0]):
        result = user_str(tx, fn, args[0])
        if result is not None:
            return result
    if (fn is builtins.int or fn is builtins.float) and len(args) == 1 and not kwargs and args[0].is_tensor:
        # `Tensor.__int__`/`__float__`: captured under config.capture_scalar_outputs, else a break naming it
        return args[0].call_method(tx, f"__{fn.__name__}__", [], {})
    if _any_tensor(args):
        tx.unsupported(f"{getattr(fn, '__name__', fn)}() on a tensor reads its value into Python",
                       category="data-dependent", hint="keep the computation in torch ops")
    return fold(tx, fn, args, kwargs)


@handles(builtins.tuple, builtins.list)
def _sequence_ctor(tx, fn, args, kwargs):
    items = iterator_of(tx, args[0]).unpack(tx) if args else []
    return TupleVariable(items) if fn is builtins.tuple else ListVariable(items)


@handles(builtins.dict)
def _dict_ctor(tx, fn, args, kwargs):
    result = DictVariable({})
    result.call_method(tx, "update", list(args), kwargs)
    return result


@handles(builtins.set, builtins.frozenset)
def _set_ctor(tx, fn, args, kwargs):
    items = iterator_of(tx, args[0]).unpack(tx) if args else []
    if fn is builtins.frozenset:
        return fold(tx, frozenset, [TupleVariable(items)], {})
    return SetVariable(items, tx=tx)


@handles(builtins.range, builtins.slice)
def _range(tx, fn, args, kwargs):
    if _any_tensor(args):
        tx.unsupported(f"{fn.__name__}() with a tensor bound", category="data-dependent")
    if fn is builtins.slice and not kwargs and any(a.is_symbolic() for a in args):
        return SymbolicSliceVariable(args)  # `x[:n]` keeps its symbolic bound
    return fold(tx, fn, args, kwargs)


@handles(builtins.iter)
def _iter(tx, fn, args, kwargs):
    return iterator_of(tx, args[0])


@handles(builtins.next)
def _next(tx, fn, args, kwargs):
    it = args[0]
    if not isinstance(it, IteratorVariable):
        next_method = _next_method(it)
        if next_method is None:
            tx.raise_user_error(TypeError(f"{it.describe()} is not an iterator"))
        if not (is_user_instance(it) and inspect.isfunction(next_method)):
            item = it.next_item(tx)  # a real iterator not modelled: the slot breaks the graph
        elif len(args) > 1:
            tx.unsupported(f"next() with a default on {it.describe()}", category="unsupported iteration")
        else:
            return it.var_getattr(tx, "__next__").call_function(tx, [], {})  # a user iterator's own __next__
    elif len(args) == 1:
        return it.next_or_raise(tx)
    else:
        item = it.next_item(tx)
    if item is None:
        if len(args) > 1:
            return args[1]
        tx.raise_user_error(StopIteration())
    return item


def _next_method(vt):
    """`type(vt).__next__`, or None when the type has none (a value that is not an
    iterator)."""
    try:
        return getattr(vt.python_type(), "__next__", None)
    except NotImplementedError:
        return None


@handles(builtins.enumerate)
def _enumerate(tx, fn, args, kwargs):
    start = args[1] if len(args) > 1 else kwargs.get("start", ConstantVariable(0))
    return EnumerateIteratorVariable(iterator_of(tx, args[0]), start.as_python_constant())


@handles(builtins.zip)
def _zip(tx, fn, args, kwargs):
    strict = kwargs.get("strict", ConstantVariable(False)).as_python_constant()
    return ZipIteratorVariable([iterator_of(tx, a) for a in args], strict)


@handles(builtins.map)
def _map(tx, fn, args, kwargs):
    return MapIteratorVariable(args[0], [iterator_of(tx, a) for a in args[1:]])


@handles(builtins.filter)
def _filter(tx, fn, args, kwargs):
    return FilterIteratorVariable(None if args[0].is_none() else args[0], iterator_of(tx, args[1]))


@handles(builtins.reversed)
def _reversed(tx, fn, args, kwargs):
    (obj,) = args
    return obj.reverse_iterate(tx)  # live over lists and dicts (Note [Live iterators])


@handles(builtins.sorted)
def _sorted(tx, fn, args, kwargs):
    result = ListVariable(iterator_of(tx, args[0]).unpack(tx))
    result.call_method(tx, "sort", [], kwargs)
    return result


@handles(functools.partial)
def _partial(tx, fn, args, kwargs):
    if not args:
        tx.raise_user_error(TypeError("type 'partial' takes at least one argument"))
    inner = args[0]
    if isinstance(inner, PartialVariable):  # CPython flattens a partial of a partial
        return PartialVariable(inner.fn, [*inner.args, *args[1:]], {**inner.kwargs, **kwargs})
    return PartialVariable(inner, args[1:], kwargs)


@handles(builtins.print)
def _print(tx, fn, args, kwargs):
    tx.unsupported("print() writes to stdout", category="unsupported builtin",
                   hint="printing inside a compiled function is not captured; print outside it")


@handles(graph_break)
def _graph_break(tx, fn, args, kwargs):
    tx.unsupported("explicit bytegraph.graph_break()", category="explicit graph break")


@handles(builtins.id)
def _id(tx, fn, args, kwargs):
    """`id(obj)` of an object that existed before the call: a constant, guarded by identity
    (the same object at its source has the same id). An object made by the traced code has no
    id until it is really built, so that is a graph break."""
    if len(args) != 1 or kwargs:
        tx.raise_user_error(TypeError(f"id() takes exactly one argument ({len(args) + len(kwargs)} given)"))
    obj = args[0]
    if obj.is_python_constant() and obj.source is None and isinstance(obj.as_python_constant(), _INTERNED):
        return ConstantVariable(id(obj.as_python_constant()))
    real = _real_object(tx, obj)
    if real is _MISSING:
        tx.unsupported(f"id() of {obj.describe()} made inside the compiled code",
                       category="unsupported builtin",
                       hint="an object built by the traced code has no address until it really exists; "
                            "take its id() outside the compiled function, or key by the object itself")
    tx.output.add_guard_at(tx, GuardKind.ID_MATCH, obj.source, real)
    return ConstantVariable(id(real))


_MISSING = object()
# constants whose trace-time object is the object the program sees (`id(None)`, `id(True)`)
_INTERNED = (type(None), bool, type(Ellipsis), type(NotImplemented))


def _real_object(tx, vt):
    """The real object tracker `vt` stands for, when it existed before the call (its source
    was wrapped, or it is a graph input); else _MISSING."""
    if vt.source is None:
        return _MISSING
    real = tx.output.source_objects.get(vt.source, _MISSING)
    if real is _MISSING and vt.is_tensor:
        real = tx.output.real_input(vt)
        return _MISSING if real is None else real
    return real




@handles(*builtin_methods.type_level_folds())
def _type_level_fold(tx, fn, args, kwargs):
    """A pure classmethod/staticmethod of an immutable builtin type (`int.from_bytes`,
    `str.maketrans`, `float.fromhex`; the table of vars/builtin_methods.py): folded on
    constant arguments."""
    return factory.fold_call(tx, fn, args, kwargs, fn.__qualname__)


@handles(types.MethodType)
def _method_type(tx, fn, args, kwargs):
    """`types.MethodType(function, obj)`: `function` bound to `obj` (contextlib.ExitStack
    binds a manager's `__exit__` so)."""
    if len(args) != 2 or kwargs:
        tx.raise_user_error(TypeError("method expected 2 arguments"))
    if args[1].is_none():
        tx.raise_user_error(TypeError("instance must not be None"))
    if not hasattr(args[0].python_type(), "__call__"):
        tx.raise_user_error(TypeError("first argument must be callable"))
    return BoundMethodVariable(args[0], args[1])


@handles(sys.exc_info)
def _exc_info(tx, fn, args, kwargs):
    """`sys.exc_info()`: the exception being handled where it is called (Note [Traced exceptions])."""
    exc = tx.active_exception()
    if exc is None:
        return TupleVariable([ConstantVariable(None)] * 3)
    return TupleVariable([tx.wrap(exc.python_type(), None), exc, TracebackVariable(exc)])


@handles(sys.exception)
def _exception(tx, fn, args, kwargs):
    """`sys.exception()`: the exception being handled where it is called, or None (3.13's
    `contextlib.ExitStack.__exit__` calls it)."""
    if args or kwargs:
        tx.raise_user_error(TypeError("exception() takes no arguments"))
    exc = tx.active_exception()
    return ConstantVariable(None) if exc is None else exc


@provides("binary_operator")
def _binary_operator(tx, op, args: list):
    return _operator(tx, op, args, {})
