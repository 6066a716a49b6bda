"""Verify mode (`bytegraph.config.verify`, `BYTEGRAPH_VERIFY=1`): every call of a top-level
compiled function (what the user called: `bytegraph.compile(fn)`, a compiled module or
callable object; not resume functions or graph-broken callees, whose calls are part of
the top-level call) that runs a compiled cache entry also runs the original function
eagerly on deep copies, and the two runs are compared.

This module owns the whole mode:
- which entry the call runs (the wrapper's guards, or a miss that captures one), and
  which calls are skipped (an eager entry; uncopyable arguments or state, with a note);
- the copies: the bound arguments (a method's `self`, a module's parameters, buffers and
  attributes among them), the closure cells of the function, and the globals that its
  code, the code of the same-module functions and classes it names, and the methods of
  its arguments' classes read or write (one `copy.deepcopy` with a shared memo, so
  aliasing between them is kept; modules are shared, never copied);
- the eager rerun: first, on the copies (the copies are put in the real globals dicts
  and cells for its duration and the originals put back after it, globals it creates
  removed; top-level compiled functions it calls run their original code; what it prints
  is dropped), in the grad mode the user called in, with torch's and `random`'s RNG state
  saved before it and restored before the compiled run, so both runs draw the same numbers;
- the comparison of outputs, arguments after the call, the grad mode after the call,
  globals and cells (by name; globals either run created too) and exceptions (type and
  message), with the rules of `tests/helpers.py::assert_same`;
- the report: `VerifyError` raised after the compiled call (mode `True`), or one error
  logged on the `verify` topic (mode `"warn"`), and `bytegraph.counters["verify"]`
  (`checked`, `differences`, `skipped`).

The user's real arguments and state see exactly one execution, the compiled one. Not covered:
state reached only through objects it does not copy (attributes of modules outside user code, C
state), I/O and time (both runs do them), the identity of outputs (an output that is an argument
object) and gradients; copying and comparing read the values, so a Python `__getattribute__`
that records its reads sees verify's reads too. The copies sit in the real namespaces while the eager run runs: another
thread reading those globals then sees them (a debugging mode, not for concurrent programs).
Everything here runs only when the mode is on: a top-level wrapper checks
`config.verify` once per call (Note [Verify line] in `runtime/compiled_function.py`).
"""
from __future__ import annotations

import collections
import contextlib
import copy
import dis
import functools
import io
import math
import random
import sys
import threading
import types
from dataclasses import dataclass, field, replace

import torch

from .. import config
from .counters import counters
from .logs import logger
from .root_frames import forward_call


class VerifyError(AssertionError):
    """A compiled call that does not agree with the eager run of the same call.

    An AssertionError, not a RuntimeError: it is a failed consistency check of the
    compiler (pytest reports it as a failure, with the text), and user code and libraries
    commonly catch RuntimeError (what torch raises) to fall back, which would hide it."""


VerifyError.__module__ = "bytegraph"  # public as `bytegraph.VerifyError`


_ABSENT = object()  # a global not defined, an empty cell
_SHAREABLE = (type(threading.Lock()), type(threading.RLock()))  # uncopyable, harmless to use twice
_COPY_ERRORS = (TypeError, copy.Error, RuntimeError, AttributeError, ValueError)  # what deepcopy raises on
# what it cannot copy (pickling refused, a non-leaf tensor, a `__reduce__` that does not round-trip)
_LRU_CACHE_WRAPPER = type(functools.lru_cache(lambda: None))  # C state deepcopy shares
_MAX_FUNCTIONS = 256  # functions whose code is read to find the globals of a call
_state = threading.local()  # `eager`: True while this thread runs an eager rerun


# ---- the entry point ---------------------------------------------------------------------

