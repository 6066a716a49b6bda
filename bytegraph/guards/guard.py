"""Guards: one checked fact about the caller's world, expressed over a `Source`.

A guard renders as a Python boolean expression (`clause(consts)`), where objects that
cannot be spelled as literals (types, dtypes, identities) are bound to names returned
through `consts`. Guards are deduplicated by (kind, source).
"""
from __future__ import annotations

import enum
import math
import sys
import types
from dataclasses import dataclass

from .sources import Source
import torch


class GuardKind(enum.Enum):
    TENSOR_MATCH = "tensor"
    CONSTANT_MATCH = "constant"
    TYPE_MATCH = "type"
    ID_MATCH = "identity"
    LEN_MATCH = "length"
    NONEMPTY = "emptiness"       # expected: whether the container is non-empty (its truth, not its length)
    DICT_KEYS = "dict keys"
    NOT_PRESENT = "absent"
    PRESENT = "present"
    GRAD_MODE = "grad mode"
    NO_CALLER_EXCEPTION = "no exception being handled"  # the caller handles none (Note [The caller's exception])
    NO_ALIASING = "no aliasing"
    SAME_OBJECT = "same object"  # expected: another Source that must be the same object
    SET_MATCH = "set elements"   # expected: frozenset of the set's elements
    FUNCTION_MATCH = "function"  # expected: the function; guards its code and globals, not its identity
    KEY_IN = "dict key"          # source: an item source base[key]; expected: whether key is in base
    DYNAMIC_TENSOR = "dynamic tensor"  # a tensor with symbolic sizes (expected: TensorSpec); rendered as SHAPE
    SHAPE = "shape"              # expected: a ShapeClause (graph/shapes.py, Note [Symbolic sizes])

    # A member equals only itself, so its identity hash will do: Enum's own hashes its name in
    # Python, and every guard added is looked up by a (kind, source) key.
    __hash__ = object.__hash__


@dataclass(frozen=True, slots=True)
class TensorSpec:
    """What a tensor guard pins: everything the trace's fake tensor copied from the real one."""

    type: type
    dtype: object
    device: object
    shape: tuple
    stride: tuple
    requires_grad: bool

    @classmethod
    def of(cls, t) -> "TensorSpec":
        return cls(type(t), t.dtype, t.device, tuple(t.shape), tuple(t.stride()), t.requires_grad)

    def describe(self) -> str:
        return (f"{self.type.__name__}(dtype={self.dtype}, device={self.device}, "
                f"shape={self.shape}, stride={self.stride}, requires_grad={self.requires_grad})")


@dataclass(frozen=True, slots=True)
class ShapeClause:
    """A clause over symbolic sizes: `code` with a `{}` per object of `objects` (bound at
    guard compilation), and `text`, the fact in the user's spelling (`x.size(0) >= 2`)."""

    code: str
    objects: tuple
    text: str


