"""The persistent capture cache: what a capture made, kept on disk so that a later process
runs a compiled function without tracing it (`config.cache_dir`, `BYTEGRAPH_CACHE_DIR`).

Note [Capture cache]
An entry is written when a capture of the whole frame of a user's call (not a resume
function or a graph-broken callee, which are not looked up either) ends with no graph break, static
shapes, a named backend, and every object its guards and residual code name has a recipe
(`runtime/recipes.py`), and that was not split at DDP's buckets (Note [DDP bucket splits]);
anything else is not written (the `capture_cache` log says why). A call with a
DistributedDataParallel module in it (`ddp_split.candidates`) does not look the cache up: its
capture may split what an entry holds whole.
A file `<cache_dir>/captures/<python tag>/<key>/<digest>.bin` holds: the guard function's
text (exactly `CompiledGuards.source`) and recipes of the objects it binds (`__bg_k<N>`,
`__bg_o<N>`); the residual code marshalled, with recipes of the constants marshal cannot
write; the FX graph's nodes (`runtime/graph_store.py`); the files of every code object
the capture translated or its recipes name, with a hash of their contents; automatic
dynamic's memory of the code object after the capture (`ShapeMemory.snapshot`, restored
when the reading process has none yet, so its next recompile is dynamic as it would be).
The key (`entry_key`) is a hash of the compiled code (bytes, names, constants, its file's
contents), the Python, torch and bytegraph versions and bytegraph's own sources (by path,
size and modification time),
the backend's name, fullgraph, the dynamic mode, whether the wrapper is the user's call and
every plain setting of `config` (what a capture reads).
On the first miss of a wrapper with no entry (its first call in this process), the stored
entries of its key are read, most recently used first. An entry is ignored (counted
`ignored`, with one `CaptureCacheWarning` per process when the file is corrupt, foreign or
unloadable) unless it loads, its files hash as they did and every recipe finds an object of
the recorded kind. Its guard function then runs on the call's values: the first entry whose
guards hold is installed like a capture's (counted `hits`, its file touched for the LRU);
none: `misses`, and the normal capture runs. Sound because the entry is what a capture
would make: the guards hold for the same objects, the files whose code the trace read are
unchanged, and what the trace read from torch, Python and bytegraph is pinned by the key.
The graph is given to the backend at its first call, with that call's real inputs
(`inductor`: torch's FX graph and AOT autograd caches then make that cheap).
Writes are a temporary file in the entry's directory and `os.replace` (readers see a whole
file or none; two writers of the same entry write the same name). After a write, the
least recently used files (by mtime) go until the cache is under `config.cache_size_bytes`.
The files are pickles: the cache directory must be as trusted as the Python path.
"""
from __future__ import annotations

import hashlib
import marshal
import os
import pickle
import sys
import sysconfig
import tempfile
import time
import traceback
import types
import warnings

import torch

from .. import config
from ..graph import ddp_split
from ..graph.backends import BACKENDS
from ..guards.compile import CompiledGuards
from ..translate.capture import new_graph_name
from . import graph_store
from .counters import counters
from .logs import logger
from .recipes import NotCacheable, RecipeMismatch, Recipes, resolve

_MAGIC = b"bytegraph capture cache 1\n"
_SUFFIX = ".bin"
_SKIPPED_SETTINGS = frozenset({"verify", "cache_dir", "cache_size_bytes", "debug"})
_log = logger("capture_cache")
_warned = False
_file_hashes: dict = {}  # (path, mtime_ns, size) -> the hash of its contents
_own_hash: list = []     # the hash of bytegraph's sources, once computed


class CaptureCacheWarning(UserWarning):
    """A capture cache file could not be used (corrupt, foreign or unloadable): it is ignored."""


class _Unusable(Exception):
    """A stored entry that must not be used (why, and whether the user is warned)."""

    def __init__(self, reason: str, warn: bool):
        super().__init__(reason)
        self.warn = warn


