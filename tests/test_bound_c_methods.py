"""A C method bound to a builtin object and kept as a value (`get = d.get`, a bound method
passed as an argument, or one left on the stack across a graph break) is its object's method:
a call goes to the object's tracker, mutations included. Differential: eager vs compiled."""
import collections

import torch

import bytegraph
from tests.helpers import check

_TABLE = {"a": 1.0, "b": 2.0}


def test_bound_get_of_a_global_dict():
    def fn(x):
        get = _TABLE.get
        return x + get("a") + get("missing", 10.0)

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_bound_method_as_an_argument():
    def fn(x, lookup):
        return x * lookup("b")

    check(fn, torch.randn(3), {"b": 3.0}.get, graphs=1, fullgraph=True)


def test_bound_mutator_mutates_its_list():
    def fn(x, push):
        push(1)
        push(2)
        return x + 1

    items = []
    check(fn, torch.randn(2), items.append, graphs=1, fullgraph=True)


def test_bound_mutator_seen_by_the_caller():
    items = []

    def fn(x):
        push = items.append
        push(x.sum().item() > -1e9)
        return x + len(items)

    check(fn, torch.randn(2), setup=items.clear, state=lambda: list(items))


def test_walrus_get_across_a_graph_break():
    """`(v := d.get(k))` with `d.get` on the stack when the graph breaks (the kernels package's
    dispatch pattern)."""
    def fn(x, d):
        if (hit := d.get("k")) is not None:
            bytegraph.graph_break()
            return x * hit
        return x

    check(fn, torch.randn(2), {"k": 4.0})


def test_bound_method_on_the_stack_at_a_graph_break():
    table = {"a": 2.0}

    def fn(x):
        return x + table.get(bytegraph.graph_break() or "a", 0.0)

    check(fn, torch.randn(2))


def test_bound_method_of_an_ordered_dict_and_a_set():
    def fn(x, od, seen):
        first = od.get("x")
        has = seen.__contains__
        return x + first + has(3)

    check(fn, torch.randn(2), collections.OrderedDict(x=1.5), {3}, graphs=1, fullgraph=True)
