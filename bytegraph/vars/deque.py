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
from .containers import BaseListVariable, TupleVariable
from .containers import _length, _reversed
from .method_table import dispatch, mutator, no_args, row
from .registry import guard, register
from .iterators import SequenceIteratorVariable


def _replace_deque(d, items):
    """Residual helper: replay of a deque's writes, keeping its identity and maxlen."""
    d.clear()
    d.extend(items)


def _mutating(tx, dq) -> None:
    """The barrier of a deque's mutator, which also counts the change for its iterators."""
    tx.output.side_effects.mutate(dq)
    dq.state += 1


def _push(items: list, maxlen, new: list, left: bool) -> None:
    """Put `new` at one end of the deque's `items`, evicting from the other when it is full."""
    for item in new:
        if maxlen == 0:
            continue
        if left:
            if len(items) == maxlen:
                items.pop()
            items.insert(0, item)
        else:
            if len(items) == maxlen:
                items.pop(0)
            items.append(item)


def _append(tx, dq, name, args, kwargs):
    _push(dq.items, dq.maxlen, [args[0]], left=False)
    return ConstantVariable(None)


def _appendleft(tx, dq, name, args, kwargs):
    _push(dq.items, dq.maxlen, [args[0]], left=True)
    return ConstantVariable(None)


def _extend(tx, dq, name, args, kwargs):
    _push(dq.items, dq.maxlen, args[0].iterate(tx).unpack(tx), left=False)
    return ConstantVariable(None)


def _extendleft(tx, dq, name, args, kwargs):
    _push(dq.items, dq.maxlen, args[0].iterate(tx).unpack(tx), left=True)
    return ConstantVariable(None)


def _iadd(tx, dq, name, args, kwargs):
    _extend(tx, dq, name, args, kwargs)
    return dq


def _pop(tx, dq, name, args, kwargs):
    items = dq.items
    if not items:
        tx.raise_user_error(IndexError("pop from an empty deque"))
    return items.pop()


def _popleft(tx, dq, name, args, kwargs):
    items = dq.items
    if not items:
        tx.raise_user_error(IndexError("pop from an empty deque"))
    return items.pop(0)


def _rotate(tx, dq, name, args, kwargs):
    items = dq.items
    steps = _int_argument(tx, args[0]) if args else 1
    if items:
        steps %= len(items)
        items[:] = items[len(items) - steps:] + items[:len(items) - steps]
    return ConstantVariable(None)


def _insert(tx, dq, name, args, kwargs):
    items = dq.items
    if len(items) == dq.maxlen:
        tx.raise_user_error(IndexError("deque already at its maximum size"))
    items.insert(_int_argument(tx, args[0]), args[1])
    return ConstantVariable(None)


def _remove(tx, dq, name, args, kwargs):
    items = dq.items
    for i, item in enumerate(items):
        if items_equal(tx, [item], [args[0]]):
            del items[i]
            break
    else:
        what = args[0].as_python_constant() if args[0].is_python_constant() else args[0].describe()
        tx.raise_user_error(ValueError(f"{what!r} is not in deque"))
    return ConstantVariable(None)


def _setitem(tx, dq, name, args, kwargs):
    items = dq.items
    index = dq._item(tx, args[0], lambda i: i)
    items[index] = args[1]
    return ConstantVariable(None)


def _delitem(tx, dq, name, args, kwargs):
    items = dq.items
    del items[dq._item(tx, args[0], lambda i: i)]
    return ConstantVariable(None)


def _imul(tx, dq, name, args, kwargs):
    items = dq.items
    items[:] = DequeVariable(items * args[0].as_python_constant(), dq.maxlen).items
    return dq


def _clear(tx, dq, name, args, kwargs):
    items = dq.items
    items.clear()
    return ConstantVariable(None)


def _reverse(tx, dq, name, args, kwargs):
    items = dq.items
    items.reverse()
    return ConstantVariable(None)


def _copy(tx, dq, name, args, kwargs):
    return DequeVariable(dq.items, dq.maxlen)


class DequeVariable(BaseListVariable):
    """A `collections.deque` (`items` left to right, `maxlen` None or an int); `state`
    counts its mutations, as CPython's does, for the iterators over it."""

    __slots__ = ("maxlen", "state")
    identity_tracked = True
    inplace_methods = frozenset({"__iadd__", "__imul__"})
    # a list's reads (index, count, in, [], iter), and a deque's own methods
    METHODS = {
        **BaseListVariable.METHODS,
        "__len__": row(_length, when=no_args), "__reversed__": row(_reversed, when=no_args),
        "copy": row(_copy, when=no_args), "__copy__": row(_copy, when=no_args),
        "append": mutator(_append), "appendleft": mutator(_appendleft), "extend": mutator(_extend),
        "extendleft": mutator(_extendleft), "__iadd__": mutator(_iadd), "pop": mutator(_pop),
        "popleft": mutator(_popleft), "rotate": mutator(_rotate), "insert": mutator(_insert),
        "remove": mutator(_remove), "__setitem__": mutator(_setitem), "__delitem__": mutator(_delitem),
        "__imul__": mutator(_imul), "clear": mutator(_clear), "reverse": mutator(_reverse),
    }

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
        cg.push_callable_const(collections.deque)
        cg.reconstruct_items(self.items, "BUILD_LIST")
        cg.load_const(self.maxlen)
        cg.call(2)

    def call_method(self, tx, name, args, kwargs):
        if kwargs:
            tx.unsupported(f"deque.{name}() with keyword arguments", category="unsupported call")
        result = dispatch(tx, self, self.METHODS, name, args, kwargs, barrier=_mutating)
        if result is None:
            tx.unsupported(f"method {name}() of a deque", category="unsupported call")
        return result

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