def directory() -> str | None:
    """`<cache_dir>/captures/<python tag>`, or None when the cache is off."""
    if not config.cache_dir:
        return None
    return os.path.join(os.path.expanduser(config.cache_dir), "captures", sys.implementation.cache_tag)


# ---- the key -----------------------------------------------------------------------------
def _hash_file(path: str) -> str | None:
    """The hash of a file's contents (memoized by its mtime and size); None if unreadable."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    memo = (path, st.st_mtime_ns, st.st_size)
    found = _file_hashes.get(memo)
    if found is None:
        try:
            with open(path, "rb") as f:
                found = hashlib.sha256(f.read()).hexdigest()
        except OSError:
            return None
        _file_hashes[memo] = found
    return found


def _bytegraph_hash() -> str:
    """bytegraph's own sources, each by its path, size and modification time (an editable
    install keeps one version string; an edit changes them): a stat per file, no read."""
    if not _own_hash:
        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        h = hashlib.sha256()
        for folder, dirs, files in sorted(os.walk(root)):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(folder, name)
                    st = os.stat(path)
                    h.update(f"{os.path.relpath(path, root)}:{st.st_size}:{st.st_mtime_ns}\n".encode())
        _own_hash.append(h.hexdigest())
    return _own_hash[0]


def _code_digest(code: types.CodeType, h) -> None:
    h.update(repr((code.co_qualname, code.co_filename, code.co_firstlineno, code.co_names, code.co_varnames,
                   code.co_freevars, code.co_cellvars, code.co_flags, code.co_argcount,
                   code.co_kwonlyargcount, code.co_posonlyargcount)).encode())
    h.update(code.co_code)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _code_digest(const, h)
        else:
            h.update(f"{type(const).__qualname__}:{const!r}".encode())


def backend_name(backend) -> str | None:
    for name, fn in BACKENDS.items():
        if fn is backend:
            return name
    return None


def _settings() -> list:
    return sorted((name, value) for name, value in vars(config).items()
                  if not name.startswith("_") and name not in _SKIPPED_SETTINGS
                  and type(value) in (bool, int, float, str, type(None)))


def entry_key(compiled) -> str | None:
    """The key of `compiled`'s stored entries (Note [Capture cache]); None: not cacheable."""
    backend = backend_name(compiled.backend)
    if backend is None:
        return None
    h = hashlib.sha256()
    code_key = compiled.code_key
    owner = code_key if isinstance(code_key, type) else None
    h.update(repr((sys.version, torch.__version__, _bytegraph_hash(), backend, compiled.fullgraph,
                   compiled.dynamic.mode, compiled.top_level, _settings())).encode())
    _code_digest(compiled.code, h)
    h.update((_hash_file(compiled.code.co_filename) or "").encode())
    if owner is not None:
        module = sys.modules.get(owner.__module__)
        h.update(f"{owner.__module__}.{owner.__qualname__}".encode())
        h.update((_hash_file(getattr(module, "__file__", "") or "") or "").encode())
    return h.hexdigest()


# ---- writing -------------------------------------------------------------------------------
def save(compiled, entry, result) -> None:
    """Write `entry` (just installed from capture `result`) if it is cacheable. A failure is
    a bytegraph bug, logged as a warning: the user's call goes on without the write."""
    try:
        _save(compiled, entry, result)
    except Exception:  # not hidden: logged with its traceback; the entry is only not kept
        _log.warning("bytegraph internal error while writing the capture cache entry of %s:\n%s",
                     compiled.code.co_qualname, traceback.format_exc())


