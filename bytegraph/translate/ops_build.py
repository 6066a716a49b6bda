"""Opcode family: building and unpacking containers, strings, slices and functions."""
from __future__ import annotations

from ..vars.constant import ConstantVariable
from ..vars.containers import DictVariable, ListVariable, SetVariable, TupleVariable
from ..vars.functions import NestedFunctionVariable
from ..vars.iterators import iterator_of

_CONVERSIONS = {0: None, 1: str, 2: repr, 3: ascii}


class BuildOps:
    def BUILD_TUPLE(self, inst):
        self.stack.append(TupleVariable(self.popn(inst.arg)))

    def BUILD_LIST(self, inst):
        self.stack.append(ListVariable(self.popn(inst.arg)))

    def BUILD_SET(self, inst):
        self.stack.append(SetVariable(self.popn(inst.arg), tx=self))

    def BUILD_MAP(self, inst):
        flat = self.popn(2 * inst.arg)
        result = DictVariable({})
        for k, v in zip(flat[::2], flat[1::2]):
            result.call_method(self, "__setitem__", [k, v], {})
        self.stack.append(result)

    def BUILD_CONST_KEY_MAP(self, inst):
        keys = self.stack.pop().as_python_constant()
        values = self.popn(inst.arg)
        self.stack.append(DictVariable(dict(zip(keys, values))))

    def BUILD_STRING(self, inst):
        parts = self.popn(inst.arg)
        self.stack.append(ConstantVariable("".join(p.as_python_constant() for p in parts)))

    def BUILD_SLICE(self, inst):
        parts = self.popn(inst.arg)
        self.stack.append(self.call_builtin(slice, parts))

    def LIST_APPEND(self, inst):
        item = self.stack.pop()
        self.stack[-inst.arg].call_method(self, "append", [item], {})

    def SET_ADD(self, inst):
        item = self.stack.pop()
        self.stack[-inst.arg].call_method(self, "add", [item], {})

    def MAP_ADD(self, inst):
        value = self.stack.pop()
        key = self.stack.pop()
        self.stack[-inst.arg].call_method(self, "__setitem__", [key, value], {})

    def LIST_EXTEND(self, inst):
        iterable = self.stack.pop()
        self.stack[-inst.arg].call_method(self, "extend", [iterator_of(self, iterable).unpack(self)], {})

    def SET_UPDATE(self, inst):
        iterable = self.stack.pop()
        self.stack[-inst.arg].call_method(self, "update", [iterable], {})

    def DICT_UPDATE(self, inst):
        other = self.stack.pop()
        self.stack[-inst.arg].call_method(self, "update", [other], {})

    def DICT_MERGE(self, inst):
        other = self.stack.pop()
        target = self.stack[-inst.arg]
        kwargs = other.as_kwargs(self)  # once: a class's own keys/__getitem__ run once, as eagerly
        for key in kwargs:
            if key in target.items:
                self.raise_user_error(TypeError(f"got multiple values for keyword argument '{key}'"))
        target.call_method(self, "update", [DictVariable(kwargs)], {})

    def LIST_TO_TUPLE(self, inst):
        self.stack.append(TupleVariable(self.stack.pop().items))

    def UNPACK_SEQUENCE(self, inst):
        items = iterator_of(self, self.stack.pop()).unpack(self)
        if len(items) != inst.arg:
            self.raise_user_error(ValueError(f"expected {inst.arg} values to unpack, got {len(items)}"))
        self.stack.extend(reversed(items))

    def UNPACK_EX(self, inst):
        before, after = inst.arg & 0xFF, inst.arg >> 8
        items = iterator_of(self, self.stack.pop()).unpack(self)
        if len(items) < before + after:
            self.raise_user_error(ValueError(
                f"not enough values to unpack (expected at least {before + after}, got {len(items)})"))
        middle = ListVariable(items[before:len(items) - after])
        self.stack.extend(reversed([*items[:before], middle, *items[len(items) - after:]]))

    def FORMAT_VALUE(self, inst):
        spec = self.stack.pop().as_python_constant() if inst.arg & 0x04 else ""
        self.stack.append(self.format_value(self.stack.pop(), inst.arg & 0x03, spec))

    def format_value(self, value, conversion: int, spec: str):
        """`format(conversion(value), spec)` of an f-string's field (`conversion` as FORMAT_VALUE's
        low bits, 3.13's CONVERT_VALUE argument: 0 none, 1 str, 2 repr, 3 ascii)."""
        if not value.is_python_constant():
            self.unsupported(f"formatting {value.describe()} into a string", category="unsupported call")
        raw = value.as_python_constant()
        convert = _CONVERSIONS[conversion]
        if convert is not None:
            raw = convert(raw)
        return ConstantVariable(format(raw, spec))

    def MAKE_FUNCTION(self, inst):
        code = self.stack.pop().as_python_constant()
        flags = inst.arg
        closure = self.stack.pop() if flags & 0x08 else None
        annotations = self.stack.pop() if flags & 0x04 else None
        kwdefaults = self.stack.pop() if flags & 0x02 else None
        defaults = self.stack.pop() if flags & 0x01 else None
        self.stack.append(NestedFunctionVariable(code, self.f_globals, self.globals_source, defaults,
                                                 kwdefaults, closure, code.co_qualname, annotations))
