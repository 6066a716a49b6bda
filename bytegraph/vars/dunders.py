"""Python's protocols for instances of user classes: operators, truth, iteration and `in`
go to the dunder methods the class defines in Python, inlined like any method.

The order is CPython's: a binary operator tries `a.__op__(b)`, then `b.__rop__(a)` (the
reflected method first when `type(b)` is a proper subclass of `type(a)` that overrides it),
skipping a side whose method returns `NotImplemented`; `==`/`!=` fall back to identity;
`bool()` tries `__bool__`, then `__len__`, else True; `in` tries `__contains__`, then
iteration; `str()` tries `__str__`, then `__repr__` (a dataclass's generated `__repr__` is
traced through its `__wrapped__`: its recursion guard keys on `id()`, and only matters
for a dataclass that contains itself, whose trace hits the inlining depth limit). A dunder
inherited from a builtin base class (implemented in C) is a graph break, its behaviour not
known to the tracer, unless the tracker models that base (`builtin_base_method`: a dict
subclass's `|=`).
"""
from __future__ import annotations

import builtins
import dataclasses
import reprlib
import operator
import types

from .class_lookup import MISSING, class_lookup
from .constant import ConstantVariable
from .iterators import IteratorVariable

_BINARY_NAMES = {
    operator.add: ("__add__", "__radd__", "+"), operator.sub: ("__sub__", "__rsub__", "-"),
    operator.mul: ("__mul__", "__rmul__", "*"), operator.truediv: ("__truediv__", "__rtruediv__", "/"),
    operator.floordiv: ("__floordiv__", "__rfloordiv__", "//"), operator.mod: ("__mod__", "__rmod__", "%"),
    operator.pow: ("__pow__", "__rpow__", "** or pow()"), operator.matmul: ("__matmul__", "__rmatmul__", "@"),
    operator.and_: ("__and__", "__rand__", "&"), operator.or_: ("__or__", "__ror__", "|"),
    operator.xor: ("__xor__", "__rxor__", "^"), operator.lshift: ("__lshift__", "__rlshift__", "<<"),
    operator.rshift: ("__rshift__", "__rrshift__", ">>"),
}
_COMPARE_NAMES = {
    operator.lt: ("__lt__", "__gt__", "<"), operator.le: ("__le__", "__ge__", "<="),
    operator.gt: ("__gt__", "__lt__", ">"), operator.ge: ("__ge__", "__le__", ">="),
    operator.eq: ("__eq__", "__eq__", "=="), operator.ne: ("__ne__", "__ne__", "!="),
}
_UNARY_NAMES = {operator.neg: "__neg__", operator.pos: "__pos__", operator.invert: "__invert__",
                operator.abs: "__abs__", builtins.abs: "__abs__"}
_INPLACE_NAMES = {
    operator.iadd: "__iadd__", operator.isub: "__isub__", operator.imul: "__imul__",
    operator.itruediv: "__itruediv__", operator.ifloordiv: "__ifloordiv__", operator.imod: "__imod__",
    operator.ipow: "__ipow__", operator.imatmul: "__imatmul__", operator.iand: "__iand__",
    operator.ior: "__ior__", operator.ixor: "__ixor__", operator.ilshift: "__ilshift__",
    operator.irshift: "__irshift__",
}


BINARY_OPERATORS = (operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv,
           operator.mod, operator.pow, operator.matmul, operator.and_, operator.or_, operator.xor,
           operator.lshift, operator.rshift)
INPLACE_OPERATORS = (operator.iadd, operator.isub, operator.imul, operator.itruediv, operator.ifloordiv,
            operator.imod, operator.ipow, operator.imatmul, operator.iand, operator.ior, operator.ixor,
            operator.ilshift, operator.irshift)
INPLACE_TO_BINARY = dict(zip(INPLACE_OPERATORS, BINARY_OPERATORS))  # `a += b` falls back on `a + b`


def is_user_instance(vt) -> bool:
    return vt.is_user_object


def _python_dunder(tx, vt, name: str):
    """The Python function `type(vt).name`, or None when the class does not define it
    (or only `object` does); a C method of a builtin base that `vt` models
    (`builtin_base_method`: `OrderedDict.__ior__` of a dict subclass) is returned too."""
    if not is_user_instance(vt) and name not in vt.python_dunders:
        return None
    cls = vt.python_type()
    owner, fn = class_lookup(cls, name)
    if fn is MISSING or owner is object or fn is None:
        return None
    if not isinstance(fn, types.FunctionType) and (
            not isinstance(fn, (types.MethodDescriptorType, types.WrapperDescriptorType))
            or vt.builtin_base_method(tx, fn) is None):
        tx.unsupported(f"{name} of {vt.describe()} is not written in Python ({type(fn).__name__})",
                       category="unsupported operator")
    return fn


def _call(tx, fn, args):
    if not isinstance(fn, types.FunctionType):  # a builtin base's C method (`_python_dunder`)
        return args[0].builtin_base_method(tx, fn).call_function(tx, args[1:], {})
    return tx.wrap(fn, None).call_function(tx, args, {})


def _not_implemented(vt) -> bool:
    return vt.is_python_constant() and vt.as_python_constant() is NotImplemented


def handles_operator(fn, args) -> bool:
    """Whether `fn(*args)` is for this module: an operand is a user instance, or the first
    operand's kind answers this operator through its class's Python dunder (`python_dunders`:
    in place or unary always, binary when both operands are of such kinds; a Counter with a
    plain dict is left to the dict's operator)."""
    if not (fn in _BINARY_NAMES or fn in _COMPARE_NAMES or fn in _UNARY_NAMES or fn in _INPLACE_NAMES):
        return False
    for a in args:
        if is_user_instance(a):
            return True
    dunders = args[0].python_dunders
    if dunders:
        name = _dunder_name(fn)
        return name in dunders and (fn in _INPLACE_NAMES or all(name in b.python_dunders for b in args[1:]))
    return False