@dataclass(frozen=True, slots=True)
class Guard:
    kind: GuardKind
    source: Source | None
    expected: object = None
    user_location: str = ""

    def clause(self, bind) -> str:
        """Python expression for this guard; `bind(obj)` returns a name bound to `obj`."""
        s = self.source.name() if self.source is not None else ""
        k = self.kind
        if k is GuardKind.TENSOR_MATCH:
            e: TensorSpec = self.expected
            return (f"type({self.source.binding_name()}) is {bind(e.type)} and {s}.dtype is {bind(e.dtype)} "
                    f"and {s}.device == {bind(e.device)} and {s}.shape == {e.shape!r} "
                    f"and {s}.stride() == {e.stride!r} and {s}.requires_grad is {e.requires_grad!r}")
        if k is GuardKind.CONSTANT_MATCH:
            v = self.expected
            if v is None or isinstance(v, bool) or v is Ellipsis:
                return f"{s} is {bind(v)}"
            if type(v) is float and v != v:  # NaN equals nothing: match any NaN
                return f"type({s}) is float and {s} != {s}"
            if type(v) is float and v == 0.0:  # 0.0 == -0.0, but they differ (copysign, 1/x)
                return (f"type({s}) is float and {s} == 0.0 and "
                        f"{bind(math.copysign)}(1.0, {s}) == {math.copysign(1.0, v)!r}")
            return f"type({s}) is {bind(type(v))} and {s} == {bind(v)}"
        if k is GuardKind.TYPE_MATCH:
            return f"type({s}) is {bind(self.expected)}"
        if k is GuardKind.ID_MATCH:
            return f"{s} is {bind(self.expected)}"
        if k is GuardKind.LEN_MATCH:
            return f"len({s}) == {self.expected!r}"
        if k is GuardKind.NONEMPTY:
            return f"len({s}) {'>' if self.expected else '=='} 0"
        if k is GuardKind.DICT_KEYS:
            return f"list({s}) == {bind(list(self.expected))}"
        if k is GuardKind.NOT_PRESENT:
            return f"{self.expected!r} not in {s}"
        if k is GuardKind.PRESENT:
            return f"{self.expected!r} in {s}"
        if k is GuardKind.GRAD_MODE:
            return f"{bind(_grad_enabled())}() is {self.expected!r}"
        if k is GuardKind.NO_CALLER_EXCEPTION:
            return f"{bind(sys.exc_info)}()[1] is None"
        if k is GuardKind.NO_ALIASING:
            names = ", ".join(src.name() for src in self.expected)
            return f"len({{id(v) for v in ({names},)}}) == {len(self.expected)}"
        if k is GuardKind.SAME_OBJECT:
            return f"{self.source.binding_name()} is {self.expected.name()}"
        if k is GuardKind.SET_MATCH:
            return f"{s} == {bind(self.expected)}"
        if k is GuardKind.KEY_IN:
            base, key = self.source.base.name(), _key_expression(self.source, bind)
            if not self.expected:
                return f"{key} not in {base}"
            if hasattr(self.source, "alias"):  # binds the value (KeyedItemSource)
                return f"({self.source.alias} := {base}.get({key}, {bind(_ABSENT)})) is not {bind(_ABSENT)}"
            return f"{key} in {base}"
        if k is GuardKind.SHAPE:
            return self.expected.code.format(*[bind(o) for o in self.expected.objects])
        if k is GuardKind.FUNCTION_MATCH:
            fn = self.expected
            return (f"type({s}) is {bind(type(fn))} and {s}.__code__ is {bind(fn.__code__)} "
                    f"and {s}.__globals__ is {bind(fn.__globals__)}")
        raise AssertionError(f"unknown guard kind {k}")

    def describe(self) -> str:
        """User-facing sentence: what must hold."""
        what = self.source.describe() if self.source is not None else ""
        k = self.kind
        if k is GuardKind.TENSOR_MATCH:
            return f"{what} matches {self.expected.describe()}"
        if k is GuardKind.CONSTANT_MATCH:
            return f"{what} == {self.expected!r}"
        if k is GuardKind.TYPE_MATCH:
            return f"type({what}) is {getattr(self.expected, '__qualname__', self.expected)}"
        if k is GuardKind.ID_MATCH:
            return f"{what} is the same object ({_short_repr(self.expected)})"
        if k is GuardKind.LEN_MATCH:
            return f"len({what}) == {self.expected}"
        if k is GuardKind.NONEMPTY:
            return f"{what} is {'not ' if self.expected else ''}empty"
        if k is GuardKind.DICT_KEYS:
            return f"keys of {what} == {list(self.expected)!r}"
        if k is GuardKind.NOT_PRESENT:
            return f"{self.expected!r} is not defined in {what}"
        if k is GuardKind.PRESENT:
            return f"{self.expected!r} is defined in {what}"
        if k is GuardKind.GRAD_MODE:
            return f"torch.is_grad_enabled() is {self.expected}"
        if k is GuardKind.NO_CALLER_EXCEPTION:
            return "the caller is handling no exception (sys.exc_info() is empty)"
        if k is GuardKind.NO_ALIASING:
            what = "tensors " if self.source is None else ""
            return what + ", ".join(s.describe() for s in self.expected) + " are distinct objects"
        if k is GuardKind.SAME_OBJECT:
            return f"{what} is the same object as {self.expected.describe()}"
        if k is GuardKind.SET_MATCH:
            return f"{what} == {set(self.expected)!r}"
        if k is GuardKind.KEY_IN:
            key = self.source.key
            key = key.describe() if isinstance(key, Source) else repr(key)
            return f"{key} is {'' if self.expected else 'not '}a key of {self.source.base.describe()}"
        if k is GuardKind.SHAPE:
            return self.expected.text
        if k is GuardKind.FUNCTION_MATCH:
            return f"{what} is a function with the code of {self.expected.__qualname__}"
        raise AssertionError(f"unknown guard kind {k}")


_ABSENT = object()  # what `dict.get` returns for a key a KEY_IN guard expects present


def _key_expression(item_source, bind) -> str:
    """The key of item source `base[key]` as an expression: its own source's, or a constant."""
    key = item_source.key
    if isinstance(key, Source):
        return key.name()
    return repr(key) if type(key) in (int, str) else bind(key)


def _short_repr(obj) -> str:
    if isinstance(obj, types.ModuleType):
        return f"module {obj.__name__}"
    r = repr(obj)
    return r if len(r) <= 60 else r[:57] + "..."


def _grad_enabled():
    return torch.is_grad_enabled
