"""numpy called in traced code: pure numpy functions folded on Python constants
(`np.sqrt(d)`, `np.sum([1, 2, 3])`, `np.log2(8)`, `np.prod((2, 3))`, `np.float32(x)`), and a
clear graph break for numpy on a tensor.

Which numpy callables are pure is read from their types, not from a list of names:
- `np.ufunc` instances (`np.sqrt`, `np.log2`, `np.maximum`, ...; a ufunc of another library,
  `scipy.special.erf`, too): elementwise functions of their inputs;
- array functions (`numpy._ArrayFunctionDispatcher`: `np.sum`, `np.prod`, `np.mean`,
  `np.clip`, `np.round`, `np.isclose`, ...) whose implementation is defined in one of numpy's
  core math and reduction modules (`PURE_MODULES`: `fromnumeric`, `numeric`, `umath`,
  `function_base`, `_multiarray_umath`); those of other modules (I/O in `numpy.lib`, ...)
  stay graph breaks with the function's name;
- numpy's scalar types (`np.float32`, `np.int64`, ...) and machine-limits classes
  (`np.finfo`, `np.iinfo`: what numpy's `getlimits` module exports, `LIMIT_CLASSES`); trace
  rules, `FOLDED_CLASSES`.
A call whose arguments are all constant data (numbers, bools, strings, None, numpy scalars
and dtypes, tuples and lists of those) runs at trace time, as eager runs it, and its
result, a numpy scalar (kept with eager's type: `type(np.sqrt(4.0))` is `np.float64`), a
Python constant or the limits object numpy returns (numpy caches one per dtype, so it is
eager's object; its attributes are read from it), is a constant (vars/constant.py). A numpy
dtype object read from outside is constant data too (guarded by type and equality). A
result numpy would return as an array, a call that warns (`np.log(0)`: the warning is
eager's, once per call) and one with an argument that is not constant data break with the
reason; numpy on a tensor breaks naming the call, with the torch function to use where
torch has one of that name.

A numpy scalar passed to a graph op is the argument itself (torch's argument parser treats
it as eager does: as a Python number for a scalar argument, with its own dtype for
`torch.tensor(np.float32(1.5))`); numpy's name is registered with torch.fx so the graph's
code can spell it (`np.float64(2.0)`).
"""
from __future__ import annotations

import sys
import warnings

import torch

from ..guards.guard import GuardKind
from .base import CallableValueVariable
from .constant import NUMPY_SCALAR_TYPES, ConstantVariable, is_constant_value
from .registry import guard, register
import torch.fx.graph
from .classes import ClassVariable

try:
    import numpy
except ImportError:  # numpy is optional: nothing to register
    numpy = None

# numpy's core math and reduction modules: their array functions are pure functions of
# their arguments (numpy 2 spells them `numpy._core.*`, numpy 1 `numpy.core.*`).
PURE_MODULES = frozenset(f"numpy.{core}.{name}" for core in ("_core", "core")
                         for name in ("fromnumeric", "numeric", "umath", "function_base", "_multiarray_umath",
                                      "_methods"))

_HINT = "compute it with torch (the torch function of the same name), or outside the compiled function"


def _implementation_module(fn) -> str:
    """The module an array function's implementation is defined in (not its `__module__`,
    which numpy sets to 'numpy' for the public ones)."""
    impl = getattr(fn, "_implementation", None) or getattr(fn, "__wrapped__", None)
    globals_ = getattr(impl, "__globals__", None)
    if globals_ is not None:
        return globals_.get("__name__", "")
    return getattr(impl, "__module__", "") or ""


def is_pure(fn) -> bool:
    """Whether numpy callable `fn` is a pure function of its arguments (see the docstring)."""
    if numpy is None:
        return False
    if isinstance(fn, numpy.ufunc) or fn in NUMPY_SCALAR_TYPES or fn in LIMIT_CLASSES:
        return True
    return type(fn) is _DISPATCHER and _implementation_module(fn) in PURE_MODULES


def _name(fn) -> str:
    return f"np.{getattr(fn, '__name__', fn)}"


def _data(vt):
    """The Python value of constant data `vt`, or raises LookupError."""
    if vt.is_tensor or not vt.is_python_constant():
        raise LookupError
    value = vt.as_python_constant()
    if _is_data(value):
        return value
    raise LookupError


def _is_data(value) -> bool:
    if is_constant_value(value) or isinstance(value, _DTYPE_TYPES):
        return True
    if isinstance(value, type):  # `dtype=np.float32`, `dtype=float`
        return value in _DTYPE_LIKE_CLASSES
    if type(value) in (tuple, list):
        return all(_is_data(v) for v in value)
    return False


