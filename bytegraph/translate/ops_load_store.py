"""Opcode family: loads, stores and deletes of locals, globals, cells, attributes, items."""
from __future__ import annotations

import importlib.util
import operator
import sys
import types

from ..guards.sources import ObjectSource, global_source
from ..vars.builder import wrap_constant
from ..vars.builtins import BuiltinVariable
from ..vars.constant import CONSTANT_TYPES, ConstantVariable
from ..vars.functions import UserFunctionVariable
from ..vars.lazy_int import wrap_int
from ..vars.objects import DELETED
from .lazy_arguments import unbind
from .ops_stack import NULL
from ..vars.classes import ClassVariable


_MISSING = object()
_CONSTANT_TYPES = frozenset(CONSTANT_TYPES)


class LoadStoreOps:
    def LOAD_FAST(self, inst):
        self.load_fast(inst.argval)

    def load_fast(self, name: str) -> None:
        """Push the local `name` (3.13's LOAD_FAST_LOAD_FAST pushes two)."""
        try:
            self.stack.append(self.locals[name])
        except KeyError:
            self.raise_user_error(UnboundLocalError(f"local variable '{name}' referenced before assignment"))
        first_use = self.output.first_use
        if first_use and name in first_use and self.parent is None:
            self.output.locate_first_use(name, self.location())

    def STORE_FAST(self, inst):
        self.store_fast(inst.argval, self.stack.pop())

    def store_fast(self, name: str, value) -> None:
        """Bind the local `name`; a NULL unbinds it (from 3.12, an inlined comprehension puts
        back its loop variable that LOAD_FAST_AND_CLEAR found unbound with a STORE_FAST)."""
        if value is NULL:
            self.locals.pop(name, None)
        else:
            self.locals[name] = value

    def DELETE_FAST(self, inst):
        if not unbind(self.locals, inst.argval):  # Note [Arguments wrapped when read]: an unread one too
            self.raise_user_error(UnboundLocalError(f"local variable '{inst.argval}' referenced before assignment"))

    def LOAD_CONST(self, inst):
        self.stack.append(self.wrap_const(inst.argval))

    def wrap_const(self, value):
        if type(value) in _CONSTANT_TYPES:  # most constants: what `wrap_constant` makes of them
            return ConstantVariable(value)
        if isinstance(value, types.CodeType):
            return ConstantVariable(value)
        if isinstance(value, types.FunctionType):  # generated code (continuations) calls functions it holds
            return UserFunctionVariable(value)
        return wrap_constant(value)

    def LOAD_GLOBAL(self, inst):
        if inst.arg & 1:
            self.stack.append(NULL)
        self.stack.append(self.global_value(inst.argval))

    def global_value(self, name: str):
        """The tracker of the global `name` (a pending write of the trace's, else the
        module's value); a NameError for a deleted one."""
        pending = self.output.side_effects.pending_global(self.f_globals, name)
        if pending is None:
            value = self.f_globals.get(name, _MISSING)
            if type(value) is int:  # e.g. `global step; step += 1`: pinned only if used as a value
                return wrap_int(self, value, global_source(self.globals_source, name))
            return self.load_global_value(name)
        if pending is DELETED:
            self.raise_user_error(NameError(f"name '{name}' is not defined"))
        return pending

    def STORE_GLOBAL(self, inst):
        """Recorded in the side-effect log (any module's globals), replayed after the graph."""
        self.output.side_effects.store_global(self.f_globals, self.globals_source, inst.argval, self.stack.pop())

    def DELETE_GLOBAL(self, inst):
        name = inst.argval
        pending = self.output.side_effects.pending_global(self.f_globals, name)
        if pending is DELETED or (pending is None and name not in self.f_globals):
            self.raise_user_error(NameError(f"name '{name}' is not defined"))
        self.output.side_effects.store_global(self.f_globals, self.globals_source, name, DELETED)

    def LOAD_DEREF(self, inst):
        cell = self.cells[inst.argval]
        if cell.contents is None:
            self.raise_user_error(NameError(
                f"free variable '{inst.argval}' referenced before assignment in enclosing scope"))
        self.stack.append(cell.contents)
        first_use = self.output.first_use
        if first_use and inst.argval in first_use and self.parent is None:
            self.output.locate_first_use(inst.argval, self.location())

    LOAD_CLASSDEREF = LOAD_DEREF

    def STORE_DEREF(self, inst):
        # a pre-existing cell is replayed as `cell.cell_contents = v`
        self.cells[inst.argval].set_contents(self, self.stack.pop())

    def DELETE_DEREF(self, inst):
        cell = self.cells[inst.argval]
        if cell.contents is None:
            self.raise_user_error(NameError(
                f"free variable '{inst.argval}' referenced before assignment in enclosing scope"))
        cell.set_contents(self, None)

    def LOAD_CLOSURE(self, inst):
        self.stack.append(self.cells[inst.argval])

    def LOAD_ATTR(self, inst):
        obj = self.stack.pop()
        self.stack.append(obj.var_getattr(self, inst.argval))

    def LOAD_METHOD(self, inst):
        obj = self.stack.pop()
        self.stack.append(NULL)
        self.stack.append(obj.var_getattr(self, inst.argval))

    def STORE_ATTR(self, inst):
        obj = self.stack.pop()
        obj.store_attr(self, inst.argval, self.stack.pop())

    def DELETE_ATTR(self, inst):
        self.stack.pop().delete_attr(self, inst.argval)

    def BINARY_SUBSCR(self, inst):
        key = self.stack.pop()
        obj = self.stack.pop()
        self.stack.append(self.call_builtin(operator.getitem, [obj, key]))

    def STORE_SUBSCR(self, inst):
        key = self.stack.pop()
        obj = self.stack.pop()
        value = self.stack.pop()
        self.call_builtin(operator.setitem, [obj, key, value])

    def DELETE_SUBSCR(self, inst):
        key = self.stack.pop()
        obj = self.stack.pop()
        self.call_builtin(operator.delitem, [obj, key])

    def LOAD_ASSERTION_ERROR(self, inst):
        self.stack.append(ClassVariable(AssertionError))

    def call_builtin(self, fn, args: list, kwargs: dict | None = None):
        return BuiltinVariable(fn).call_function(self, args, kwargs or {})

    def IMPORT_NAME(self, inst):
        fromlist = self.stack.pop().as_python_constant()
        level = self.stack.pop().as_python_constant()
        name = _absolute_name(inst.argval, level, self.f_globals) if level else inst.argval
        module = sys.modules.get(name)
        if module is None or any(not hasattr(module, item) for item in fromlist or () if item != "*"):
            what = f"from {'.' * level}{inst.argval} import {', '.join(fromlist)}" if fromlist else \
                f"import {inst.argval}"
            self.unsupported(f"`{what}`, which is not imported yet (importing runs module code)",
                             category="unsupported import",
                             hint="import the module at the top of your file")
        if not fromlist:
            module = sys.modules[name.partition(".")[0]]
        self.stack.append(self.wrap(module, ObjectSource(module), guard=False))

    def IMPORT_FROM(self, inst):
        self.stack.append(self.stack[-1].var_getattr(self, inst.argval))


def _absolute_name(name: str, level: int, f_globals: dict) -> str | None:
    """The module a relative import (`from ..m import x` in `f_globals`' module) names, as
    `__import__` resolves it (from `__package__`, else `__spec__.parent`), or None."""
    package = f_globals.get("__package__")
    if package is None:
        spec = f_globals.get("__spec__")
        package = spec.parent if spec is not None else None
    if not package:
        return None
    try:
        return importlib.util.resolve_name("." * level + name, package)
    except (ImportError, ValueError):
        return None