def run(compiled, call, values: tuple):
    """The call of a top-level wrapper in verify mode: `call(fn, *values)` calls `fn` as the
    user called the wrapper (`values`: the bound arguments, in `compiled.argnames` order)."""
    if getattr(_state, "eager", False):  # inside another function's eager rerun: all eager
        return call(compiled.fn, *values)
    grad_mode = torch.is_grad_enabled()  # the user's, before a miss's capture
    index, entry, fn = _select(compiled, values)
    if entry is None or entry.kind != "compiled":
        return call(fn, *values)
    slots = _slots(compiled.fn, values)
    copies = _copy_state(values, slots, compiled.argnames)
    if copies.skip:
        _note_skip(compiled, values, copies.skip)
        return call(fn, *values)
    eager, real = _both_runs(compiled, call, values, entry, slots, copies, grad_mode)
    counters["verify"]["checked"] += 1
    difference = _difference(eager, real, compiled, slots, copies)
    if difference is not None:
        _report(compiled, values, index, entry, difference, copies, real.exc)
    if real.exc is not None:
        raise real.exc
    return real.out


def _both_runs(compiled, call, values, entry, slots: list, copies, grad_mode: bool) -> tuple:
    """(eager outcome, compiled outcome): the eager run on the copies in the user's grad mode
    and RNG state, then the entry on the real values in the state the wrapper would run it
    in. `slots` gets the globals either run created."""
    rng, wrapper_grad_mode = _rng_state(), torch.is_grad_enabled()
    dicts = {id(slot.holder): slot.holder for slot in slots if isinstance(slot.holder, dict)}
    keys = {i: set(g) for i, g in dicts.items()}
    torch._C._set_grad_enabled(grad_mode)
    eager = _run_eager(compiled.fn, call, copies, slots, dicts, keys)
    eager.grad_mode = torch.is_grad_enabled()
    _set_rng_state(rng)
    torch._C._set_grad_enabled(wrapper_grad_mode)
    real = _run(call, entry.fn, values)
    real.grad_mode = torch.is_grad_enabled()
    for slot in _created_slots(dicts, keys, eager.created, slots):
        slots.append(slot)
        eager.slots.append(eager.created.get((id(slot.holder), slot.key), _ABSENT))
    real = replace(real, values=values, slots=[slot.get() for slot in slots])
    return eager, real


def _select(compiled, values):
    """(index, entry, function) the call runs, as the wrapper would choose them."""
    for index, entry in enumerate(compiled.entries):
        if entry.guards.fn(*values):
            return index, entry, entry.fn
    fn = compiled.miss(len(compiled.entries), *values)
    for index, entry in enumerate(compiled.entries):
        if entry.fn is fn:
            return index, entry, fn
    return None, None, fn  # the cache limit, or a capture that could not be cached


# ---- state the call can reach --------------------------------------------------------------

class Slot:
    """One place the call may read or write besides its arguments: a global (`holder` a
    namespace dict), a cell (`key` None) or a function's defaults (`key` the attribute)."""

    __slots__ = ("holder", "key", "label")

    def __init__(self, holder, key, label: str):
        self.holder, self.key, self.label = holder, key, label

    def get(self):
        if isinstance(self.holder, dict):
            return self.holder.get(self.key, _ABSENT)
        if self.key is not None:  # a function's `__defaults__`/`__kwdefaults__`
            return getattr(self.holder, self.key)
        try:
            return self.holder.cell_contents
        except ValueError:  # an empty cell
            return _ABSENT

    def set(self, value) -> None:
        if isinstance(self.holder, dict):
            if value is _ABSENT:
                self.holder.pop(self.key, None)
            else:
                self.holder[self.key] = value
        elif self.key is not None:
            setattr(self.holder, self.key, value)
        elif value is _ABSENT:
            try:
                del self.holder.cell_contents
            except ValueError:
                pass
        else:
            self.holder.cell_contents = value


