"""User Python functions (inlined when called), closures' cells, bound methods and
`functools.partial`.

`UserFunctionVariable` is a real function read from the caller's world (it has a source;
its defaults, globals and closure cells get sources derived from it).
`NestedFunctionVariable` is a function created by MAKE_FUNCTION during tracing.
Argument binding follows CPython's rules; a binding error is the user's TypeError.
Registers the builders (`vars/registry.py`) of functions, method objects, cells,
`staticmethod`/`classmethod` objects and partials.
"""
from __future__ import annotations

import functools
import inspect
import types

from ..guards.guard import Guard, GuardKind
from ..guards.sources import (AttrSource, CellContentsSource, ClosureSource, DefaultSource, DefaultsSource,
                              GlobalsDictSource, ObjectSource)
from .base import REPLAY_CELL, VariableTracker
from .constant import ConstantVariable
from .constant_results import call_marked, is_marked_constant
from .containers import DictVariable, TupleVariable
from .dict_keys import reconstruct_map
from .disabled_functions import DisabledFunctionVariable, disabled_original, is_torch_function
from .method_table import read_attr
from .registry import guard, register
from . import factory
from .code_object import CodeVariable


class CellVariable(VariableTracker):
    """A closure cell. `contents` is a tracker or None (empty). A pre-existing cell's
    `source` is the source of its *contents* (`ClosureSource` or `CellContentsSource`);
    writes to it go through `set_contents` (the mutation barrier) and are recorded in the
    side-effect log (STORE_DEREF).

    A pre-existing cell is read lazily (`real_cell`): its contents are wrapped, and so
    guarded, only when the trace first reads them, at the reading line; a cell the trace
    never reads is not guarded at all."""

    __slots__ = ("_contents", "name", "_pending")
    rebuilt_as_new_object = True
    replay_phase = REPLAY_CELL

    def __init__(self, name: str, contents=None, source=None, pending=None):
        super().__init__(source)
        self.name = name
        self._contents = contents
        self._pending = pending  # (real cell, output graph) until the contents are first read

    @classmethod
    def real_cell(cls, name: str, cell: types.CellType, source, output) -> "CellVariable":
        return cls(name, None, source, (cell, output))

    @property
    def contents(self):
        if self._pending is not None:
            cell, output = self._pending
            output.side_effects.touch(self)
            self._pending = None
            try:
                value = cell.cell_contents
            except ValueError:  # an empty cell: reading it is the user's NameError
                return None
            self._contents = output.current_tx.wrap(value, self.source)
        return self._contents

    def set_contents(self, tx, value) -> None:
        """`cell.cell_contents = value` (STORE_DEREF; None empties it: DELETE_DEREF)."""
        tx.output.side_effects.mutate(self)
        self._pending = None
        self._contents = value

    def known_contents(self):
        """The contents if the trace has read or written them, else None (the real cell
        is unchanged)."""
        return None if self._pending is not None else self._contents

    def children(self):
        known = self.known_contents()
        return (known,) if known is not None else ()

    def replay_records(self, cg) -> list:
        """Write the real cell (the root frame's free variable, or a cell reached through a
        function or held in a local); an emptied cell is deleted."""
        src = self.source
        contents = self.contents
        if isinstance(src, ClosureSource):  # the root frame's own free variable
            if contents is None:
                return [((lambda: None), (lambda: cg.delete_deref(src.var_name)))]
            return [((lambda: cg.reconstruct(contents)), (lambda: cg.store_deref(src.var_name)))]

        def push():
            if contents is not None:
                cg.reconstruct(contents)
            src.cell().reconstruct(cg)
        if contents is None:
            return [(push, lambda: cg.delete_attr("cell_contents"))]
        return [(push, lambda: cg.store_attr("cell_contents"))]

    def replayed_values(self):
        return (self.contents,) if self.contents is not None else ()

    def python_type(self) -> type:
        return types.CellType

    def var_getattr(self, tx, name):
        if name != "cell_contents":
            return super().var_getattr(tx, name)
        if self.contents is None:
            tx.raise_user_error(ValueError("Cell is empty"))
        return self.contents

    def store_attr(self, tx, name, value) -> None:
        if name != "cell_contents":
            return super().store_attr(tx, name, value)
        self.set_contents(tx, value)

    def reconstruct(self, cg) -> None:
        """Push the cell object itself: the root frame's own cell at a break (Note [Frame
        cells at a break] in translate/breaks.py), else a fresh real cell for one made
        during tracing, kept before its contents are built and stored into it (they may
        reach the cell again: a nested function that calls itself)."""
        if self.source is not None:
            self.source.cell().reconstruct(cg)
        elif not cg.load_frame_cell(self):
            cg.push_callable_const(types.CellType)
            cg.call(0)
            if self.contents is not None:
                cg.keep_built(self)
                cg.reconstruct(self.contents)
                cg.reconstruct(self)
                cg.store_attr("cell_contents")


