"""Symbolic ints, floats and bools in the trace (torch's SymInt/SymFloat/SymBool): sizes of
tensors with symbolic dimensions, dynamic ints from outside, and what Python arithmetic
makes of them (Note [Symbolic sizes] in graph/shapes.py).

A `SymNodeVariable` holds its fake example (a SymInt, ...) and how the graph computes it:
a node it already has (a placeholder of a size or an int input, an op's result), or
`fn(*args)` over other trackers (`x.size(0)`: a tensor method; `s * 2`: an operator),
made into nodes only when a graph op takes it as an argument, so a size used only by
Python adds nothing to the graph. A use that needs a Python value (`as_python_constant`,
`truth`: an `if`, `range()`, an index, a dict key, formatting) specializes it: torch's
`guard_int`/`guard_bool` record the fact as a ShapeEnv guard, located at the user's line.
Residual code recomputes a returned symbolic value from the sources it came from.

API for other trackers: `vt.is_symbolic()` (base.py) says whether a value is symbolic;
`vt.as_python_constant()` specializes it; `symbolic_operator` applies an operator.
"""
from __future__ import annotations

import operator

import torch
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode, free_unbacked_symbols

from .base import VariableTracker
from .constant import ConstantVariable
from .containers import SizeVariable, TupleVariable

SYM_TYPES = (torch.SymInt, torch.SymFloat, torch.SymBool)
_PYTHON_TYPES = {torch.SymInt: int, torch.SymFloat: float, torch.SymBool: bool}
_NUMBERS = (int, float, bool)


class TensorMethod:
    """`fn` of a `SymNodeVariable` read from a tensor: `tensor.<name>(*args)`."""

    __slots__ = ("name",)

    def __init__(self, name: str):
        self.name = name


class SymNodeVariable(VariableTracker):
    """A symbolic number: its fake `example`, and `node` or `fn(*args)` computing it."""

    __slots__ = ("example", "output", "node", "fn", "args")

    def __init__(self, example, output, node=None, fn=None, args=(), source=None):
        super().__init__(source)
        self.example = example
        self.output = output
        self.node = node
        self.fn = fn
        self.args = tuple(args)

    def python_type(self) -> type:
        return _PYTHON_TYPES[type(self.example)]

    def is_symbolic(self) -> bool:
        return True

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self):
        """The value, specialized: the ShapeEnv guards it from now on. A value computed from
        tensor data (an unbacked symbol) cannot be guarded: a graph break."""
        output = self.output
        shapes = output.shapes
        before = len(shapes.env.guards)
        tx = output.current_tx
        try:
            value = _PYTHON_TYPES[type(self.example)](self.example)
        except GuardOnDataDependentSymNode as e:
            if tx is None:
                raise
            _data_dependent_guard(tx, e, "Python code")
        shapes.locate(before, tx.guard_location() if tx is not None else "")
        return value

    def truth(self, tx) -> bool:
        return bool(self.as_python_constant())

    def var_getattr(self, tx, name: str) -> VariableTracker:
        return ConstantVariable(self.as_python_constant()).var_getattr(tx, name)

    def children(self) -> list:
        return [a for a in self.args if isinstance(a, VariableTracker)]

    def as_fx_arg(self, tx):
        if type(self.example) is torch.SymFloat and tx.output.in_subgraph():
            # higher-order ops take tensors and ints as body inputs, not floats: the body
            # reads the value, specialized (guarded)
            return self.as_python_constant()
        node = self.node
        if node is not None:
            return tx.output.lift(node) if node.graph is not tx.output.graph else node
        expr = self.output.shapes.env.replace(self.example.node.expr)
        if expr.is_number:  # specialized since it was made
            return self.as_python_constant()
        symbol_node = tx.output.symbol_input(expr)
        if symbol_node is not None:
            return tx.output.lift(symbol_node) if symbol_node.graph is not tx.output.graph else symbol_node
        args = tuple(_fx_arg(tx, a) for a in self.args)
        if type(self.fn) is TensorMethod:
            node = tx.output.graph.call_method(self.fn.name, args)
        else:
            node = tx.output.graph.call_function(self.fn, args)
        node.meta["example_value"] = self.example
        return node

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        if self.fn is None:  # an op's result: only its value is known here
            cg.load_const(self.as_python_constant())
            return
        if type(self.fn) is TensorMethod:
            cg.reconstruct(self.args[0])
            cg.load_method(self.fn.name)
            for arg in self.args[1:]:
                _reconstruct(cg, arg)
            cg.call(len(self.args) - 1)
            return
        cg.push_callable_const(self.fn)
        for arg in self.args:
            _reconstruct(cg, arg)
        cg.call(len(self.args))

    def describe(self) -> str:
        kind = _PYTHON_TYPES[type(self.example)].__name__
        if free_unbacked_symbols(self.example):
            return f"a data-dependent {kind} ({self.example})"
        return f"a symbolic {kind} ({self.example})"


def is_unbacked(vt) -> bool:
    """Whether tracker `vt` is a number computed from tensor data (its expression has an
    unbacked symbol: Note [Data-dependent capture] in graph/shapes.py)."""
    return type(vt) is SymNodeVariable and bool(free_unbacked_symbols(vt.example))


