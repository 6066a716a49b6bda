"""Recipes: how another process finds an object of this one again (the capture cache's
object references, Note [Capture cache] in `runtime/capture_cache.py`).

A recipe is plain data (tuples of strings, numbers and recipes), made by `Recipes.of(obj)`
in the process that wrote a cache entry and turned back into an object by `resolve` in the
one that reads it:

- `("v", value)`: a constant kept by value (numbers, strings, bytes, None, Ellipsis,
  `torch.dtype`/`torch.device`, and tuples/frozensets of those; lists, dicts and sets of them
  only where `copies` allows it: a guard's expected value, compared with `is` or `==`, never
  read as a live object, where a copy can only make an `is` fail);
- `("m", name)`: the module `sys.modules[name]` (imported if needed);
- `("a", module, qualname)`: an attribute path from a module (classes, functions, builtins,
  module-level objects found in the module's globals), written only if it resolves to the
  very object;
- `("g", recipe, name)`: `getattr` of another recipe's object (a code object as a function's
  `__code__`, a property's `fget`, an enum member); `("d", recipe, name)`: an item of a
  class's `__dict__` (a method descriptor);
- `("i", recipe, index)`: an item of another's (a code object in the `co_consts` of the code
  enclosing it);
- `("G", module)`: a module's globals dict; `("t", [recipes])`: a tuple of recipes.

Anything else is not cacheable (`NotCacheable`, naming the object). `resolve` checks that
what it finds has the recorded type (and, for a code object, the recorded name and first
line): a recipe that finds something else raises `RecipeMismatch`, and the entry is ignored.
"""
from __future__ import annotations

import enum
import importlib
import sys
import types

import torch

_VALUE_TYPES = (type(None), bool, int, float, complex, str, bytes, type(Ellipsis), torch.dtype, torch.device)
_COPY_TYPES = (list, dict, set)


class NotCacheable(Exception):
    """An object has no recipe: the entry naming it is not written."""


class RecipeMismatch(Exception):
    """A recipe did not find an object of the recorded kind: the entry is ignored."""


def _is_value(obj, copies: bool) -> bool:
    t = type(obj)
    if t in _VALUE_TYPES:
        return True
    if t in (tuple, frozenset):
        return all(_is_value(x, copies) for x in obj)
    if copies and t in _COPY_TYPES:
        if t is dict:
            return all(_is_value(k, False) and _is_value(v, True) for k, v in obj.items())
        return all(_is_value(x, copies) for x in obj)
    return False


def _kind(obj) -> str:
    t = type(obj)
    return f"{t.__module__}.{t.__qualname__}"


