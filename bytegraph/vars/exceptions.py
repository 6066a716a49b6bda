"""Exception instances in traced code: `ExceptionVariable` and how one is made.

An `ExceptionVariable` is an exception the traced program made (`ValueError("x")`, an
instance of a user exception class without its own `__init__`/`__new__`) or one a
builtin raised while being traced (`KeyError` from a dict lookup): its class, its
`args` (trackers, or None when the real arguments are not Python constants), and its
`__cause__`/`__context__`/`__suppress_context__`. The translator raises and catches
them through the frames' exception tables (Note [Traced exceptions] in
translate/translator.py); one that escapes the compiled function runs the frame
eagerly. Residual code rebuilds one as `cls(*args)` plus its chaining attributes.
"""
from __future__ import annotations

import dis
import types

from .base import VariableTracker
from .constant import ConstantVariable, is_constant_value
from .containers import TupleVariable
from .method_table import read_attr


def _write_context(tx, exc, value) -> None:
    tx.output.side_effects.mutate(exc)
    exc.context = value


def _write_suppress_context(tx, exc, value) -> None:
    tx.output.side_effects.mutate(exc)
    exc.suppress_context = ConstantVariable(value.truth(tx))


# the chaining attributes, each with its writer (tx, exception, value)
_CHAINING = {
    "__cause__": lambda tx, exc, value: exc.set_cause(tx, value),
    "__context__": _write_context,
    "__suppress_context__": _write_suppress_context,
}


def _read_args(tx, exc, name):
    if exc.args is None:
        tx.unsupported(f"reading args of {exc.describe()} whose arguments are not constants",
                       category="unsupported attribute")
    return TupleVariable(list(exc.args))


def _read_value(tx, exc, name):
    """`StopIteration.value`: a generator's return value (None: not a StopIteration with known args)."""
    if issubclass(exc.cls, StopIteration) and exc.args is not None:
        return exc.args[0] if exc.args else ConstantVariable(None)
    return None


# the attributes the tracker holds (any other is read from the real exception, if constant)
_EXCEPTION_ATTRS = {
    "args": _read_args,
    "__cause__": lambda tx, exc, name: exc.cause,
    "__context__": lambda tx, exc, name: exc.context,
    "__suppress_context__": lambda tx, exc, name: exc.suppress_context,
    "__class__": lambda tx, exc, name: tx.wrap(exc.cls, None),
    "value": _read_value,
    "__traceback__": lambda tx, exc, name: TracebackVariable(exc) if exc.has_traceback else ConstantVariable(None),
}


