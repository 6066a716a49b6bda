"""The call wrapper of one compiled function and its cache of entries.

The wrapper the user calls is a generated Python function with the original
signature (so CPython binds arguments and applies defaults), whose body tries each
cache entry's guard function in order and calls that entry's transformed function;
on a miss it asks `CompiledFunction.miss`, which captures (or falls back to eager)
and regenerates the wrapper's body with one more entry. Nothing else runs per call.
"""
from __future__ import annotations

import dis
import functools
import inspect
import logging
import traceback
import threading
import time
import types
import warnings
import weakref

from .. import config
from ..errors import FailOnRecompileLimitHit, GraphBreak, InternalTracerError, Unsupported, UserCodeRaisesError
from ..graph.shapes import DynamicState
from ..guards.compile import CompiledGuards
from ..guards.sources import OBJECT_REFS, LocalSource
from ..translate import gc_pause
from ..translate.capture import argument_names, capture
from ..translate.continuation import forget_continuations
from ..translate.resume import forget_resume_functions
from . import capture_cache, code_state, recompiles, verify
from .logs import logger
from .root_frames import LISTENERS, RECOMPILE_LISTENERS, argument_spellings, forward_call

_live: "weakref.WeakSet[CompiledFunction]" = weakref.WeakSet()


class _Missing:
    """Marks a parameter the caller did not pass (its default is read at call time)."""

    def __repr__(self) -> str:
        return "<default>"


_MISSING = _Missing()
# Note [Compile lock]
# Tracing uses process-wide state (fake-tensor memo, resume and continuation caches, break
# markers), so misses of all compiled functions are serialized by one lock; it is
# re-entrant because compiling can create wrappers (`compile_callee`). Only misses take it:
# the wrapper's per-call path (its guards and entries) never does.
COMPILE_LOCK = threading.RLock()
# (code, globals, backend) or (id(function), id(backend)) -> the compiled wrapper residual code calls for it (a resume
# function, a graph-broken callee); owned by the `callees` of the compiled functions whose
# residual code calls it, so a wrapper (and the function it keeps) lives only as long as a
# caller does.
_callees: "weakref.WeakValueDictionary" = weakref.WeakValueDictionary()


# Note [Residual constants]
# Code objects are not tracked by the garbage collector, so a reference cycle through a
# code object's constants is never collected: residual code must not hold, as a constant,
# anything that leads back to its own compiled function (whose entries hold the code).
# What it calls to get a callee's wrapper is a `_CalleeCompiler`, which holds the
# compiled function weakly (the residual code only runs from its wrapper, which keeps the
# compiled function alive); the wrappers it returns are owned by `CompiledFunction.callees`.


class _CalleeCompiler:
    """`compile_callee` of one compiled function, without keeping it alive. Residual code
    calls it while it runs, after the graph and the replay of side effects: a failure
    there (a bytegraph bug) must not reach the user, so the callee then runs uncompiled."""

    __slots__ = ("compiled",)

    def __init__(self, compiled: "CompiledFunction"):
        self.compiled = weakref.ref(compiled)

    def __call__(self, fn: types.FunctionType):
        try:
            return self.compiled().compile_callee(fn)
        except RecursionError:  # the user's recursion ran out of stack here: as eager, it propagates
            raise
        except Exception as e:  # logged, never hidden: the callee is correct uncompiled
            logger("graph_breaks").warning("bytegraph internal error while compiling %s; it runs eagerly:\n%s",
                                           fn.__qualname__, "".join(traceback.format_exception(e)))
            return fn