class Recipes:
    """Makes recipes in the writing process; one per written entry (it memoizes by identity)."""

    def __init__(self):
        self._memo: dict[int, tuple] = {}
        self._keep: list = []  # the objects of `_memo`'s ids, alive while this lives
        self._dicts: dict[int, str] | None = None
        self.modules: set[str] = set()  # the modules the entry names (searched first for globals)
        self.search_all = False  # whether a global is looked for in every module (slower)
        self.files: set[str] = set()  # the source files of the code objects given recipes

    def of(self, obj, copies: bool = False) -> tuple:
        """`(recipe, kind)` of `obj` (kind: its type's module and qualname, checked at load)."""
        if _is_value(obj, copies):
            return ("v", obj), _kind(obj)
        key = id(obj)
        found = self._memo.get(key)
        if found is None:
            found = self._memo[key] = (self._recipe(obj), _kind(obj))
            self._keep.append(obj)
        return found

    def _recipe(self, obj) -> tuple:
        if isinstance(obj, types.ModuleType):
            if sys.modules.get(obj.__name__) is obj:
                return ("m", obj.__name__)
            raise NotCacheable(f"module {obj.__name__} is not the one in sys.modules")
        if isinstance(obj, types.CodeType):
            return self._code(obj)
        if type(obj) is tuple:
            return ("t", [self.of(x)[0] for x in obj])
        if type(obj) is dict:
            name = self._module_of_dict(obj)
            if name is not None:
                return ("G", name)
            raise NotCacheable("a dict that is not a module's globals")
        if isinstance(obj, (torch._ops.OpOverload, torch._ops.OpOverloadPacket)):
            packet = obj.overloadpacket if isinstance(obj, torch._ops.OpOverload) else obj
            ns, _, name = packet._qualified_op_name.partition("::")
            path = f"ops.{ns}.{name}" + (f".{obj._overloadname}" if obj is not packet else "")
            return self._checked(("a", "torch", path), obj)
        if isinstance(obj, enum.Enum):
            return self._checked(("g", self.of(type(obj))[0], obj.name), obj)
        if isinstance(obj, (types.MethodDescriptorType, types.WrapperDescriptorType, types.ClassMethodDescriptorType,
                            types.GetSetDescriptorType, types.MemberDescriptorType)):
            return self._checked(("d", self.of(obj.__objclass__)[0], obj.__name__), obj)
        module, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
        if isinstance(module, str) and isinstance(qualname, str) and "<" not in qualname:
            recipe = ("a", module, qualname)
            if _resolves_to(recipe, obj):
                self._note_module(module)
                return recipe
        alias = _aliases().get(id(obj))  # a type named elsewhere than its qualname says (types.FunctionType)
        if alias is not None and _resolves_to(alias, obj):
            return alias
        owner = getattr(obj, "__self__", None)  # a builtin bound to a module (torch._C functions)
        if isinstance(owner, (types.ModuleType, type)) and isinstance(getattr(obj, "__name__", None), str):
            return self._checked(("g", self.of(owner)[0], obj.__name__), obj)
        named = self._module_global(obj)  # a module's global: a registry, a sentinel
        if named is not None:
            return named
        raise NotCacheable(f"no recipe for {_kind(obj)} {_short(obj)}")

    def _note_module(self, name: str) -> None:
        """The file defining what a recipe found by name is hashed with the entry."""
        self.modules.add(name)
        path = getattr(sys.modules.get(name), "__file__", None)
        if isinstance(path, str):
            self.files.add(path)

    def note_files(self, files) -> None:
        """The modules of `files` (those the capture translated) are searched for globals first."""
        for path in files:
            self.modules.update(_file_index.get(path) or ())

    def _module_global(self, obj):
        """`("a", module, name)` of a module global: first in the modules the entry names,
        then (`search_all`) in every loaded module."""
        for name in list(self.modules):
            module = sys.modules.get(name)
            for attr, value in list(vars(module).items()) if module is not None else ():
                if value is obj and not attr.startswith("__"):
                    return ("a", name, attr)
        named = _globals_index.get(id(obj)) if self.search_all else None
        if named is not None and _resolves_to(named, obj):
            self._note_module(named[1])
            return named
        return None

    def _checked(self, recipe: tuple, obj) -> tuple:
        if _resolves_to(recipe, obj):
            return recipe
        raise NotCacheable(f"{_kind(obj)} {_short(obj)} is not found again by {recipe!r}")

    def _module_of_dict(self, d: dict):
        if self._dicts is None:
            self._dicts = {id(vars(m)): name for name, m in list(sys.modules.items())
                           if isinstance(m, types.ModuleType)}
        name = self._dicts.get(id(d))
        return name if name is not None and vars(sys.modules[name]) is d else None

    def _code(self, code: types.CodeType) -> tuple:
        """A code object through the function (or property, method, wrapper) its module names
        by its qualname, or through the co_consts of the code enclosing it."""
        self.files.add(code.co_filename)
        parts = code.co_qualname.split(".")
        if "<locals>" in parts:
            return self._nested(code, ".".join(parts[:parts.index("<locals>")]))
        for module in self._modules_of_file(code.co_filename):
            try:
                obj = _walk(module, parts)
            except AttributeError:
                continue
            found = _code_path(("a", module, code.co_qualname), obj, code)
            if found is not None:
                return found
        raise NotCacheable(f"no function of {code.co_qualname} ({code.co_filename}) is found by its name")

    def _nested(self, code: types.CodeType, enclosing: str) -> tuple:
        """`code`, defined (at any depth) in the function whose qualname is `enclosing`,
        through the co_consts of that function's code."""
        for outer in self._candidate_codes(code.co_filename, enclosing):
            path = _find_const(outer, code)
            if path is not None:
                recipe = self.of(outer)[0]
                for index in path:
                    recipe = ("i", ("g", recipe, "co_consts"), index)
                return recipe
        for owner in list(self._keep):  # made by code (a dataclass's __init__): a method of a known class
            if isinstance(owner, type):
                for name, attr in list(vars(owner).items()):
                    found = _code_path(("d", self.of(owner)[0], name), attr, code)
                    if found is not None:
                        return found
        raise NotCacheable(f"code {code.co_qualname} is not in the consts of {enclosing} "
                           "nor a method of a class named before it")

    def _candidate_codes(self, filename: str, qualname: str) -> list:
        parts = qualname.split(".")
        found = []
        for module in self._modules_of_file(filename):
            try:
                obj = _walk(module, parts)
            except AttributeError:
                continue
            for candidate in _functions_in(obj):
                code = getattr(candidate, "__code__", None)
                if isinstance(code, types.CodeType) and code.co_filename == filename:
                    found.append(code)
        return found

    def _modules_of_file(self, filename: str) -> list[str]:
        if filename.startswith("<frozen ") and filename.endswith(">"):  # a frozen stdlib module
            name = filename[len("<frozen "):-1]
            return [name] if name in sys.modules else []
        return _file_index.get(filename) or []


_ALIAS_MODULES = ("types", "_collections_abc", "builtins", "operator")
_alias_index: dict = {}


def _aliases() -> dict:
    """id -> `("a", module, name)` of the objects of the modules that give other names to
    builtin types and functions (`types.FunctionType` is `builtins.function`)."""
    if not _alias_index:
        for module in _ALIAS_MODULES:
            for name, value in vars(importlib.import_module(module)).items():
                if not name.startswith("__"):
                    _alias_index.setdefault(id(value), ("a", module, name))
    return _alias_index


