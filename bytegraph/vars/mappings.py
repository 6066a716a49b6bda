"""Constructors of the dict kinds `DictVariable` models: `collections.OrderedDict(...)` and
`dict.fromkeys` / `OrderedDict.fromkeys` (the keys in iteration order, all mapped to one
value, as in CPython)."""
from __future__ import annotations

import collections

from .registry import handles
from .constant import ConstantVariable
from .containers import DictVariable
from .iterators import iterator_of


@handles(collections.OrderedDict)
def _ordered_dict_ctor(tx, fn, args, kwargs):
    """`OrderedDict(mapping_or_pairs=(), /, **kwargs)`."""
    if len(args) > 1:
        tx.raise_user_error(TypeError(f"expected at most 1 arguments, got {len(args)}"))
    result = DictVariable({}, dict_type=collections.OrderedDict)
    result.call_method(tx, "update", list(args), kwargs)
    return result


@handles(dict.fromkeys, collections.OrderedDict.fromkeys)
def _fromkeys(tx, fn, args, kwargs):
    """`dict.fromkeys(iterable, value=None, /)` (or OrderedDict's)."""
    if kwargs or not 1 <= len(args) <= 2:
        tx.raise_user_error(TypeError(f"fromkeys expected 1 or 2 arguments, got {len(args) + len(kwargs)}"))
    value = args[1] if len(args) > 1 else ConstantVariable(None)
    keys = iterator_of(tx, args[0]).unpack(tx)
    return DictVariable({key.key_impl(tx): value for key in keys}, dict_type=fn.__self__)