class BaseFunctionVariable(VariableTracker):
    """Shared protocol of inlinable functions: code, globals, defaults, closure cells."""

    __slots__ = ()

    def python_type(self) -> type:
        return types.FunctionType

    def get_code(self) -> types.CodeType:
        raise NotImplementedError

    def globals_dict(self) -> dict:
        """The real globals dict the function's code reads."""
        raise NotImplementedError

    def globals_dict_source(self):
        """The source of `globals_dict()` (asked only by the first call in a capture that
        reaches that dict: `Translator.inline_call`)."""
        raise NotImplementedError

    def default_trackers(self, tx) -> tuple:
        """(positional defaults, keyword-only defaults) as a sequence and a mapping of trackers."""
        raise NotImplementedError

    def closure_cells(self, tx) -> list:
        raise NotImplementedError

    def call_function(self, tx, args, kwargs):
        return tx.inline_call(self, args, kwargs)

    def truth(self, tx) -> bool:
        return True  # a function has no `__bool__` or `__len__`

    def bind_args(self, tx, args: list, kwargs: dict) -> dict:
        code = self.get_code()
        if not kwargs and len(args) == code.co_argcount and not code.co_kwonlyargcount \
                and not code.co_flags & _VARIADIC:  # every parameter given by position
            return dict(zip(code.co_varnames, args))
        return bind_arguments(tx, code, *self.default_trackers(tx), args, kwargs)

    def describe(self) -> str:
        return f"function {self.get_code().co_qualname}"


def _read_closure(tx, f, name):
    """The cells themselves, shared with the calls of the function."""
    return TupleVariable(f.closure_cells(tx)) if f.fn.__closure__ else ConstantVariable(None)


# a function's PEP 695 type parameters: a tuple from 3.12 (functools.update_wrapper copies them)
_TYPE_PARAMS = ("__type_params__",) if hasattr(types.FunctionType, "__type_params__") else ()

# the attributes of a function from outside read through its tracker (any other: the real one's, wrapped)
_USER_FUNCTION_ATTRS = {
    **dict.fromkeys(("__name__", "__qualname__", "__module__", "__doc__", *_TYPE_PARAMS),
                    lambda tx, f, name: ConstantVariable(getattr(f.fn, name))),
    "__closure__": _read_closure,
    "__defaults__": lambda tx, f, name: tx.wrap(f.fn.__defaults__, DefaultsSource(f.source, False)),
    "__kwdefaults__": lambda tx, f, name: tx.wrap(f.fn.__kwdefaults__, DefaultsSource(f.source, True)),
}


class UserFunctionVariable(BaseFunctionVariable):
    __slots__ = ("fn",)

    def __init__(self, fn: types.FunctionType, source=None):
        super().__init__(source if source is not None else ObjectSource(fn))
        self.fn = fn

    def get_code(self):
        return self.fn.__code__

    def call_function(self, tx, args, kwargs):
        if is_marked_constant(self.fn):  # Note [Constant results]
            return call_marked(tx, self.fn, args, kwargs)
        return tx.inline_call(self, args, kwargs)

    def as_python_constant(self):
        return self.fn

    def pinned(self, tx) -> types.FunctionType:
        """The function, guarded by identity from here on (functions are otherwise guarded by
        code and globals only): for `is` tests."""
        tx.output.add_guard(Guard(GuardKind.ID_MATCH, self.source, self.fn, tx.location()))
        return self.fn

    def globals_dict(self) -> dict:
        return self.fn.__globals__

    def globals_dict_source(self):
        return AttrSource(self.source, "__globals__")

    def default_trackers(self, tx):
        return _RealDefaults(tx, self, False), _RealDefaults(tx, self, True)

    def closure_cells(self, tx):
        cells = []
        side_effects = tx.output.side_effects
        for i, (name, cell) in enumerate(zip(self.fn.__code__.co_freevars, self.fn.__closure__ or ())):
            known = side_effects.tracker_for(cell)  # one tracker per real cell: writes stay visible
            if known is None:
                known = CellVariable.real_cell(name, cell, CellContentsSource(self.source, i, name), tx.output)
                side_effects.remember(cell, known)
            elif not _reached_as(known.source, self.source, i):  # one cell through two functions: must stay shared
                source = CellContentsSource(self.source, i, name)
                tx.output.add_guard(Guard(GuardKind.SAME_OBJECT, source.cell(), known.source.cell(),
                                          tx.guard_location()))
            cells.append(known)
        return cells

    def hasattr_impl(self, tx, name: str) -> bool:
        present = hasattr(self.fn, name)
        if not hasattr(type(self.fn), name):  # decided by the function's own __dict__
            tx.guard_attr_presence(self.source, name, present)
        return present

    def inlined_function(self):
        return self.fn

    def compiled_callee(self, tx):
        return (self, None) if factory.is_traceable(self.fn) else None

    def var_getattr(self, tx, name):
        value = read_attr(tx, self, _USER_FUNCTION_ATTRS, name)
        if value is not None:
            return value
        try:
            value = getattr(self.fn, name)
        except AttributeError as e:
            tx.raise_user_error(e)
        return tx.wrap(value, AttrSource(self.source, name))

    def describe(self) -> str:
        return f"function {self.fn.__qualname__}"


