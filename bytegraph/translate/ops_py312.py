"""Opcode handlers CPython 3.12 adds or changes, over the 3.11 families (docs/python-versions.md).

`HANDLERS` maps an opcode name to a function `(tx, inst)`; `translate/version_ops.py` stacks
it over the 3.11 handlers when the running interpreter is 3.12 or newer.
"""
from __future__ import annotations

import dis
import operator

from ..vars.containers import TupleVariable
from ..vars.constant import ConstantVariable
from ..vars.exceptions import ExceptionVariable
from .._bytecode.versions import FOR_ITER_EXIT_SKIPS, INTRINSIC_STOPITERATION_ERROR
from .lazy_arguments import unbind
from .ops_stack import NULL


def LOAD_ATTR(tx, inst):
    """`obj.name`; with the low oparg bit, a method load for a call (3.11's LOAD_METHOD):
    NULL below the bound attribute."""
    obj = tx.stack.pop()
    if inst.arg & 1:
        tx.stack.append(NULL)
    tx.stack.append(obj.var_getattr(tx, inst.argval))


def LOAD_SUPER_ATTR(tx, inst):
    """`super().name` / `super(cls, obj).name` (PEP 709 era): the global `super`, the class and
    the object are on the stack; the low bit asks for a method load for a call."""
    obj = tx.stack.pop()
    cls = tx.stack.pop()
    proxy = tx.stack.pop().call_function(tx, [cls, obj], {})
    if inst.arg & 1:
        tx.stack.append(NULL)
    tx.stack.append(proxy.var_getattr(tx, inst.argval))


def RETURN_CONST(tx, inst):
    tx.return_value = ConstantVariable(inst.argval)


def FOR_ITER(tx, inst):
    """As 3.11's, but the exhausted loop skips the END_FOR (3.13: and POP_TOP) at its target
    (CPython pops the iterator itself and jumps past them)."""
    item = tx.stack[-1].next_item(tx)
    if item is None:
        tx.stack.pop()
        tx.ip = inst.target + FOR_ITER_EXIT_SKIPS
    else:
        tx.stack.append(item)


def POP_JUMP_IF_TRUE(tx, inst):
    tx.POP_JUMP_FORWARD_IF_TRUE(inst)


def POP_JUMP_IF_FALSE(tx, inst):
    tx.POP_JUMP_FORWARD_IF_FALSE(inst)


def POP_JUMP_IF_NONE(tx, inst):
    tx.POP_JUMP_FORWARD_IF_NONE(inst)


def POP_JUMP_IF_NOT_NONE(tx, inst):
    tx.POP_JUMP_FORWARD_IF_NOT_NONE(inst)


def END_FOR(tx, inst):
    del tx.stack[-2:]


def END_SEND(tx, inst):
    """The end of a `yield from`: drop the receiver below its return value."""
    del tx.stack[-2]


def BINARY_SLICE(tx, inst):
    stop = tx.stack.pop()
    start = tx.stack.pop()
    container = tx.stack.pop()
    tx.stack.append(tx.call_builtin(operator.getitem, [container, _slice(tx, start, stop)]))


def STORE_SLICE(tx, inst):
    stop = tx.stack.pop()
    start = tx.stack.pop()
    container = tx.stack.pop()
    value = tx.stack.pop()
    tx.call_builtin(operator.setitem, [container, _slice(tx, start, stop), value])


def CLEANUP_THROW(tx, inst):
    """The handler of a `yield from` whose sub-iterator raised on a throw or close: a
    StopIteration ends the delegation with its value (at the END_SEND this jumps to),
    anything else propagates."""
    exc = tx.stack.pop()
    if not issubclass(exc.python_type(), StopIteration):
        tx.reraise(exc)
    del tx.stack[-2:]  # the sub-iterator and the last value sent
    tx.stack.append(ConstantVariable(None))
    tx.stack.append(exc.var_getattr(tx, "value"))


def _slice(tx, start, stop):
    return tx.call_builtin(slice, [start, stop])


def LOAD_FAST_CHECK(tx, inst):
    tx.LOAD_FAST(inst)


def LOAD_FAST_AND_CLEAR(tx, inst):
    """An inlined comprehension saves the local its loop variable shadows: push it (NULL if
    unbound; an argument not read yet is read now, Note [Arguments wrapped when read]) and
    unbind it."""
    name = inst.argval
    try:
        value = tx.locals[name]
    except KeyError:
        value = NULL
    else:
        unbind(tx.locals, name)
    tx.stack.append(value)


_INTRINSIC_1_NAMES = getattr(dis, "_intrinsic_1_descs", ())
_INTRINSIC_UNARY_POSITIVE, _INTRINSIC_LIST_TO_TUPLE = 5, 6  # their indices in _INTRINSIC_1_NAMES


def CALL_INTRINSIC_1(tx, inst):
    if inst.arg == _INTRINSIC_UNARY_POSITIVE:
        tx.stack.append(tx.call_builtin(operator.pos, [tx.stack.pop()]))
    elif inst.arg == _INTRINSIC_LIST_TO_TUPLE:
        tx.stack.append(TupleVariable(tx.stack.pop().items))
    elif inst.arg == INTRINSIC_STOPITERATION_ERROR:  # PEP 479: the exception leaving a generator
        exc = tx.stack[-1]
        if issubclass(exc.python_type(), StopIteration):
            error = ExceptionVariable.from_real(RuntimeError("generator raised StopIteration"))
            error.set_cause(tx, exc)
            error.set_context(tx, exc)
            tx.stack[-1] = error
    else:
        tx.unsupported(f"CALL_INTRINSIC_1 {_INTRINSIC_1_NAMES[inst.arg]} is not traced",
                       category="unsupported bytecode")


HANDLERS = {name: fn for name, fn in globals().items() if name.isupper() and callable(fn)}
