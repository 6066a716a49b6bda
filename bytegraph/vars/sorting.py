"""`list.sort` / `sorted` over instances of user classes, which the tracer compares by
running their `<` (`__lt__`, `functools.cmp_to_key` wrappers), and `min` / `max` over any
values: the comparisons happen
in CPython's order, so user comparison functions run, print and raise as in eager.

`sort_in_place` follows CPython's `list.sort` (Objects/listobject.c, `listsort`) for
lists shorter than 64 items, where timsort is one `count_run` (the leading ascending or
strictly descending run, reversed if descending; 3.13 extends it, `_count_run_313`) and a
binary insertion sort of the rest, comparing with `<` only; `reverse=True` reverses before
and after, which keeps the sort stable. If a comparison raises, the list is left in the partly
sorted order CPython leaves it in. Longer lists (where timsort merges and gallops) are a graph
break.
"""
from __future__ import annotations

import operator

from .._bytecode.versions import LIST_SORT_LONGER_RUNS
from . import factory

_MIN_MERGE = 64  # below this, listsort is count_run + binarysort


def sort_in_place(tx, items: list, keys: list, reverse: bool) -> None:
    """Sort trackers `items` (by trackers `keys`, one per item) in place, as list.sort.
    The keys must be instances of user classes (whose `<` the tracer runs)."""
    if not all(k.is_user_object for k in keys):
        tx.unsupported("sorting values that are not Python constants", category="unsupported call")
    n = len(items)
    if n >= _MIN_MERGE:
        tx.unsupported(f"sorting {n} values that are not Python constants (only lists shorter than "
                       f"{_MIN_MERGE} are sorted in the trace)", category="unsupported call")
    order = list(range(n))
    if reverse:
        order.reverse()
    try:
        if n > 1:
            _timsort_short(tx, order, keys)
    finally:
        if reverse:
            order.reverse()
        items[:] = [items[i] for i in order]


def _less(tx, a, b) -> bool:
    return factory.binary_operator(tx, operator.lt, [a, b]).truth(tx)


def _timsort_short(tx, order: list, keys: list) -> None:
    run = (_count_run_313 if LIST_SORT_LONGER_RUNS else _count_run_311)(tx, order, keys)
    for start in range(run, len(order)):  # binarysort
        pivot = order[start]
        lo, hi = 0, start
        while lo < hi:
            mid = lo + ((hi - lo) >> 1)
            if _less(tx, keys[pivot], keys[order[mid]]):
                hi = mid
            else:
                lo = mid + 1
        order[lo + 1:start + 1] = order[lo:start]
        order[lo] = pivot


def _count_run_311(tx, order: list, keys: list) -> int:
    """The length of the leading run, made ascending in place: an ascending one, or a strictly
    descending one reversed."""
    run = 2
    if _less(tx, keys[order[1]], keys[order[0]]):  # strictly descending run
        while run < len(order) and _less(tx, keys[order[run]], keys[order[run - 1]]):
            run += 1
        order[:run] = order[:run][::-1]
    else:
        while run < len(order) and not _less(tx, keys[order[run]], keys[order[run - 1]]):
            run += 1
    return run


def _count_run_313(tx, order: list, keys: list) -> int:
    """3.13's `count_run`: an ascending run; else (or after an ascending run of equal items) a
    descending run that goes on through equal items (each group of them reversed in place, so
    the final reversal keeps them stable), reversed, then extended by a rising suffix."""
    total = len(order)

    def smaller(n):  # keys[n] < keys[n - 1]
        return _less(tx, keys[order[n]], keys[order[n - 1]])

    n = 1
    while n < total and not smaller(n):
        n += 1
    if n == total:
        return n
    if n > 1:
        if _less(tx, keys[order[0]], keys[order[n - 1]]):
            return n
        order[:n] = order[:n][::-1]  # all equal: reversible without breaking stability
    n += 1
    equal = 0  # how many items before n equal the one before them
    while n < total:
        if smaller(n):
            _reverse_tail(order, n, equal)
            equal = 0
        elif _less(tx, keys[order[n - 1]], keys[order[n]]):
            break
        else:
            equal += 1
        n += 1
    _reverse_tail(order, n, equal)
    order[:n] = order[:n][::-1]
    while n < total and not smaller(n):
        n += 1
    return n


def _reverse_tail(order: list, n: int, equal: int) -> None:
    """Reverse the `equal + 1` items ending before `n` (a group of equal items), if `equal`."""
    if equal:
        order[n - equal - 1:n] = order[n - equal - 1:n][::-1]


def best_of(tx, fn, items, key):
    """`min(items, key=key)` / `max(...)` (`fn`) over an iterable of trackers: keys computed
    one by one, each compared with the best so far by `<` (min) or `>` (max), as CPython's
    `min_max`; None when there are no items."""
    op = operator.lt if fn is min else operator.gt
    best_item = best_key = None
    for item in items:
        k = key.call_function(tx, [item], {}) if key is not None else item
        if best_key is None:
            best_item, best_key = item, k
            continue
        if k.is_tensor or best_key.is_tensor:
            tx.unsupported(f"{fn.__name__}() over tensors compares tensor values", category="data-dependent",
                           hint=f"use torch.{fn.__name__}imum or torch.{fn.__name__} instead")
        if factory.binary_operator(tx, op, [k, best_key]).truth(tx):
            best_item, best_key = item, k
    return best_item