def _save(compiled, entry, result) -> None:
    where = directory()
    if where is None:
        return
    why_not = _why_not(compiled, entry, result)
    key = entry_key(compiled) if why_not is None else None
    if why_not is None and key is None:
        why_not = "the backend is not a named one"
    if why_not is not None:
        _log.debug("not written for %s: %s", compiled.code.co_qualname, why_not)
        return
    started = time.perf_counter()
    try:
        payload = _payload(compiled, entry, result, key)
    except NotCacheable as e:
        _log.debug("not written for %s: %s", compiled.code.co_qualname, e)
        return
    data = _MAGIC + pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
    folder = os.path.join(where, key)
    try:
        _write(folder, hashlib.sha256(data).hexdigest()[:32] + _SUFFIX, data)
        _evict(os.path.dirname(os.path.dirname(where)))
    except OSError as e:  # a full or read-only disk: the entry is simply not kept
        _log.debug("not written for %s: %s", compiled.code.co_qualname, e)
        return
    counters["capture_cache"]["writes"] += 1
    _log.debug("wrote an entry of %s (%d bytes) in %.1f ms", compiled.code.co_qualname, len(data),
               (time.perf_counter() - started) * 1e3)


def _why_not(compiled, entry, result) -> str | None:
    if not compiled.top_level:
        return "not the user's call (a resume function or a graph-broken callee)"
    if entry.kind != "compiled":
        return "the frame runs eagerly"
    if result.graph_break is not None:
        return "the capture ends at a graph break"
    if not result.static:
        return "the graph has symbolic sizes"
    if result.graph_module is not None and "bg_ddp_splits" in result.graph_module.meta:
        return "the graph is split at DDP's buckets (Note [DDP bucket splits])"
    return None


def _payload(compiled, entry, result, key: str) -> dict:
    recipes = Recipes()
    recipes.note_files((compiled.code.co_filename, *result.traced_files))
    guard_values, later = {}, []
    for name, value in entry.guards.bound_values().items():
        try:
            guard_values[name] = recipes.of(value, copies=name.startswith("__bg_k"))
        except NotCacheable:  # tried again once every other has its recipe (a method of a class named after)
            later.append((name, value))
    recipes.search_all = True
    for name, value in later:
        try:
            guard_values[name] = recipes.of(value, copies=name.startswith("__bg_k"))
        except NotCacheable as e:
            raise NotCacheable(f"the guards' {name}: {e}") from None
    code, consts = _strip(entry.fn.__code__, recipes, ())
    graph = None
    if result.graph is not None:
        graph = (result.graph[0], graph_store.dump(entry.graph_module, recipes))
    files = {}
    for path in sorted({compiled.code.co_filename, *result.traced_files, *recipes.files}):
        if path.startswith("<") or _pinned(path):  # generated code: what it was made from is guarded
            continue
        digest = _hash_file(path)
        if digest is None:
            raise NotCacheable(f"the traced file {path} cannot be read")
        files[path] = digest
    return {"key": key, "qualname": compiled.code.co_qualname, "guards": entry.guards.source,
            "guard_code": marshal.dumps(entry.guards.code()),
            "guard_values": guard_values, "code": marshal.dumps(code), "consts": consts, "graph": graph,
            "files": files, "side_effects": tuple(entry.side_effects),
            "shape_memory": compiled.code_state.memory.snapshot()}


def _pinned_roots() -> tuple:
    roots = [os.path.dirname(torch.__file__), os.path.dirname(os.path.dirname(os.path.abspath(__file__)))]
    roots += [sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib")]
    return tuple(os.path.join(os.path.realpath(r), "") for r in roots)


def _pinned(path: str) -> bool:
    """Whether `path` is torch's, bytegraph's or the standard library's: pinned by the key's versions
    (bytegraph: the hash of its sources), so not hashed with each entry."""
    if not _roots:
        _roots.extend(_pinned_roots())
    real = os.path.realpath(path)
    if "site-packages" in real or "dist-packages" in real:  # installed packages: torch's only
        return real.startswith(_roots[0])
    return real.startswith(tuple(_roots))


_roots: list = []


def _strip(code: types.CodeType, recipes: Recipes, path: tuple) -> tuple:
    """`code` with the constants marshal cannot write replaced by None, and their
    `(path of const indices, recipe, kind)`."""
    consts, replaced = list(code.co_consts), []
    for i, const in enumerate(consts):
        if isinstance(const, types.CodeType):
            consts[i], inner = _strip(const, recipes, (*path, i))
            replaced.extend(inner)
            continue
        try:
            marshal.dumps(const)
            continue
        except ValueError:
            pass
        try:
            recipe, kind = recipes.of(const)
        except NotCacheable as e:
            raise NotCacheable(f"a constant of the residual code: {e}") from None
        replaced.append(((*path, i), recipe, kind))
        consts[i] = None
    return (code.replace(co_consts=tuple(consts)) if replaced else code), replaced


def _write(folder: str, name: str, data: bytes) -> None:
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, os.path.join(folder, name))
    except BaseException:
        os.unlink(tmp)
        raise


