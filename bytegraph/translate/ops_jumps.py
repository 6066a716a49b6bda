"""Opcode family: jumps on Python values, loops (GET_ITER/FOR_ITER, unrolled) and raise.

A jump whose condition depends on tensor data breaks the graph (the tracker's
`truth` refuses); every other condition is decided at trace time and guarded
through the values it came from.
"""
from __future__ import annotations

from ..vars.constant import ConstantVariable
from ..vars.iterators import IteratorVariable, iterator_of


def _is_none(vt) -> bool:
    return isinstance(vt, ConstantVariable) and vt.value is None


class JumpOps:
    def _jump(self, inst):
        self.ip = inst.target

    JUMP_FORWARD = JUMP_BACKWARD = JUMP_BACKWARD_NO_INTERRUPT = _jump

    def _pop_jump_if_true(self, inst):
        if self.stack.pop().truth(self):
            self.ip = inst.target

    def _pop_jump_if_false(self, inst):
        if not self.stack.pop().truth(self):
            self.ip = inst.target

    def _pop_jump_if_none(self, inst):
        if _is_none(self.stack.pop()):
            self.ip = inst.target

    def _pop_jump_if_not_none(self, inst):
        if not _is_none(self.stack.pop()):
            self.ip = inst.target

    POP_JUMP_FORWARD_IF_TRUE = POP_JUMP_BACKWARD_IF_TRUE = _pop_jump_if_true
    POP_JUMP_FORWARD_IF_FALSE = POP_JUMP_BACKWARD_IF_FALSE = _pop_jump_if_false
    POP_JUMP_FORWARD_IF_NONE = POP_JUMP_BACKWARD_IF_NONE = _pop_jump_if_none
    POP_JUMP_FORWARD_IF_NOT_NONE = POP_JUMP_BACKWARD_IF_NOT_NONE = _pop_jump_if_not_none

    def JUMP_IF_TRUE_OR_POP(self, inst):
        if self.stack[-1].truth(self):
            self.ip = inst.target
        else:
            self.stack.pop()

    def JUMP_IF_FALSE_OR_POP(self, inst):
        if not self.stack[-1].truth(self):
            self.ip = inst.target
        else:
            self.stack.pop()

    def GET_ITER(self, inst):
        self.stack.append(iterator_of(self, self.stack.pop()))

    def FOR_ITER(self, inst):
        it = self.stack[-1]
        if not isinstance(it, IteratorVariable):
            self.unsupported(f"iterating over {it.describe()}", category="unsupported iteration")
        item = it.next_item(self)
        if item is None:
            self.stack.pop()
            self.ip = inst.target
        else:
            self.stack.append(item)

    def RAISE_VARARGS(self, inst):
        args = self.popn(inst.arg)
        what = args[0].describe() if args else "the active exception"
        self.raise_user_error(_TracedRaise(f"the traced code raises {what}"))


class _TracedRaise(Exception):
    """Stands for an exception the user's code raises at trace time."""