def _reached_as(source, fn_source, index: int) -> bool:
    """Whether `source` is cell `index` of the function at `fn_source` (`CellContentsSource`)."""
    return type(source) is CellContentsSource and source.index == index \
        and (source.fn is fn_source or source.fn == fn_source)


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


def _read_code(tx, fn, name):

    return CodeVariable(fn.code)


def _read_annotations(tx, fn, name):
    """`__annotations__`, made once (from MAKE_FUNCTION's tuple), so later reads see writes into it."""
    pairs = fn.annotations.unpack(tx) if fn.annotations is not None else []
    tx.output.side_effects.touch(fn)
    fn.attrs[name] = DictVariable({k.as_python_constant(): v for k, v in zip(pairs[::2], pairs[1::2])})
    fn.annotations = None
    return fn.attrs[name]


def _or_none(part):
    return part if part is not None else ConstantVariable(None)


# the attributes of a function made in the trace that it has from its making (those the
# trace sets are in its `attrs`, the others in its `__dict__`)
_NESTED_FUNCTION_ATTRS = {
    "__name__": lambda tx, fn, name: ConstantVariable(fn.code.co_name),
    "__qualname__": lambda tx, fn, name: ConstantVariable(fn.qualname),
    "__module__": lambda tx, fn, name: ConstantVariable(fn.f_globals.get("__name__")),
    "__doc__": lambda tx, fn, name: ConstantVariable(_doc_of(fn.code)),
    "__code__": _read_code,
    "__defaults__": lambda tx, fn, name: _or_none(fn.defaults),
    "__kwdefaults__": lambda tx, fn, name: _or_none(fn.kwdefaults),
    "__closure__": lambda tx, fn, name: _or_none(fn.closure),
    "__annotations__": _read_annotations,
    "__dict__": lambda tx, fn, name: fn._dict(tx),
    **dict.fromkeys(_TYPE_PARAMS, lambda tx, fn, name: ConstantVariable(())),  # `def f[T]` is not traced
}


def _string_value(tx, name: str, value) -> None:
    if not (value.is_python_constant() and isinstance(value.as_python_constant(), str)):
        tx.raise_user_error(TypeError(f"{name} must be set to a string object"))


def _tuple_value(tx, name: str, value) -> None:
    if not issubclass(value.python_type(), tuple):
        tx.raise_user_error(TypeError(f"{name} must be set to a tuple"))


def _dict_value(tx, name: str, value) -> None:
    if not isinstance(value, DictVariable):
        tx.raise_user_error(TypeError("__annotations__ must be set to a dict object"))


# the dunder attributes a function made in the trace keeps in its `attrs` when set, each with
# the check of the value (CPython's TypeError)
_WRITABLE_DUNDERS = {
    "__name__": _string_value,
    "__qualname__": _string_value,
    "__doc__": lambda tx, name, value: None,
    "__module__": lambda tx, name, value: None,
    "__annotations__": _dict_value,
    **dict.fromkeys(_TYPE_PARAMS, _tuple_value),
}


