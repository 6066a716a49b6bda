"""`CodeMap`: a mapping keyed by the identity of code objects, each entry going with its key.

`weakref.WeakKeyDictionary` keys by equality, and two code objects built the same way
compare equal: a resume function built again after `bytegraph.reset()` would find the
entry of the earlier build, keyed by that build's code object, and lose it when that
object dies, although its own code is alive. A `CodeMap` entry belongs to one code
object and is dropped when that object dies.
"""
from __future__ import annotations

import types
import weakref


class CodeMap:
    __slots__ = ("_entries", "__weakref__")

    def __init__(self):
        self._entries: dict = {}  # id(code) -> value

    def __setitem__(self, code: types.CodeType, value) -> None:
        key = id(code)
        if key not in self._entries:  # a live entry with this id is this object's
            weakref.finalize(code, self._entries.pop, key, None)
        self._entries[key] = value

    def get(self, code: types.CodeType, default=None):
        return self._entries.get(id(code), default)

    def __contains__(self, code: types.CodeType) -> bool:
        return id(code) in self._entries