def _evict(root: str) -> None:
    """Remove the least recently used entry files under `root` until it fits the size cap."""
    found = []
    for folder, _, files in os.walk(os.path.join(root, "captures")):
        for name in files:
            if name.endswith(_SUFFIX):
                path = os.path.join(folder, name)
                try:
                    st = os.stat(path)
                except OSError:  # removed by another process meanwhile
                    continue
                found.append((st.st_mtime_ns, st.st_size, path))
    total = sum(size for _, size, _ in found)
    for _, size, path in sorted(found):
        if total <= config.cache_size_bytes:
            break
        try:
            os.unlink(path)
        except OSError:  # another process removed it first
            pass
        total -= size
        _log.debug("evicted %s", path)


# ---- reading -------------------------------------------------------------------------------
def lookup(compiled, values: tuple):
    """`(CacheEntry fields, graph)` of the first stored entry of `compiled` whose guards hold
    for the call's `values`, as `_rebuild` makes them; None when there is none."""
    where = directory() if compiled.top_level else None
    key = entry_key(compiled) if where is not None else None
    if key is None:
        return None
    if ddp_split.candidates(values):  # a stored graph is whole: a capture may split it (Note [DDP bucket splits])
        _log.debug("not looked up for %s: a DistributedDataParallel module is in the call", compiled.code.co_qualname)
        return None
    folder = os.path.join(where, key)
    try:
        names = [n for n in os.listdir(folder) if n.endswith(_SUFFIX)]
    except OSError:  # no entry of this key yet
        names = []
    paths = []
    for name in names:
        path = os.path.join(folder, name)
        try:
            paths.append((os.stat(path).st_mtime_ns, path))
        except OSError:
            continue
    for _, path in sorted(paths, reverse=True):
        try:
            found = _try_entry(compiled, path, key, values)
        except _Unusable as e:
            counters["capture_cache"]["ignored"] += 1
            _log.debug("ignored %s for %s: %s", path, compiled.code.co_qualname, e)
            if e.warn:
                _warn(f"bytegraph capture cache: ignored {path}: {e}")
            continue
        if found is not None:
            try:
                os.utime(path)
            except OSError:  # evicted meanwhile: the entry is loaded already
                pass
            counters["capture_cache"]["hits"] += 1
            _log.debug("hit %s for %s", path, compiled.code.co_qualname)
            return found
    counters["capture_cache"]["misses"] += 1
    return None


