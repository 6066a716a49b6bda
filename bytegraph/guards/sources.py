"""Sources: immutable descriptions of where a value came from in the caller's world.

Each source can render itself as a Python expression over the guard function's
scope (`name()`: frame locals by their own names, `G` the frame's globals, `C` the
frame's closure cells) and can emit bytecode that loads the value again inside the
transformed frame (`reconstruct(cg)`). Guards and residual code both come from
sources and from nothing else. `torch_name()` spells a source as torch.compile does
(`L['x']`, `G['w']`): graph inputs are named after it (Note [Graph input names] in
graph/output_graph.py).

A source that reads from another source's value (an attribute, an item) names it as its
`prefix()` and loads it with `cg.load_source(prefix)`, so residual code can load a prefix
that many sources share once into a local (`PyCodegen.call_graph`).
"""
from __future__ import annotations

import contextvars
import threading
from dataclasses import MISSING, dataclass, field, fields

from ..ops.hooks import IntermediateHooks
import gc


class Source:
    __slots__ = ("_hash",)

    def name(self) -> str:
        raise NotImplementedError

    def reconstruct(self, cg) -> None:
        raise NotImplementedError

    def binding_name(self) -> str:
        """How the first guard clause that reads this source spells it: a source naming a
        value that guard clauses bind once (a module's parameter) binds it there."""
        return self.name()

    def prefix(self) -> Source | None:
        """The source whose value `reconstruct` loads first (with `cg.load_source`) and then
        reads from; None for a root (a local, a global, a constant)."""
        return None

    def describe(self) -> str:
        """User-facing spelling, e.g. `x.weight[0]` or `G['scale']`."""
        return self.name()

    def torch_name(self) -> str:
        """How torch.compile spells this source (its `Source.name`): `L['x']`, `G['w']`,
        `L['self']._modules['fc']._parameters['weight']`, `L['xs'][0]`. A graph input read
        from it is named after this text (`graph/output_graph.py::input_target`); a source
        torch.compile has no counterpart of spells itself in the same style."""
        return self.describe()

    def root(self) -> "Source":
        """The source this one is reached through, followed back to the frame (a local, a
        global, a cell, an object): the first field that is a source, recursively."""
        for f in fields(self):
            value = getattr(self, f.name)
            if isinstance(value, Source):
                return value.root()
        return self


class GuardNaming:
    """While active (`naming`), every `name()` of a `source_class` source answers
    `aliases[source]` when it has one, else its own text. Any object with a `thread` and a
    `name(source, render)` (`render(source)` spells the source) can be the active naming
    instead (the guard compiler's spelling tree, Note [Guard spelling tree] in
    guards/spelling.py). Guards are compiled under the compile lock, so one is active at a
    time; it answers only the thread that made it (another thread's messages spell names in
    full)."""

    __slots__ = ("aliases", "thread")

    def __init__(self, aliases: dict):
        self.thread = threading.get_ident()
        self.aliases = aliases

    def name(self, source: "Source", render) -> str:
        alias = self.aliases.get(source)
        return render(source) if alias is None else alias


_naming = None  # the active naming: a GuardNaming or another object with `thread` and `name`
_get_ident = threading.get_ident


class naming:
    """`with naming(aliases) as n:` makes `n` (a GuardNaming) active; `naming(namer=n)` makes
    `n` active."""

    def __init__(self, aliases: dict | None = None, namer=None):
        self.active = GuardNaming(aliases) if namer is None else namer

    def __enter__(self):
        global _naming
        self.outer, _naming = _naming, self.active
        return self.active

    def __exit__(self, *exc) -> None:
        global _naming
        _naming = self.outer


def source_class(cls):
    """`@dataclass(frozen=True, slots=True)` for a `Source`, with its hash computed once per
    instance: sources nest (a parameter's path is ten deep) and are dict keys everywhere
    (guards, tracked values, residual code), and the generated hash re-hashes the whole
    path on every call. The slot starts as None (set by `__init__`): an unset slot
    would raise AttributeError at the first hash, and a capture makes thousands of
    sources. Its `name()` answers to the active naming (`GuardNaming`)."""
    cls = dataclass(frozen=True, slots=True)(cls)
    cls.__init__ = _frozen_init(cls)
    fields_hash = cls.__hash__
    own_name = cls.__dict__.get("name")
    if own_name is not None:
        def name(self) -> str:
            active = _naming
            if active is None or active.thread != _get_ident():
                return own_name(self)
            return active.name(self, own_name)

        name.__doc__ = own_name.__doc__
        cls.name = name

    def __hash__(self):
        value = self._hash
        if value is None:
            value = fields_hash(self)
            object.__setattr__(self, "_hash", value)
        return value

    cls.__hash__ = __hash__
    return cls


