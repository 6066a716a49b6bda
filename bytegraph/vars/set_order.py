"""The iteration order of a set holding tensors (`SetVariable` with `TrackerKey` members).

Note [Sets of tensors]
A set of tensors is traced as a set of trackers: a tensor hashes by identity, so its member
key is its `TrackerKey` (one tracker per real tensor, vars/dict_keys.py), and building it,
`len`, truth, `in`, `add`, `discard`, `remove`, `pop`, `clear`, iteration and rebuilding it
in residual code (`BUILD_SET` of its members, in insertion order) are modelled; set algebra
over tensor members (`|`, `union`, `-=`, ...) breaks with its reason.
Iterating it (a `for`, `list(s)`, unpacking, `pop`) follows eager's order, which CPython
takes from the members' hashes: `id()` of each tensor. That is known only for tensors from
outside (graph inputs), so `eager_order` builds a real set of the real members, in the
set's insertion order, iterates it, and guards that a set built the same way on a later call
iterates the same way (one clause: `tuple(map(id, {x, y})) == (id(y), id(x))`). A set
holding a tensor made in the trace (no real object yet) has no known order: iterating it
breaks, unless it has a single member. A set whose members were added and removed in a
different sequence is taken in the order a set rebuilt from its members has (as for sets of
constants, docs/known-gaps.md).
"""
from __future__ import annotations

from ..guards.guard import GuardKind
from ..guards.sources import GuardExpressionSource, ObjectSource
from .dict_keys import TrackerKey

def has_tensor_members(keys) -> bool:
    return any(type(k) is TrackerKey for k in keys)


def eager_order(tx, set_vt) -> list:
    """The keys of `set_vt` (holding tensors) in eager's iteration order, guarded (Note
    [Sets of tensors]); a break when a member is a tensor made in the trace."""
    keys = list(set_vt.items)
    if len(keys) < 2:
        return keys
    reals, sources = [], []
    for key in keys:
        if type(key) is not TrackerKey:
            reals.append(key)
            sources.append(ObjectSource(key))
            continue
        real = tx.output.real_input(key.vt)
        if real is None or key.vt.source is None:
            tx.unsupported(f"iterating a set holding {key.vt.describe()}, a tensor made in the compiled code: its "
                           "order depends on the tensors' identity hashes at run time",
                           category="unsupported iteration", hint="iterate a list or tuple of the tensors instead")
        reals.append(real)
        sources.append(key.vt.source)
    real_set = set()
    for real in reals:
        real_set.add(real)
    position = {id(real): i for i, real in enumerate(reals)}
    order = [position[id(member)] for member in real_set]
    members = ", ".join("{%d}" % i for i in range(len(keys)))  # the members, spelled by `str.format`
    expected = ", ".join("id({%d})" % i for i in order)
    template = "(tuple(map(id, {{" + members + ",}})) == (" + expected + ",))"
    names = ", ".join(s.describe() for s in sources)
    source = GuardExpressionSource(template, tuple(sources),
                                   f"the set {{{names}}} iterates in the order of its members' identity hashes")
    tx.output.add_guard_at(tx, GuardKind.CONSTANT_MATCH, source, True)
    return [keys[i] for i in order]