def _slots(fn: types.FunctionType, values: tuple) -> list:
    """The globals and closure cells the call can read or write: those of the function, of
    the functions and classes they name in user modules (their globals, attributes of user
    modules, cells of closures held in globals or cells) and of its arguments' classes."""
    slots: list = []
    names: dict = {}  # id(namespace dict) -> (dict, set of names, label prefix)
    cells: set = set()
    queue = [fn, *_methods_of_arguments(values), *_functions_in(values, None)]
    seen: set = set()
    while queue and len(seen) < _MAX_FUNCTIONS:
        f = queue.pop()
        if id(f) in seen:
            continue
        seen.add(id(f))
        for attr in ("__defaults__", "__kwdefaults__"):  # `def f(x, acc=[])`: state of the function
            if getattr(f, attr):
                slots.append(Slot(f, attr, f"{f.__qualname__}.{attr}"))
        for name, cell in zip(f.__code__.co_freevars, f.__closure__ or ()):
            if id(cell) not in cells:
                cells.add(id(cell))
                owner = "" if f is fn else f" of {f.__qualname__}"
                slots.append(Slot(cell, None, f"closure variable {name}{owner}"))
                queue.extend(_functions_in(Slot(cell, None, "").get(), None))
        g = f.__globals__
        if not _user_globals(g):
            continue
        read, written = _global_names(f.__code__)
        used = [name for name in read | written if not name.startswith("__")]
        prefix = "global " if g is fn.__globals__ else f"global {g.get('__name__', '?')}."
        names.setdefault(id(g), (g, set(), prefix))[1].update(used)
        for name in used:
            value = g.get(name)
            queue.extend(_functions_in(value, g))
            if isinstance(value, types.ModuleType) and _user_globals(vars(value)):  # `other.LEVEL += 1`
                names.setdefault(id(vars(value)), (vars(value), set(), f"{value.__name__}."))[1].update(used)
                for attr in used:  # `other.bump()`
                    queue.extend(_functions_in(vars(value).get(attr), vars(value)))
    for g, wanted, prefix in names.values():
        slots.extend(Slot(g, name, f"{prefix}{name}") for name in sorted(wanted))
    return slots


def _functions_in(value, g, depth: int = 2) -> list:
    """`_functions_of(value)`, and of the items of a tuple, list or dict `value` (2 levels)."""
    if isinstance(value, (tuple, list)) and depth:
        return [f for item in value[:64] for f in _functions_in(item, g, depth - 1)]
    if isinstance(value, dict) and depth:
        return [f for item in list(value.values())[:64] for f in _functions_in(item, g, depth - 1)]
    return _functions_of(value, g)


def _user_globals(g: dict) -> bool:
    """Globals of user code (not bytegraph's, torch's or the standard library's)."""
    name = g.get("__name__", "")
    top = name.partition(".")[0]
    return top not in ("bytegraph", "torch") and top not in sys.stdlib_module_names


def _methods_of_arguments(values: tuple) -> list:
    """The functions of the user classes of the arguments (a module's `forward`)."""
    out = []
    for cls in {type(v) for v in values}:
        for klass in cls.__mro__:
            if not _user_globals(sys.modules.get(klass.__module__, types.SimpleNamespace()).__dict__):
                continue
            out.extend(_functions_of(klass, None))
    return out


def _functions_of(value, g) -> list:
    """Functions to read the code of: `value` if it is a function, a class's methods (a class
    defined in the module of globals `g`, or any class when `g` is None)."""
    if isinstance(value, types.FunctionType):
        return [value]
    if isinstance(value, type) and (g is None or getattr(value, "__module__", None) == g.get("__name__")):
        out = []
        for attr in vars(value).values():
            attr = getattr(attr, "__func__", attr)  # staticmethod, classmethod
            if isinstance(attr, property):
                out.extend(f for f in (attr.fget, attr.fset, attr.fdel) if isinstance(f, types.FunctionType))
            elif isinstance(attr, types.FunctionType):
                out.append(attr)
        return out
    return []


