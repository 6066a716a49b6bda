"""Opcode family: raising and handling exceptions (Note [Traced exceptions]).

RAISE_VARARGS and RERAISE raise an exception tracker through `tx.raise_exception`;
the run loop unwinds to the handler the exception table names. The handler's
PUSH_EXC_INFO / CHECK_EXC_MATCH / POP_EXCEPT maintain the exception being handled
(`tx.handled`, what `raise` with no argument re-raises and what a new exception
records as its `__context__`; the slot under the handled exception is a
`HandlerSlotVariable`), WITH_EXCEPT_START calls a `with` block's exit.
"""
from __future__ import annotations

from ..vars.constant import ConstantVariable
from ..vars.exceptions import HandlerSlotVariable, TracebackVariable, as_exception


class ExceptionOps:
    def RAISE_VARARGS(self, inst):
        if inst.arg == 0:
            active = self.active_exception()
            if active is None:
                self.raise_user_error(RuntimeError("No active exception to reraise"))
            self.reraise(active)
        if inst.arg == 2:
            cause = self.stack.pop()
            exc = as_exception(self, self.stack.pop())
            exc.set_cause(self, cause if cause.is_none() else as_exception(self, cause))
        else:
            exc = as_exception(self, self.stack.pop())
        self.raise_exception(exc)

    def RERAISE(self, inst):
        exc = self.stack.pop()
        if inst.arg:
            self.stack.pop()  # the offset of the raising instruction (it only sets f_lasti)
        self.reraise(exc)

    def PUSH_EXC_INFO(self, inst):
        exc = self.stack.pop()
        previous = self.active_exception()
        previous = ConstantVariable(None) if previous is None else previous
        self.stack.append(HandlerSlotVariable(previous, exc, self.raised_at))
        self.stack.append(exc)
        self.handled = exc

    def POP_EXCEPT(self, inst):
        self.handled = self.stack.pop().previous

    def CHECK_EXC_MATCH(self, inst):
        right = self.stack.pop()
        if not right.is_python_constant():
            self.unsupported(f"except clause naming {right.describe()}", category="unsupported exception")
        classes = right.as_python_constant()
        for cls in classes if isinstance(classes, tuple) else (classes,):
            if not (isinstance(cls, type) and issubclass(cls, BaseException)):
                self.raise_user_error(TypeError("catching classes that do not inherit from BaseException "
                                                "is not allowed"))
        self.stack.append(ConstantVariable(issubclass(self.stack[-1].python_type(), classes)))

    def WITH_EXCEPT_START(self, inst):
        exc = self.stack[-1]
        exit_ = self.stack[-4]
        args = [self.wrap(exc.python_type(), None), exc, TracebackVariable(exc)]
        self.stack.append(exit_.call_function(self, args, {}))