def _dunder_name(fn) -> str:
    names = _BINARY_NAMES.get(fn) or _COMPARE_NAMES.get(fn)
    return names[0] if names else _UNARY_NAMES.get(fn) or _INPLACE_NAMES[fn]


def user_operator(tx, fn, args):
    if fn in _UNARY_NAMES:
        (a,) = args
        method = _python_dunder(tx, a, _UNARY_NAMES[fn])
        if method is None:
            tx.raise_user_error(TypeError(f"bad operand type for unary operator: '{a.python_type().__name__}'"))
        return _call(tx, method, [a])
    if fn in _INPLACE_NAMES:
        a, b = args
        method = _python_dunder(tx, a, _INPLACE_NAMES[fn])
        if method is not None:
            result = _call(tx, method, [a, b])
            if not _not_implemented(result):
                return result
        fn = INPLACE_TO_BINARY[fn]
    a, b = args
    names = _BINARY_NAMES.get(fn) or _COMPARE_NAMES[fn]
    forward, reflected, symbol = names
    attempts = [(a, forward, b), (b, reflected, a)]
    if type(a.python_type()) is type and b.python_type() is not a.python_type() \
            and issubclass(b.python_type(), a.python_type()) \
            and class_lookup(b.python_type(), reflected) != class_lookup(a.python_type(), reflected):
        attempts.reverse()
    for obj, name, other in attempts:
        method = _python_dunder(tx, obj, name)
        if method is None:
            if not is_user_instance(obj) and not obj.is_python_constant():
                tx.unsupported(f"operator {symbol} on {a.describe()} and {b.describe()}",
                               category="unsupported operator")
            continue
        result = _call(tx, method, [obj, other])
        if not _not_implemented(result):
            return result
    if fn is operator.eq or fn is operator.ne:
        if fn is operator.ne and _python_dunder(tx, a, "__eq__") is not None:
            return ConstantVariable(not user_operator(tx, operator.eq, args).truth(tx))
        same = a is b
        return ConstantVariable(same if fn is operator.eq else not same)
    what = "unsupported operand type(s) for {s}: '{a}' and '{b}'" if fn in _BINARY_NAMES else \
        "'{s}' not supported between instances of '{a}' and '{b}'"
    tx.raise_user_error(TypeError(what.format(s=symbol, a=a.python_type().__name__, b=b.python_type().__name__)))


def user_truth(tx, vt) -> bool:
    method = _python_dunder(tx, vt, "__bool__")
    if method is not None:
        result = _call(tx, method, [vt])
        if not (result.is_python_constant() and type(result.as_python_constant()) is bool):
            tx.raise_user_error(TypeError(f"__bool__ should return bool, returned {result.python_type().__name__}"))
        return result.as_python_constant()
    method = _python_dunder(tx, vt, "__len__")
    if method is not None:
        return builtins.bool(_length(tx, _call(tx, method, [vt])))
    return True


def _length(tx, result) -> int:
    if not (result.is_python_constant() and isinstance(result.as_python_constant(), int)):
        tx.unsupported(f"__len__ returning {result.describe()}", category="unsupported builtin")
    n = result.as_python_constant()
    if n < 0:
        tx.raise_user_error(ValueError("__len__() should return >= 0"))
    return n


def user_iter(tx, vt):
    """`iter(vt)`: the iterator its `__iter__` returns."""
    method = _python_dunder(tx, vt, "__iter__")
    if method is None:
        if _python_dunder(tx, vt, "__getitem__") is not None:
            tx.unsupported(f"iterating over {vt.describe()} through __getitem__", category="unsupported iteration")
        tx.raise_user_error(TypeError(f"'{vt.python_type().__name__}' object is not iterable"))
    it = _call(tx, method, [vt])
    if not isinstance(it, IteratorVariable):
        tx.unsupported(f"__iter__ of {vt.describe()} returns {it.describe()}: iterator objects with a "
                       "__next__ method are not traced", category="unsupported iteration",
                       hint="write __iter__ as a generator (with `yield`), or return iter(a_list)")
    return it


# the wrapper dataclasses puts around a generated __repr__ (3.13 uses reprlib's recursive_repr)
_RECURSIVE_REPR = getattr(dataclasses, "_recursive_repr", None) or reprlib.recursive_repr()
_RECURSIVE_REPR_CODE = _RECURSIVE_REPR(lambda self: "").__code__


def user_str(tx, fn, vt):
    """`str(vt)` / `repr(vt)` (`fn`) through the class's `__str__`/`__repr__` written in
    Python; None when it has neither (object's default repr names an address)."""
    for name in ("__str__", "__repr__") if fn is builtins.str else ("__repr__",):
        method = _python_dunder(tx, vt, name)
        if method is not None:
            break
    else:
        return None
    if getattr(method, "__code__", None) is _RECURSIVE_REPR_CODE:
        method = method.__wrapped__
    result = _call(tx, method, [vt])
    if not (result.is_python_constant() and isinstance(result.as_python_constant(), str)):
        tx.raise_user_error(TypeError(f"{name} returned non-string (type {result.python_type().__name__})"))
    return result


def user_contains(tx, container, item):
    method = _python_dunder(tx, container, "__contains__")
    if method is not None:
        return ConstantVariable(_call(tx, method, [container, item]).truth(tx))
    return None
