"""Comprehensions, which CPython 3.12 inlines into the frame (PEP 709: LOAD_FAST_AND_CLEAR saves
a shadowed local, SWAP and STORE_FAST restore it, the comprehension has an exception-table entry
of its own) and 3.11 runs as a nested function: eager vs compiled on every version, with graph
breaks inside them, shadowed and captured names, exceptions leaving them, and PEP 695 syntax."""
import sys

import pytest
import torch

import bytegraph
from helpers import check


def T(*shape):
    return torch.randn(*shape)


def test_loop_variable_shadowing_a_local_is_restored():
    def f(x):
        t = x + 1
        ys = [t * 2 for t in (x, x * 3)]
        return t, ys

    check(f, T(3), graphs=1)


def test_unbound_loop_variable_stays_unbound_after():
    def f(x):
        ys = [x * i for i in range(3)]
        try:
            return ys, i  # noqa: F821
        except NameError as e:
            return ys, str(e)

    check(f, T(3))


def test_graph_break_inside_a_list_comprehension():
    def f(x):
        ys = [bytegraph.graph_break() or x * i for i in range(3)]
        return torch.stack(ys).sum(0)

    check(f, T(3))


def test_print_inside_a_dict_comprehension_keeps_the_order_of_output():
    def f(x):
        d = {k: print("key", k) or x * k for k in (1, 2)}
        return d[1] + d[2]

    check(f, T(3))


def test_graph_break_inside_a_comprehension_shadowing_a_local():
    def f(x):
        k = 10
        ys = {k: (print(k), x + k)[1] for k in range(2)}
        return ys, k

    check(f, T(3))


def test_nested_comprehensions_with_a_closure_over_the_outer_loop_variable():
    def f(x):
        fns = [[(lambda j=j: x * i + j) for j in range(2)] for i in range(2)]
        return [g() for row in fns for g in row]

    check(f, T(3))


def test_comprehension_over_a_cell_variable_of_the_frame():
    def f(x):
        scale = 2
        ys = [x * scale for _ in range(2)]

        def g():
            return scale

        return ys, g()

    check(f, T(3))


def test_exception_raised_in_a_comprehension_restores_the_shadowed_local():
    def f(x):
        n = 5
        try:
            [1 // (n - 2) for n in (3, 2)]
        except ZeroDivisionError:
            return x + n
        return x

    check(f, T(3))


def test_set_comprehension_and_generator_expression():
    def f(x):
        s = {i % 2 for i in range(5)}
        return x * sum(i for i in s)

    check(f, T(3), graphs=1)


_GENERIC = """
def f(x):
    def first[T](items: list[T]) -> T:
        return items[0]
    return first([x, x + 1]) * 2
"""


def test_a_generic_function_defined_in_the_compiled_function():
    """PEP 695 syntax (3.12+): its typing intrinsics run eagerly at a graph break; 3.11 rejects it."""
    if sys.version_info < (3, 12):
        with pytest.raises(SyntaxError):
            compile(_GENERIC, "<generic>", "exec")
        return
    scope = {}
    exec(compile(_GENERIC, "<generic>", "exec"), scope)
    check(scope["f"], T(3))


def test_graph_break_inside_a_comprehension_whose_variable_was_unbound():
    def f(x):
        ys = [print(i) or x * i for i in range(2)]
        try:
            return ys, i  # noqa: F821
        except NameError as e:
            return ys, type(e).__name__

    check(f, T(3))


def test_exception_after_a_break_inside_a_comprehension_restores_the_shadowed_local():
    def f(x):
        n = 5
        try:
            [print(n) or 1 // (n - 2) for n in (3, 2)]
        except ZeroDivisionError:
            return x + n
        return x

    check(f, T(3))


def test_code_after_a_break_inside_a_comprehension_is_captured():
    """The rest of the comprehension resumes inside it, a graph per iteration's tail: inlined
    in the frame on 3.12+, and on 3.11 in the comprehension's own frame, a function made in
    the trace whose resume functions the nested break makes (Note [Continuations])."""
    def f(x):
        ys = [bytegraph.graph_break() or x * i for i in range(3)]
        return torch.stack(ys).sum(0)

    explained = bytegraph.explain(f, T(3))
    assert explained.graph_count == 3
    check(f, T(3))


def test_comprehension_variable_shadowing_an_argument_not_read_before():
    def f(x, n):
        ys = [n * 2 for n in range(3)]
        return x + sum(ys) + n

    check(f, T(3), 5, graphs=1)


def test_break_inside_a_comprehension_shadowing_an_argument():
    def f(x, n):
        ys = [print(n) or x * n for n in range(2)]
        return ys, x + n

    check(f, T(3), 7)


def test_two_loop_variables_unbound_before_and_a_break_after():
    def f(x):
        a = [x * i for i, _ in zip(range(1, 3), range(2))]
        print("between")
        return a, x + 1

    check(f, T(3), graphs=2)
