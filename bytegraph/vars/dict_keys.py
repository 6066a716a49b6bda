"""Dict keys that are trackers: `TrackerKey`, the hashable stand-in of a value hashed by
identity (a tensor: `Tensor.__hash__` is `id`), and the two conversions every dict
tracker uses for its keys (`key_tracker`: key -> tracker, `load_key`: key -> bytecode).

A dict tracker's `items` maps hashable Python keys to value trackers. Constants are their
own keys; a tensor's key is `TrackerKey(vt)`, equal only to itself: one real tensor is one
tracker (graph inputs are deduplicated by identity, `OutputGraph.add_input`), and a tensor
made in the trace is a new object, so tracker identity is the real key identity.

Besides constants, a dict read from outside may be keyed by other fixed values that are
their own keys too (`fixed_key`): classes (hashed by identity: a registry keyed by type),
enum members and typing forms (`Union`, `list[int]`). Its keys guard compares them by
equality, as the dict's lookups do.
"""
from __future__ import annotations

import enum

from .constant import ConstantVariable, is_constant_value
from .typing_forms import TYPING_FORMS
from . import factory


class TrackerKey:
    """A dict key standing for the object tracker `vt` stands for, hashed by identity."""

    __slots__ = ("vt",)

    def __init__(self, vt):
        self.vt = vt

    def __hash__(self) -> int:
        return id(self.vt)

    def __eq__(self, other) -> bool:
        return type(other) is type(self) and other.vt is self.vt  # a kind of key equals only its own kind

    def __repr__(self) -> str:
        return f"<key {self.vt.describe()}>"


class RegistryIdKey(TrackerKey):
    """A set member that is a hook registry's id (Note [Hook registries] in
    vars/hooks/registry.py), hashed and compared by its tracker: one tracker stands for one id
    in a capture, and the registries' guards pin every equality among ids. Code that asks
    `type(key) is TrackerKey` (a tensor member) does not take it for one."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"<id {self.vt.describe()}>"


def fixed_key(key) -> bool:
    """Whether `key` of a dict read from outside is its own key in the dict's tracker: a
    constant, a class whose metaclass keeps `type`'s hash and equality, an enum member, a
    typing form."""
    if is_constant_value(key) or isinstance(key, (enum.Enum, *TYPING_FORMS)):
        return True
    meta = type(key)
    return isinstance(key, type) and meta.__hash__ is type.__hash__ and meta.__eq__ is type.__eq__


def key_tracker(key):
    """The tracker of dict key `key` (as an iteration or `popitem` yields it)."""
    if type(key) is TrackerKey:
        return key.vt
    if isinstance(key, type):
        return factory.wrap_constant(key)
    return ConstantVariable(key)


def load_key(cg, key) -> None:
    """Push dict key `key` in residual code (a tensor key, or a registry id, through its tracker)."""
    if isinstance(key, TrackerKey):
        cg.reconstruct(key.vt)
    else:
        cg.load_const(key)


def reconstruct_map(cg, items: dict) -> None:
    """Push a new dict of `items` (key -> tracker) in residual code, in their order."""
    for key, value in items.items():
        load_key(cg, key)
        cg.reconstruct(value)
    cg.build("BUILD_MAP", len(items))


def has_tracker_keys(keys) -> bool:
    return any(type(k) is TrackerKey for k in keys)