@functools.lru_cache(maxsize=4096)
def _global_names(code: types.CodeType) -> tuple:
    """(names `code` and its nested code may read as globals, names it stores or deletes)."""
    read, written = set(code.co_names), set()
    for inst in dis.get_instructions(code):
        if inst.opname in ("STORE_GLOBAL", "DELETE_GLOBAL"):
            written.add(inst.argval)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            r, w = _global_names(const)
            read |= r
            written |= w
    return frozenset(read), frozenset(written)


# ---- copies ----------------------------------------------------------------------------------

@dataclass
class Copies:
    values: tuple = ()
    slots: list = field(default_factory=list)
    shared: list = field(default_factory=list)  # (label, why): shared with the real run, not compared
    skip: list = field(default_factory=list)    # (label, why): the call cannot be verified


def _copy_state(values: tuple, slots: list, argnames: tuple) -> Copies:
    """Deep copies of the arguments and of the slots' values, with one memo (aliasing kept).
    What cannot be copied is shared when harmless (`_SHAREABLE`), else the call is skipped."""
    originals = [slot.get() for slot in slots]
    cached = [(slot.label, "an lru_cache wrapper: its cache is shared, the eager run would fill it")
              for slot, value in zip(slots, originals) if isinstance(value, _LRU_CACHE_WRAPPER)]
    if cached:
        return Copies(skip=cached)
    try:
        copied_values, copied_slots = copy.deepcopy((values, originals), _memo((values, originals)))
        return _faithful(Copies(copied_values, copied_slots), values, originals, slots, argnames)
    except _COPY_ERRORS:  # one of them cannot be copied: find which, one by one
        pass
    copied_values, skip = [], []
    for i, value in enumerate(values):
        ok, result = _copy_one(value)
        copied_values.append(result)
        if not ok:
            skip.append((f"argument {argnames[i]}", result))
    out = Copies(tuple(copied_values), skip=skip)
    for slot, value in zip(slots, originals):
        ok, result = _copy_one(value)
        if ok:
            out.slots.append(result)
        elif isinstance(value, _SHAREABLE):
            out.slots.append(value)
            out.shared.append((slot.label, result))
        else:
            out.slots.append(value)
            out.skip.append((slot.label, result))
    return out


def _faithful(copies: Copies, values: tuple, originals: list, slots: list, argnames: tuple) -> Copies:
    """`copies`, or a skip when a copy does not compare equal to its original (a class whose
    pickling protocol rebuilds it differently, such as a dict subclass whose `__setitem__`
    transforms keys): the eager run would start from another state."""
    pairs = [*zip(argnames, values, copies.values),
             *((s.label, o, c) for s, o, c in zip(slots, originals, copies.slots))]
    for label, original, copied in pairs:
        found = _diff(copied, original, label, set())
        if found:
            copies.skip.append((label, f"its copy differs from it: {found}"))
            return copies
    return copies


def _copy_one(value) -> tuple:
    """(True, copy) or (False, why it cannot be copied)."""
    try:
        return True, copy.deepcopy(value, _memo(value))
    except _COPY_ERRORS as e:  # the value's type refuses to be copied (a note, never a crash)
        return False, f"{type(value).__qualname__}: {type(e).__name__}: {e}"


_modules_memo: list = [-1, {}]  # len(sys.modules) when made, {id(module): module} (and `_ABSENT`)


def _shared_modules() -> dict:
    """{id: object} of every imported module and `_ABSENT`: the start of each memo."""
    if _modules_memo[0] != len(sys.modules):
        shared = {id(m): m for m in list(sys.modules.values()) if m is not None}
        shared[id(_ABSENT)] = _ABSENT
        _modules_memo[:] = [len(sys.modules), shared]
    return _modules_memo[1]


