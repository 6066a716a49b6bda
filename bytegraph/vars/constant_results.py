"""Functions whose result is a constant by the user's declaration:
`torch.compiler.assume_constant_result` (it sets `fn._dynamo_marked_constant`; transformers
spells the same marker itself on `is_torch_available`, `get_torch_version`, ...).

Note [Constant results]
A call of a marked function with constant arguments is made for real at trace time (the
fake mode off: the real world's tensors, should it make any), and its result, an immutable
constant, is folded, as torch.compile does: the body is not traced, and the value is not
guarded (the declaration says it never changes). A result that is not an immutable
constant, a non-constant argument, breaks with the reason; an error of the call is raised
as the user's error where eager raises it. `vars/lru_cache.py` makes the call through the
cache wrapper when the marked function is cached, so the cache fills as eagerly.
"""
from __future__ import annotations

from torch._subclasses.fake_tensor import unset_fake_temporarily

from .constant import ConstantVariable, is_constant_value

_HINT = "return a constant (a number, string, bool, None or tuple of them) from the marked function"


def is_marked_constant(fn) -> bool:
    """Whether `fn` carries the `assume_constant_result` marker."""
    return getattr(fn, "_dynamo_marked_constant", False) is True


def constant_arguments(args, kwargs) -> bool:
    return all(a.is_python_constant() and is_constant_value(a.as_python_constant()) for a in (*args, *kwargs.values()))


def call_now(tx, fn, args: tuple, kwargs: dict, what: str) -> ConstantVariable:
    """`fn(*args, **kwargs)` on Python values, called now, its result folded (Note [Constant
    results]); `what` names the callable in a break."""
    try:
        with unset_fake_temporarily():
            value = fn(*args, **kwargs)
    except Exception as e:  # the function's own error, raised where eager raises it
        tx.raise_user_error(e)
    if not is_constant_value(value):
        tx.unsupported(f"{what}, whose result ({type(value).__qualname__}) is not an immutable constant",
                       category="unsupported call", hint=_HINT)
    return ConstantVariable(value)


def call_marked(tx, fn, args: list, kwargs: dict) -> ConstantVariable:
    """A call of marked function `fn` with trackers `args`/`kwargs`."""
    name = f"calling {getattr(fn, '__qualname__', fn)}, marked torch.compiler.assume_constant_result"
    if not constant_arguments(args, kwargs):
        tx.unsupported(f"{name}, with arguments that are not hashable constants: "
                       + ", ".join(a.describe() for a in (*args, *kwargs.values())),
                       category="unsupported call", hint="call it with constant arguments")
    return call_now(tx, fn, tuple(a.as_python_constant() for a in args),
                    {k: v.as_python_constant() for k, v in kwargs.items()}, name)
