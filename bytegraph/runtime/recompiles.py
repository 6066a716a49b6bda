"""Why a compiled function recompiles, in user terms: the `recompiles` log line of a miss
and the one `RecompileLimitWarning` of a function that reached `config.cache_size_limit` (or its
`FailOnRecompileLimitHit`).

Both name, for each cache entry the wrapper tried, the first guard that failed, what the
guarded value is now, and the user's line that read it (with its source text). The limit
warning names the guard that kept failing (the guard on one value failing for the most
entries) and what to do about it. Everything here runs on misses only.
"""
from __future__ import annotations

import linecache
import types
from collections import Counter

import torch

from ..guards.compile import UNREADABLE
from ..guards.guard import GuardKind, TensorSpec
from ..guards.sources import LocalSource

_TENSOR_FIELDS = ("type", "dtype", "device", "shape", "stride", "requires_grad")


class Failure:
    """The first failing guard of one entry and what its source holds now."""

    __slots__ = ("entry_number", "guard", "observed")

    def __init__(self, entry_number: int, guard, observed):
        self.entry_number = entry_number  # 1-based, in the order the wrapper tries entries
        self.guard = guard                # None: every guard holds now
        self.observed = observed

    def text(self) -> str:
        guard = self.guard
        if guard is None:
            return "a guard of this entry from the capture cache fails (its guards are not itemized)" \
                if self.observed is _RESTORED else "every guard holds now"
        changes = (_tensor_changes(guard.expected, self.observed)
                   if guard.kind is GuardKind.TENSOR_MATCH and isinstance(self.observed, torch.Tensor) else "")
        if changes:
            said = f"tensor {guard.source.describe()} has {changes}"
        else:
            said = f"{guard.describe()}{_now(guard, self.observed)}"
        return f"{said}{where(guard.user_location)}"

    def value_text(self) -> str:
        """What failed the guard, in words: the tensor properties that differ
        (`shape (4,) (expected (3,))`) or what the value is now (`it is 5`); "" when every
        guard holds or the value cannot be read."""
        guard = self.guard
        if guard is None:
            return ""
        if guard.kind is GuardKind.TENSOR_MATCH and isinstance(self.observed, torch.Tensor):
            changes = _tensor_changes(guard.expected, self.observed)
            if changes:
                return changes
        now = _now(guard, self.observed).removeprefix(", but ")
        if not now and self.observed is not UNREADABLE:  # a guard on a size, a flag, ...: the value it reads
            now = f"it is {_short(self.observed)}"
        return now


_RESTORED = object()  # `Failure.observed` of a failing entry loaded from the capture cache


def failures(entries, values) -> list:
    """The first failing guard of each of `entries` for the call's argument `values`."""
    out = []
    for number, entry in enumerate(entries, 1):
        guard = entry.guards.first_failure(values)
        observed = UNREADABLE if guard is None else entry.guards.observed(guard, values)
        if entry.guards.restored and not entry.guards.fn(*values):  # no Guard objects to name
            observed = _RESTORED
        out.append(Failure(number, guard, observed))
    return out


def where(location: str) -> str:
    """` (guard from file:line: <the line's text>)`, or "" for a guard without a user line."""
    if not location:
        return ""
    path, _, line = location.rpartition(":")
    text = linecache.getline(path, int(line)).strip() if line.isdigit() else ""
    return f" (guard from {location}: {text})" if text else f" (guard from {location})"


def recompile_message(qualname: str, location: str, found: list, notes: dict) -> str:
    """The `recompiles` log line: one failure per entry (`notes`: entry number -> text
    appended to its line, such as the default a parameter was filled from)."""
    lines = [f"recompiling {qualname} ({location}), triggered by the following guard failure(s):"]
    lines += [f"    - entry {f.entry_number}: {f.text()}{notes.get(f.entry_number, '')}" for f in found]
    return "\n".join(lines)


def limit_message(qualname: str, location: str, found: list, limit: int, raises: bool = False) -> str:
    """The `RecompileLimitWarning` text (`FailOnRecompileLimitHit`'s when `raises`): the guard
    that kept failing and what to do."""
    failed = [f for f in found if f.guard is not None]
    then = "no compiled entry matches this call." if raises else \
        "it runs eagerly from now on when no compiled entry matches."
    head = f"bytegraph: {qualname} ({location}) hit config.cache_size_limit={limit}; {then}"
    if not failed:
        return f"{head} Raise bytegraph.config.cache_size_limit (now {limit}) to compile more variants."
    by_value = Counter((f.guard.kind, f.guard.source) for f in failed)
    newest = failed[-1]
    count = max(by_value.values())
    kept = next(f for f in reversed(failed) if by_value[f.guard.kind, f.guard.source] == count)
    what = kept.guard.source.describe() if kept.guard.source is not None else kept.guard.kind.value
    seen = _values_seen([f for f in failed if (f.guard.kind, f.guard.source) == (kept.guard.kind, kept.guard.source)])
    hint = _hint(kept)
    return (f"{head} The guard that kept failing is on {what}: it failed for {count} of {len(found)} entries"
            f"{seen}; in the newest entry: {newest.text()}. To fix: {hint}raise "
            f"bytegraph.config.cache_size_limit (now {limit}) if every variant is needed.")


