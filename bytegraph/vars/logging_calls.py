"""Logging calls in traced code: replayed after the graph (Note [Replayed calls] in
graph/side_effects.py), not graph breaks.

`logger.debug/info/warning/warn/error/critical/fatal/log(...)` on a `logging.Logger` read
from outside (it has a source), and the module functions `logging.debug(...)`, ..., with
a message and arguments that are constants (so the text is what eager formats): the call is
recorded and made by the residual code after the graph, in the trace's order, so the
logger's level, filters and handlers decide at run time exactly as eagerly. A Logger
subclass that overrides a method in Python is traced through its own code (the class's
method is not these functions). Not replayed (a graph break naming the call): a tensor or
any non-constant argument (formatting would run its `__str__`/`__repr__` now),
`exception()` or a true `exc_info`/`stack_info` (they describe the state of the residual
code at the replay, not eager's), a logger made during tracing. The record's caller
fields (`pathname`, `lineno`, `funcName`) name the compiled frame at the replay, not the
inlined function that logged.
"""
from __future__ import annotations

import logging

from .registry import handles
from .constant import ConstantVariable

_LEVEL_METHODS = ("debug", "info", "warning", "warn", "error", "critical", "fatal", "log")
_LOGGER_METHODS = tuple(getattr(logging.Logger, name) for name in _LEVEL_METHODS)
_MODULE_FUNCTIONS = tuple(getattr(logging, name) for name in _LEVEL_METHODS)
_EXC_FUNCTIONS = (logging.Logger.exception, logging.exception)
_TRACE_DESCRIBING = ("exc_info", "stack_info")
_HINT = "log outside the compiled function, or log constants only (format tensors after the call)"


def _refuse(tx, fn, why: str):
    tx.unsupported(f"logging call {fn.__qualname__}() {why}", category="unsupported call", hint=_HINT)


def _check_arguments(tx, fn, args, kwargs) -> None:
    for vt in (*args, *kwargs.values()):
        if not vt.is_python_constant():
            _refuse(tx, fn, f"with argument {vt.describe()}, which is not a constant (its text would be "
                            "formatted now)")
    for name in _TRACE_DESCRIBING:
        if name in kwargs and kwargs[name].as_python_constant():
            _refuse(tx, fn, f"with {name}={kwargs[name].as_python_constant()!r} (it would describe the "
                            "state at the replay after the graph)")


def _is_logger(vt) -> bool:
    try:
        return issubclass(vt.python_type(), logging.Logger)
    except NotImplementedError:
        return False


@handles(*_LOGGER_METHODS)
def _logger_method(tx, fn, args, kwargs):
    if not args:
        tx.raise_user_error(TypeError(f"{fn.__qualname__}() missing 1 required positional argument: 'self'"))
    logger, rest = args[0], args[1:]
    if not _is_logger(logger) or logger.source is None:
        _refuse(tx, fn, f"on {logger.describe()}, not a logging.Logger read from outside")
    _check_arguments(tx, fn, rest, kwargs)
    tx.output.side_effects.record_call(fn, [logger, *rest], kwargs)
    return ConstantVariable(None)


@handles(*_MODULE_FUNCTIONS)
def _module_function(tx, fn, args, kwargs):
    _check_arguments(tx, fn, args, kwargs)
    tx.output.side_effects.record_call(fn, args, kwargs)
    return ConstantVariable(None)


@handles(*_EXC_FUNCTIONS)
def _exception(tx, fn, args, kwargs):
    _refuse(tx, fn, "(it logs the exception being handled, which the replay after the graph does not see)")
