"""`collections.defaultdict`, and dicts read from outside whose keys are tensors.

- `DefaultDictVariable`: a defaultdict made in the trace (`defaultdict(list)`,
  `defaultdict(lambda: 0)`, `defaultdict.fromkeys(...)`) or read from outside with constant
  keys (guarded like a dict: type and keys; its `default_factory` by its own source). `d[k]`
  of a missing key calls `default_factory` (traced like any call) and inserts the result
  through the mutation barrier, as `__missing__` does; `get`, `in`, `setdefault`, `pop`,
  iteration and the rest are a dict's. Returned, it is rebuilt as
  `defaultdict(factory, {...})`; from outside, its writes are replayed on the real object.
- `PartialDictVariable`: a dict, OrderedDict or defaultdict read from outside that has
  tensor keys (`optimizer.state`, keyed by parameters, hashed by identity). It is known one
  key at a time: a lookup by a constant or by a tensor whose source is known guards only
  that key's presence (`key in d` / `key not in d`, an O(1) hash probe per call, however
  large the dict), reads a present key's value through `d[<key's source>]`, and treats a
  tensor made in the trace as absent (a new object is in no real dict). Its writes
  (`d[p] = v`, a defaultdict's inserts, `del`, `pop`) are replayed key by key on the real
  dict (deleted keys first, then the written ones in the trace's order). What needs every
  key (iteration, views, `update`, `copy`, ...) breaks the graph; `len()` guards the real
  length.
"""
from __future__ import annotations

import collections

from ..guards.guard import Guard, GuardKind
from ..guards.sources import AttrSource, ItemSource, KeyedItemSource
from .base import VariableTracker
from .registry import handles
from .constant import ConstantVariable, is_constant_value
from .containers import DICT_MUTATORS, DictVariable, _mutating_keys, missing_key_error
from .dict_keys import TrackerKey, fixed_key, load_key, reconstruct_map
from .iterators import iterator_of
from .method_table import dispatch, no_arguments, row
from .registry import guard as _guard, register
import torch

_defaultdict = collections.defaultdict


class DefaultDictVariable(DictVariable):
    """A `collections.defaultdict`: a dict tracker with its `default_factory` tracker."""

    __slots__ = ("factory",)
    METHODS = {
        **DictVariable.METHODS,
        "__missing__": row(lambda tx, d, name, args, kwargs: d.missing(tx, args[0].key_impl(tx)),
                           when=lambda d, args, kwargs: len(args) == 1 and not kwargs and d.factory is not None),
        "__copy__": row(lambda tx, d, name, args, kwargs: d.copy(), when=no_arguments),
        "fromkeys": row(lambda tx, d, name, args, kwargs: _fromkeys(tx, None, args, kwargs),
                        when=lambda d, args, kwargs: d.factory is not None),
    }

    def __init__(self, items: dict, factory: VariableTracker, source=None, dict_type=_defaultdict):
        super().__init__(items, source, dict_type)
        self.factory = factory

    def is_python_constant(self) -> bool:
        return False

    def missing(self, tx, key) -> VariableTracker:
        """`defaultdict.__missing__(key)`: `self[key] = default_factory()`, or KeyError when
        the factory is None."""
        factory = self.factory
        if factory is None or factory.is_none():
            missing_key_error(tx, self, key)
        value = factory.call_function(tx, [], {})
        _mutating_keys(tx, self, "__missing__", key not in self.items)
        self.items[key] = value
        return value

    def children(self):
        return [*super().children(), self.factory] if self.factory is not None else super().children()

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name == "default_factory" and self.factory is not None:
            return self.factory
        return super().var_getattr(tx, name)

    def hasattr_impl(self, tx, name: str) -> bool:
        return hasattr(self.python_type(), name)

    def copy(self) -> DictVariable:
        return DefaultDictVariable(self.items, self.factory, dict_type=self.dict_type)

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        cg.push_callable_const(self.dict_type)
        cg.reconstruct(self.factory)
        reconstruct_map(cg, self.items)
        cg.call(2)

    def describe(self) -> str:
        return self.source.describe() if self.source is not None else "a defaultdict made in the trace"


def _next_alias(tx) -> str:
    """A fresh guard-local name for a value read by a tensor key (`KeyedItemSource`)."""
    return f"__bg_s{tx.output.next_guard_alias()}"


def _patch_dict(d, patch) -> None:
    """Residual helper: replay of a `PartialDictVariable`'s writes, key by key."""
    dropped, written = patch
    for k in dropped:
        del d[k]
    d.update(written)


