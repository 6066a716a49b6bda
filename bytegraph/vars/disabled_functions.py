"""Functions marked `torch.compiler.disable` (`torch._dynamo.disable`): run eagerly.

The mark is a wrapper with `_torchdynamo_disable` set and the function in
`_torchdynamo_orig_callable`. A user's own marked function is not traced, as under
torch.compile: its call is a graph break, the wrapper runs it eagerly (and with it every
call it makes), and tracing resumes after it. torch marks some of its own helpers (the
optimizers') only because torch.compile cannot trace them; bytegraph traces those
(`functions.build_function`)."""
from __future__ import annotations

import types

from .base import CallableValueVariable

_HINT = ("the call runs eagerly at a graph break, as torch.compile runs it; remove "
         "torch.compiler.disable to trace it")


def disabled_original(value) -> types.FunctionType | None:
    """The function that a `torch.compiler.disable` wrapper `value` runs, or None."""
    original = getattr(value, "_torchdynamo_orig_callable", None)
    if getattr(value, "_torchdynamo_disable", False) and type(original) is types.FunctionType:
        return original
    return None


def is_torch_function(fn: types.FunctionType) -> bool:
    """Whether `fn` is torch's own (its module is in the torch package)."""
    module = fn.__globals__.get("__name__", "") or ""
    return module == "torch" or module.startswith("torch.")


class DisabledFunctionVariable(CallableValueVariable):
    """A user's function marked `torch.compiler.disable`: calling it is a graph break."""

    __slots__ = ()

    def call_function(self, tx, args, kwargs):
        original = disabled_original(self.fn)
        message = getattr(self.fn, "_torchdynamo_disable_msg", None)
        tx.unsupported(f"call to {original.__qualname__}(), which torch.compiler.disable marks as not compiled"
                       + (f" ({message})" if message else ""), category="disabled function", hint=_HINT)

    def describe(self) -> str:
        return f"function {disabled_original(self.fn).__qualname__} (torch.compiler.disable)"