class NestedFunctionVariable(BaseFunctionVariable):
    """A function object created while tracing (`def` or `lambda` inside traced code).

    Its attributes live on the tracker: writes to `__name__`, `__qualname__`, `__doc__`,
    `__module__`, `__annotations__` in `attrs`, any other attribute in its `__dict__`
    (`func_dict`, made on first use), so `functools.wraps` applied inside the trace works;
    an escaping function is rebuilt with all of them (`_make_function`)."""

    __slots__ = ("code", "f_globals", "globals_source", "defaults", "kwdefaults", "closure", "qualname",
                 "annotations", "attrs", "func_dict")
    rebuilt_as_new_object = True

    def __init__(self, code, f_globals, globals_source, defaults, kwdefaults, closure, qualname,
                 annotations=None):
        super().__init__(None)
        self.code = code
        self.f_globals = f_globals
        self.globals_source = globals_source
        self.defaults = defaults
        self.kwdefaults = kwdefaults
        self.closure = closure
        self.qualname = qualname
        self.annotations = annotations  # MAKE_FUNCTION's (name, value, ...) tuple, or None
        self.attrs: dict = {}
        self.func_dict = None

    def get_code(self):
        return self.code

    def globals_dict(self) -> dict:
        return self.f_globals

    def globals_dict_source(self):
        return self.globals_source

    def default_trackers(self, tx):
        defaults = self.defaults.unpack(tx) if self.defaults is not None else []
        kwdefaults = dict(self.kwdefaults.items) if self.kwdefaults is not None else {}
        return defaults, kwdefaults

    def closure_cells(self, tx):
        return list(self.closure.items) if self.closure is not None else []

    def resumed_function(self):
        empty_cells = tuple(types.CellType() for _ in self.code.co_freevars) or None
        return types.FunctionType(self.code, self.f_globals, self.code.co_name, None, empty_cells)

    def children(self) -> list:
        """Every tracker the rebuilt function holds."""
        return [p for p in (self.defaults, self.kwdefaults, self.closure, self.annotations, self.func_dict,
                            *self.attrs.values()) if p is not None]

    def var_getattr(self, tx, name):
        if name in self.attrs:
            return self.attrs[name]
        value = read_attr(tx, self, _NESTED_FUNCTION_ATTRS, name)
        if value is not None:
            return value
        if self.func_dict is not None and name in self.func_dict.items:
            return self.func_dict.items[name]
        if name.startswith("__") and name.endswith("__"):
            return super().var_getattr(tx, name)  # a function attribute not modeled: graph break
        tx.raise_user_error(AttributeError(f"'function' object has no attribute '{name}'"))

    def hasattr_impl(self, tx, name: str) -> bool:
        if name in self.attrs or hasattr(types.FunctionType, name):
            return True
        return self.func_dict is not None and name in self.func_dict.items

    def store_attr(self, tx, name, value) -> None:
        tx.output.side_effects.mutate(self)  # the function's scope decides, wherever its __dict__ was made
        if not (name.startswith("__") and name.endswith("__")) or name == "__wrapped__":
            self._dict(tx).call_method(tx, "__setitem__", [ConstantVariable(name), value], {})
            return
        check = _WRITABLE_DUNDERS.get(name)
        if check is None:
            return super().store_attr(tx, name, value)  # __dict__, __defaults__, __code__, ...: graph break
        check(tx, name, value)
        self.attrs[name] = value
        if name == "__annotations__":
            self.annotations = None

    def _dict(self, tx):
        if self.func_dict is None:
            tx.output.side_effects.touch(self)
            self.func_dict = DictVariable({})
        return self.func_dict

    def describe(self) -> str:
        return f"function {self.qualname}"

    def compiled_callee(self, tx):
        """Compiled like a function read from outside when nothing but its code and globals
        decides what a call does (no cells, no defaults): the runtime then shares one wrapper
        among the function objects each run makes (`CompiledFunction.compile_callee`)."""
        if self.closure is not None or self.defaults is not None or self.kwdefaults is not None:
            return None
        return (self, None) if factory.is_traceable(types.FunctionType(self.code, self.f_globals)) else None

    def reconstruct(self, cg) -> None:
        """`_make_function(code, globals, qualname, defaults, kwdefaults, closure, annotations,
        __dict__, attributes)`, so the function escapes with the right globals, real cells and
        every attribute the trace gave it."""
        cg.push_callable_const(_make_function)
        cg.load_const(self.code)
        if isinstance(self.globals_source, GlobalsDictSource) or self.globals_source is None:
            cg.load_const(self.f_globals)
        else:
            self.globals_source.reconstruct(cg)
        cg.load_const(self.qualname)
        for part in (self.defaults, self.kwdefaults):
            if part is None:
                cg.load_const(None)
            else:
                cg.reconstruct(part)
        if self.closure is None:
            cg.load_const(None)
        else:
            for cell in self.closure.items:
                cg.reconstruct(cell)
            cg.build("BUILD_TUPLE", len(self.closure.items))
        for part in (self.annotations, self.func_dict):
            if part is None:
                cg.load_const(None)
            else:
                cg.reconstruct(part)
        reconstruct_map(cg, self.attrs)
        cg.call(9)