_KEYED_METHODS = frozenset({"__getitem__", "get", "__contains__", "__setitem__", "__delitem__", "pop",
                            "setdefault", "__missing__"})


def _keyed(tx, d, name, args, kwargs) -> VariableTracker:
    """A lookup or a write by one key of a `PartialDictVariable`: that key probed (its value
    read), then the defaultdict's method."""
    key = d._probe(tx, args[0])
    if name in DICT_MUTATORS:
        d._will_write(tx, key, name in ("__delitem__", "pop"))
    return DefaultDictVariable.call_method(d, tx, name, args, kwargs)


def _keyed_contains(tx, d, name, args, kwargs) -> VariableTracker:
    if len(args) != 1:
        return _keyed(tx, d, name, args, kwargs)
    key = d._probe(tx, args[0], read=False)
    return ConstantVariable(key in d.items or key in d.unread)


# the methods a PartialDictVariable traces (what needs every key breaks)
_PARTIAL_METHODS = {
    **dict.fromkeys(_KEYED_METHODS, row(_keyed, when=lambda d, args, kwargs: bool(args))),
    "__contains__": row(_keyed_contains, when=lambda d, args, kwargs: bool(args)),
    "__len__": row(lambda tx, d, name, args, kwargs: d.len_impl(tx), when=no_arguments),
}


class PartialDictVariable(DefaultDictVariable):
    """A dict from outside with tensor keys, known one key at a time (module docstring).

    `items` holds the keys known present (read from the real dict, or written in the trace);
    `probed` every key whose real presence was looked up (and guarded), `original` those of
    them the real dict holds, `unread` those whose value was not read yet (`key in d` only:
    key -> (real key, item source)); `dirty` the keys the trace wrote, in order, and
    `dropped` those it deleted; `real_len` the guarded real length, once `len()` asked."""

    __slots__ = ("real", "probed", "original", "unread", "dirty", "dropped", "real_len")
    fully_known = False

    def __init__(self, real: dict, factory, source):
        super().__init__({}, factory, source, type(real))
        self.real = real
        self.probed = set()
        self.original = set()
        self.unread = {}
        self.dirty = {}
        self.dropped = set()
        self.real_len = None

    def _probe(self, tx, key_vt, read: bool = True):
        """`key_vt`'s dict key, its presence in the real dict looked up and guarded once (and,
        if `read`, its value read through its item source)."""
        key = key_vt.key_impl(tx)
        if key in self.items:
            return key
        if key in self.probed:
            if read and key in self.unread:
                self._read(tx, key)
            return key
        tx.output.side_effects.touch(self)
        self.probed.add(key)
        if type(key) is TrackerKey:
            vt = key.vt
            if vt.source is None:  # made in the trace: a new object, in no dict from outside
                return key
            real_key = tx.output.real_input(vt)
            if real_key is None:
                tx.unsupported(f"looking up {vt.describe()} in {self.describe()}", category="unsupported dict key")
            item_source = KeyedItemSource(self.source, vt.source, _next_alias(tx))
        else:
            real_key, item_source = key, ItemSource(self.source, key)
        present = real_key in self.real
        tx.output.add_guard(Guard(GuardKind.KEY_IN, item_source, present, tx.guard_location()))
        if present:
            self.original.add(key)
            self.unread[key] = (real_key, item_source)
            if read:
                self._read(tx, key)
        return key

    def _read(self, tx, key) -> None:
        tx.output.side_effects.touch(self)
        real_key, item_source = self.unread.pop(key)
        self.items[key] = tx.wrap(self.real[real_key], item_source)

    def _will_write(self, tx, key, deletes: bool) -> None:
        tx.output.side_effects.mutate(self)
        self.dirty[key] = None
        if deletes:
            self.dropped.add(key)

    def getitem_impl(self, tx, key_vt) -> VariableTracker:
        self._probe(tx, key_vt)
        return super().getitem_impl(tx, key_vt)

    def missing(self, tx, key) -> VariableTracker:
        if self.factory is not None and not self.factory.is_none():
            self._will_write(tx, key, False)
        return super().missing(tx, key)

    def call_method(self, tx, name, args, kwargs):
        result = dispatch(tx, self, _PARTIAL_METHODS, name, args, kwargs)
        if result is None:
            self._whole(tx, f"{name}()")
        return result

    def _whole(self, tx, what: str):
        tx.unsupported(f"{what} of {self.describe()}, a dict with tensor keys read from outside (only "
                       "lookups by key are traced)", category="unsupported dict key")

    def len_impl(self, tx) -> VariableTracker:
        if self.real_len is None:
            tx.output.side_effects.touch(self)
            self.real_len = len(self.real)
            tx.output.add_guard(Guard(GuardKind.LEN_MATCH, self.source, self.real_len, tx.guard_location()))
        added = sum(1 for k in self.items if k not in self.original)
        removed = sum(1 for k in self.original if k not in self.items and k not in self.unread)
        return ConstantVariable(self.real_len + added - removed)

    def truth(self, tx) -> bool:
        return bool(self.len_impl(tx).as_python_constant())

    def unpack(self, tx) -> list:
        self._whole(tx, "unpacking")

    def iterate(self, tx):
        self._whole(tx, "iterating")

    def reverse_iterate(self, tx):
        self._whole(tx, "reversed()")

    def as_kwargs(self, tx) -> dict:
        self._whole(tx, "** unpacking")

    def as_fx_arg(self, tx):
        self._whole(tx, "passing to a torch op")

    def var_getattr(self, tx, name: str) -> VariableTracker:
        if name == "default_factory" and self.factory is None:
            self._whole(tx, "default_factory")  # not a defaultdict: AttributeError in eager
        return super().var_getattr(tx, name)

    def replay_records(self, cg) -> list:
        dropped = [k for k in self.dirty if k in self.dropped and k in self.original]
        written = [k for k in self.items if k in self.dirty]

        def push_new():
            for k in dropped:
                load_key(cg, k)
            cg.build("BUILD_TUPLE", len(dropped))
            for k in written:
                load_key(cg, k)
                cg.reconstruct(self.items[k])
            cg.build("BUILD_MAP", len(written))
            cg.build("BUILD_TUPLE", 2)
        return [cg.helper_effect(_patch_dict, self.source, push_new)]


