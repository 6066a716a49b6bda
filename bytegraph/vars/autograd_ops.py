"""The functional backward of a built-in autograd node, as compiled autograd binds it
(`runtime/compiled_autograd.py`, Note [Compiled autograd]): `AutogradOp`, and its tracker,
a graph op (bytegraph runs it on fake tensors and records one call), guarded by identity.
"""
from __future__ import annotations

from ..guards.guard import GuardKind
from .registry import guard, register
from .torch_functions import TorchFunctionVariable


class AutogradOp:
    """`fn(grads, *saved)` of one autograd node type, bound by the engine (`bind_function`)."""

    __slots__ = ("fn", "__name__", "__qualname__")

    def __init__(self, name: str, fn):
        self.fn = fn
        self.__name__ = name
        self.__qualname__ = name

    def __call__(self, *args):
        return self.fn(*args)

    def __repr__(self) -> str:
        return f"compiled_autograd.{self.__name__}"


@register(AutogradOp, exact=True)
def build_autograd_op(tx, value, source, do_guard: bool):
    guard(tx, do_guard, GuardKind.ID_MATCH, source, value)
    return TorchFunctionVariable(value, source)
