"""User Python functions (inlined when called), closures' cells, bound methods and
`functools.partial`.

`UserFunctionVariable` is a real function read from the caller's world (it has a source;
its defaults, globals and closure cells get sources derived from it).
`NestedFunctionVariable` is a function created by MAKE_FUNCTION during tracing.
Argument binding follows CPython's rules; a binding error is the user's TypeError.
"""
from __future__ import annotations

import inspect
import types

from ..guards.sources import AttrSource, DefaultsSource, ItemSource, ObjectSource
from .base import VariableTracker
from .constant import ConstantVariable


class CellVariable(VariableTracker):
    """A closure cell. `contents` is a tracker or None (empty). A pre-existing cell's
    `source` is the source of its *contents* (`ClosureSource`, or `...cell_contents`);
    writes to it are recorded in the side-effect log (STORE_DEREF)."""

    __slots__ = ("contents", "name")

    def __init__(self, name: str, contents=None, source=None):
        super().__init__(source)
        self.name = name
        self.contents = contents

    def python_type(self) -> type:
        return types.CellType

    def reconstruct(self, cg) -> None:
        """Push the cell object itself (a fresh real cell for one made during tracing)."""
        from ..guards.sources import ClosureSource

        if isinstance(self.source, ClosureSource):
            cg.load_closure(self.source.var_name)
        elif self.source is not None:
            self.source.base.reconstruct(cg)  # `<cell>.cell_contents` -> the cell
        else:
            cg.push_null()
            cg.load_const(types.CellType)
            if self.contents is None:
                cg.call(0)
            else:
                cg.reconstruct(self.contents)
                cg.call(1)


class BaseFunctionVariable(VariableTracker):
    """Shared protocol of inlinable functions: code, globals, defaults, closure cells."""

    __slots__ = ()

    def python_type(self) -> type:
        return types.FunctionType

    def get_code(self) -> types.CodeType:
        raise NotImplementedError

    def globals_and_source(self):
        """(real globals dict, source of that dict) the function's code reads."""
        raise NotImplementedError

    def default_trackers(self, tx) -> tuple[list, dict]:
        raise NotImplementedError

    def closure_cells(self, tx) -> list:
        raise NotImplementedError

    def call_function(self, tx, args, kwargs):
        return tx.inline_call(self, args, kwargs)

    def bind_args(self, tx, args: list, kwargs: dict) -> dict:
        return bind_arguments(tx, self.get_code(), *self.default_trackers(tx), args, kwargs, self.describe())

    def describe(self) -> str:
        return f"function {self.get_code().co_qualname}"


class UserFunctionVariable(BaseFunctionVariable):
    __slots__ = ("fn",)

    def __init__(self, fn: types.FunctionType, source=None):
        super().__init__(source if source is not None else ObjectSource(fn))
        self.fn = fn

    def get_code(self):
        return self.fn.__code__

    def as_python_constant(self):
        return self.fn

    def globals_and_source(self):
        return self.fn.__globals__, AttrSource(self.source, "__globals__")

    def default_trackers(self, tx):
        fn = self.fn
        defaults = [tx.wrap(v, DefaultsSource(self.source, i)) for i, v in enumerate(fn.__defaults__ or ())]
        kwdefaults = {k: tx.wrap(v, DefaultsSource(self.source, k)) for k, v in (fn.__kwdefaults__ or {}).items()}
        return defaults, kwdefaults

    def closure_cells(self, tx):
        cells = []
        side_effects = tx.output.side_effects
        for i, (name, cell) in enumerate(zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ())):
            known = side_effects.tracker_for(cell)  # one tracker per real cell: writes stay visible
            if known is not None:
                cells.append(known)
                continue
            src = AttrSource(ItemSource(AttrSource(self.source, "__closure__"), i), "cell_contents")
            try:
                contents = tx.wrap(cell.cell_contents, src)
            except ValueError:
                contents = None
            vt = CellVariable(name, contents, src)
            side_effects.remember(cell, vt)
            cells.append(vt)
        return cells

    def var_getattr(self, tx, name):
        if name in ("__name__", "__qualname__", "__module__", "__doc__"):
            return ConstantVariable(getattr(self.fn, name))
        return tx.wrap(getattr(self.fn, name), AttrSource(self.source, name))

    def describe(self) -> str:
        return f"function {self.fn.__qualname__}"