def _warn(message: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(message, CaptureCacheWarning, stacklevel=2)


def _read(path: str, key: str) -> dict:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:  # evicted by another process meanwhile
        raise _Unusable("removed meanwhile", False) from None
    except OSError as e:
        raise _Unusable(f"unreadable: {e}", True) from None
    if not data.startswith(_MAGIC):
        raise _Unusable("not a capture cache file of this bytegraph", True)
    try:
        payload = pickle.loads(data[len(_MAGIC):])
    except Exception as e:  # a corrupt file: any error unpickling it
        raise _Unusable(f"corrupt: {type(e).__name__}: {e}", True) from None
    if type(payload) is not dict or payload.get("key") != key:
        raise _Unusable("foreign: written for another key", True)
    return payload


def _try_entry(compiled, path: str, key: str, values: tuple):
    payload = _read(path, key)
    try:
        files, guards_text = payload["files"], payload["guards"]
        for file, digest in files.items():
            if _hash_file(file) != digest:
                raise _Unusable(f"{file} changed since the capture", False)
        fn = compiled.fn
        bound = {name: resolve(recipe, kind) for name, (recipe, kind) in payload["guard_values"].items()}
        guard_code = marshal.loads(payload["guard_code"])
        if not isinstance(guard_code, types.CodeType):
            raise _Unusable("the guard function is not a code object", True)
        guards = CompiledGuards.from_text(guards_text, bound, compiled.argnames, fn.__globals__, fn.__closure__,
                                          guard_code)
    except RecipeMismatch as e:
        raise _Unusable(str(e), False) from None
    except _Unusable:
        raise
    except Exception as e:  # a file this bytegraph wrote cannot fail here: it is not one
        raise _Unusable(f"unloadable: {type(e).__name__}: {e}", True) from None
    if not guards.fn(*values):
        return None
    try:
        return _rebuild(compiled, payload, guards)
    except RecipeMismatch as e:
        raise _Unusable(str(e), False) from None
    except Exception as e:  # as above: not a file of this bytegraph
        _log.debug("loading %s failed:\n%s", path, traceback.format_exc())
        raise _Unusable(f"unloadable: {type(e).__name__}: {e}", True) from None


def _rebuild(compiled, payload: dict, guards: CompiledGuards):
    """(guards, transformed function, graph module, (graph name, callable) or None, side effects)."""
    code = marshal.loads(payload["code"])
    for path, recipe, kind in payload["consts"]:
        code = _put_const(code, path, resolve(recipe, kind))
    graph = gm = None
    if payload["graph"] is not None:
        old_name, nodes = payload["graph"]
        gm = graph_store.load(nodes)
        name = new_graph_name()
        code = code.replace(co_names=tuple(name if n == old_name else n for n in code.co_names))
        graph = (name, _FirstCall(gm, compiled.backend, compiled.fn.__globals__, name))
    fn = compiled.fn
    new_fn = types.FunctionType(code, fn.__globals__, code.co_name, fn.__defaults__, fn.__closure__)
    new_fn.__kwdefaults__ = fn.__kwdefaults__
    compiled.code_state.memory.restore(payload["shape_memory"])  # automatic dynamic goes on as after the capture
    return guards, new_fn, gm, graph, payload["side_effects"]


def _put_const(code: types.CodeType, path: tuple, value) -> types.CodeType:
    consts = list(code.co_consts)
    if len(path) == 1:
        consts[path[0]] = value
    else:
        consts[path[0]] = _put_const(consts[path[0]], path[1:], value)
    return code.replace(co_consts=tuple(consts))


class _FirstCall:
    """A stored graph until its first call, which gives it to the backend with that call's
    real inputs and puts what the backend made in the graph's global (`inductor`: where
    torch's FX graph cache answers)."""

    def __init__(self, gm, backend, f_globals: dict, name: str):
        self.gm, self.backend, self.f_globals, self.name = gm, backend, f_globals, name

    def __call__(self, *args):
        started = time.perf_counter()
        grad_mode = torch.is_grad_enabled()
        try:
            inputs = list(args)
            if self.backend is BACKENDS["inductor"]:  # Note [Inductor's caches]: as a capture gives them
                inputs = graph_store.with_examples(self.gm, inputs)
            compiled = self.backend(self.gm, inputs)
        except Exception:  # a backend failure, logged: the graph runs as it is, which is correct
            _log.warning("the backend failed on the stored graph %s; it runs uncompiled:\n%s", self.name,
                         traceback.format_exc())
            compiled = self.gm.forward
        finally:  # as a capture's backend call: AOT autograd may leave its grad mode set
            torch._C._set_grad_enabled(grad_mode)
        if self.f_globals.get(self.name) is self:
            self.f_globals[self.name] = compiled
        _log.debug("backend compiled the stored graph %s in %.1f ms", self.name,
                   (time.perf_counter() - started) * 1e3)
        return compiled(*args)

