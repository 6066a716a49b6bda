"""Reads of a tensor's value into Python numbers, captured when `config.capture_scalar_outputs`
is on (Note [Data-dependent capture] in graph/shapes.py): `t.item()`, `int(t)`, `float(t)`,
`operator.index(t)` and `t.tolist()` of a tensor with static sizes. Each element read is the
graph op `Tensor.item`, whose fake result is a fresh unbacked SymInt/SymFloat/SymBool (torch's
`_local_scalar_dense` fake kernel); the trace goes on with it as a `SymNodeVariable`, so graph
ops take it as an argument, and a Python use that needs its value (an `if`, `range`, a dict
key) is a graph break (`SymNodeVariable.as_python_constant`).
"""
from __future__ import annotations

import operator

import torch

from .constant import ConstantVariable
from .containers import ListVariable
from .symbolic import symbolic_operator

_INTEGER = frozenset({torch.uint8, torch.int8, torch.int16, torch.int32, torch.int64, torch.uint16, torch.uint32,
                      torch.uint64})


def read_scalar(tx, tensor, name: str):
    """The captured `tensor.<name>()` (no arguments), or None when this read is not captured
    (the caller breaks the graph, naming it)."""
    read = _READS.get(name)
    return read(tx, tensor) if read is not None else None


def _int(tx, tensor):
    if tensor.example.dtype is torch.bool:
        return _item(tx, _converted(tx, tensor, torch.int64))
    value = _item(tx, tensor)
    return _apply(tx, torch.sym_int, value) if value.python_type() is float else value


def _float(tx, tensor):
    if tensor.example.dtype is torch.bool:
        return _item(tx, _converted(tx, tensor, torch.float64))
    value = _item(tx, tensor)
    return _apply(tx, torch.sym_float, value) if value.python_type() is int else value


def _index(tx, tensor):
    return _item(tx, tensor) if tensor.example.dtype in _INTEGER else None


def _item(tx, tensor):
    return tx.output.call_op("call_method", "item", [tensor], {})


def _converted(tx, tensor, dtype):
    return tx.output.call_op("call_method", "to", [tensor, ConstantVariable(dtype)], {})


def _apply(tx, fn, value):
    if not value.is_symbolic():  # a constant tensor's value
        return ConstantVariable(fn(value.as_python_constant()))
    return symbolic_operator(tx, fn, [value])


def _tolist(tx, tensor):
    """`tensor.tolist()`: nested lists of each element's `item()`; None when a size is symbolic
    (how many elements there are is not known)."""
    shape = tensor.example.shape
    if any(type(s) is not int for s in shape):
        return None
    if not shape:
        return _item(tx, tensor)
    return ListVariable([_tolist(tx, tx.output.call_op("call_function", operator.getitem,
                                                           [tensor, ConstantVariable(i)], {}))
                         for i in range(shape[0])])


# the captured reads: method name -> reader(tx, tensor), its result or None (not captured)
_READS = {"item": _item, "__int__": _int, "__float__": _float, "__index__": _index, "tolist": _tolist}
