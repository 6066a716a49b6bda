"""`inspect.signature` of a Python function in traced code: `SignatureVariable`,
`ParameterVariable`, `BoundArgumentsVariable`.

The signature is made from the function's code (parameter names and kinds, which the
function's guards pin) and its defaults as trackers (`default_trackers`: a default read
through `.default` is the function's real default, guarded like a call that uses it). The
presence of `__wrapped__` / `__signature__` on the function, which `inspect.signature`
follows, is guarded; a function that has either is a graph break, as are callables that
are not plain functions or their bound methods (whose first parameter is dropped, as
`inspect` does), annotations (`.annotation`, `.return_annotation`) and
`BoundArguments.apply_defaults()`. `.parameters` is traced as a dict (name -> parameter),
not a read-only mappingproxy. `.bind()`/`.bind_partial()` bind with CPython's own rules:
the real `inspect.Signature.bind` runs on placeholders standing for the argument
trackers, so its errors are eager's. Escaping values are rebuilt as real `inspect` objects
(`inspect.signature(fn)` of the function, rebuilt or guarded as any value).
"""
from __future__ import annotations

import inspect

from .base import MethodOfVariable, VariableTracker
from .registry import handles
from .classes import ClassVariable
from .constant import ConstantVariable
from .containers import DictVariable, TupleVariable
from .functions import BaseFunctionVariable, BoundMethodVariable
from .method_table import read_attr

_KIND = inspect.Parameter
_PARAMETER_CONSTANTS = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD", "VAR_POSITIONAL", "KEYWORD_ONLY", "VAR_KEYWORD")
_ANNOTATIONS = "annotations in inspect.signature() are not traced"


@handles(inspect.signature)
def _signature(tx, fn, args, kwargs):
    if len(args) != 1 or kwargs:
        tx.unsupported("inspect.signature() with options", category="unsupported call")
    target = args[0]
    fn = target.fn if isinstance(target, BoundMethodVariable) else target
    if not isinstance(fn, BaseFunctionVariable):
        tx.unsupported(f"inspect.signature() of {target.describe()} (only plain Python functions are traced, "
                       "and their bound methods)", category="unsupported call")
    for name in ("__wrapped__", "__signature__"):
        if fn.hasattr_impl(tx, name):
            tx.unsupported(f"inspect.signature() of {target.describe()}, which has {name}",
                           category="unsupported call")
    sig = SignatureVariable(target)
    sig.params = _parameters(tx, fn, sig)
    if fn is not target:  # a bound method: the first parameter is bound (inspect's _signature_bound_method)
        if not sig.params or sig.params[0].kind in (_KIND.KEYWORD_ONLY, _KIND.VAR_KEYWORD):
            tx.raise_user_error(ValueError("invalid method signature"))
        if sig.params[0].kind is not _KIND.VAR_POSITIONAL:
            sig.params = sig.params[1:]
    return sig


def _parameters(tx, fn_vt, sig) -> list:
    code = fn_vt.get_code()
    defaults, kwdefaults = fn_vt.default_trackers(tx)
    names = code.co_varnames
    nargs, nkwonly = code.co_argcount, code.co_kwonlyargcount
    first_default = nargs - len(defaults)
    params = []
    for i, name in enumerate(names[:nargs]):
        kind = _KIND.POSITIONAL_ONLY if i < code.co_posonlyargcount else _KIND.POSITIONAL_OR_KEYWORD
        params.append(ParameterVariable(sig, name, kind, (lambda i=i: defaults[i - first_default])
                                        if i >= first_default else None))
    index = nargs
    if code.co_flags & inspect.CO_VARARGS:
        params.append(ParameterVariable(sig, names[nargs + nkwonly], _KIND.VAR_POSITIONAL, None))
    for name in names[index:index + nkwonly]:
        params.append(ParameterVariable(sig, name, _KIND.KEYWORD_ONLY,
                                        (lambda name=name: kwdefaults[name]) if name in kwdefaults else None))
    if code.co_flags & inspect.CO_VARKEYWORDS:
        varargs = 1 if code.co_flags & inspect.CO_VARARGS else 0
        params.append(ParameterVariable(sig, names[nargs + nkwonly + varargs], _KIND.VAR_KEYWORD, None))
    return params


def _not_traced(reason: str, category: str):
    """The reader of an attribute that is not traced: a graph break with `reason`."""
    def read(tx, vt, name):
        tx.unsupported(reason, category=category)
    return read


_PARAMETER_ATTRS = {
    "name": lambda tx, param, name: ConstantVariable(param.name),
    "kind": lambda tx, param, name: ConstantVariable(param.kind),
    "default": lambda tx, param, name: param.default_value(),
    **dict.fromkeys(_PARAMETER_CONSTANTS, lambda tx, param, name: ConstantVariable(getattr(inspect.Parameter, name))),
    "empty": lambda tx, param, name: ClassVariable(inspect.Parameter.empty),
    "annotation": _not_traced(_ANNOTATIONS, "unsupported attribute"),
}


