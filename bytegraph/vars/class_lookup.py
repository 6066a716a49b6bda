"""Attribute lookup on classes, as CPython's `_PyType_Lookup`: where along a class's MRO a
name is defined, whether a class attribute is a data descriptor, and the source of a
value in a class's `__dict__`. Pure functions of real classes; no trackers.
"""
from __future__ import annotations

from ..guards.sources import AttrSource, ItemSource, ObjectSource

MISSING = object()

def class_lookup(cls: type, name: str):
    """(owner class, attribute) for `name` along `cls.__mro__`, or (None, MISSING)."""
    for klass in cls.__mro__:
        attr = klass.__dict__.get(name, MISSING)
        if attr is not MISSING:
            return klass, attr
    return None, MISSING


def is_data_descriptor(attr) -> bool:
    kind = type(attr)
    return hasattr(kind, "__set__") or hasattr(kind, "__delete__")


def class_dict_source(owner: type, name: str, *attrs: str):
    """`owner.__dict__[name]` (then `.attr...`): where a class-level value lives."""
    src = ItemSource(AttrSource(ObjectSource(owner), "__dict__"), name)
    for attr in attrs:
        src = AttrSource(src, attr)
    return src
