"""Making a value of another kind without importing it: the protocol layer's factories.

A kind module that needs a tracker of another kind (a constant's `iter()` makes a sequence
iterator, a container folds a call on constants, `join` on a generator makes a tuple)
calls a function of this module, never the other kind's class. The kind that owns the
value registers its constructor here under the factory's name when it is imported:

    @provides("tuple_of")
    def _tuple_of(items): return TupleVariable(items)

and the factory looks it up at call time (JAX's rule tables: `primitive_jvps[p] = rule`,
filled by the modules that define the rules). So kind modules import only the protocol
layer (`base`, `registry`, this module, `context`) and the kinds they subclass, and
`vars/__init__.py`, the manifest at the top of the house, imports every kind once before
the first capture. Each factory is a named function with its own signature, so a reader
(and a type checker) sees what is made; `_MAKERS` is the table behind them.
"""
from __future__ import annotations

_MAKERS: dict = {}


def provides(name: str):
    """Register the decorated function as the factory `name` (one owner per name)."""
    def decorate(fn):
        if name in _MAKERS:
            raise AssertionError(f"factory {name!r} provided twice: {_MAKERS[name]} and {fn}")
        _MAKERS[name] = fn
        return fn
    return decorate


def fold_call(tx, fn, args, kwargs, what: str, wrap_result=None):
    """Call the pure `fn` on constant trackers at trace time and wrap its result (vars/builder.py)."""
    return _MAKERS["fold_call"](tx, fn, args, kwargs, what, wrap_result)


def fold(tx, fn, args, kwargs, wrap_result=None):
    """`fold_call` named after `fn`: the handler of a pure function of constants."""
    return fold_call(tx, fn, args, kwargs, getattr(fn, "__name__", repr(fn)), wrap_result)


def wrap_constant(value):
    """A tracker for a value computed at trace time from constants (vars/builder.py)."""
    return _MAKERS["wrap_constant"](value)


def constant(value, source=None):
    """A `ConstantVariable` (vars/constant.py)."""
    return _MAKERS["constant"](value, source)


def tuple_of(items: list):
    """A tuple of the trackers `items` (vars/containers.py)."""
    return _MAKERS["tuple_of"](items)


def iterator_over(items: list):
    """A new iterator over the trackers `items` (vars/iterators.py)."""
    return _MAKERS["iterator_over"](items)


def sequence_iterator(seq, reverse: bool = False):
    """An iterator walking the sequence tracker `seq`, in reverse if asked (vars/iterators.py)."""
    return _MAKERS["sequence_iterator"](seq, reverse)


def hashed_iterator(container, kind: str | None = None, reverse: bool = False):
    """An iterator over a dict's keys/values/items (`kind`) or a set's members (vars/iterators.py)."""
    return _MAKERS["hashed_iterator"](container, kind, reverse)


def bind_class_attribute(tx, obj, owner: type, name: str, attr, src):
    """`obj.name` found as `attr` on `owner`, a class of `type(obj)`'s MRO (vars/classes.py)."""
    return _MAKERS["bind_class_attribute"](tx, obj, owner, name, attr, src)


def dict_view(dict_vt, kind: str):
    """`d.keys()`, `d.values()` or `d.items()` (`kind`) of the dict tracker `dict_vt` (vars/dict_views.py)."""
    return _MAKERS["dict_view"](dict_vt, kind)


def wrap_int(tx, value: int, source):
    """An int read from `source` that is not pinned by a guard until its value is used (vars/lazy_int.py)."""
    return _MAKERS["wrap_int"](tx, value, source)


def build_dict(tx, value, source, do_guard: bool):
    """The tracker of a dict from outside (vars/builder.py)."""
    return _MAKERS["build_dict"](tx, value, source, do_guard)


def trace_rule(fn):
    """How the callable `fn` is traced: its row of the trace-rule tables, or None (vars/trace_rules.py)."""
    return _MAKERS["trace_rule"](fn)


def is_traceable(fn) -> bool:
    """Whether the Python function `fn` is inlined when called (vars/trace_rules.py)."""
    return _MAKERS["is_traceable"](fn)


def alias_trace_rule(fn, like) -> None:
    """Trace calls of `fn` by the rule of `like`, unless `fn` has its own (vars/trace_rules.py)."""
    _MAKERS["alias_trace_rule"](fn, like)


def construct_instance(tx, cls_vt, args: list, kwargs: dict):
    """`cls(*args, **kwargs)` for the class tracker `cls_vt` (vars/construction.py)."""
    return _MAKERS["construct_instance"](tx, cls_vt, args, kwargs)


def binary_operator(tx, op, args: list):
    """`op(*args)` for a builtin operator on trackers, as the `operator` module does (vars/builtins.py)."""
    return _MAKERS["binary_operator"](tx, op, args)