class CacheEntry:
    """One entry of a compiled function: its guards, the function it runs, and what its
    capture made and cost (for the logs and tooling: explain, counters, the compile report).
    `capture_seconds` is the whole capture, `trace_seconds + backend_seconds + guard_seconds`
    (tracing and codegen, the backend, making and compiling the guards)."""

    __slots__ = ("guards", "fn", "kind", "graph_module", "graph_name", "capture_seconds", "reason", "started",
                 "trace_seconds", "backend_seconds", "guard_seconds", "side_effects")

    def __init__(self, guards: CompiledGuards, fn, kind: str, graph_module=None, graph_name=None,
                 capture_seconds: float = 0.0, reason: str = ""):
        self.guards = guards
        self.fn = fn
        self.kind = kind  # "compiled" or "eager"
        self.graph_module = graph_module
        self.graph_name = graph_name
        self.capture_seconds = capture_seconds
        self.reason = reason
        self.started = 0.0          # time.perf_counter() when its capture began
        self.trace_seconds = capture_seconds
        self.backend_seconds = 0.0
        self.guard_seconds = 0.0
        self.side_effects = ()      # what its residual code replays after the graph, in words

    def set_timing(self, started: float, trace: float, backend: float, guards: float) -> None:
        self.started = started
        self.trace_seconds, self.backend_seconds, self.guard_seconds = trace, backend, guards
        self.capture_seconds = trace + backend + guards


# Note [Verify line]
# The wrapper of a top-level compiled function (what the user called, not a resume function
# or a graph-broken callee) starts with `if __bg_config.verify: return __bg_verify(...)`:
# one global load and one attribute load per call while `config.verify` is off, and the
# whole verify mode (`runtime/verify.py`) while it is on, read at each call so that setting
# it takes effect at once. `__bg_call(f, <bound arguments>)` calls `f` as the user called
# the wrapper (the verify mode calls the original function and the chosen entry with it).


