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

from ..guards.guard import Guard, GuardKind
from ..guards.sources import AttrSource, CellContentsSource, DefaultSource, DefaultsSource, ObjectSource
from .base import VariableTracker
from .constant import ConstantVariable


class CellVariable(VariableTracker):
    """A closure cell. `contents` is a tracker or None (empty). A pre-existing cell's
    `source` is the source of its *contents* (`ClosureSource` or `CellContentsSource`);
    writes to it are recorded in the side-effect log (STORE_DEREF).

    A pre-existing cell is read lazily (`real_cell`): its contents are wrapped, and so
    guarded, only when the trace first reads them, at the reading line; a cell the trace
    never reads is not guarded at all."""

    __slots__ = ("_contents", "name", "_pending")

    def __init__(self, name: str, contents=None, source=None):
        super().__init__(source)
        self.name = name
        self._contents = contents
        self._pending = None  # (real cell, output graph) until the contents are first read

    @classmethod
    def real_cell(cls, name: str, cell: types.CellType, source, output) -> "CellVariable":
        vt = cls(name, None, source)
        vt._pending = (cell, output)
        return vt

    @property
    def contents(self):
        if self._pending is not None:
            cell, output = self._pending
            self._pending = None
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell: reading it is the user's NameError
                return None
            self._contents = output.current_tx.wrap(value, self.source)
        return self._contents

    @contents.setter
    def contents(self, value) -> None:
        self._pending = None
        self._contents = value

    def known_contents(self):
        """The contents if the trace has read or written them, else None (the real cell
        is unchanged)."""
        return None if self._pending is not None else self._contents

    def python_type(self) -> type:
        return types.CellType

    def reconstruct(self, cg) -> None:
        """Push the cell object itself (a fresh real cell for one made during tracing)."""
        if self.source is not None:
            self.source.cell().reconstruct(cg)
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

    def default_trackers(self, tx) -> tuple:
        """(positional defaults, keyword-only defaults) as a sequence and a mapping of trackers."""
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
        return _RealDefaults(tx, self, False), _RealDefaults(tx, self, True)

    def closure_cells(self, tx):
        cells = []
        side_effects = tx.output.side_effects
        for i, (name, cell) in enumerate(zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ())):
            source = CellContentsSource(self.source, i, name)
            known = side_effects.tracker_for(cell)  # one tracker per real cell: writes stay visible
            if known is None:
                known = CellVariable.real_cell(name, cell, source, tx.output)
                side_effects.remember(cell, known)
            elif known.source != source:  # one cell reached through two functions: must stay shared
                tx.output.add_guard(Guard(GuardKind.SAME_OBJECT, source.cell(), known.source.cell(), tx.guard_location()))
            cells.append(known)
        return cells

    def var_getattr(self, tx, name):
        if name in ("__name__", "__qualname__", "__module__", "__doc__"):
            return ConstantVariable(getattr(self.fn, name))
        return tx.wrap(getattr(self.fn, name), AttrSource(self.source, name))

    def describe(self) -> str:
        return f"function {self.fn.__qualname__}"


class _RealDefaults:
    """The positional (or keyword-only) defaults of a real function as binding sees them: a
    default is wrapped, and guarded, only when the call uses it. Which parameter a
    positional default belongs to depends on how many there are, so using one also guards
    the length of `__defaults__`."""

    __slots__ = ("tx", "fn_vt", "keyword", "values")

    def __init__(self, tx, fn_vt: UserFunctionVariable, keyword: bool):
        self.tx = tx
        self.fn_vt = fn_vt
        self.keyword = keyword
        fn = fn_vt.fn
        self.values = (fn.__kwdefaults__ if keyword else fn.__defaults__) or ({} if keyword else ())

    def __len__(self) -> int:
        return len(self.values)

    def __contains__(self, param: str) -> bool:
        return param in self.values

    def __getitem__(self, key):
        tx, source = self.tx, self.fn_vt.source
        if self.keyword:
            return tx.wrap(self.values[key], DefaultSource(source, key))
        tx.output.add_guard(Guard(GuardKind.LEN_MATCH, DefaultsSource(source), len(self.values), tx.guard_location()))
        code = self.fn_vt.fn.__code__
        param = code.co_varnames[code.co_argcount - len(self.values) + key]
        return tx.wrap(self.values[key], DefaultSource(source, param, key))


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
