"""Opcode family: calls (PRECALL/KW_NAMES/CALL, CALL_FUNCTION_EX) and `with` entry."""
from __future__ import annotations

from ..vars.containers import DictVariable
from ..vars.iterators import iterator_of
from .ops_stack import NULL


class CallOps:
    def PRECALL(self, inst):
        pass

    def KW_NAMES(self, inst):
        self.kw_names = self.code.co_consts[inst.arg]

    def CALL(self, inst):
        nargs = inst.arg
        args = self.popn(nargs)
        fn = self.stack.pop()
        below = self.stack.pop()
        if below is not NULL:
            fn, args = below, [fn, *args]
        kwargs = {}
        if self.kw_names:
            names = self.kw_names
            kwargs = dict(zip(names, args[len(args) - len(names):]))
            args = args[:len(args) - len(names)]
            self.kw_names = ()
        self.stack.append(fn.call_function(self, args, kwargs))

    def CALL_FUNCTION_EX(self, inst):
        kwargs_vt = self.stack.pop() if inst.arg & 1 else DictVariable({})
        args_vt = self.stack.pop()
        fn = self.stack.pop()
        if self.stack and self.stack[-1] is NULL:
            self.stack.pop()
        kwargs = kwargs_vt.as_kwargs(self)
        args = iterator_of(self, args_vt).unpack(self)
        self.stack.append(fn.call_function(self, args, kwargs))

    def BEFORE_WITH(self, inst):
        exit_, entered = self.stack.pop().enter_with(self)
        self.stack.append(exit_)
        self.stack.append(entered)

