"""Opcode family: stack manipulation, frame prologue and return."""
from __future__ import annotations

from ..vars.constant import ConstantVariable


class NullVariable:
    """The NULL that 3.11 pushes below a callable (PUSH_NULL, LOAD_GLOBAL with flag)."""

    __slots__ = ()
    source = None

    def __repr__(self) -> str:
        return "NULL"


NULL = NullVariable()
_NONE = ConstantVariable(None)


class StackOps:
    def push(self, vt) -> None:
        self.stack.append(vt)

    def pop(self):
        return self.stack.pop()

    def popn(self, n: int) -> list:
        if n == 0:
            return []
        items = self.stack[-n:]
        del self.stack[-n:]
        return items

    def NOP(self, inst):
        pass

    RESUME = CACHE = EXTENDED_ARG = NOP

    def POP_TOP(self, inst):
        self.stack.pop()

    def PUSH_NULL(self, inst):
        self.stack.append(NULL)

    def COPY(self, inst):
        self.stack.append(self.stack[-inst.arg])

    def SWAP(self, inst):
        stack = self.stack
        stack[-1], stack[-inst.arg] = stack[-inst.arg], stack[-1]

    def RETURN_VALUE(self, inst):
        self.return_value = self.stack.pop()

    def RETURN_GENERATOR(self, inst):
        self.stack.append(_NONE)  # the value the first `next()` sends, popped by the following POP_TOP

    def YIELD_VALUE(self, inst):
        self.yielded = self.stack.pop()
        self.stack.append(_NONE)  # `next()` resumes the generator with None as the sent value

    def MAKE_CELL(self, inst):
        name = inst.argval
        try:
            contents = self.locals[name]  # an argument is read here (Note [Arguments wrapped when read])
        except KeyError:
            contents = None
        self.locals.pop(name, None)
        self.cells[name] = self.new_cell(name, contents)

    def COPY_FREE_VARS(self, inst):
        pass  # the frame's cells for free variables are set up before the first instruction
