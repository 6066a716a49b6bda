"""Joining all guards of one cache entry into a single generated function.

The function takes the frame's argument locals positionally (the same order as
`co_varnames`), reads globals through `G` and closure cells through `C`, and returns
True only if every clause holds; any exception while checking means "no match".
`first_failure` re-checks clause by clause to tell the user which guard failed.
"""
from __future__ import annotations

import re

from .guard import Guard
from .sources import OBJECT_REFS


class _Binder:
    def __init__(self):
        self.values: dict[str, object] = {}
        self._by_id: dict[int, str] = {}

    def __call__(self, obj) -> str:
        name = self._by_id.get(id(obj))
        if name is None:
            name = f"__bg_k{len(self.values)}"
            self._by_id[id(obj)] = name
            self.values[name] = obj
        return name


class CompiledGuards:
    """The guard function of one cache entry plus what is needed to explain a miss."""

    def __init__(self, guards: list[Guard], argnames: tuple[str, ...], f_globals: dict, closure):
        self.guards = guards
        self.argnames = argnames
        binder = _Binder()
        self.clauses = [g.clause(binder) for g in guards]
        self.source = _render(self.clauses, argnames)
        scope = _scope(binder.values, f_globals, closure, self.source)
        exec(compile(self.source, "<bytegraph guards>", "exec"), scope)
        self.fn = scope["__bg_guard"]
        self._scope = scope

    def first_failure(self, values: tuple) -> Guard | None:
        """The first guard that does not hold for the bound argument `values`, if any."""
        local_scope = dict(zip(self.argnames, values))
        for guard, clause in zip(self.guards, self.clauses):
            try:
                ok = eval(clause, self._scope, local_scope)
            except Exception:  # a guard expression that raises means "does not hold"
                ok = False
            if not ok:
                return guard
        return None


def _render(clauses: list[str], argnames: tuple[str, ...]) -> str:
    params = ", ".join(argnames)
    body = " and \\\n            ".join(f"({c})" for c in clauses) or "True"
    return (f"def __bg_guard({params}):\n"
            f"    try:\n"
            f"        return ({body})\n"
            f"    except Exception:\n"
            f"        return False\n")


def _scope(values: dict, f_globals: dict, closure, source: str) -> dict:
    scope = {"__builtins__": __builtins__, "G": f_globals, "C": closure}
    scope.update((name, OBJECT_REFS[name]) for name in set(_OBJECT_NAME.findall(source)))
    if "math." in source or "torch." in source:  # printed shape guards (graph/shapes.py) may call them
        import math
        import torch

        scope.update(math=math, torch=torch)
    scope.update(values)
    return scope


_OBJECT_NAME = re.compile(r"__bg_obj_\d+")  # ObjectSource.name()