def build_keyed_dict(tx, value, source, do_guard: bool) -> VariableTracker:
    """A dict from outside whose keys are constants and tensors (`_build_dict` hands over
    those with non-constant keys): a `PartialDictVariable`."""
    if source is None or not all(is_constant_value(k) or isinstance(k, torch.Tensor) for k in value):
        tx.unsupported("a dict with keys other than constants and tensors", category="unsupported value")
    _guard(tx, do_guard, GuardKind.TYPE_MATCH, source, type(value))
    factory = _factory(tx, value, source) if isinstance(value, _defaultdict) else None
    return PartialDictVariable(value, factory, source)


def _factory(tx, value, source) -> VariableTracker:
    return tx.wrap(value.default_factory, AttrSource(source, "default_factory"))


@register(_defaultdict, exact=True)
def _build_defaultdict(tx, value, source, do_guard: bool) -> VariableTracker:
    """A defaultdict from outside: with constant keys, guarded and read like a dict."""
    if source is None or not all(fixed_key(k) for k in value):
        return build_keyed_dict(tx, value, source, do_guard)
    _guard(tx, do_guard, GuardKind.TYPE_MATCH, source, _defaultdict)
    _guard(tx, do_guard, GuardKind.DICT_KEYS, source, tuple(value))
    items = {k: tx.wrap(v, ItemSource(source, k)) for k, v in value.items()}
    return DefaultDictVariable(items, _factory(tx, value, source), source)


@handles(_defaultdict)
def _defaultdict_ctor(tx, fn, args, kwargs):
    """`defaultdict(factory=None, *args, **kwargs)`: the rest of the arguments as `dict()`'s."""
    factory = args[0] if args else ConstantVariable(None)
    if factory.is_python_constant() and not callable(factory.as_python_constant()) and not factory.is_none():
        tx.raise_user_error(TypeError("first argument must be callable or None"))
    result = DefaultDictVariable({}, factory)
    if len(args) > 1 or kwargs:
        result.call_method(tx, "update", list(args[1:]), kwargs)
    return result


@handles(_defaultdict.fromkeys)
def _fromkeys(tx, fn, args, kwargs):
    """`defaultdict.fromkeys(iterable, value=None)`: a defaultdict without a factory."""
    if kwargs or not 1 <= len(args) <= 2:
        tx.raise_user_error(TypeError(f"fromkeys expected 1 or 2 arguments, got {len(args) + len(kwargs)}"))
    value = args[1] if len(args) == 2 else ConstantVariable(None)
    keys = iterator_of(tx, args[0]).unpack(tx)
    return DefaultDictVariable({k.key_impl(tx): value for k in keys}, ConstantVariable(None))