def _doc_of(code: types.CodeType):
    """The `__doc__` CPython gives a function made from `code`."""
    cells = tuple(types.CellType() for _ in code.co_freevars) or None
    return types.FunctionType(code, {}, closure=cells).__doc__


def _make_function(code, f_globals, qualname, defaults, kwdefaults, closure, annotations, func_dict, attrs):
    fn = types.FunctionType(code, f_globals, code.co_name, defaults, closure)
    fn.__qualname__ = qualname
    if kwdefaults:
        fn.__kwdefaults__ = kwdefaults
    if annotations:
        fn.__annotations__ = dict(zip(annotations[::2], annotations[1::2]))
    if func_dict is not None:
        fn.__dict__ = func_dict
    for name, value in attrs.items():
        setattr(fn, name, value)
    return fn


class BoundMethodVariable(VariableTracker):
    """`obj.method` for a Python function looked up on an object: calls prepend `obj`.

    Reading a method attribute makes a new method object each time, so residual code
    builds one per tracker, `types.MethodType(fn, obj)`, not a fresh one per load from the
    attribute's source (`m = o.f; return m, m` returns one object twice, like eager)."""

    __slots__ = ("fn", "obj")
    # the `__exit__` of a user context manager that BEFORE_WITH keeps on the stack: rebuilt
    # as a method of the real manager, so the resume function traces the real `__exit__`
    # (Note [Breaks inside blocks])
    kept_in_block = True

    def __init__(self, fn: VariableTracker, obj: VariableTracker, source=None):
        super().__init__(source)
        self.fn = fn
        self.obj = obj

    def python_type(self) -> type:
        return types.MethodType

    def call_function(self, tx, args, kwargs):
        return self.fn.call_function(tx, [self.obj, *args], kwargs)

    def truth(self, tx) -> bool:
        return True  # a method object has no `__bool__` or `__len__`

    def var_getattr(self, tx, name):
        if name == "__self__":
            return self.obj
        if name == "__func__":
            return self.fn
        return self.fn.var_getattr(tx, name)

    def children(self) -> list:
        return [self.fn, self.obj]

    def built_once(self) -> bool:
        return True  # reading a method attribute makes a new method object

    def inlined_function(self):
        return self.fn.inlined_function()

    def resumed_function(self):
        return self.fn.resumed_function()

    def compiled_callee(self, tx):
        callee = self.fn.compiled_callee(tx)
        return (callee[0], self.obj) if callee is not None and callee[1] is None else None

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(types.MethodType)
        cg.reconstruct(self.fn)
        cg.reconstruct(self.obj)
        cg.call(2)

    def describe(self) -> str:
        return f"method {self.fn.describe()}"


class MethodObjectVariable(BoundMethodVariable):
    """A real method object found in the caller's world (in a list, passed as an argument):
    reloaded from its source, so it stays that very object."""

    __slots__ = ()

    def built_once(self) -> bool:
        return self.source is None

    def reconstruct(self, cg) -> None:
        if self.source is None:
            super().reconstruct(cg)
        else:
            self.source.reconstruct(cg)


class MethodDescriptorVariable(VariableTracker):
    """A `staticmethod` or `classmethod` object itself (e.g. taken from a class `__dict__`
    into a container). A staticmethod is callable (it calls its function); a classmethod
    object is not (binding it to a class happens through attribute lookup)."""

    __slots__ = ("kind", "fn")

    def __init__(self, kind: type, fn: VariableTracker, source=None):
        super().__init__(source)
        self.kind = kind
        self.fn = fn

    def python_type(self) -> type:
        return self.kind

    def call_function(self, tx, args, kwargs):
        if self.kind is not staticmethod:
            tx.raise_user_error(TypeError(f"'{self.kind.__name__}' object is not callable"))
        return self.fn.call_function(tx, args, kwargs)

    def var_getattr(self, tx, name):
        if name in ("__func__", "__wrapped__"):
            return self.fn
        return super().var_getattr(tx, name)

    def describe(self) -> str:
        return f"{self.kind.__name__} of {self.fn.describe()}"