# ---- one failure in words ------------------------------------------------------------------

def _now(guard, observed) -> str:
    """`, but <what it is now>` for the guard kinds whose value says what changed."""
    if observed is UNREADABLE:
        return ""
    kind = guard.kind
    if kind is GuardKind.TENSOR_MATCH:
        return f", but it is {_short(observed) if observed is None else 'a ' + type(observed).__qualname__}"
    if kind is GuardKind.CONSTANT_MATCH:
        return f", but it is {_short(observed)}"
    if kind is GuardKind.TYPE_MATCH:
        return f", but it is {type(observed).__qualname__}"
    if kind is GuardKind.LEN_MATCH or kind is GuardKind.NONEMPTY:
        try:
            n = len(observed)
        except TypeError:
            return f", but it is a {type(observed).__qualname__}"
        return f", but it is {n}" if kind is GuardKind.LEN_MATCH else f", but it has {n} item{'' if n == 1 else 's'}"
    if kind is GuardKind.DICT_KEYS:
        try:
            return f", but they are {_short(list(observed))}"
        except TypeError:
            return f", but it is a {type(observed).__qualname__}"
    if kind in (GuardKind.ID_MATCH, GuardKind.FUNCTION_MATCH, GuardKind.SET_MATCH):
        return f", but it is {_short(observed)}"
    return ""


def _tensor_changes(expected: TensorSpec, observed) -> str:
    """`shape (4,) (expected (3,)), ...`: the properties of tensor `observed` that differ."""
    now = TensorSpec.of(observed)
    return ", ".join(f"{name} {_field(getattr(now, name))} (expected {_field(getattr(expected, name))})"
                     for name in _TENSOR_FIELDS if getattr(now, name) != getattr(expected, name))


def _field(value) -> str:
    return value.__qualname__ if isinstance(value, type) else repr(value)


def _short(value) -> str:
    """`value` in a few words: a tensor by its kind and shape (never its data), else `repr`."""
    if isinstance(value, torch.Tensor):
        return f"a {type(value).__name__} of shape {tuple(value.shape)}"
    if isinstance(value, types.ModuleType):
        return f"module {value.__name__}"
    if isinstance(value, (types.FunctionType, type)):
        return f"{type(value).__name__} {value.__qualname__}"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _values_seen(same: list) -> str:
    """` (values seen: 0, 1, 2)` for a guard on a constant or a length, else ""."""
    kind = same[0].guard.kind
    if kind not in (GuardKind.CONSTANT_MATCH, GuardKind.LEN_MATCH):
        return ""
    values = [_short(f.guard.expected) for f in same]
    if kind is GuardKind.LEN_MATCH and same[-1].observed is not UNREADABLE:
        values.append(_short(len(same[-1].observed)))
    elif kind is GuardKind.CONSTANT_MATCH and same[-1].observed is not UNREADABLE:
        values.append(_short(same[-1].observed))
    return f" (values seen: {', '.join(dict.fromkeys(values))})"


def _hint(failure: Failure) -> str:
    """What the user can do about the guard that kept failing (ends with "or ")."""
    guard = failure.guard
    what = guard.source.describe() if guard.source is not None else ""
    kind = guard.kind
    if kind is GuardKind.TENSOR_MATCH and isinstance(failure.observed, torch.Tensor):
        old, new = guard.expected.shape, tuple(failure.observed.shape)
        dims = [i for i, (a, b) in enumerate(zip(old, new)) if a != b]
        if len(old) == len(new) and dims:
            tensor = what if isinstance(guard.source, LocalSource) else "<tensor>"
            return (f"its shape changes between calls: compile with dynamic=True, or mark the dimension dynamic "
                    f"(bytegraph.mark_dynamic({tensor}, {dims[0]})) before the call; or ")
    if kind is GuardKind.CONSTANT_MATCH and type(guard.expected) in (int, float):
        return (f"{what} changes between calls and each value compiles anew: pass it as a tensor, or "
                "compile with dynamic=True so that it is a symbolic input; or ")
    if kind is GuardKind.LEN_MATCH:
        return (f"the length of {what} changes between calls (a list that grows on every call?) and the "
                "compiled code reads its length or items: read them outside the compiled function; or ")
    if kind is GuardKind.DICT_KEYS:
        return f"the keys of {what} change between calls: keep them fixed; or "
    if kind in (GuardKind.ID_MATCH, GuardKind.FUNCTION_MATCH):
        return (f"{what} is a different object on each call (made anew per call?): create it once "
                "outside the compiled function; or ")
    return ""