class ExceptionVariable(VariableTracker):
    __slots__ = ("cls", "args", "real", "cause", "context", "suppress_context", "has_traceback")
    rebuilt_as_new_object = True  # `_rebuild` makes a new one: one build per tracker keeps `is`

    def __init__(self, cls: type, args, real: BaseException | None = None):
        super().__init__(None)
        self.cls = cls
        self.args = args  # list of trackers, or None (unknown: read from `real` only)
        self.real = real
        self.cause = ConstantVariable(None)
        self.context = ConstantVariable(None)
        self.suppress_context = ConstantVariable(False)
        self.has_traceback = False  # raised in the trace (`unwound`)

    @staticmethod
    def from_real(exc: BaseException) -> "ExceptionVariable":
        """The tracker of an exception a builtin raised at trace time."""
        args = [ConstantVariable(a) for a in exc.args] if all(is_constant_value(a) for a in exc.args) else None
        return ExceptionVariable(type(exc), args, exc)

    def python_type(self) -> type:
        return self.cls

    def children(self):
        return (*(self.args or ()), self.cause, self.context)

    def describe(self) -> str:
        return f"{self.cls.__qualname__} exception"

    def message(self) -> str:
        """`Type: str(exc)` as a traceback prints it (for logs and explain)."""
        text = str(self.real) if self.real is not None else self._str_of_args(str)
        return f"{self.cls.__name__}: {text}" if text else self.cls.__name__

    def _str_of_args(self, fn) -> str:
        if self.args is None or not all(a.is_python_constant() for a in self.args):
            return "<non-constant arguments>"
        args = [a.as_python_constant() for a in self.args]
        # `args` are what the base was given (a Python constructor's `super().__init__(msg)`)
        return fn(self.cls(*args) if is_plain_exception_class(self.cls) else _made_by_builtin_base(self.cls, args))

    def str_impl(self, tx, fn) -> VariableTracker:
        """`str(exc)` / `repr(exc)`, folded on the real class with the constant args."""
        if any(_defined_in_python(self.cls, name) for name in ("__str__", "__repr__")):
            tx.unsupported(f"{fn.__name__}() of {self.describe()} with a __str__/__repr__ written in Python",
                           category="unsupported call")
        if self.args is None or not all(a.is_python_constant() for a in self.args):
            if self.real is None:
                tx.unsupported(f"{fn.__name__}() of {self.describe()} with non-constant arguments",
                               category="unsupported call")
            return ConstantVariable(fn(self.real))
        return ConstantVariable(self._str_of_args(fn))

    def var_getattr(self, tx, name: str) -> VariableTracker:
        value = read_attr(tx, self, _EXCEPTION_ATTRS, name)
        if value is not None:
            return value
        if self.real is not None and not _defined_in_python(self.cls, name):
            value = getattr(self.real, name, None)
            if is_constant_value(value) and (value is not None or hasattr(self.real, name)):
                return ConstantVariable(value)
        return super().var_getattr(tx, name)

    def hasattr_impl(self, tx, name: str) -> bool:
        if name in ("args", "__class__", *_CHAINING):
            return True
        return super().hasattr_impl(tx, name)

    def store_attr(self, tx, name: str, value: VariableTracker) -> None:
        if name == "__traceback__" and isinstance(value, TracebackVariable) and value.exc is self:
            return  # its own traceback, which a `with` exit received: it has it already
        write = _CHAINING.get(name)
        if write is None:
            return super().store_attr(tx, name, value)
        write(tx, self, value)

    def unwound(self, tx) -> None:
        """A frame unwinds for this exception: CPython adds the frame to its traceback, so its
        `__traceback__` is one from now on (state no program write made: `touch`)."""
        if not self.has_traceback:
            tx.output.side_effects.touch(self)
            self.has_traceback = True

    def set_cause(self, tx, cause: VariableTracker) -> None:
        """`raise self from cause` / `exc.__cause__ = cause` (also suppresses the context)."""
        tx.output.side_effects.mutate(self)
        self.cause = cause
        self.suppress_context = ConstantVariable(True)

    def set_context(self, tx, context: VariableTracker) -> None:
        """What raising this while `context` is being handled records (CPython's
        `_PyErr_SetObject`: never itself)."""
        if context is self or context is self.context:
            return
        tx.output.side_effects.mutate(self)
        self.context = context

    def reconstruct(self, cg) -> None:
        if self.args is None:
            cg.tx.unsupported(f"returning {self.describe()} whose arguments are not constants",
                              category="unsupported output")
        cg.push_callable_const(_rebuild)
        cg.load_const(self.cls)
        for arg in self.args:
            cg.reconstruct(arg)
        cg.build("BUILD_TUPLE", len(self.args))
        cg.reconstruct(self.cause)
        cg.reconstruct(self.context)
        cg.reconstruct(self.suppress_context)
        cg.load_const(self._instance_state(cg.tx))
        cg.call(6)

    def _instance_state(self, tx) -> dict | None:
        """None when `cls(*args)` rebuilds the exception (a plain class); else the attributes its
        own `__init__` gave the trace-time instance, for a rebuild that does not call it again
        (its parameters need not be its `args`: `FuzzError(msg, code)` stores `args == (msg,)`)."""
        if is_plain_exception_class(self.cls):
            return None
        state = vars(self.real) if self.real is not None else None
        if state is None or not all(is_constant_value(v) for v in state.values()):
            tx.unsupported(f"rebuilding {self.describe()}, whose class has its own constructor, with "
                           "attributes that are not constants", category="unsupported output")
        return dict(state)