class ParameterVariable(VariableTracker):
    """An `inspect.Parameter`: name and kind fixed by the code; the default read on demand.
    Rebuilt as `inspect.signature(fn).parameters[name]`."""

    __slots__ = ("sig", "name", "kind", "default_of")

    def __init__(self, sig, name: str, kind, default_of):
        super().__init__(None)
        self.sig = sig
        self.name = name
        self.kind = kind
        self.default_of = default_of  # () -> the default's tracker, or None: no default

    def python_type(self) -> type:
        return inspect.Parameter

    def default_value(self):
        if self.default_of is None:
            return ClassVariable(inspect.Parameter.empty)
        return self.default_of()

    def var_getattr(self, tx, name):
        value = read_attr(tx, self, _PARAMETER_ATTRS, name)
        return value if value is not None else super().var_getattr(tx, name)

    def children(self):
        return [self.sig]

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(_parameter_of)
        cg.reconstruct(self.sig)
        cg.load_const(self.name)
        cg.call(2)

    def describe(self) -> str:
        return f"inspect.Parameter {self.name!r}"


def _parameter_of(sig, name):
    return sig.parameters[name]


_SIGNATURE_ATTRS = {
    "parameters": lambda tx, sig, name: DictVariable({p.name: p for p in sig.params}),
    **dict.fromkeys(("bind", "bind_partial"), lambda tx, sig, name: MethodOfVariable(sig, name)),
    "return_annotation": _not_traced(_ANNOTATIONS, "unsupported attribute"),
}


class SignatureVariable(VariableTracker):
    """An `inspect.Signature` of a traced function, rebuilt as `inspect.signature(fn)` (the
    function is guarded, or rebuilt itself, so the real signature is the same)."""

    __slots__ = ("fn_vt", "params")

    def __init__(self, fn_vt):
        super().__init__(None)
        self.fn_vt = fn_vt
        self.params = []

    def python_type(self) -> type:
        return inspect.Signature

    def real(self) -> inspect.Signature:
        """A real signature with the same names and kinds (defaults stand in as `None`)."""
        return inspect.Signature([inspect.Parameter(p.name, p.kind,
                                                    **({} if p.default_of is None else {"default": None}))
                                  for p in self.params])

    def var_getattr(self, tx, name):
        value = read_attr(tx, self, _SIGNATURE_ATTRS, name)
        return value if value is not None else super().var_getattr(tx, name)

    def call_method(self, tx, name, args, kwargs):
        if name not in ("bind", "bind_partial"):
            return super().call_method(tx, name, args, kwargs)
        objs = [_Placeholder(vt) for vt in args]
        kw = {k: _Placeholder(vt) for k, vt in kwargs.items()}
        try:
            bound = getattr(self.real(), name)(*objs, **kw)
        except TypeError as e:
            tx.raise_user_error(e)
        return BoundArgumentsVariable(self, DictVariable({k: _unwrap(v) for k, v in bound.arguments.items()}))

    def children(self):
        return [self.fn_vt]

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(inspect.signature)
        cg.reconstruct(self.fn_vt)
        cg.call(1)

    def describe(self) -> str:
        return "inspect.Signature"


class _Placeholder:
    """Stands for an argument tracker while the real `bind` runs."""

    __slots__ = ("vt",)

    def __init__(self, vt):
        self.vt = vt


def _unwrap(value):
    if isinstance(value, _Placeholder):
        return value.vt
    if isinstance(value, tuple):  # the *args of a VAR_POSITIONAL parameter
        return TupleVariable([_unwrap(v) for v in value])
    return DictVariable({k: _unwrap(v) for k, v in value.items()})  # the **kwargs of VAR_KEYWORD


_BOUND_ARGUMENTS_ATTRS = {
    "arguments": lambda tx, bound, name: bound.arguments,
    "signature": lambda tx, bound, name: bound.signature,
    **dict.fromkeys(("args", "kwargs"), lambda tx, bound, name: _unwrap(getattr(bound._real(tx), name))),
    "apply_defaults": _not_traced("inspect.BoundArguments.apply_defaults() is not traced", "unsupported call"),
}


class BoundArgumentsVariable(VariableTracker):
    """`inspect.BoundArguments`: `arguments` (a dict tracker, name -> argument), `args`,
    `kwargs` and `signature` computed from it as `inspect` does."""

    __slots__ = ("signature", "arguments")

    def __init__(self, signature: SignatureVariable, arguments: DictVariable):
        super().__init__(None)
        self.signature = signature
        self.arguments = arguments

    def python_type(self) -> type:
        return inspect.BoundArguments

    def _real(self, tx):
        kinds = {p.name: p.kind for p in self.signature.params}
        arguments = {}
        for name, vt in self.arguments.items.items():
            if name not in kinds:
                tx.unsupported(f"inspect.BoundArguments with an argument {name!r} not in its signature",
                               category="unsupported call")
            arguments[name] = _rewrap(tx, vt, kinds[name])
        return inspect.BoundArguments(self.signature.real(), arguments)

    def var_getattr(self, tx, name):
        value = read_attr(tx, self, _BOUND_ARGUMENTS_ATTRS, name)
        return value if value is not None else super().var_getattr(tx, name)

    def children(self):
        return [self.signature, self.arguments]

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(inspect.BoundArguments)
        cg.reconstruct(self.signature)
        cg.reconstruct(self.arguments)
        cg.call(2)

    def describe(self) -> str:
        return "inspect.BoundArguments"


def _rewrap(tx, vt, kind):
    """The placeholder form of the argument tracker of a parameter of kind `kind`."""
    if kind is _KIND.VAR_POSITIONAL:
        return tuple(_Placeholder(v) for v in vt.unpack(tx))
    if kind is _KIND.VAR_KEYWORD:
        if not isinstance(vt, DictVariable):
            tx.unsupported(f"inspect.BoundArguments with **kwargs {vt.describe()}", category="unsupported call")
        return {k: _Placeholder(v) for k, v in vt.items.items()}
    return _Placeholder(vt)