def _memo(root) -> dict:
    """A deepcopy memo that shares modules and `object()` sentinels (immutable, compared by
    identity: a copy would not be the sentinel that code elsewhere compares with) and copies
    non-leaf tensors (which refuse `deepcopy`) as detached clones with their `requires_grad`,
    inference tensors as inference-mode clones.
    Looks through containers and user objects' attributes (a bounded walk)."""
    memo = _shared_modules().copy()
    stack, seen = [root], set()
    while stack and len(seen) < 10000:
        value = stack.pop()
        if id(value) in seen:
            continue
        seen.add(id(value))
        if isinstance(value, torch.Tensor):
            if value.is_inference():  # deepcopy would make a normal tensor
                with torch.inference_mode():
                    memo[id(value)] = value.clone()
            elif not value.is_leaf:
                memo[id(value)] = value.detach().clone().requires_grad_(value.requires_grad)
        elif isinstance(value, (list, tuple, set, frozenset)):
            stack.extend(value)
        elif isinstance(value, dict):
            stack.extend(value.values())
        elif isinstance(value, types.CellType):
            stack.append(Slot(value, None, "").get())
        elif type(value) is object:  # a sentinel: immutable, compared by identity
            memo[id(value)] = value
        elif isinstance(getattr(value, "__dict__", None), dict) and not isinstance(value, (type, types.ModuleType)):
            stack.extend(vars(value).values())
    return memo


# ---- the two runs ----------------------------------------------------------------------------

@dataclass
class Outcome:
    out: object = None
    exc: BaseException | None = None
    values: tuple = ()
    slots: list = field(default_factory=list)
    created: dict = field(default_factory=dict)  # (id(globals dict), name) -> value: globals eager created
    grad_mode: bool = True  # after the run


def _run(call, fn, values) -> Outcome:
    try:
        return Outcome(out=call(fn, *values))
    except Exception as e:  # the user's exception: compared, then re-raised by `run`
        return Outcome(exc=e)


def _run_eager(fn, call, copies: Copies, slots: list, dicts: dict, keys: dict) -> Outcome:
    """The original function on the copies: put in the real slots for the run, the
    originals put back after it; globals it created in the `dicts` (whose `keys` were
    those before it) are kept in `outcome.created` and removed."""
    originals = [slot.get() for slot in slots]
    outer = getattr(_state, "eager", False)
    _state.eager = True
    outcome = Outcome()
    try:
        for slot, value in zip(slots, copies.slots):
            slot.set(value)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            outcome = _run(call, fn, copies.values)  # what it prints is the real run's to print
        outcome = replace(outcome, values=copies.values, slots=[slot.get() for slot in slots])
    finally:
        _state.eager = outer
        for slot, value in zip(slots, originals):
            slot.set(value)
        for i, g in dicts.items():
            for name in set(g) - keys[i]:
                outcome.created[i, name] = g.pop(name)
    return outcome


def _created_slots(dicts: dict, keys: dict, created: dict, slots: list) -> list:
    """Slots for the globals the eager run or the compiled run created that no slot names."""
    out = []
    named = {(id(slot.holder), slot.key) for slot in slots}
    for i, g in dicts.items():
        names = {name for j, name in created if j == i} | (set(g) - keys[i])
        names = {name for name in names if (i, name) not in named}
        module = g.get("__name__", "?")
        out.extend(Slot(g, name, f"global {module}.{name}") for name in sorted(names) if not name.startswith("__bg_"))
    return out


def _rng_state():
    return torch.get_rng_state(), random.getstate()


def _set_rng_state(state) -> None:
    torch.set_rng_state(state[0])
    random.setstate(state[1])


# ---- comparison ------------------------------------------------------------------------------

def _difference(eager: Outcome, real: Outcome, compiled, slots: list, copies: Copies):
    """The first difference between the two runs, as text, or None."""
    if (eager.exc is None) != (real.exc is None):
        if eager.exc is None:
            return f"exception: compiled raised {_exc_text(real.exc)}, eager returned {_short(eager.out)}"
        return f"exception: eager raised {_exc_text(eager.exc)}, compiled returned {_short(real.out)}"
    if eager.exc is not None:
        if type(eager.exc) is not type(real.exc) or str(eager.exc) != str(real.exc):
            return f"exception: compiled raised {_exc_text(real.exc)}, eager raised {_exc_text(eager.exc)}"
    else:
        found = _diff(eager.out, real.out, "output", set())
        if found:
            return found
    for name, e, r in zip(compiled.argnames, eager.values, real.values):
        found = _diff(e, r, name, set())
        if found:
            return f"argument after the call: {found}"
    if eager.grad_mode != real.grad_mode:
        return f"torch.is_grad_enabled() after the call: compiled {real.grad_mode}, eager {eager.grad_mode}"
    shared = {label for label, _ in copies.shared}
    for slot, e, r in zip(slots, eager.slots, real.slots):
        if slot.label in shared:
            continue
        found = _diff(e, r, slot.label, set())
        if found:
            return found
    return None


