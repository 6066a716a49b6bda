"""Dict keys that are trackers: `TrackerKey`, the hashable stand-in of a value hashed by
identity (a tensor: `Tensor.__hash__` is `id`), and the two conversions every dict
tracker uses for its keys (`key_tracker`: key -> tracker, `load_key`: key -> bytecode).

A dict tracker's `items` maps hashable Python keys to value trackers. Constants are their
own keys; a tensor's key is `TrackerKey(vt)`, equal only to itself: one real tensor is one
tracker (graph inputs are deduplicated by identity, `OutputGraph.add_input`), and a tensor
made in the trace is a new object, so tracker identity is the real key identity.
"""
from __future__ import annotations

from .constant import ConstantVariable


class TrackerKey:
    """A dict key standing for the object tracker `vt` stands for, hashed by identity."""

    __slots__ = ("vt",)

    def __init__(self, vt):
        self.vt = vt

    def __hash__(self) -> int:
        return id(self.vt)

    def __eq__(self, other) -> bool:
        return type(other) is TrackerKey and other.vt is self.vt

    def __repr__(self) -> str:
        return f"<key {self.vt.describe()}>"


def key_tracker(key):
    """The tracker of dict key `key` (as an iteration or `popitem` yields it)."""
    return key.vt if type(key) is TrackerKey else ConstantVariable(key)


def load_key(cg, key) -> None:
    """Push dict key `key` in residual code (a tensor key through its tracker)."""
    if type(key) is TrackerKey:
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