class CompiledFunction:
    def __init__(self, fn: types.FunctionType, backend, fullgraph: bool, dynamic=None, top_level: bool = False,
                 code_key=None):
        self.fn = fn
        self.top_level = top_level  # the user's call: verified in verify mode (Note [Verify line])
        self.backend = backend
        self.fullgraph = fullgraph
        self.code = fn.__code__
        # what the recompile limit and automatic dynamic are kept per (Note [Recompile limit]):
        # the code the user compiled (a module's class, for the shared root frame `forward_call`)
        self.code_key = code_key if code_key is not None else self.code
        self.code_state = code_state.state_for(self.code_key, backend)
        self.code_state.wrappers.add(self)
        self.dynamic = DynamicState(dynamic, self.code_state.memory)  # Note [Symbolic sizes]
        self.argnames = argument_names(self.code)
        self.entries: list[CacheEntry] = []
        self.looked_up = False  # whether the persistent capture cache was asked (Note [Capture cache])
        self.callees: dict = {}  # the wrappers `compile_callee` gave this function's residual code
        self.callee_compiler = _CalleeCompiler(self)
        self.caller = None  # weakref to the compiled function whose residual code first called this one
        self.shown_as = None  # (name, code) the user knows it by when not `fn`'s: a module's class and forward
        self.namespace: dict = {"__bg_miss": self.miss, "__bg_fn": fn, "__bg_missing": _MISSING,
                                "__builtins__": __builtins__}
        if top_level:
            self.namespace.update(__bg_config=config, __bg_verify=self._verify, __bg_call=self._forwarder())
        self.wrapper = self._make_wrapper()
        _live.add(self)

    # ---- the generated wrapper ------------------------------------------------------
    def _signature_text(self) -> tuple[str, list[str], str, str]:
        """(parameter list, default-filling lines, all locals as positional args, forwarding call).

        Parameters with defaults get a sentinel, filled from the original function's
        *current* `__defaults__`/`__kwdefaults__` on each call, so changing them later
        behaves like eager (the new value is guarded like any other argument).
        """
        code = self.code
        names = self.argnames
        npos, nposonly, nkw = code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount
        ndefaults = len(self.fn.__defaults__ or ())
        kwdefaults = self.fn.__kwdefaults__ or {}
        params, fill, forward = [], [], []
        for i, name in enumerate(names[:npos]):
            if i >= npos - ndefaults:
                params.append(f"{name}=__bg_missing")
                fill.append(f"    if {name} is __bg_missing: {name} = __bg_fn.__defaults__[{i - (npos - ndefaults)}]")
            else:
                params.append(name)
        if nposonly:
            params.insert(nposonly, "/")
        forward.extend(names[:npos])
        index = npos + nkw
        if code.co_flags & inspect.CO_VARARGS:
            params.append("*" + names[index])
            forward.append("*" + names[index])
            index += 1
        elif nkw:
            params.append("*")
        for name in names[npos:npos + nkw]:
            if name in kwdefaults:
                params.append(f"{name}=__bg_missing")
                fill.append(f"    if {name} is __bg_missing: {name} = __bg_fn.__kwdefaults__[{name!r}]")
            else:
                params.append(name)
        forward.extend(f"{n}={n}" for n in names[npos:npos + nkw])
        if code.co_flags & inspect.CO_VARKEYWORDS:
            params.append("**" + names[index])
            forward.append("**" + names[index])
        return ", ".join(params), fill, ", ".join(names), ", ".join(forward)

    def _wrapper_source(self, entries: list) -> str:
        params, fill, values, forward = self._signature_text()
        lines = [f"def __bg_wrapper({params}):", *fill]
        if self.top_level:
            lines.append(f"    if __bg_config.verify: return __bg_verify({values})")
        for i in range(len(entries)):
            lines.append(f"    if __bg_g{i}({values}): return __bg_f{i}({forward})")
        lines.append(f"    return __bg_miss({len(entries)}, {values})({forward})")
        return "\n".join(lines) + "\n"

    def _forwarder(self) -> types.FunctionType:
        """`__bg_call(f, <bound arguments>)`: calls `f` with the arguments as the wrapper got them."""
        _, _, values, forward = self._signature_text()
        scope: dict = {}
        exec(compile(f"def __bg_call(__bg_target, {values}):\n    return __bg_target({forward})\n",
                     f"<bytegraph forwarder of {self.code.co_qualname}>", "exec"), {}, scope)
        return scope["__bg_call"]

    def _verify(self, *values):
        """The wrapper's call in verify mode (`runtime/verify.py`)."""
        return verify.run(self, self.namespace["__bg_call"], values)

    def _compile_wrapper_code(self, entries: list) -> types.CodeType:
        """The wrapper's code trying `entries` in order (their functions are put in the
        namespace; entries already installed keep their names, so running code stays valid)."""
        for i, entry in enumerate(entries):
            self.namespace[f"__bg_g{i}"] = entry.guards.fn
            self.namespace[f"__bg_f{i}"] = entry.fn
        scope: dict = {}
        exec(compile(self._wrapper_source(entries), f"<bytegraph wrapper of {self.code.co_qualname}>", "exec"),
             self.namespace, scope)
        return scope["__bg_wrapper"].__code__.replace(co_name=self.code.co_name,
                                                      co_qualname=self.code.co_qualname)

    def _make_wrapper(self) -> types.FunctionType:
        code = self._compile_wrapper_code([])
        ndefaults = len(self.fn.__defaults__ or ())
        wrapper = types.FunctionType(code, self.namespace, self.code.co_name,
                                     (_MISSING,) * ndefaults if ndefaults else None)
        wrapper.__kwdefaults__ = {k: _MISSING for k in self.fn.__kwdefaults__ or {}} or None
        functools.update_wrapper(wrapper, self.fn)
        wrapper.__bg_original__ = self.fn
        wrapper.__bg_compiled__ = self
        return wrapper

    def compile_callee(self, fn: types.FunctionType):
        """The bytegraph wrapper (same backend) for a callee or resume function that the
        residual code of a graph break calls."""
        # A function without cells or defaults does what its code and globals say, whichever
        # object it is: its wrapper is kept by those (the functions a `def` makes on every run of
        # its frame share one wrapper and its entries); any other function's by its identity (the
        # wrapper keeps `fn` alive, so the id stays its own). Spelled inline: a deep recursion
        # through residual calls must overflow where eager's does, not in a helper's frame.
        if fn.__closure__ is None and fn.__defaults__ is None and fn.__kwdefaults__ is None:
            key = (fn.__code__, id(fn.__globals__), id(self.backend))
        else:
            key = (id(fn), id(self.backend))
        wrapper = self.callees.get(key)
        if wrapper is None:
            with COMPILE_LOCK:
                wrapper = _callees.get(key)
                if wrapper is None:
                    callee = CompiledFunction(fn, self.backend, False, self.dynamic.mode)
                    callee.caller = weakref.ref(self)
                    wrapper = _callees[key] = callee.wrapper
                self.callees[key] = wrapper
        return wrapper

    def reset(self) -> None:
        with COMPILE_LOCK:
            stale = len(self.entries)
            self.entries = []
            self.looked_up = False
            self.callees = {}
            self.code_state = code_state.state_for(self.code_key, self.backend)
            self.code_state.wrappers.add(self)
            self.dynamic = DynamicState(self.dynamic.mode, self.code_state.memory)
            self.wrapper.__code__ = self._compile_wrapper_code([])
            for i in range(stale):  # drop the old entries (and through them their graphs' globals)
                del self.namespace[f"__bg_g{i}"], self.namespace[f"__bg_f{i}"]

    # ---- misses ---------------------------------------------------------------------
    def miss(self, checked: int, *values):
        """Called by the wrapper when none of its first `checked` entries' guards hold:
        returns the function to run. Misses are serialized (`COMPILE_LOCK`), so two
        threads missing at once compile once: the second finds the first one's entry."""
        with COMPILE_LOCK:
            for entry in self.entries[checked:]:
                if entry.guards.fn(*values):
                    return entry.fn
            shared = self._shared_entry(values)
            if shared is not None:
                return shared
            if not self.looked_up:
                self.looked_up = True
                stored = self._stored_entry(values)
                if stored is not None:
                    return stored
            named = set(OBJECT_REFS)
            try:
                return self._capture(values)
            finally:  # the compiled guards keep what they name; the registry lets it go
                for name in OBJECT_REFS.keys() - named:
                    del OBJECT_REFS[name]

    def _shared_entry(self, values):
        """The function of an entry of another live wrapper of this function (same code, globals
        and closure cells, backend, fullgraph and dynamic mode) whose guards hold now, installed
        in this wrapper too (Note [Recompile limit]); None if there is none."""
        mine = {id(entry) for entry in self.entries}
        for other in list(self.code_state.wrappers):
            if other is self or not self._shares_entries_with(other):
                continue
            for entry in other.entries:
                if id(entry) not in mine and entry.guards.fn(*values):
                    return self._install(entry)
        return None

    def _stored_entry(self, values):
        """The function of the persistent capture cache's entry whose guards hold now, installed
        as a capture's would be (Note [Capture cache]); None if there is none."""
        started = time.perf_counter()
        found = capture_cache.lookup(self, values)
        if found is None:
            return None
        guards, fn, graph_module, graph, side_effects = found
        entry = CacheEntry(guards, fn, "compiled", graph_module, graph[0] if graph else None,
                           reason="from the capture cache")
        entry.set_timing(started, time.perf_counter() - started, 0.0, 0.0)
        entry.side_effects = side_effects
        return self._add_entry(entry, None, graph)

    def _shares_entries_with(self, other: "CompiledFunction") -> bool:
        fn, theirs = self.fn, other.fn
        return (theirs.__code__ is fn.__code__ and theirs.__globals__ is fn.__globals__
                and _same_cells(theirs.__closure__, fn.__closure__) and other.backend is self.backend
                and other.fullgraph == self.fullgraph and other.dynamic.mode == self.dynamic.mode
                and other.top_level == self.top_level)

    def _over_limit(self, values) -> bool:
        """Whether this miss may not compile (Note [Recompile limit]): the code object has
        `config.recompile_limit` entries (a miss of its first call never is). Past it, the frame
        runs eagerly (one warning per code object), or under `fullgraph=True` or
        `config.fail_on_recompile_limit_hit` raises `FailOnRecompileLimitHit`."""
        state = self.code_state
        limit = min(config.recompile_limit, config.accumulated_recompile_limit)
        if state.entry_count < limit or state.entry_count == 0:
            return False
        found = recompiles.failures(self.entries, values)
        if self.fullgraph or config.fail_on_recompile_limit_hit:
            why = "fullgraph=True" if self.fullgraph else "config.fail_on_recompile_limit_hit"
            raise FailOnRecompileLimitHit(
                f"{recompiles.limit_message(self.code.co_qualname, self._location(), found, limit, raises=True)} "
                f"(a hard failure because of {why})")
        if not state.limit_hit:
            state.limit_hit = True
            warnings.warn(recompiles.limit_message(self.code.co_qualname, self._location(), found, limit),
                          RecompileLimitWarning, stacklevel=5)
        return True

    def _capture(self, values):
        if self._over_limit(values):
            return self.fn
        if self.entries:
            log = logger("recompiles")
            if log.isEnabledFor(logging.DEBUG) or RECOMPILE_LISTENERS:
                found = recompiles.failures(self.entries, values)
                if log.isEnabledFor(logging.DEBUG):
                    log.debug("%s", self._recompile_message(found, values))
                for listener in RECOMPILE_LISTENERS:
                    listener(self, found, values)
        started = time.perf_counter()
        try:
            with gc_pause.paused():  # Note [GC paused during a capture]
                spellings = argument_spellings(values) if self.fn is forward_call else None
                result = capture(self.fn, values, self.backend, self.fullgraph, self.callee_compiler, self.dynamic,
                                 spellings)
                traced = time.perf_counter()
                guards = self._compile_guards(result.guards)
        except GraphBreak as e:
            if self.fullgraph:
                raise e.to_unsupported() from None
            return self._fallback(f"{e.location}: {e.reason}", e, started)
        except UserCodeRaisesError as e:  # cached: the same guards make the same call raise
            return self._fallback(f"frame runs eagerly: {e.reason} at {e.location} (the exception "
                                  "escapes the compiled function)", e, started)
        except InternalTracerError as e:
            self._internal_error(e, "tracing")
            return self._fallback(f"internal error: {e}", e, started)
        entry = CacheEntry(guards, result.fn, "compiled", result.graph_module,
                           result.graph[0] if result.graph else None)
        entry.set_timing(started, result.seconds - result.backend_seconds - result.guard_seconds,
                         result.backend_seconds, result.guard_seconds + time.perf_counter() - traced)
        entry.side_effects = result.side_effects
        if result.graph_break is not None:
            brk = result.graph_break
            entry.reason = f"graph break at {brk.location}: {brk.reason}"
            logger("graph_breaks").debug("graph break in %s at %s [%s]: %s%s", self.code.co_qualname,
                                         brk.location, brk.category, brk.reason,
                                         f" (hint: {brk.hint})" if brk.hint else "")
        self._log_capture(entry)
        fn = self._add_entry(entry, result.graph_break, result.graph)
        if fn is entry.fn:
            capture_cache.save(self, entry, result)
        return fn

    def _internal_error(self, e: InternalTracerError, step: str) -> None:
        """A bytegraph bug: never the user's problem. Logged with its traceback; under
        `fullgraph=True` the user gets `Unsupported` naming it, else the frame runs eagerly."""
        logger("graph_breaks").warning("bytegraph internal error while %s %s; running it eagerly:\n%s", step,
                                       self.code.co_qualname, "".join(traceback.format_exception(e.cause)))
        if self.fullgraph:
            raise Unsupported(f"bytegraph internal error while {step} {self.code.co_qualname}: {e}",
                              f"{self.code.co_filename}:{self.code.co_firstlineno}",
                              "this is a bytegraph bug; please report it") from e

    def _fallback(self, reason: str, failure, started: float):
        """Run the frame eagerly, cached under the guards the failed trace had collected
        (`started`: when that trace began)."""
        logger("graph_breaks").debug("running %s eagerly: %s", self.code.co_qualname, reason)
        if failure.guards is None:  # the capture could not make them (translate/capture.py)
            return self.fn
        traced = time.perf_counter()
        try:
            guards = self._compile_guards(failure.guards)
        except InternalTracerError as e:  # not cached: the next call tries again
            self._internal_error(e, "compiling the guards of an eager entry for")
            return self.fn
        entry = CacheEntry(guards, self.fn, "eager", reason=reason)
        entry.set_timing(started, traced - started, 0.0, time.perf_counter() - traced)
        return self._add_entry(entry, failure if isinstance(failure, GraphBreak) else None, None)

    def _compile_guards(self, guards: list) -> CompiledGuards:
        try:
            return CompiledGuards(guards, self.argnames, self.fn.__globals__, self.fn.__closure__)
        except Exception as e:  # a bytegraph bug, reported like one of the tracer
            raise InternalTracerError(e, guards) from e

    def _add_entry(self, entry: CacheEntry, graph_break, graph) -> types.FunctionType:
        """Install `entry` (and its compiled `graph`: (global name, callable)) in the wrapper,
        all or nothing, tell the listeners (explain) and return the function to run now."""
        entries = [*self.entries, entry]
        try:
            code = self._compile_wrapper_code(entries)
        except Exception as e:  # a bytegraph bug: nothing was installed, this call runs eagerly
            self._internal_error(InternalTracerError(e, None), "installing the cache entry of")
            return self.fn
        if graph is not None:
            name, compiled = graph
            f_globals = self.fn.__globals__
            f_globals[name] = compiled
            weakref.finalize(entry.fn, f_globals.pop, name, None).atexit = False  # no entry runs it any more
        self.entries = entries
        self.wrapper.__code__ = code
        self.code_state.entry_count += 1
        for listener in LISTENERS:
            listener(self, entry, graph_break)
        return entry.fn

    def _install(self, entry: CacheEntry) -> types.FunctionType:
        """Install `entry`, another wrapper's, in this wrapper's code (nothing is compiled)."""
        entries = [*self.entries, entry]
        code = self._compile_wrapper_code(entries)
        self.entries = entries
        self.wrapper.__code__ = code
        return entry.fn

    def _location(self) -> str:
        return f"{self.code.co_filename}:{self.code.co_firstlineno}"

    def _recompile_message(self, found: list, values) -> str:
        """Which guard failed for each entry the wrapper tried (`found`: runtime/recompiles.py)."""
        notes = self.recompile_notes(found, values)
        return recompiles.recompile_message(self.code.co_qualname, self._location(), found, notes)

    def recompile_notes(self, found: list, values) -> dict:
        """Entry number -> what to add to its failure's line (the default a parameter was filled from)."""
        return {f.entry_number: self._default_note(f.guard, values) for f in found if f.guard is not None}

    def _default_note(self, failure, values) -> str:
        """Names the defaults when the failing guard is on a parameter that the wrapper
        filled from the function's current `__defaults__`/`__kwdefaults__`."""
        root = failure.source.root() if failure.source is not None else None
        if not isinstance(root, LocalSource) or root.local_name not in self.argnames:
            return ""
        name = root.local_name
        index = self.argnames.index(name)
        defaults = self.fn.__defaults__ or ()
        first_default = self.code.co_argcount - len(defaults)
        kwdefaults = self.fn.__kwdefaults__ or {}
        if first_default <= index < self.code.co_argcount and values[index] is defaults[index - first_default]:
            where = "defaults"
        elif name in kwdefaults and values[index] is kwdefaults[name]:
            where = "keyword-only defaults"
        else:
            return ""
        return f"; {name} is the default value from the {where} of {self.code.co_qualname}"

    def _log_capture(self, entry: CacheEntry) -> None:
        if entry.graph_module is not None:
            logger("graph").debug("graph %s for %s:\n%s", entry.graph_name, self.code.co_qualname,
                                  entry.graph_module.code)
        logger("guards").debug("guards for %s:\n%s", self.code.co_qualname, entry.guards.source)
        code_log = logger("bytecode")
        if code_log.isEnabledFor(logging.DEBUG):
            code_log.debug("original bytecode of %s:\n%s\ntransformed bytecode:\n%s", self.code.co_qualname,
                           dis.Bytecode(self.code).dis(), dis.Bytecode(entry.fn.__code__).dis())
        logger("perf").debug("captured %s in %.2f ms", self.code.co_qualname, entry.capture_seconds * 1e3)


def _same_cells(a, b) -> bool:
    if a is b:
        return True
    return a is not None and b is not None and len(a) == len(b) and all(x is y for x, y in zip(a, b))


class RecompileLimitWarning(UserWarning):
    """A compiled function exceeded `config.recompile_limit` and now runs eagerly on misses."""


def reset_all() -> None:
    with COMPILE_LOCK:
        code_state.forget_all()
        for state in list(_live):
            state.reset()
        _callees.clear()
        forget_resume_functions()
        forget_continuations()
