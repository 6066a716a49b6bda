"""Opcode handlers CPython 3.13 adds or changes, over 3.12's (docs/python-versions.md).

`HANDLERS` maps an opcode name to a function `(tx, inst)`; `translate/version_ops.py` stacks
it over 3.12's handlers when the running interpreter is 3.13.

The call layout flips on 3.13: a call's operands are `callable, NULL` (or `method, self`)
then the arguments, where 3.11 and 3.12 have `NULL, callable` (or `method, self`). So
LOAD_GLOBAL, LOAD_ATTR and LOAD_SUPER_ATTR push their NULL after the value; CALL, CALL_KW and
CALL_FUNCTION_EX read the slots by `versions.NULL_BEFORE_CALLABLE` (`ops_calls.py`). The
translator's stack holds the NULL where CPython does, so residual code that pushes a break's
stack back (`breaks._push_slots`, resume prologues) needs nothing of its own.
"""
from __future__ import annotations

from ..vars.functions import NestedFunctionVariable
from .ops_stack import NULL


def LOAD_GLOBAL(tx, inst):
    """`name`; with the low oparg bit, the NULL a call of it takes, above it."""
    tx.stack.append(tx.global_value(inst.argval))
    if inst.arg & 1:
        tx.stack.append(NULL)


def LOAD_ATTR(tx, inst):
    """`obj.name`; with the low oparg bit, a method load for a call: the bound attribute,
    then NULL (CPython pushes `meth, self` or `attr, NULL`; the bound attribute is the same call)."""
    obj = tx.stack.pop()
    tx.stack.append(obj.var_getattr(tx, inst.argval))
    if inst.arg & 1:
        tx.stack.append(NULL)


def LOAD_SUPER_ATTR(tx, inst):
    """`super().name` / `super(cls, obj).name`: the global `super`, the class and the object
    are on the stack; the low bit asks for a method load for a call (NULL above)."""
    obj = tx.stack.pop()
    cls = tx.stack.pop()
    proxy = tx.stack.pop().call_function(tx, [cls, obj], {})
    tx.stack.append(proxy.var_getattr(tx, inst.argval))
    if inst.arg & 1:
        tx.stack.append(NULL)


def CALL_KW(tx, inst):
    """A call whose last arguments are passed by keyword: their names' tuple is on top."""
    names = tx.stack.pop().as_python_constant()
    tx.call_from_stack(tx.popn(inst.arg), names)


def LOAD_FAST(tx, inst):
    """A local's value, or the cell itself of a cell or free variable (3.13 spells LOAD_CLOSURE so)."""
    if inst.argval in tx.cells:
        tx.LOAD_CLOSURE(inst)
    else:
        tx.load_fast(inst.argval)


def LOAD_FAST_LOAD_FAST(tx, inst):
    """Two LOAD_FASTs in one instruction: `argval` names the locals (`dis` splits the oparg:
    the high nibble first)."""
    first, second = inst.argval
    tx.load_fast(first)
    tx.load_fast(second)


def STORE_FAST_STORE_FAST(tx, inst):
    """Two STORE_FASTs: the top of the stack goes to the first local named, the next to the second."""
    first, second = inst.argval
    tx.store_fast(first, tx.stack.pop())
    tx.store_fast(second, tx.stack.pop())


def STORE_FAST_LOAD_FAST(tx, inst):
    """A STORE_FAST then a LOAD_FAST."""
    stored, loaded = inst.argval
    tx.store_fast(stored, tx.stack.pop())
    tx.load_fast(loaded)


# what TO_BOOL's value goes to when the tracer leaves it as it is: they take the truth of any value
_TAKES_TRUTH = frozenset({"POP_JUMP_IF_TRUE", "POP_JUMP_IF_FALSE", "UNARY_NOT"})


def TO_BOOL(tx, inst):
    """`bool(value)`. Before a conditional jump or `not` the value stays as it is: the tracer's
    handlers take its truth themselves (a break there emits TO_BOOL again before it,
    `sequences.truth_jump`); elsewhere (`not not x` is one TO_BOOL) it becomes the bool."""
    if tx.instructions[tx.ip].opname not in _TAKES_TRUTH:
        tx.stack.append(tx.call_builtin(bool, [tx.stack.pop()]))


def END_FOR(tx, inst):
    """3.13's END_FOR pops one value (a POP_TOP follows it)."""
    tx.stack.pop()


def CONVERT_VALUE(tx, inst):
    """An f-string field's `!s`, `!r` or `!a` (the argument: 1, 2, 3)."""
    tx.stack.append(tx.format_value(tx.stack.pop(), inst.arg, ""))


def FORMAT_SIMPLE(tx, inst):
    tx.stack.append(tx.format_value(tx.stack.pop(), 0, ""))


def FORMAT_WITH_SPEC(tx, inst):
    spec = tx.stack.pop().as_python_constant()
    tx.stack.append(tx.format_value(tx.stack.pop(), 0, spec))


def MAKE_FUNCTION(tx, inst):
    """A function of the code on the stack, without defaults, closure or annotations
    (SET_FUNCTION_ATTRIBUTE sets them)."""
    code = tx.stack.pop().as_python_constant()
    tx.stack.append(NestedFunctionVariable(code, tx.f_globals, tx.globals_source, None, None, None,
                                           code.co_qualname))


# SET_FUNCTION_ATTRIBUTE's argument -> the attribute (MAKE_FUNCTION's flags before 3.13)
_FUNCTION_ATTRIBUTES = {1: "defaults", 2: "kwdefaults", 4: "annotations", 8: "closure"}


def SET_FUNCTION_ATTRIBUTE(tx, inst):
    """`value, fn` -> `fn` with the attribute the argument names set to `value`. The function was
    made by the MAKE_FUNCTION just before, so no one else holds it: a new tracker replaces it."""
    fn = tx.stack.pop()
    value = tx.stack.pop()
    parts = {name: getattr(fn, name) for name in _FUNCTION_ATTRIBUTES.values()}
    parts[_FUNCTION_ATTRIBUTES[inst.arg]] = value
    tx.stack.append(NestedFunctionVariable(fn.code, fn.f_globals, fn.globals_source, parts["defaults"],
                                           parts["kwdefaults"], parts["closure"], fn.qualname,
                                           parts["annotations"]))


HANDLERS = {name: fn for name, fn in globals().items() if name.isupper() and callable(fn)}