def _frozen_init(cls):
    """The `__init__` of frozen dataclass `cls` with its `_hash` slot set to None: each field
    stored with `object.__setattr__` bound once, not looked up per field as the generated one
    does (a source is made for every value the trace reads: half the cost of making one)."""
    scope = {"_set": object.__setattr__}
    params, body = [], []
    for f in fields(cls):
        if f.default_factory is not MISSING:
            raise TypeError(f"{cls.__name__}.{f.name}: a source field cannot have a default factory")
        if f.default is MISSING:
            params.append(f.name)
        else:
            scope[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
        body.append(f"_set(self, {f.name!r}, {f.name})")
    body.append("_set(self, '_hash', None)")
    exec(f"def __init__(self, {', '.join(params)}):\n    " + "\n    ".join(body), scope)
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


@source_class
class LocalSource(Source):
    local_name: str

    def name(self) -> str:
        return self.local_name

    def torch_name(self) -> str:
        return f"L[{self.local_name!r}]"

    def reconstruct(self, cg) -> None:
        cg.load_fast(self.local_name)


@source_class
class GlobalsDictSource(Source):
    """The root frame's globals dict itself."""

    def name(self) -> str:
        return "G"

    def describe(self) -> str:
        return "the module's globals"

    def torch_name(self) -> str:
        return "G"

    def reconstruct(self, cg) -> None:
        cg.load_globals_dict()


@source_class
class GlobalSource(Source):
    """A global of the root frame's module."""

    global_name: str

    def name(self) -> str:
        return f"G[{self.global_name!r}]"

    def describe(self) -> str:
        return f"global {self.global_name}"

    def torch_name(self) -> str:
        return f"G[{self.global_name!r}]"

    def reconstruct(self, cg) -> None:
        cg.load_global(self.global_name)


@source_class
class ClosureSource(Source):
    """The contents of the root frame's closure cell number `index` (free var `var_name`)."""

    index: int
    var_name: str

    def name(self) -> str:
        return f"C[{self.index}].cell_contents"

    def describe(self) -> str:
        return f"closure variable {self.var_name}"

    def torch_name(self) -> str:
        return f"L[{self.var_name!r}]"

    def reconstruct(self, cg) -> None:
        cg.load_deref(self.var_name)

    def cell(self) -> Source:
        """The source of the cell object itself."""
        return ClosureCellSource(self.index, self.var_name)


@source_class
class ClosureCellSource(Source):
    """The root frame's closure cell number `index` itself (free variable `var_name`)."""

    index: int
    var_name: str

    def name(self) -> str:
        return f"C[{self.index}]"

    def describe(self) -> str:
        return f"the cell of closure variable {self.var_name}"

    def reconstruct(self, cg) -> None:
        cg.load_closure(self.var_name)


@source_class
class AttrSource(Source):
    base: Source
    attr: str

    def name(self) -> str:
        if self.attr.isidentifier() and not self.attr.startswith("__"):
            return f"{self.base.name()}.{self.attr}"
        return f"getattr({self.base.name()}, {self.attr!r})"

    def describe(self) -> str:
        return f"{self.base.describe()}.{self.attr}"

    def torch_name(self) -> str:
        if self.attr.isidentifier():
            return f"{self.base.torch_name()}.{self.attr}"
        return f"getattr({self.base.torch_name()}, {self.attr!r})"

    def prefix(self) -> Source:
        return self.base

    def reconstruct(self, cg) -> None:
        cg.load_source(self.base)
        cg.load_attr(self.attr)


@source_class
class GenericAttrSource(Source):
    """`object.__getattribute__(base, attr)`: an attribute of an instance read as the plain
    lookup a `__getattribute__` written in Python calls (`super().__getattribute__(attr)`),
    so that guards and residual code never run the class's hook (`base.attr` would).
    Spelled with `GENERIC_GETATTR`, a name the guard function binds."""

    base: Source
    attr: str

    def name(self) -> str:
        return f"{GENERIC_GETATTR}({self.base.name()}, {self.attr!r})"

    def describe(self) -> str:
        return f"{self.base.describe()}.{self.attr}"

    def torch_name(self) -> str:
        return f"object.__getattribute__({self.base.torch_name()}, {self.attr!r})"

    def prefix(self) -> Source:
        return self.base

    def reconstruct(self, cg) -> None:
        cg.load_generic_attr(lambda: cg.load_source(self.base), self.attr)


GENERIC_GETATTR = "__bg_getattribute"


@source_class
class ItemSource(Source):
    """`base[key]` for a constant key (int, str, or another hashable constant; a key
    without a literal spelling, such as a class, is named in guards as an object,
    `ObjectSource`)."""

    base: Source
    key: object

    def name(self) -> str:
        key = repr(self.key) if _literal(self.key) else ObjectSource(self.key).name()
        return f"{self.base.name()}[{key}]"

    def describe(self) -> str:
        key = repr(self.key) if _literal(self.key) else getattr(self.key, "__qualname__", repr(self.key))
        return f"{self.base.describe()}[{key}]"

    def torch_name(self) -> str:
        key = repr(self.key) if _literal(self.key) else getattr(self.key, "__qualname__", type(self.key).__qualname__)
        return f"{self.base.torch_name()}[{key}]"

    def prefix(self) -> Source:
        return self.base

    def reconstruct(self, cg) -> None:
        cg.load_source(self.base)
        cg.load_const(self.key)
        cg.binary_subscr()


@source_class
class KeyedItemSource(Source):
    """`base[key]` for a key that is itself a value from outside (a tensor, hashed by
    identity: `optimizer.state[param]`), read from `key`'s own source. In guards it is the
    guard-local `alias`, bound by the presence guard of the key (`GuardKind.KEY_IN`, the
    first clause that reads it), so the clauses of its value do not walk both paths again;
    residual code reads it from the frame."""

    base: Source
    key: Source
    alias: str

    def name(self) -> str:
        return self.alias

    def describe(self) -> str:
        return f"{self.base.describe()}[{self.key.describe()}]"

    def torch_name(self) -> str:
        return f"{self.base.torch_name()}[{self.key.torch_name()}]"

    def prefix(self) -> Source:
        return self.base

    def reconstruct(self, cg) -> None:
        cg.load_source(self.base)
        cg.load_source(self.key)
        cg.binary_subscr()


@source_class
class DefaultsSource(Source):
    """`__defaults__` (or, with `keyword`, `__kwdefaults__`) of the function at `fn`."""

    fn: Source
    keyword: bool = False

    def _attr(self) -> str:
        return "__kwdefaults__" if self.keyword else "__defaults__"

    def name(self) -> str:
        return f"{self.fn.name()}.{self._attr()}"

    def describe(self) -> str:
        return f"{'keyword-only defaults' if self.keyword else 'defaults'} of {self.fn.describe()}"

    def torch_name(self) -> str:
        return f"{self.fn.torch_name()}.{self._attr()}"

    def prefix(self) -> Source:
        return self.fn

    def reconstruct(self, cg) -> None:
        cg.load_source(self.fn)
        cg.load_attr(self._attr())


@source_class
class DefaultSource(Source):
    """The default value of parameter `param` of the function at `fn`: `__defaults__[index]`,
    or `__kwdefaults__[param]` for a keyword-only parameter (`index` None)."""

    fn: Source
    param: str
    index: int | None = None

    def _spelled(self) -> Source:
        if self.index is None:
            return ItemSource(DefaultsSource(self.fn, True), self.param)
        return ItemSource(DefaultsSource(self.fn), self.index)

    def name(self) -> str:
        return self._spelled().name()

    def describe(self) -> str:
        return f"{DefaultsSource(self.fn, self.index is None).describe()}: {self.param}"

    def torch_name(self) -> str:
        return self._spelled().torch_name()

    def prefix(self) -> Source:
        return self._spelled().prefix()

    def reconstruct(self, cg) -> None:
        self._spelled().reconstruct(cg)


@source_class
class CellContentsSource(Source):
    """The contents of closure cell number `index` (free variable `var_name`) of the function
    at `fn` (the root frame's own cells are `ClosureSource`s)."""

    fn: Source
    index: int
    var_name: str

    def cell(self) -> Source:
        """The source of the cell object itself."""
        return ItemSource(AttrSource(self.fn, "__closure__"), self.index)

    def name(self) -> str:
        return f"{self.cell().name()}.cell_contents"

    def describe(self) -> str:
        return f"closure variable {self.var_name} of {self.fn.describe()}"

    def torch_name(self) -> str:
        return f"{self.cell().torch_name()}.cell_contents"

    def prefix(self) -> Source:
        return self.cell()

    def reconstruct(self, cg) -> None:
        cg.load_source(self.cell())
        cg.load_attr("cell_contents")


@source_class
class LocalCellContentsSource(Source):
    """The contents of a closure cell that the frame holds in local `local_name` (a resume
    function's cell argument, Note [Resumed cells] in `translate/resume.py`)."""

    local_name: str

    def cell(self) -> Source:
        """The source of the cell object itself."""
        return LocalSource(self.local_name)

    def name(self) -> str:
        return f"{self.local_name}.cell_contents"

    def describe(self) -> str:
        return f"captured variable {self.local_name}"

    def torch_name(self) -> str:
        return f"L[{self.local_name!r}]"

    def reconstruct(self, cg) -> None:
        cg.load_fast(self.local_name)
        cg.load_attr("cell_contents")


@source_class
class FunctionGlobalSource(Source):
    """A global read by an inlined function from module globals reached through `globals_source`."""

    globals_source: Source
    global_name: str

    def name(self) -> str:
        return f"{self.globals_source.name()}[{self.global_name!r}]"

    def describe(self) -> str:
        return f"global {self.global_name} (via {self.globals_source.describe()})"

    def torch_name(self) -> str:
        return f"{self.globals_source.torch_name()}[{self.global_name!r}]"

    def prefix(self) -> Source:
        return self.globals_source

    def reconstruct(self, cg) -> None:
        cg.load_source(self.globals_source)
        cg.load_const(self.global_name)
        cg.binary_subscr()


def global_source(globals_source: Source, name: str) -> Source:
    """The source of global `name` in the globals dict at `globals_source`."""
    if isinstance(globals_source, GlobalsDictSource):
        return GlobalSource(name)
    return FunctionGlobalSource(globals_source, name)


_LITERAL_TYPES = (type(None), bool, int, float, complex, str, bytes, range, slice, type(Ellipsis))


def _literal(key) -> bool:
    """Whether `repr(key)` spells `key` in a guard expression."""
    if type(key) is tuple:
        return all(_literal(k) for k in key)
    return type(key) in _LITERAL_TYPES


OBJECT_REFS: dict[str, object] = {}
"""Objects named by `ObjectSource`s, by the name guards use for them, from their creation
until the guards of the capture that made them are compiled (the runtime then drops them)."""


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

    def torch_name(self) -> str:
        return self.describe()

    def reconstruct(self, cg) -> None:
        cg.load_const(self.obj)


@source_class
class IteratorSeqSource(Source):
    """The sequence a `tuple_iterator`/`list_iterator` at `base` walks, or the iterator an
    `enumerate` at `base` walks (from `__reduce__`)."""

    base: Source

    def name(self) -> str:
        return f"{self.base.name()}.__reduce__()[1][0]"

    def describe(self) -> str:
        return f"items of iterator {self.base.describe()}"

    def torch_name(self) -> str:
        return f"{self.base.torch_name()}.__reduce__()[1][0]"

    def prefix(self) -> Source:
        return self.base

    def reconstruct(self, cg) -> None:
        cg.load_source(self.base)
        cg.call_method0("__reduce__")
        cg.load_const(1)
        cg.binary_subscr()
        cg.load_const(0)
        cg.binary_subscr()


def container_of(obj):
    """The dict or set a real dict view or dict/set iterator reads (None once an iterator is
    exhausted): CPython keeps no Python-level path to it, its garbage-collector traversal
    visits it first (`dictview_traverse`, `dictiter_traverse`, `setiter_traverse`)."""
    for ref in gc.get_referents(obj):
        if isinstance(ref, (dict, set)):
            return ref
    return None


@source_class
class ContainerOfSource(Source):
    """The dict/set that the real dict view or dict/set iterator at `base` reads."""

    base: Source

    def name(self) -> str:
        return f"{ObjectSource(container_of).name()}({self.base.name()})"

    def describe(self) -> str:
        return f"container of {self.base.describe()}"

    def prefix(self) -> Source:
        return self.base

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(container_of)
        cg.load_source(self.base)
        cg.call(1)


@source_class
class LengthSource(Source):
    """`len(base)`: the length of a container from outside read as a number (Note [Lazy
    containers] in vars/lazy_list.py). Its value is pinned by a length guard on `base`."""

    base: Source

    def name(self) -> str:
        return f"len({self.base.name()})"

    def describe(self) -> str:
        return f"len({self.base.describe()})"

    def torch_name(self) -> str:
        return f"len({self.base.torch_name()})"

    def prefix(self) -> Source:
        return self.base

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(len)
        cg.load_source(self.base)
        cg.call(1)


@source_class
class EnumerateCountSource(Source):
    """The next count of the `enumerate` at `base` (from `__reduce__`; for guards only)."""

    base: Source

    def name(self) -> str:
        return f"{self.base.name()}.__reduce__()[1][1]"

    def describe(self) -> str:
        return f"count of enumerate {self.base.describe()}"


@source_class
class IteratorIndexSource(Source):
    """How far the `tuple_iterator`/`list_iterator` at `base` has advanced."""

    base: Source

    def name(self) -> str:
        return f"{self.base.name()}.__reduce__()[2]"

    def describe(self) -> str:
        return f"position of iterator {self.base.describe()}"


@source_class
class MethodResultSource(Source):
    """What the no-argument method `method` of the value at `base` returns (for guards
    only: `x.storage_offset()`)."""

    base: Source
    method: str

    def name(self) -> str:
        return f"{self.base.name()}.{self.method}()"

    def describe(self) -> str:
        return f"{self.base.describe()}.{self.method}()"


@source_class
class SizeSource(Source):
    """`base.size(dim)`: a symbolic size passed to the graph (Note [Symbolic sizes]). Loaded
    as `base.shape[dim]` (80 ns where `base.size(dim)` takes 135, its arguments parsed), so
    that the graph call of a tensor with several symbolic sizes reads its `shape` once."""

    base: Source
    dim: int

    def name(self) -> str:
        return f"{self.base.name()}.size({self.dim})"

    def describe(self) -> str:
        return f"{self.base.describe()}.size({self.dim})"

    def torch_name(self) -> str:
        return f"{self.base.torch_name()}.size()[{self.dim}]"

    def prefix(self) -> Source:
        return AttrSource(self.base, "shape")

    def reconstruct(self, cg) -> None:
        cg.load_source(self.prefix())
        cg.load_const(self.dim)
        cg.binary_subscr()


@source_class
class CMethodResultSource(Source):
    """What the C method `fn` of a builtin type (`dict.get`) returns for the value at `base`
    and constant `args` (str/int/bool/None, spelled by their repr): the contents of a
    builtin container subclass, read past any Python override of its methods."""

    base: Source
    fn: object
    args: tuple

    def name(self) -> str:
        return f"{ObjectSource(self.fn).name()}({self.base.name()}{''.join(f', {a!r}' for a in self.args)})"

    def describe(self) -> str:
        args = "".join(f", {a!r}" for a in self.args)
        return f"{self.fn.__objclass__.__name__}.{self.fn.__name__}({self.base.describe()}{args})"

    def torch_name(self) -> str:
        args = "".join(f", {a!r}" for a in self.args)
        return f"{self.fn.__objclass__.__name__}.{self.fn.__name__}({self.base.torch_name()}{args})"

    def prefix(self) -> Source:
        return self.base

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(self.fn)
        cg.load_source(self.base)
        for arg in self.args:
            cg.load_const(arg)
        cg.call(1 + len(self.args))


class _ContextVarUnset:
    """What `context_var_value` / `context_var_default` answer for a variable without a value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<unset>"


CONTEXT_VAR_UNSET = _ContextVarUnset()


def context_var_value(var):
    """The value of `contextvars.ContextVar` `var` in the current context, or
    `CONTEXT_VAR_UNSET` (its own default is not a value: `var.get(sentinel)` answers the
    sentinel for an unset variable whatever its default)."""
    return var.get(CONTEXT_VAR_UNSET)


def context_var_default(var):
    """The default `var` was created with (what `var.get()` answers in an empty context),
    or `CONTEXT_VAR_UNSET`."""
    try:
        return contextvars.Context().run(var.get)
    except LookupError:
        return CONTEXT_VAR_UNSET


@source_class
class ContextVarSource(Source):
    """The value of the `contextvars.ContextVar` at `base` in the caller's current context
    (`context_var_value`), or with `default` the default it was made with
    (`context_var_default`): a read that guards and residual code make at call time."""

    base: Source
    default: bool = False

    def _reader(self):
        return context_var_default if self.default else context_var_value

    def name(self) -> str:
        return f"{ObjectSource(self._reader()).name()}({self.base.name()})"

    def describe(self) -> str:
        return f"{self.base.describe()}.get()" + (" in an empty context" if self.default else "")

    def torch_name(self) -> str:
        return f"{self.base.torch_name()}.get()"

    def prefix(self) -> Source:
        return self.base

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(self._reader())
        cg.load_source(self.base)
        cg.call(1)


HOOKS_SLOT_LOCAL = "__bg_hooks"  # the residual code's local holding this call's IntermediateHooks


# ---- sources of modules (vars/nn_module.py; Note [Module guard aliases]) ----------------

@source_class
class ModuleDictItemSource(Source):
    """`owner.__dict__[key]` read through `dict_src` (an alias of that dict in guards);
    `describe()`/`reconstruct()` go through `owner`, the module's own source."""

    dict_src: Source
    key: str
    owner: Source

    def name(self) -> str:
        return f"{self.dict_src.name()}[{self.key!r}]"

    def describe(self) -> str:
        return f"{self.owner.describe()}.{self.key}"

    def torch_name(self) -> str:
        return f"{self.owner.torch_name()}.{self.key}"

    def prefix(self) -> Source:
        return self.owner

    def reconstruct(self, cg) -> None:
        cg.load_source(self.owner)
        cg.load_attr(self.key)


@source_class
class ModuleSlotSource(Source):
    """`owner.<dict_name>[key]`: a submodule, parameter or buffer, read from the dict
    nn.Module keeps it in (what `Module.__getattr__` returns, without its cost)."""

    dict_src: Source
    dict_name: str
    key: str
    owner: Source

    def name(self) -> str:
        return f"{self.dict_src.name()}[{self.dict_name!r}][{self.key!r}]"

    def describe(self) -> str:
        if self.key.isidentifier():
            return f"{self.owner.describe()}.{self.key}"
        return f"{self.owner.describe()}[{self.key}]"

    def torch_name(self) -> str:
        return f"{self.owner.torch_name()}.{self.dict_name}[{self.key!r}]"

    def prefix(self) -> Source:
        """The slot dict (`owner.<dict_name>`): siblings share it, so residual code can load
        it once for all of a module's parameters."""
        return ModuleDictItemSource(self.dict_src, self.dict_name, self.owner)

    def reconstruct(self, cg) -> None:
        cg.load_source(self.prefix())
        cg.load_const(self.key)
        cg.binary_subscr()


@source_class
class NthEntrySource(Source):
    """The key (or, with `values`, the value) at position `index` of the dict at `base`:
    an entry of a hook registry, whose keys are handle ids that change at every
    registration (Note [Hook registries] in vars/hooks/registry.py)."""

    base: Source
    index: int
    values: bool = False

    def name(self) -> str:
        return f"[*{self.base.name()}{'.values()' if self.values else ''}][{self.index}]"

    def describe(self) -> str:
        return f"list({self.base.describe()}{'.values()' if self.values else ''})[{self.index}]"

    def prefix(self) -> Source:
        return self.base

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(list)
        cg.load_source(self.base)
        if self.values:
            cg.call_method0("values")
        cg.call(1)
        cg.load_const(self.index)
        cg.binary_subscr()


@source_class
class ModuleBindSource(Source):
    """The module at `inner`, bound to guard-local `__bg_m<index>` and its `__dict__` to
    `__bg_d<index>`; evaluates to the module (Note [Module guard aliases])."""

    inner: Source
    index: int

    def name(self) -> str:
        i = self.index
        return f"((__bg_d{i} := (__bg_m{i} := {self.inner.name()}).__dict__) and __bg_m{i})"

    def describe(self) -> str:
        return self.inner.describe()

    def torch_name(self) -> str:
        return self.inner.torch_name()

    def prefix(self) -> Source:
        return self.inner

    def reconstruct(self, cg) -> None:
        cg.load_source(self.inner)


@source_class
class ModuleAliasSource(Source):
    """`__bg_m<index>` (or `__bg_d<index>`, the module's `__dict__`, when `of_dict`), bound
    by an earlier guard clause (Note [Module guard aliases])."""

    inner: Source
    index: int
    of_dict: bool = False

    def name(self) -> str:
        return f"__bg_{'d' if self.of_dict else 'm'}{self.index}"

    def describe(self) -> str:
        return f"{self.inner.describe()}.__dict__" if self.of_dict else self.inner.describe()

    def torch_name(self) -> str:
        return f"{self.inner.torch_name()}.__dict__" if self.of_dict else self.inner.torch_name()

    def prefix(self) -> Source:
        return self.inner

    def reconstruct(self, cg) -> None:
        cg.load_source(self.inner)
        if self.of_dict:
            cg.load_attr("__dict__")


@source_class
class GuardExpressionSource(Source):
    """A guard-only boolean-ish expression over other sources (hook checks): `template`
    is formatted with the parts' names; guarded `is None` / `is False`."""

    template: str
    parts: tuple
    what: str

    def name(self) -> str:
        return self.template.format(*(p.name() for p in self.parts))

    def describe(self) -> str:
        return self.what

    def reconstruct(self, cg) -> None:
        raise NotImplementedError("a guard-only source")


@source_class
class GuardAliasSource(Source):
    """A value (a parameter) bound to guard-local `alias` by the first clause that reads it."""

    inner: Source
    alias: str

    def name(self) -> str:
        return self.alias

    def binding_name(self) -> str:
        return f"({self.alias} := {self.inner.name()})"

    def describe(self) -> str:
        return self.inner.describe()

    def torch_name(self) -> str:
        return self.inner.torch_name()

    def prefix(self) -> Source:
        return self.inner

    def reconstruct(self, cg) -> None:
        cg.load_source(self.inner)


@source_class
class WeakRefCallSource(Source):
    """`base()`: the referent of a weak reference."""

    base: Source

    def name(self) -> str:
        return f"{self.base.name()}()"

    def describe(self) -> str:
        return f"{self.base.describe()}()"

    def torch_name(self) -> str:
        return f"{self.base.torch_name()}()"

    def prefix(self) -> Source:
        return self.base

    def reconstruct(self, cg) -> None:
        cg.push_callable(lambda: cg.load_source(self.base))
        cg.call(0)


@source_class
class IntermediateHookTokenSource(Source):
    """The token of this call's `IntermediateHooks` (a graph input): loading it makes the
    slot and keeps it in the residual code's local `__bg_hooks`. Never guarded."""

    def name(self) -> str:
        return "bytegraph_hook_token"

    def describe(self) -> str:
        return "the intermediate-hook token"

    def torch_name(self) -> str:
        return "bytegraph_hook_token"

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(IntermediateHooks)
        cg.call(0)
        cg.copy(1)
        cg.store_fast(HOOKS_SLOT_LOCAL)
        cg.call_method0("new_token")


@source_class
class IntermediateHooksSource(Source):
    """This call's `IntermediateHooks` slot, the residual code's local `__bg_hooks` (made
    when the graph's inputs load, before any code reading it runs)."""

    def name(self) -> str:
        return HOOKS_SLOT_LOCAL

    def describe(self) -> str:
        return "the intermediate hooks of this call"

    def reconstruct(self, cg) -> None:
        cg.load_fast(HOOKS_SLOT_LOCAL)


@dataclass(frozen=True, slots=True, eq=False)
class MadeModuleSource(ObjectSource):
    """A module the trace built (`obj`) for `cls(*args, **kwargs)`; residual code builds a new one."""

    args: tuple = ()
    kwargs: dict = field(default_factory=dict)

    def describe(self) -> str:
        return f"a {type(self.obj).__qualname__} made in the compiled function"

    def reconstruct(self, cg) -> None:
        cg.push_callable_const(type(self.obj))
        for value in (*self.args, *self.kwargs.values()):
            cg.load_const(value)
        cg.call(len(self.args) + len(self.kwargs), tuple(self.kwargs))


class StateQuerySource:
    """`fn(*args)` re-evaluated by the guard function (a guard-only source)."""

    __slots__ = ("args", "fn")

    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __eq__(self, other):
        return type(other) is StateQuerySource and other.fn == self.fn and other.args == self.args

    def __hash__(self):
        return hash((self.fn, self.args))

    def __repr__(self) -> str:
        return f"StateQuerySource(fn={self.fn!r}, args={self.args!r})"

    def name(self) -> str:
        return f"{self.fn.name()}({', '.join(repr(a) for a in self.args)})"

    def describe(self) -> str:
        return f"{self.fn.describe()}({', '.join(repr(a) for a in self.args)})"

    def root(self):
        return self.fn.root()
