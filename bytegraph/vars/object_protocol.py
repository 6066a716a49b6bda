"""The generic behaviour of the object-protocol slots (Note [Tracker protocol] in
`vars/base.py`): what `VariableTracker`'s default `len_impl`, `contains_impl`,
`getitem_impl` and `as_fx_arg` do for a kind that does not override them, and
`real_hasattr`, the `hasattr_impl` of kinds that stand for one real object.

As CPython's `PyObject_Size`/`PySequence_Contains`/`PyObject_GetItem` fall back on the
type's generic paths: Python constants are folded by calling the real operation, other
values answer through their own `__len__`/`__getitem__` method, and `in` scans the items
of an iterable whose members compare at trace time. Anything else breaks.
"""
from __future__ import annotations

import builtins
import operator

import torch

from . import factory


def _fold(tx, fn, args: list):
    return factory.fold_call(tx, fn, args, {}, fn.__name__)


def generic_len(tx, vt):
    if vt.is_python_constant():
        return _fold(tx, builtins.len, [vt])
    return vt.call_method(tx, "__len__", [], {})


def generic_getitem(tx, vt, key):
    if vt.is_python_constant() and key.is_python_constant():
        return _fold(tx, operator.getitem, [vt, key])
    return vt.call_method(tx, "__getitem__", [key], {})


def generic_contains(tx, container, item):
    if container.is_python_constant() and item.is_python_constant():
        return _fold(tx, operator.contains, [container, item])
    for element in container.unpack(tx):
        if element is item:
            return factory.constant(True)
    if item.is_python_constant() and all(e.is_python_constant() or e.is_tensor for e in container.unpack(tx)):
        value = item.as_python_constant()
        return factory.constant(any(e.is_python_constant() and e.as_python_constant() == value
                                    for e in container.unpack(tx)))
    tx.unsupported(f"`in` on {container.describe()}", category="unsupported operator")


def items_equal(tx, xs, ys) -> bool:
    """Pairwise `==` as CPython's container comparison does it: identity first."""
    return all(x is y or factory.binary_operator(tx, operator.eq, [x, y]).truth(tx) for x, y in zip(xs, ys))


def generic_fx_arg(tx, vt):
    if vt.is_python_constant():
        value = vt.as_python_constant()
        if not isinstance(value, type):
            return value
        # torch's argument parser reads a Python number type as a dtype (`dtype=float` is
        # float64); FX code cannot spell a class, so the node gets the dtype it stands for
        if value in _PYTHON_TYPE_DTYPES:
            return _PYTHON_TYPE_DTYPES[value]
        name = f"{value.__module__}.{value.__qualname__}"
        tx.unsupported(f"passing the class {name} to a torch op (FX code cannot spell the class {name})",
                       category="unsupported op argument")
    tx.unsupported(f"passing {vt.describe()} to a torch op", category="unsupported op argument")


_PYTHON_TYPE_DTYPES = {int: torch.int64, float: torch.float64, bool: torch.bool, complex: torch.complex128}


def real_hasattr(tx, vt, real, name: str) -> bool:
    """`hasattr(real, name)` for the real object `real` that `vt` stands for, guarded
    through `vt`'s source when it has one: `name`'s presence in the object's own
    `__dict__` (else the class has it, which its type guard pins)."""
    present = hasattr(real, name)
    in_dict = name in getattr(real, "__dict__", ())
    if vt.source is not None and (in_dict or not present):
        tx.guard_attr_presence(vt.source, name, in_dict)
    return present
