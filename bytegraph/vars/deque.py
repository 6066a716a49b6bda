"""`collections.deque`: a list-like tracker with a `maxlen` bound.

A deque made during tracing or read from outside is one `DequeVariable` (its items a
Python list, left end first); every method runs at trace time on that list, evicting
from the other end when the deque is full, as CPython does. A deque from outside is
guarded by type, length and `maxlen`, and its writes are replayed on the real object
(`clear()` then `extend(...)`, keeping its identity and `maxlen`). Iteration walks a
snapshot of the items and, as CPython, fails once the deque is mutated.
"""
from __future__ import annotations

import collections

from ..guards.guard import GuardKind
from ..guards.sources import AttrSource, ItemSource
from .object_protocol import items_equal
from .registry import handles
from .constant import ConstantVariable
from .containers import BaseListVariable, TupleVariable, _bounds, _index_or_count
from .registry import guard, register
from .iterators import SequenceIteratorVariable

_MUTATORS = frozenset({"append", "appendleft", "pop", "popleft", "extend", "extendleft", "rotate", "clear",
                       "insert", "remove", "reverse", "__setitem__", "__delitem__", "__iadd__", "__imul__"})


def _replace_deque(d, items):
    """Residual helper: replay of a deque's writes, keeping its identity and maxlen."""
    d.clear()
    d.extend(items)


class DequeVariable(BaseListVariable):
    """A `collections.deque` (`items` left to right, `maxlen` None or an int); `state`
    counts its mutations, as CPython's does, for the iterators over it."""

    __slots__ = ("maxlen", "state")
    identity_tracked = True
    inplace_methods = frozenset({"__iadd__", "__imul__"})

    def __init__(self, items, maxlen=None, source=None):
        super().__init__(items, source)
        self.maxlen = maxlen
        self.state = 0
        if maxlen is not None and len(self.items) > maxlen:
            del self.items[:len(self.items) - maxlen]

    def python_type(self) -> type:
        return collections.deque

    def as_python_constant(self):
        return collections.deque([i.as_python_constant() for i in self.items], self.maxlen)

    def new_like(self, items) -> "DequeVariable":
        return DequeVariable(items, self.maxlen)

    def iterate(self, tx):
        return DequeIteratorVariable(self, reverse=False)

    def reverse_iterate(self, tx):
        return DequeIteratorVariable(self, reverse=True)

    def as_fx_arg(self, tx):
        return [i.as_fx_arg(tx) for i in self.items]

    def getitem_impl(self, tx, key):
        return self._item(tx, key, lambda i: self.items[i])

    def _item(self, tx, key, access):
        if key.is_tensor or not key.is_python_constant():
            tx.unsupported(f"indexing a deque with {key.describe()}", category="data-dependent")
        index = key.as_python_constant()
        if not isinstance(index, int):
            tx.raise_user_error(TypeError(f"sequence index must be integer, not '{type(index).__name__}'"))
        if not -len(self.items) <= index < len(self.items):
            tx.raise_user_error(IndexError("deque index out of range"))
        return access(index)

    def contains_impl(self, tx, item):
        return ConstantVariable(any(items_equal(tx, [i], [item]) for i in self.items))

    def var_getattr(self, tx, name: str):
        if name == "maxlen":
            return ConstantVariable(self.maxlen)
        return super().var_getattr(tx, name)

    def replay_records(self, cg) -> list:
        return [cg.helper_effect(_replace_deque, self.source,
                                 lambda: cg.reconstruct_items(self.items, "BUILD_LIST"))]

    def reconstruct(self, cg) -> None:
        if self.source is not None:
            self.source.reconstruct(cg)
            return
        cg.push_null()
        cg.load_const(collections.deque)
        cg.reconstruct_items(self.items, "BUILD_LIST")
        cg.load_const(self.maxlen)
        cg.call(2)

    def call_method(self, tx, name, args, kwargs):
        if kwargs:
            tx.unsupported(f"deque.{name}() with keyword arguments", category="unsupported call")
        if name in _MUTATORS:
            tx.output.side_effects.mutate(self)
            self.state += 1
            return self._mutate(tx, name, args)
        if name == "index" and 1 <= len(args) <= 3 or name == "count" and len(args) == 1:
            return _index_or_count(tx, self, name, args[0], *_bounds(tx, args[1:]))
        if name == "__len__" and not args:
            return ConstantVariable(len(self.items))
        if name == "__getitem__" and len(args) == 1:
            return self.getitem_impl(tx, args[0])
        if name == "__contains__" and len(args) == 1:
            return self.contains_impl(tx, args[0])
        if name in ("__iter__", "__reversed__") and not args:
            return self.iterate(tx) if name == "__iter__" else self.reverse_iterate(tx)
        if name in ("copy", "__copy__") and not args:
            return DequeVariable(self.items, self.maxlen)
        tx.unsupported(f"method {name}() of a deque", category="unsupported call")

    def _mutate(self, tx, name, args):
        items, maxlen = self.items, self.maxlen
        if name in ("append", "appendleft", "extend", "extendleft", "__iadd__"):
            new = [args[0]] if name.startswith("append") else args[0].iterate(tx).unpack(tx)
            for item in new:
                if maxlen == 0:
                    continue
                if name in ("appendleft", "extendleft"):
                    if len(items) == maxlen:
                        items.pop()
                    items.insert(0, item)
                else:
                    if len(items) == maxlen:
                        items.pop(0)
                    items.append(item)
            return self if name == "__iadd__" else ConstantVariable(None)
        if name in ("pop", "popleft"):
            if not items:
                tx.raise_user_error(IndexError("pop from an empty deque"))
            return items.pop() if name == "pop" else items.pop(0)
        if name == "rotate":
            steps = _int_argument(tx, args[0]) if args else 1
            if items:
                steps %= len(items)
                items[:] = items[len(items) - steps:] + items[:len(items) - steps]
            return ConstantVariable(None)
        if name == "insert":
            if len(items) == maxlen:
                tx.raise_user_error(IndexError("deque already at its maximum size"))
            items.insert(_int_argument(tx, args[0]), args[1])
        elif name == "remove":
            for i, item in enumerate(items):
                if items_equal(tx, [item], [args[0]]):
                    del items[i]
                    break
            else:
                what = args[0].as_python_constant() if args[0].is_python_constant() else args[0].describe()
                tx.raise_user_error(ValueError(f"{what!r} is not in deque"))
        elif name == "__setitem__":
            index = self._item(tx, args[0], lambda i: i)
            items[index] = args[1]
        elif name == "__delitem__":
            del items[self._item(tx, args[0], lambda i: i)]
        elif name == "__imul__":
            items[:] = DequeVariable(items * args[0].as_python_constant(), maxlen).items
            return self
        elif name == "clear":
            items.clear()
        elif name == "reverse":
            items.reverse()
        return ConstantVariable(None)

    def describe(self) -> str:
        return "a deque"


