"""Opcode family: binary, in-place, unary, comparison, identity and membership operators.

All of them are table entries mapping the opcode (and its argument) to an `operator`
function, evaluated by the builtin table.
"""
from __future__ import annotations

import dis
import operator

from ..vars.constant import ConstantVariable

_NB_FUNCS = {
    "+": operator.add, "&": operator.and_, "//": operator.floordiv, "<<": operator.lshift,
    "@": operator.matmul, "*": operator.mul, "%": operator.mod, "|": operator.or_, "**": operator.pow,
    ">>": operator.rshift, "-": operator.sub, "/": operator.truediv, "^": operator.xor,
    "+=": operator.iadd, "&=": operator.iand, "//=": operator.ifloordiv, "<<=": operator.ilshift,
    "@=": operator.imatmul, "*=": operator.imul, "%=": operator.imod, "|=": operator.ior,
    "**=": operator.ipow, ">>=": operator.irshift, "-=": operator.isub, "/=": operator.itruediv,
    "^=": operator.ixor,
}
BINARY_OPS = [_NB_FUNCS[symbol] for _, symbol in dis._nb_ops]
COMPARE_OPS = {"<": operator.lt, "<=": operator.le, "==": operator.eq, "!=": operator.ne,
               ">": operator.gt, ">=": operator.ge}
UNARY_OPS = {"UNARY_POSITIVE": operator.pos, "UNARY_NEGATIVE": operator.neg, "UNARY_INVERT": operator.invert}


class OperatorOps:
    def BINARY_OP(self, inst):
        b = self.stack.pop()
        a = self.stack.pop()
        self.stack.append(self.call_builtin(BINARY_OPS[inst.arg], [a, b]))

    def _unary(self, inst):
        self.stack.append(self.call_builtin(UNARY_OPS[inst.opname], [self.stack.pop()]))

    UNARY_POSITIVE = UNARY_NEGATIVE = UNARY_INVERT = _unary

    def UNARY_NOT(self, inst):
        self.stack.append(ConstantVariable(not self.stack.pop().truth(self)))

    def COMPARE_OP(self, inst):
        b = self.stack.pop()
        a = self.stack.pop()
        self.stack.append(self.call_builtin(COMPARE_OPS[inst.argval], [a, b]))

    def IS_OP(self, inst):
        b = self.stack.pop()
        a = self.stack.pop()
        self.stack.append(self.call_builtin(operator.is_not if inst.arg else operator.is_, [a, b]))

    def CONTAINS_OP(self, inst):
        container = self.stack.pop()
        item = self.stack.pop()
        result = self.call_builtin(operator.contains, [container, item])
        if inst.arg:
            result = ConstantVariable(not result.truth(self))
        self.stack.append(result)