class _ModuleIndex:
    """A process-wide index over the loaded modules, built at the first question and again
    when a question finds nothing and modules were imported since (an id found stale is
    harmless: every recipe is checked to find its very object)."""

    def __init__(self, build):
        self._build = build
        self._size = -1
        self._index: dict = {}

    def get(self, key):
        found = self._index.get(key)
        if found is None and self._size != len(sys.modules):
            self._size = len(sys.modules)
            self._index = self._build(list(sys.modules.items()))
            found = self._index.get(key)
        return found


def _globals_of(modules: list) -> dict:
    """id -> `("a", module, name)` of every module's globals."""
    index: dict = {}
    for module_name, module in modules:
        if isinstance(module, types.ModuleType):
            for name, value in list(vars(module).items()):
                if not name.startswith("__"):
                    index.setdefault(id(value), ("a", module_name, name))
    return index


def _files_of(modules: list) -> dict:
    """A module's file, as its code objects spell it (the import system's origin) -> its names."""
    index: dict = {}
    for name, module in modules:
        path = getattr(module, "__file__", None)
        if isinstance(module, types.ModuleType) and isinstance(path, str):
            index.setdefault(path, []).append(name)
    return index


_globals_index = _ModuleIndex(_globals_of)
_file_index = _ModuleIndex(_files_of)


def _walk(module: str, parts: list):
    obj = sys.modules[module]
    for part in parts:
        obj = getattr(obj, part)
    return obj


def _functions_in(obj) -> list:
    """The plain functions `obj` may stand for: itself, a method's or classmethod's
    `__func__`, a property's accessors, the functions a decorator wrapped."""
    found, todo = [], [obj]
    while todo and len(found) < 16:
        item = todo.pop()
        found.append(item)
        for name in ("__func__", "fget", "fset", "fdel", "__wrapped__"):
            inner = getattr(item, name, None)
            if inner is not None:
                todo.append(inner)
    return found


def _code_path(base: tuple, obj, code: types.CodeType):
    """A recipe reaching `code` from `obj` (found by `base`), or None."""
    todo = [(base, obj)]
    seen = 0
    while todo and seen < 16:
        recipe, item = todo.pop()
        seen += 1
        if getattr(item, "__code__", None) is code:
            return ("g", recipe, "__code__")
        for name in ("__func__", "fget", "fset", "fdel", "__wrapped__"):
            inner = getattr(item, name, None)
            if inner is not None:
                todo.append((("g", recipe, name), inner))
    return None


def _find_const(outer: types.CodeType, code: types.CodeType, depth: int = 0):
    """The indices leading from `outer` to `code` through nested co_consts, or None."""
    for i, const in enumerate(outer.co_consts):
        if const is code:
            return [i]
        if isinstance(const, types.CodeType) and depth < 8:
            rest = _find_const(const, code, depth + 1)
            if rest is not None:
                return [i, *rest]
    return None


def _resolves_to(recipe: tuple, obj) -> bool:
    try:
        return _resolve(recipe) is obj
    except Exception:  # a path that does not resolve is simply not this object's recipe
        return False


def _resolve(recipe: tuple):
    tag = recipe[0]
    if tag == "v":
        return recipe[1]
    if tag == "m":
        return sys.modules.get(recipe[1]) or importlib.import_module(recipe[1])
    if tag == "a":
        obj = sys.modules.get(recipe[1]) or importlib.import_module(recipe[1])
        for part in recipe[2].split("."):
            obj = getattr(obj, part)
        return obj
    if tag == "g":
        return getattr(_resolve(recipe[1]), recipe[2])
    if tag == "d":
        return vars(_resolve(recipe[1]))[recipe[2]]
    if tag == "i":
        return _resolve(recipe[1])[recipe[2]]
    if tag == "G":
        module = sys.modules.get(recipe[1]) or importlib.import_module(recipe[1])
        return vars(module)
    if tag == "t":
        return tuple(_resolve(r) for r in recipe[1])
    raise RecipeMismatch(f"unknown recipe {tag!r}")


def _short(obj) -> str:
    try:
        text = repr(obj)
    except Exception:  # a user object whose repr fails: its type names it well enough
        text = f"<{type(obj).__qualname__}>"
    return text if len(text) <= 80 else text[:77] + "..."


def resolve(recipe: tuple, kind: str):
    """The object `recipe` finds, checked to be of type `kind`; RecipeMismatch otherwise
    (an import or attribute that fails is a mismatch too: the entry is not for this process)."""
    try:
        obj = _resolve(recipe)
    except RecipeMismatch:
        raise
    except Exception as e:  # the program changed under the entry: it is ignored, with the reason
        raise RecipeMismatch(f"{recipe!r} does not resolve: {type(e).__name__}: {e}") from None
    if _kind(obj) != kind:
        raise RecipeMismatch(f"{recipe!r} found a {_kind(obj)}, not a {kind}")
    return obj