def _int_argument(tx, vt) -> int:
    """An int argument (`rotate(n)`, `insert(i, x)`), with CPython's TypeError for others."""
    if not vt.is_python_constant():
        tx.unsupported(f"a deque method with argument {vt.describe()}", category="data-dependent")
    value = vt.as_python_constant()
    if not isinstance(value, int):
        tx.raise_user_error(TypeError(f"'{type(value).__name__}' object cannot be interpreted as an integer"))
    return value


class DequeIteratorVariable(SequenceIteratorVariable):
    """`iter(d)` / `reversed(d)` of a deque: walks a snapshot of its items, and raises
    CPython's RuntimeError when the deque was mutated since the iterator was made. Rebuilt
    at a graph break as an iterator over the (tuple) snapshot."""

    __slots__ = ("deque_vt", "deque_state", "reverse_deque")

    def __init__(self, deque_vt: DequeVariable, reverse: bool):
        super().__init__(TupleVariable(deque_vt.items[::-1] if reverse else list(deque_vt.items)))
        self.deque_vt = deque_vt
        self.deque_state = deque_vt.state
        self.reverse_deque = reverse

    def python_type(self) -> type:
        return _DEQUE_ITERATOR_TYPES[self.reverse_deque]

    def next_item(self, tx):
        if self.deque_vt.state != self.deque_state:
            tx.raise_user_error(RuntimeError("deque mutated during iteration"))
        return super().next_item(tx)


_DEQUE_ITERATOR_TYPES = {False: type(iter(collections.deque())), True: type(reversed(collections.deque()))}


@handles(collections.deque)
def _deque_ctor(tx, fn, args, kwargs):
    """`deque(iterable=(), maxlen=None)`."""
    if len(args) > 2 or set(kwargs) - {"iterable", "maxlen"}:
        tx.unsupported("deque() with these arguments", category="unsupported call")
    iterable = args[0] if args else kwargs.get("iterable")
    maxlen_vt = args[1] if len(args) > 1 else kwargs.get("maxlen", ConstantVariable(None))
    if not maxlen_vt.is_python_constant():
        tx.unsupported(f"deque() with maxlen {maxlen_vt.describe()}", category="data-dependent")
    maxlen = maxlen_vt.as_python_constant()
    if maxlen is not None:
        if not isinstance(maxlen, int):
            tx.raise_user_error(TypeError("an integer is required"))
        if maxlen < 0:
            tx.raise_user_error(ValueError("maxlen must be non-negative"))
    items = iterable.iterate(tx).unpack(tx) if iterable is not None else []
    return DequeVariable(items, maxlen)


@register(collections.deque, exact=True)
def build_deque(tx, value, source, do_guard: bool):
    guard(tx, do_guard, GuardKind.TYPE_MATCH, source, collections.deque)
    guard(tx, do_guard, GuardKind.LEN_MATCH, source, len(value))
    if source is not None:
        guard(tx, do_guard, GuardKind.CONSTANT_MATCH, AttrSource(source, "maxlen"), value.maxlen)
    items = [tx.wrap(v, ItemSource(source, i) if source is not None else None, do_guard)
             for i, v in enumerate(value)]
    return DequeVariable(items, value.maxlen, source)