class HandlerSlotVariable(VariableTracker):
    """The stack slot PUSH_EXC_INFO leaves under the exception an `except`/`finally`/`with`
    handler handles: the exception handled before it (`previous`, a tracker or
    `ConstantVariable(None)`: what the handler's POP_EXCEPT makes current again), plus the
    exception this handler handles (`exc`) and the line of this frame it was raised at.
    Residual code re-entering the handler at a graph break makes `exc` the thread's
    exception being handled again (Note [Handlers at a break] in translate/breaks.py);
    nothing else reads the slot."""

    __slots__ = ("previous", "exc", "line")

    def __init__(self, previous: VariableTracker, exc: VariableTracker, line: int):
        super().__init__(None)
        self.previous = previous
        self.exc = exc
        self.line = line

    @property
    def handled_exception(self) -> tuple:
        return self.exc, self.line

    def children(self):
        return (self.previous, self.exc)

    def python_type(self) -> type:
        return self.previous.python_type()

    def describe(self) -> str:
        return f"the exception handled before {self.exc.describe()}"


class TracebackVariable(VariableTracker):
    """The traceback of a traced exception that was raised, as a `with` block's `__exit__`
    receives it or `exc.__traceback__` reads it (3.13's `ExitStack.__exit__`): only passed
    along and compared (`tb is None`), or given back to its exception (`exc.__traceback__ = tb`,
    what `contextmanager`'s exit does); anything else it is asked breaks."""

    __slots__ = ("exc",)

    def __init__(self, exc: VariableTracker):
        super().__init__(None)
        self.exc = exc

    def children(self):
        return (self.exc,)

    def python_type(self) -> type:
        return types.TracebackType

    def describe(self) -> str:
        return "the traceback of a traced exception"


def _rebuild(cls, args, cause, context, suppress_context, state):
    """A fresh exception for residual code: `cls(*args)`, or, for a class with its own
    constructor, what that constructor's `super().__init__(*args)` made (its nearest builtin
    base's `__new__` and `__init__` given `args`: `OSError` sets `errno` there) plus the
    attributes in `state`."""
    if state is None:
        exc = cls(*args)
    else:
        exc = _made_by_builtin_base(cls, args)
        exc.__dict__.update(state)
    exc.__context__ = context
    exc.__cause__ = cause
    exc.__suppress_context__ = suppress_context
    return exc


def _made_by_builtin_base(cls, args) -> BaseException:
    """An instance of `cls` as its nearest builtin base's `__new__` and `__init__` make it
    from `args`, without running a constructor of `cls` written in Python."""
    base = next(k for k in cls.__mro__ if k.__module__ == "builtins")
    exc = base.__new__(cls, *args)
    base.__init__(exc, *args)
    return exc


def _defined_in_python(cls: type, name: str) -> bool:
    for klass in cls.__mro__:
        if name in klass.__dict__:
            value = klass.__dict__[name]
            return isinstance(getattr(value, "__func__", value), types.FunctionType)
    return False


def is_plain_exception_class(cls: type) -> bool:
    """Whether `cls(*args)` only stores `args` (builtin `__new__`/`__init__`), so an
    `ExceptionVariable` models the instance exactly."""
    return issubclass(cls, BaseException) and not (_defined_in_python(cls, "__init__")
                                                   or _defined_in_python(cls, "__new__"))


# Note [Exception constructors run while tracing]
# An instance of an exception class with its own `__init__`/`__new__` is made for real at
# trace time (vars/construction.py::type_call): the trace cannot follow a builtin base's
# constructor. That run is not replayed and not guarded, so it must do nothing but fill in
# the new instance: a constructor that writes a global (`SCALE *= 1.5`), appends to a list
# or reads a global would do it once per trace instead of once per call. Before running it
# for real, `constructor_effect_reason` reads every Python `__init__`/`__new__` of the
# class's MRO: only the opcodes in `_PURE_CONSTRUCTOR_OPS`, `super`, attributes its classes
# do not define, and attribute writes to `self` (in an `__init__`) pass; anything else is
# a graph break at the construction, which then runs eagerly, once. Its arguments are
# immutable constants (`is_constant_value`), so the calls it can make are `super()`'s
# methods (the MRO's constructors, read too, or a builtin base's) and builtin methods.

