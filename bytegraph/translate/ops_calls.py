"""Opcode family: calls (PRECALL/KW_NAMES/CALL, CALL_FUNCTION_EX) and `with` entry.

A call's operands are two slots then the arguments: `NULL, callable` or `method, self` on
3.11 and 3.12, `callable, NULL` or `method, self` on 3.13 (`versions.NULL_BEFORE_CALLABLE`).
"""
from __future__ import annotations

from .._bytecode.versions import NULL_BEFORE_CALLABLE
from ..vars.containers import DictVariable
from ..vars.iterators import iterator_of
from .ops_stack import NULL


class CallOps:
    def PRECALL(self, inst):
        pass

    def KW_NAMES(self, inst):
        self.kw_names = self.code.co_consts[inst.arg]

    def CALL(self, inst):
        args = self.popn(inst.arg)
        names, self.kw_names = self.kw_names, ()
        self.call_from_stack(args, names)

    def call_from_stack(self, args: list, names: tuple) -> None:
        """Pop a call's two callable slots, call it with `args` (the last `len(names)` of them
        by those keywords; 3.13's CALL_KW too) and push the result."""
        second = self.stack.pop()
        first = self.stack.pop()
        if NULL_BEFORE_CALLABLE:
            fn, bound_self = (second, NULL) if first is NULL else (first, second)
        else:
            fn, bound_self = first, second
        if bound_self is not NULL:
            args = [bound_self, *args]
        kwargs = {}
        if names:
            kwargs = dict(zip(names, args[len(args) - len(names):]))
            args = args[:len(args) - len(names)]
        self.stack.append(fn.call_function(self, args, kwargs))

    def CALL_FUNCTION_EX(self, inst):
        kwargs_vt = self.stack.pop() if inst.arg & 1 else DictVariable({})
        args_vt = self.stack.pop()
        if NULL_BEFORE_CALLABLE:
            fn = self.stack.pop()
            if self.stack and self.stack[-1] is NULL:
                self.stack.pop()
        else:
            self.stack.pop()  # the NULL 3.13 keeps above the callable
            fn = self.stack.pop()
        kwargs = kwargs_vt.as_kwargs(self)
        args = iterator_of(self, args_vt).unpack(self)
        self.stack.append(fn.call_function(self, args, kwargs))

    def BEFORE_WITH(self, inst):
        exit_, entered = self.stack.pop().enter_with(self)
        self.stack.append(exit_)
        self.stack.append(entered)