_BY_EQUALITY = (int, float, complex, bool, str, bytes, type(None), torch.dtype, torch.device, torch.Size,
                range, slice, frozenset, set)


def _diff(eager, real, path: str, seen: set):
    """The first difference between an eager value and the compiled one (`path: what`), with
    `tests/helpers.py::assert_same`'s rules; None if they agree."""
    if eager is real:  # shared by both runs (a module, a class, an atomic value)
        return None
    key = (id(eager), id(real))
    if key in seen:
        return None
    seen.add(key)
    if eager is _ABSENT or real is _ABSENT:
        if eager is real:
            return None
        return f"{path}: {'not defined' if real is _ABSENT else _short(real)} after the compiled call, " \
               f"{'not defined' if eager is _ABSENT else _short(eager)} after eager"
    if type(eager) is not type(real):
        return f"{path}: compiled {type(real).__qualname__} ({_short(real)}), eager {type(eager).__qualname__} " \
               f"({_short(eager)})"
    if isinstance(eager, torch.Tensor):
        return _tensor_diff(eager, real, path, seen)
    if isinstance(eager, (list, tuple)) and not isinstance(eager, torch.Size):
        if len(eager) != len(real):
            return f"{path}: length {len(real)} compiled, {len(eager)} eager ({_short(real)} vs {_short(eager)})"
        for i, (e, r) in enumerate(zip(eager, real)):
            found = _diff(e, r, f"{path}[{i}]", seen)
            if found:
                return found
        return None
    if isinstance(eager, collections.deque):
        if eager.maxlen != real.maxlen:
            return f"{path}: maxlen {real.maxlen} compiled, {eager.maxlen} eager"
        return _diff(list(eager), list(real), f"{path}.<items>", seen)
    if isinstance(eager, collections.ChainMap):
        return _diff(eager.maps, real.maps, f"{path}.maps", seen)
    if isinstance(eager, dict):
        if list(eager) != list(real):
            return f"{path}: keys {_short(list(real))} compiled, {_short(list(eager))} eager"
        for k in eager:
            found = _diff(eager[k], real[k], f"{path}[{k!r}]", seen)
            if found:
                return found
        return None
    if isinstance(eager, float) and math.isnan(eager) and math.isnan(real):
        return None
    if isinstance(eager, (types.ModuleType, type, types.BuiltinFunctionType)):
        return f"{path}: compiled {_short(real)}, eager {_short(eager)}"
    if isinstance(eager, torch.nn.Module) or _compares_by_identity(eager):
        if isinstance(getattr(eager, "__dict__", None), dict):  # a copy: compare its attributes
            return _diff(vars(eager), vars(real), f"{path}.__dict__", seen)
        return None
    if isinstance(eager, types.FunctionType):
        return None if eager.__code__ is real.__code__ else f"{path}: compiled {real!r}, eager {eager!r}"
    if isinstance(eager, types.MethodType):
        if eager.__func__ is not real.__func__:
            return f"{path}: compiled {real!r}, eager {eager!r}"
        return _diff(eager.__self__, real.__self__, f"{path}.__self__", seen)
    return _equal(eager, real, path)


def _compares_by_identity(value) -> bool:
    return not isinstance(value, _BY_EQUALITY) and type(value).__eq__ is object.__eq__