class NestedFunctionVariable(BaseFunctionVariable):
    """A function object created while tracing (`def` or `lambda` inside traced code)."""

    __slots__ = ("code", "f_globals", "globals_source", "defaults", "kwdefaults", "closure", "qualname")

    def __init__(self, code, f_globals, globals_source, defaults, kwdefaults, closure, qualname):
        super().__init__(None)
        self.code = code
        self.f_globals = f_globals
        self.globals_source = globals_source
        self.defaults = defaults
        self.kwdefaults = kwdefaults
        self.closure = closure
        self.qualname = qualname

    def get_code(self):
        return self.code

    def globals_and_source(self):
        return self.f_globals, self.globals_source

    def default_trackers(self, tx):
        defaults = self.defaults.unpack(tx) if self.defaults is not None else []
        kwdefaults = dict(self.kwdefaults.items) if self.kwdefaults is not None else {}
        return defaults, kwdefaults

    def closure_cells(self, tx):
        return list(self.closure.items) if self.closure is not None else []

    def var_getattr(self, tx, name):
        if name in ("__name__", "__qualname__"):
            return ConstantVariable(self.code.co_name if name == "__name__" else self.qualname)
        return super().var_getattr(tx, name)

    def describe(self) -> str:
        return f"function {self.qualname}"

    def reconstruct(self, cg) -> None:
        """`types.FunctionType(code, globals, name, defaults, closure)` with qualname and
        keyword defaults, so the function escapes with the right globals and real cells."""
        from ..guards.sources import GlobalsDictSource

        cg.push_null()
        cg.load_const(_make_function)
        cg.load_const(self.code)
        if isinstance(self.globals_source, GlobalsDictSource) or self.globals_source is None:
            cg.load_const(self.f_globals)
        else:
            self.globals_source.reconstruct(cg)
        cg.load_const(self.qualname)
        if self.defaults is None:
            cg.load_const(None)
        else:
            cg.reconstruct(self.defaults)
        if self.kwdefaults is None:
            cg.load_const(None)
        else:
            cg.reconstruct(self.kwdefaults)
        if self.closure is None:
            cg.load_const(None)
        else:
            for cell in self.closure.items:
                cg.reconstruct(cell)
            cg.build("BUILD_TUPLE", len(self.closure.items))
        cg.call(6)


def _make_function(code, f_globals, qualname, defaults, kwdefaults, closure):
    fn = types.FunctionType(code, f_globals, code.co_name, defaults, closure)
    fn.__qualname__ = qualname
    if kwdefaults:
        fn.__kwdefaults__ = kwdefaults
    return fn


class BoundMethodVariable(VariableTracker):
    """`obj.method` for a Python function looked up on an object: calls prepend `obj`."""

    __slots__ = ("fn", "obj")

    def __init__(self, fn: VariableTracker, obj: VariableTracker, source=None):
        super().__init__(source)
        self.fn = fn
        self.obj = obj

    def python_type(self) -> type:
        return types.MethodType

    def call_function(self, tx, args, kwargs):
        return self.fn.call_function(tx, [self.obj, *args], kwargs)

    def var_getattr(self, tx, name):
        if name == "__self__":
            return self.obj
        if name == "__func__":
            return self.fn
        return self.fn.var_getattr(tx, name)

    def describe(self) -> str:
        return f"method {self.fn.describe()}"


class PartialVariable(VariableTracker):
    """`functools.partial(fn, *args, **kwargs)` made or read during tracing."""

    __slots__ = ("fn", "args", "kwargs")

    def __init__(self, fn, args, kwargs, source=None):
        super().__init__(source)
        self.fn = fn
        self.args = list(args)
        self.kwargs = dict(kwargs)

    def python_type(self) -> type:
        import functools

        return functools.partial

    def call_function(self, tx, args, kwargs):
        return self.fn.call_function(tx, [*self.args, *args], {**self.kwargs, **kwargs})

    def var_getattr(self, tx, name):
        from .containers import DictVariable, TupleVariable

        if name == "func":
            return self.fn
        if name == "args":
            return TupleVariable(self.args)
        if name == "keywords":
            return DictVariable(self.kwargs)
        return super().var_getattr(tx, name)


def bind_arguments(tx, code, defaults: list, kwdefaults: dict, args: list, kwargs: dict, what: str) -> dict:
    """Bind call arguments to `code`'s parameters like CPython does; returns name -> tracker."""
    from .containers import DictVariable, TupleVariable

    nargs, nposonly, nkwonly = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
    names = code.co_varnames
    pos_names = names[:nargs]
    kwonly_names = names[nargs:nargs + nkwonly]
    has_varargs = bool(code.co_flags & inspect.CO_VARARGS)
    has_varkw = bool(code.co_flags & inspect.CO_VARKEYWORDS)
    bound = {}
    for name, value in zip(pos_names, args):
        bound[name] = value
    extra = list(args[nargs:])
    if extra and not has_varargs:
        tx.raise_user_error(TypeError(
            f"{code.co_name}() takes {nargs} positional arguments but {len(args)} were given"))
    extra_kw = {}
    for key, value in kwargs.items():
        if key in pos_names[nposonly:] or key in kwonly_names:
            if key in bound:
                tx.raise_user_error(TypeError(f"{code.co_name}() got multiple values for argument '{key}'"))
            bound[key] = value
        elif has_varkw:
            extra_kw[key] = value
        else:
            tx.raise_user_error(TypeError(f"{code.co_name}() got an unexpected keyword argument '{key}'"))
    first_default = nargs - len(defaults)
    for i, name in enumerate(pos_names):
        if name not in bound:
            if i < first_default:
                tx.raise_user_error(TypeError(f"{code.co_name}() missing required argument: '{name}'"))
            bound[name] = defaults[i - first_default]
    for name in kwonly_names:
        if name not in bound:
            if name not in kwdefaults:
                tx.raise_user_error(TypeError(f"{code.co_name}() missing keyword-only argument: '{name}'"))
            bound[name] = kwdefaults[name]
    index = nargs + nkwonly
    if has_varargs:
        bound[names[index]] = TupleVariable(extra)
        index += 1
    if has_varkw:
        bound[names[index]] = DictVariable(extra_kw)
    return bound
