"""Sources: immutable descriptions of where a value came from in the caller's world.

Each source can render itself as a Python expression over the guard function's
scope (`name()`: frame locals by their own names, `G` the frame's globals, `C` the
frame's closure cells) and can emit bytecode that loads the value again inside the
transformed frame (`reconstruct(cg)`). Guards and residual code both come from
sources and from nothing else.
"""
from __future__ import annotations

from dataclasses import dataclass


class Source:
    __slots__ = ()

    def name(self) -> str:
        raise NotImplementedError

    def reconstruct(self, cg) -> None:
        raise NotImplementedError

    def describe(self) -> str:
        """User-facing spelling, e.g. `x.weight[0]` or `G['scale']`."""
        return self.name()


@dataclass(frozen=True, slots=True)
class LocalSource(Source):
    local_name: str

    def name(self) -> str:
        return self.local_name

    def reconstruct(self, cg) -> None:
        cg.load_fast(self.local_name)


@dataclass(frozen=True, slots=True)
class GlobalsDictSource(Source):
    """The root frame's globals dict itself."""

    def name(self) -> str:
        return "G"

    def describe(self) -> str:
        return "the module's globals"

    def reconstruct(self, cg) -> None:
        cg.load_globals_dict()


@dataclass(frozen=True, slots=True)
class GlobalSource(Source):
    """A global of the root frame's module."""

    global_name: str

    def name(self) -> str:
        return f"G[{self.global_name!r}]"

    def describe(self) -> str:
        return f"global {self.global_name}"

    def reconstruct(self, cg) -> None:
        cg.load_global(self.global_name)


@dataclass(frozen=True, slots=True)
class ClosureSource(Source):
    """The contents of the root frame's closure cell number `index` (free var `var_name`)."""

    index: int
    var_name: str

    def name(self) -> str:
        return f"C[{self.index}].cell_contents"

    def describe(self) -> str:
        return f"closure variable {self.var_name}"

    def reconstruct(self, cg) -> None:
        cg.load_deref(self.var_name)


@dataclass(frozen=True, slots=True)
class AttrSource(Source):
    base: Source
    attr: str

    def name(self) -> str:
        if self.attr.isidentifier() and not self.attr.startswith("__"):
            return f"{self.base.name()}.{self.attr}"
        return f"getattr({self.base.name()}, {self.attr!r})"

    def describe(self) -> str:
        return f"{self.base.describe()}.{self.attr}"

    def reconstruct(self, cg) -> None:
        self.base.reconstruct(cg)
        cg.load_attr(self.attr)


@dataclass(frozen=True, slots=True)
class ItemSource(Source):
    """`base[key]` for a constant key (int, str, or another hashable constant)."""

    base: Source
    key: object

    def name(self) -> str:
        return f"{self.base.name()}[{self.key!r}]"

    def describe(self) -> str:
        return f"{self.base.describe()}[{self.key!r}]"

    def reconstruct(self, cg) -> None:
        self.base.reconstruct(cg)
        cg.load_const(self.key)
        cg.binary_subscr()


@dataclass(frozen=True, slots=True)
class DefaultsSource(Source):
    """A default argument of the function at `fn`: positional index or keyword-only name."""

    fn: Source
    key: int | str

    def _spelled(self) -> Source:
        if isinstance(self.key, int):
            return ItemSource(AttrSource(self.fn, "__defaults__"), self.key)
        return ItemSource(AttrSource(self.fn, "__kwdefaults__"), self.key)

    def name(self) -> str:
        return self._spelled().name()

    def describe(self) -> str:
        return f"default {self.key!r} of {self.fn.describe()}"

    def reconstruct(self, cg) -> None:
        self._spelled().reconstruct(cg)


@dataclass(frozen=True, slots=True)
class FunctionGlobalSource(Source):
    """A global read by an inlined function from module globals reached through `globals_source`."""

    globals_source: Source
    global_name: str

    def name(self) -> str:
        return f"{self.globals_source.name()}[{self.global_name!r}]"

    def describe(self) -> str:
        return f"global {self.global_name} (via {self.globals_source.describe()})"

    def reconstruct(self, cg) -> None:
        self.globals_source.reconstruct(cg)
        cg.load_const(self.global_name)
        cg.binary_subscr()


def global_source(globals_source: Source, name: str) -> Source:
    """The source of global `name` in the globals dict at `globals_source`."""
    if isinstance(globals_source, GlobalsDictSource):
        return GlobalSource(name)
    return FunctionGlobalSource(globals_source, name)


OBJECT_REFS: dict[str, object] = {}
"""Objects named by `ObjectSource`s, by the name guards use for them (strong refs)."""


@dataclass(frozen=True, slots=True, eq=False)
class ObjectSource(Source):
    """A specific object the tracer found without a path from the frame (e.g. a method
    looked up on a class); guards and residual code refer to the object itself."""

    obj: object

    def __post_init__(self):
        OBJECT_REFS[self.name()] = self.obj

    def __eq__(self, other):
        return isinstance(other, ObjectSource) and other.obj is self.obj

    def __hash__(self):
        return hash(id(self.obj))

    def name(self) -> str:
        return f"__bg_obj_{id(self.obj)}"

    def describe(self) -> str:
        return f"{getattr(self.obj, '__qualname__', type(self.obj).__qualname__)}"

    def reconstruct(self, cg) -> None:
        cg.load_const(self.obj)


@dataclass(frozen=True, slots=True)
class IteratorSeqSource(Source):
    """The sequence a `tuple_iterator`/`list_iterator` at `base` walks (from `__reduce__`)."""

    base: Source

    def name(self) -> str:
        return f"{self.base.name()}.__reduce__()[1][0]"

    def describe(self) -> str:
        return f"items of iterator {self.base.describe()}"

    def reconstruct(self, cg) -> None:
        self.base.reconstruct(cg)
        cg.call_method0("__reduce__")
        cg.load_const(1)
        cg.binary_subscr()
        cg.load_const(0)
        cg.binary_subscr()


@dataclass(frozen=True, slots=True)
class IteratorIndexSource(Source):
    """How far the `tuple_iterator`/`list_iterator` at `base` has advanced."""

    base: Source

    def name(self) -> str:
        return f"{self.base.name()}.__reduce__()[2]"

    def describe(self) -> str:
        return f"position of iterator {self.base.describe()}"