def _equal(eager, real, path: str):
    try:
        same = bool(real == eager)
    except Exception:  # an `__eq__` that raises (user code, a tensor inside): not comparable, not reported
        return None
    return None if same else f"{path}: compiled {_short(real)}, eager {_short(eager)}"


def _tensor_diff(eager: torch.Tensor, real: torch.Tensor, path: str, seen: set):
    for what in ("shape", "dtype", "device", "requires_grad"):
        e, r = getattr(eager, what), getattr(real, what)
        if e != r:
            return f"{path}: {what} {tuple(r) if what == 'shape' else r} compiled, " \
                   f"{tuple(e) if what == 'shape' else e} eager"
    try:
        if not torch.equal(real.detach(), eager.detach()):  # the common case without assert_close's cost
            torch.testing.assert_close(real.detach(), eager.detach(), equal_nan=True)
    except AssertionError:
        return f"{path}: values differ, {_max_abs(eager, real)} (compiled {_short(real)}, eager {_short(eager)})"
    if getattr(eager, "__dict__", None) or getattr(real, "__dict__", None):
        return _diff(vars(eager), vars(real), f"{path}.__dict__", seen)
    return None


def _max_abs(eager: torch.Tensor, real: torch.Tensor) -> str:
    if eager.dtype is not torch.bool:
        delta = (real.detach().to(torch.float64) - eager.detach().to(torch.float64)).abs()
        return f"max abs difference {delta.max().item():g}" if delta.numel() else "empty"
    return f"{int((real != eager).sum())} elements differ"


def _short(value) -> str:
    if isinstance(value, torch.Tensor) and value.numel() > 8:
        return f"tensor of shape {tuple(value.shape)}, {value.dtype}"
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _exc_text(exc: BaseException) -> str:
    return f"{type(exc).__qualname__}({str(exc)!r})"


# ---- reports ---------------------------------------------------------------------------------

def _function_of(compiled, values) -> tuple:
    """(qualified name, file:line) of what the user compiled (a module: its `forward`)."""
    if compiled.fn is forward_call and values and isinstance(values[0], torch.nn.Module):
        forward = getattr(type(values[0]).forward, "__code__", None)
        where = f"{forward.co_filename}:{forward.co_firstlineno}" if forward else "?"
        return f"{type(values[0]).__qualname__}.forward", where
    code = compiled.code
    return code.co_qualname, f"{code.co_filename}:{code.co_firstlineno}"


def report_text(compiled, values, index: int, entry, difference: str, copies: Copies) -> str:
    name, where = _function_of(compiled, values)
    lines = [f"bytegraph verify: the compiled call of {name} ({where}) differs from eager:",
             f"  {difference}",
             f"cache entry {index} of {len(compiled.entries)} ({entry.reason or 'one graph'}); its guards:"]
    lines += [f"  - {g.describe()}" + (f"  # {g.user_location}" if g.user_location else "")
              for g in entry.guards.guards] or ["  (none)"]
    if copies.shared:
        lines.append("not copied (shared with the real run, not compared):")
        lines += [f"  - {label}: {why}" for label, why in copies.shared]
    return "\n".join(lines)


def _report(compiled, values, index, entry, difference, copies, cause) -> None:
    counters["verify"]["differences"] += 1
    text = report_text(compiled, values, index, entry, difference, copies)
    if config.verify == "warn":
        logger("verify").error("%s", text)
        return
    raise VerifyError(text) from cause


def _note_skip(compiled, values, skip: list) -> None:
    """A call that cannot be verified: counted, and logged (a warning the first time for
    each compiled function, then on the `verify` topic's debug level)."""
    counters["verify"]["skipped"] += 1
    name, where = _function_of(compiled, values)
    text = (f"bytegraph verify: not verifying a call of {name} ({where}): cannot copy "
            + "; ".join(f"{label} ({why})" for label, why in skip))
    log = logger("verify")
    if getattr(compiled, "verify_warned", False):
        log.debug("%s", text)
    else:
        compiled.verify_warned = True
        log.warning("%s", text)