_PURE_CONSTRUCTOR_OPS = frozenset({
    "NOP", "RESUME", "COPY_FREE_VARS", "LOAD_FAST", "STORE_FAST", "DELETE_FAST", "LOAD_CONST",
    "LOAD_GLOBAL", "LOAD_ATTR", "LOAD_METHOD", "STORE_ATTR", "PUSH_NULL", "PRECALL", "CALL", "KW_NAMES",
    "CALL_FUNCTION_EX", "POP_TOP", "COPY", "SWAP", "RETURN_VALUE", "BINARY_OP", "COMPARE_OP", "IS_OP",
    "CONTAINS_OP", "UNARY_NOT", "UNARY_NEGATIVE", "BUILD_TUPLE", "BUILD_LIST", "BUILD_MAP",
    "BUILD_CONST_KEY_MAP", "BUILD_STRING", "FORMAT_VALUE", "LIST_EXTEND", "LIST_TO_TUPLE", "DICT_MERGE",
    "DICT_UPDATE", "BINARY_SUBSCR", "GET_ITER", "FOR_ITER", "JUMP_FORWARD", "JUMP_BACKWARD",
    "POP_JUMP_FORWARD_IF_FALSE", "POP_JUMP_FORWARD_IF_TRUE", "POP_JUMP_FORWARD_IF_NONE",
    "POP_JUMP_FORWARD_IF_NOT_NONE", "POP_JUMP_BACKWARD_IF_FALSE", "POP_JUMP_BACKWARD_IF_TRUE",
    "POP_JUMP_BACKWARD_IF_NONE", "POP_JUMP_BACKWARD_IF_NOT_NONE", "JUMP_IF_FALSE_OR_POP",
    "JUMP_IF_TRUE_OR_POP",
    # 3.12 and 3.13 (LOAD_DEREF: only of `__class__`, the one free variable allowed, for `super()`)
    "RETURN_CONST", "LOAD_SUPER_ATTR", "LOAD_DEREF", "LOAD_FAST_CHECK", "LOAD_FAST_LOAD_FAST",
    "STORE_FAST_STORE_FAST", "STORE_FAST_LOAD_FAST", "CALL_KW", "TO_BOOL", "POP_JUMP_IF_FALSE",
    "POP_JUMP_IF_TRUE", "POP_JUMP_IF_NONE", "POP_JUMP_IF_NOT_NONE", "END_FOR", "BINARY_SLICE",
    "CONVERT_VALUE", "FORMAT_SIMPLE", "FORMAT_WITH_SPEC",
})
_CONSTRUCTORS = ("__init__", "__new__")
_NOT_ATTRIBUTES = frozenset({"__module__", "__qualname__", "__doc__", "__dict__", "__weakref__", *_CONSTRUCTORS})


def constructor_effect_reason(cls: type) -> str | None:
    """Why running `cls(*constants)` for real while tracing could do more than fill in the
    new instance (Note [Exception constructors run while tracing]); None when it cannot."""
    user = [k for k in cls.__mro__ if k.__module__ != "builtins"]
    defined = {name for k in user for name in vars(k)} - _NOT_ATTRIBUTES
    for hook in ("__setattr__", "__getattribute__", "__getattr__", "__delattr__"):
        if hook in defined:
            return f"its class defines {hook}"
    for k in user:
        for name in _CONSTRUCTORS:
            if name not in vars(k):
                continue
            fn = vars(k)[name]
            fn = getattr(fn, "__func__", fn)  # `__new__` is a staticmethod
            if not isinstance(fn, types.FunctionType):
                return f"{k.__qualname__}.{name} is not a Python function"
            why = _constructor_code_reason(fn, defined, writes_self=name == "__init__")
            if why is not None:
                return f"{k.__qualname__}.{name} {why}"
    return None