_PARTIAL_ATTRS = {
    "func": lambda tx, p, name: p.fn,
    "args": lambda tx, p, name: TupleVariable(p.args),
    "keywords": lambda tx, p, name: DictVariable(p.kwargs),
}


class PartialVariable(VariableTracker):
    """`functools.partial(fn, *args, **kwargs)` made or read during tracing."""

    __slots__ = ("fn", "args", "kwargs")
    rebuilt_as_new_object = True

    def __init__(self, fn, args, kwargs, source=None):
        super().__init__(source)
        self.fn = fn
        self.args = list(args)
        self.kwargs = dict(kwargs)

    def python_type(self) -> type:
        return functools.partial

    def call_function(self, tx, args, kwargs):
        return self.fn.call_function(tx, [*self.args, *args], {**self.kwargs, **kwargs})

    def var_getattr(self, tx, name):
        value = read_attr(tx, self, _PARTIAL_ATTRS, name)
        return value if value is not None else super().var_getattr(tx, name)

    def children(self) -> list:
        return [self.fn, *self.args, *self.kwargs.values()]

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            return super().reconstruct(cg)
        cg.push_callable_const(_make_partial)  # a partial made during tracing: `functools.partial(fn, *args, **kwargs)`
        cg.reconstruct(self.fn)
        cg.reconstruct_items(self.args, "BUILD_TUPLE")
        reconstruct_map(cg, self.kwargs)
        cg.call(3)


def _make_partial(fn, args, kwargs):
    return functools.partial(fn, *args, **kwargs)


_VARIADIC = inspect.CO_VARARGS | inspect.CO_VARKEYWORDS


def bind_arguments(tx, code, defaults: list, kwdefaults: dict, args: list, kwargs: dict) -> dict:
    """Bind call arguments to `code`'s parameters like CPython does; returns name -> tracker."""
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


# ---- builders (vars/registry.py) ---------------------------------------------------------

@register(types.FunctionType)
def build_function(tx, value, source, do_guard: bool) -> VariableTracker:
    original = getattr(value, "__bg_original__", None)
    if original is not None:  # a function compiled by bytegraph: its original is traced
        guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
        return UserFunctionVariable(original, None)
    original = disabled_original(value)
    if original is not None:
        guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
        if not is_torch_function(original):  # a user's: run eagerly at a break, as torch.compile does
            return DisabledFunctionVariable(value, source)
        # torch's own (torch.optim wraps helpers so once torch._dynamo is imported): the
        # wrapper only switches torch.compile's frame hook, so the function is traced
        return UserFunctionVariable(original, None)
    # Code and globals, not identity: a lambda made anew per call is the same program;
    # its defaults and closure contents are guarded where the trace reads them.
    guard(tx, do_guard, GuardKind.FUNCTION_MATCH, source, value)
    return UserFunctionVariable(value, source)


@register(types.CellType)
def build_cell(tx, value, source, do_guard: bool) -> VariableTracker:
    tx.unsupported("a closure cell reached other than through its function", category="unsupported value")


@register(types.MethodType)
def build_method(tx, value, source, do_guard: bool) -> VariableTracker:
    fn = tx.wrap(value.__func__, AttrSource(source, "__func__") if source else None, do_guard)
    obj = tx.wrap(value.__self__, AttrSource(source, "__self__") if source else None, do_guard)
    return MethodObjectVariable(fn, obj, source)


@register(staticmethod, classmethod, exact=True)
def build_method_descriptor(tx, value, source, do_guard: bool) -> VariableTracker:
    guard(tx, do_guard, GuardKind.TYPE_MATCH, source, type(value))
    fn = tx.wrap(value.__func__, AttrSource(source, "__func__") if source is not None else None, do_guard)
    return MethodDescriptorVariable(type(value), fn, source)


@register(functools.partial, exact=True)
def build_partial(tx, value, source, do_guard: bool) -> VariableTracker:
    guard(tx, do_guard, GuardKind.TYPE_MATCH, source, functools.partial)
    sub = (lambda name: AttrSource(source, name)) if source is not None else (lambda name: None)
    fn = tx.wrap(value.func, sub("func"), do_guard)
    args = tx.wrap(value.args, sub("args"), do_guard)
    kwargs = tx.wrap(value.keywords, sub("keywords"), do_guard)
    return PartialVariable(fn, args.unpack(tx), kwargs.items, source)
