"""Opcode family: jumps on Python values, loops (GET_ITER/FOR_ITER, unrolled).

A jump whose condition depends on tensor data breaks the graph (the tracker's
`truth` refuses); every other condition is decided at trace time and guarded
through the values it came from.
"""
from __future__ import annotations

from ..vars.iterators import iterator_of


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
        if self.stack.pop().is_none():
            self.ip = inst.target

    def _pop_jump_if_not_none(self, inst):
        if not self.stack.pop().is_none():
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
        item = self.stack[-1].next_item(self)  # a kind that is no iterator breaks
        if item is None:
            self.stack.pop()
            self.ip = inst.target
        else:
            self.stack.append(item)