def _data_dependent_guard(tx, e: GuardOnDataDependentSymNode, what: str):
    tx.unsupported(f"{what} needs the value of {e.cond}, which depends on tensor data (a data-dependent guard)",
                   category="data-dependent",
                   hint="keep the computation in torch ops (e.g. torch.where, torch.cond) or move this line "
                        "outside the compiled function")


def _fx_arg(tx, a):
    return a.as_fx_arg(tx) if isinstance(a, VariableTracker) else a


def _reconstruct(cg, a) -> None:
    if isinstance(a, VariableTracker):
        cg.reconstruct(a)
    else:
        cg.load_const(a)


def wrap_symbolic(output, example, node=None, fn=None, args=()) -> VariableTracker:
    """A tracker for `example`, a number computed in the trace: symbolic if it still is."""
    if type(example) in SYM_TYPES:
        expr = example.node.expr
        if not expr.is_number:
            return SymNodeVariable(example, output, node, fn, args)
        example = _PYTHON_TYPES[type(example)](example)
    return ConstantVariable(example)


def tensor_metadata(tx, tensor, name: str, args: tuple, value) -> VariableTracker:
    """`tensor.<name>(*args)` whose fake result `value` may hold SymInts: a torch.Size or a
    tuple of symbolic items (`size()`, `stride()`), or one number (`size(0)`, `numel()`)."""
    if isinstance(value, tuple):
        method = TensorMethod("size" if name == "shape" else name)
        items = [wrap_symbolic(tx.output, v, fn=method, args=(tensor, i)) for i, v in enumerate(value)]
        return SizeVariable(items) if isinstance(value, torch.Size) else TupleVariable(items)
    return wrap_symbolic(tx.output, value, fn=TensorMethod(name), args=(tensor, *args))


def _operand(tx, vt):
    """The fake example of operand `vt` (a number, symbolic or not), or None."""
    if type(vt) is SymNodeVariable:
        return vt.example
    if vt.is_symbolic():  # an unpinned expression over dynamic ints may simplify to a number (`n - n`)
        return _operand(tx, vt.symbolic(tx))
    if vt.is_python_constant():
        value = vt.as_python_constant()
        if type(value) in _NUMBERS:
            return value
    return None


_FOLDED = frozenset({operator.is_, operator.is_not})


def symbolic_operator(tx, fn, args: list) -> VariableTracker | None:
    """`fn(*args)` when an operand is symbolic and the others numbers; None otherwise."""
    if fn in _FOLDED or not any(a.is_symbolic() for a in args):
        return None
    operands = []
    for a in args:
        example = _operand(tx, a)
        if example is None:
            return None
        operands.append(a if type(a) is SymNodeVariable or a.is_symbolic() else example)
    values = [_operand(tx, a) if isinstance(a, VariableTracker) else a for a in operands]
    if fn in _DIVISIONS and type(values[1]) in SYM_TYPES and _divides_by_zero(tx, fn, values[1]):
        # whether it raises is decided, and guarded, as a branch on `divisor == 0` is; the
        # error is eager's own, from the operation on the values this trace was made for
        hints = [v.node.hint if type(v) in SYM_TYPES else v for v in values]
        try:
            fn(*hints)
        except ZeroDivisionError as e:
            tx.raise_user_error(e)
    try:
        result = fn(*values)
    except GuardOnDataDependentSymNode as e:  # `fn` needs the value of a number read from tensor data
        _data_dependent_guard(tx, e, f"{getattr(fn, '__name__', fn)}()")
    except Exception as e:  # the user's own arithmetic raises (ZeroDivisionError, ...)
        tx.raise_user_error(e)
    return wrap_symbolic(tx.output, result, fn=fn, args=operands)


def _divides_by_zero(tx, fn, divisor) -> bool:
    """Whether symbolic `divisor` is zero (guarded; a number read from tensor data breaks)."""
    try:
        return bool(divisor == 0)
    except GuardOnDataDependentSymNode as e:
        _data_dependent_guard(tx, e, f"{getattr(fn, '__name__', fn)}()")


# the operators that raise ZeroDivisionError for a zero right operand
_DIVISIONS = frozenset({operator.truediv, operator.itruediv, operator.floordiv, operator.ifloordiv,
                        operator.mod, operator.imod, divmod})


class SymbolicSliceVariable(VariableTracker):
    """`slice(a, b, c)` with a symbolic part: an FX argument as a slice of nodes (`x[:n]`)."""

    __slots__ = ("parts",)

    def __init__(self, parts):
        super().__init__(None)
        self.parts = list(parts)

    def python_type(self) -> type:
        return slice

    def is_python_constant(self) -> bool:
        return True

    def as_python_constant(self):
        return slice(*[p.as_python_constant() for p in self.parts])

    def children(self) -> list:
        return list(self.parts)

    def as_fx_arg(self, tx):
        return slice(*[p.as_fx_arg(tx) for p in self.parts])

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(slice)
        for part in self.parts:
            cg.reconstruct(part)
        cg.call(len(self.parts))

    def describe(self) -> str:
        return "a slice with a symbolic bound"