def _constructor_code_reason(fn: types.FunctionType, defined: set, writes_self: bool) -> str | None:
    code = fn.__code__
    if set(code.co_freevars) - {"__class__"}:
        return "closes over variables of an enclosing function"
    self_name = code.co_varnames[0] if code.co_argcount else None
    insts = list(dis.get_instructions(code))
    for i, inst in enumerate(insts):
        op, name = inst.opname, inst.argval
        if op not in _PURE_CONSTRUCTOR_OPS:
            return f"runs {op}"
        if op == "LOAD_GLOBAL" and (name != "super" or name in fn.__globals__):
            return f"reads the global {name}"
        if op in ("LOAD_ATTR", "LOAD_METHOD", "LOAD_SUPER_ATTR", "STORE_ATTR") and name in defined:
            return f"uses {name}, which its classes define"
        if op == "STORE_ATTR" and not (writes_self and _local_pushed_last(insts[i - 1]) == self_name):
            return f"writes the attribute {name} of an object other than the new instance"
        if self_name in _locals_written(inst):
            return f"rebinds {self_name}"
    return None


def _local_pushed_last(inst) -> str | None:
    """The local whose value `inst` leaves on top of the stack (3.13's superinstructions too)."""
    if inst.opname in ("LOAD_FAST", "LOAD_FAST_CHECK"):
        return inst.argval
    if inst.opname in ("LOAD_FAST_LOAD_FAST", "STORE_FAST_LOAD_FAST"):
        return inst.argval[1]
    return None


def _locals_written(inst) -> tuple:
    """The locals `inst` stores or deletes."""
    if inst.opname in ("STORE_FAST", "DELETE_FAST"):
        return (inst.argval,)
    if inst.opname == "STORE_FAST_STORE_FAST":
        return inst.argval
    if inst.opname == "STORE_FAST_LOAD_FAST":
        return inst.argval[:1]
    return ()


def construct_exception(tx, cls: type, args: list, kwargs: dict) -> ExceptionVariable:
    """`cls(*args)` for a plain exception class (`is_plain_exception_class`)."""
    if kwargs:
        tx.unsupported(f"keyword arguments to {cls.__qualname__}()", category="unsupported call")
    real = None
    if all(a.is_python_constant() for a in args):
        try:
            real = cls(*[a.as_python_constant() for a in args])
        except Exception as e:  # the builtin constructor rejects the arguments, as it would eagerly
            tx.raise_user_error(e)
    return ExceptionVariable(cls, list(args), real)


def new_exception(tx, cls_vt: VariableTracker) -> ExceptionVariable:
    """`raise Cls` with a class: CPython instantiates it with no arguments."""
    return as_exception(tx, cls_vt.call_function(tx, [], {}))


def as_exception(tx, vt: VariableTracker) -> ExceptionVariable:
    """The exception `raise vt` raises: an instance, or a class called with no arguments;
    anything else raises TypeError in the traced program."""
    kind = vt.python_type()
    if isinstance(vt, ExceptionVariable):
        return vt
    if vt.is_python_constant() and isinstance(vt.as_python_constant(), type) \
            and issubclass(vt.as_python_constant(), BaseException):
        return new_exception(tx, vt)
    if issubclass(kind, BaseException):
        real = getattr(vt, "value", None)
        if vt.source is not None:  # its args and attributes would be read unguarded, and it is rebuilt as a copy
            tx.unsupported(f"raising {vt.describe()}, an exception object made outside the traced code",
                           category="unsupported exception")
        if isinstance(real, BaseException):  # an instance made by a user __init__ at trace time
            return ExceptionVariable.from_real(real)
        tx.unsupported(f"raising {vt.describe()}", category="unsupported exception")
    tx.raise_user_error(TypeError("exceptions must derive from BaseException"))