class NumpyFunctionVariable(CallableValueVariable):
    """A numpy callable (ufunc, array function, scalar type), identity-guarded."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs):
        fn = self.fn
        tensors = [vt for vt in (*args, *kwargs.values()) if vt.is_tensor]
        if tensors:
            torch_name = getattr(fn, "__name__", "")
            hint = f"use torch.{torch_name} on the tensor" if callable(getattr(torch, torch_name, None)) else _HINT
            tx.unsupported(f"numpy function {_name(fn)} called on a tensor: {tensors[0].describe()} (numpy "
                           "would convert it to an array, outside the graph)", category="unsupported call",
                           hint=hint)
        if not is_pure(fn):
            tx.unsupported(f"numpy function {_name(fn)} (defined in {_implementation_module(fn) or 'numpy'}, not "
                           "one of numpy's pure math and reduction modules)", category="unsupported call",
                           hint=_HINT)
        try:
            values = [_data(a) for a in args]
            kw_values = {k: _data(v) for k, v in kwargs.items()}
        except LookupError:
            tx.unsupported(f"numpy function {_name(fn)} called on values that are not constant data: "
                           + ", ".join(a.describe() for a in [*args, *kwargs.values()]),
                           category="unsupported call", hint=_HINT)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = fn(*values, **kw_values)
            except Exception as e:  # numpy's own error, raised where eager raises it
                tx.raise_user_error(e)
        if caught:
            tx.unsupported(f"numpy function {_name(fn)} warns on these arguments ({caught[0].message}): the "
                           "warning is eager's", category="unsupported call", hint=_HINT)
        if not is_constant_value(result) and type(result) not in LIMIT_CLASSES:
            tx.unsupported(f"numpy function {_name(fn)} returns a {type(result).__qualname__} (numpy arrays are "
                           "not traced; numpy scalars are constants)", category="unsupported call", hint=_HINT)
        return ConstantVariable(result)

    def var_getattr(self, tx, name):
        if isinstance(self.fn, type):  # a scalar type's attributes, as any class's

            return ClassVariable(self.fn, self.source).var_getattr(tx, name)
        return super().var_getattr(tx, name)

    def describe(self) -> str:
        return f"numpy function {_name(self.fn)}"


# numpy's machine-limits module (numpy 2 spells it `numpy._core`, numpy 1 `numpy.core`): its
# classes make immutable objects describing a dtype, cached per dtype by numpy.
_LIMITS_MODULES = ("numpy._core.getlimits", "numpy.core.getlimits")


def _limit_classes() -> frozenset:
    """The classes numpy's limits module exports (`np.finfo`, `np.iinfo`)."""
    for name in _LIMITS_MODULES:
        module = sys.modules.get(name)
        if module is not None:
            return frozenset(c for c in map(module.__dict__.get, module.__all__) if isinstance(c, type))
    return frozenset()


if numpy is not None:
    _DISPATCHER = type(numpy.sum)
    _DTYPE_LIKE_CLASSES = frozenset({*NUMPY_SCALAR_TYPES, bool, int, float, complex})
    _DTYPE_TYPES = (numpy.dtype,)
    LIMIT_CLASSES = _limit_classes()
    # The scalar types and limits classes are classes: trace rules (RULES is consulted for
    # classes first).
    FOLDED_CLASSES = {t: NumpyFunctionVariable for t in (*NUMPY_SCALAR_TYPES, *LIMIT_CLASSES)}

    @register(numpy.ufunc, _DISPATCHER)
    def build_numpy_function(tx, value, source, do_guard: bool) -> NumpyFunctionVariable:
        guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
        return NumpyFunctionVariable(value, source)

    @register(numpy.dtype)
    def build_numpy_dtype(tx, value, source, do_guard: bool) -> ConstantVariable:
        """A numpy dtype object from outside (`np.finfo(arr.dtype)`): immutable constant data,
        guarded by type and equality."""
        guard(tx, do_guard, GuardKind.CONSTANT_MATCH, source, value)
        return ConstantVariable(value, source)

    torch.fx.graph._register_custom_builtin("np", "import numpy as np", numpy)  # `np.float64(2.0)` in graph code
else:
    _DISPATCHER = None
    _DTYPE_LIKE_CLASSES = frozenset()
    _DTYPE_TYPES = ()
    LIMIT_CLASSES = frozenset()
    FOLDED_CLASSES = {}
