"""Sets of tensors made in the compiled code (Note [Sets of tensors] in vars/set_order.py):
`{t1, t2}`, `set()`/`add`/`discard`/`remove`/`pop`/`clear`, `len`, `in` (by identity, as eager's
hash), iteration in eager's order (the members' identity hashes, guarded), returned or mutated
sets rebuilt; what is not traced breaks with its reason. Differential, frame counts asserted."""
import pytest
import torch

import bytegraph
from helpers import CompileCounter, assert_same, check


def T(*shape):
    return torch.randn(*shape)


def on_the_same_tensors(fn, *args, fullgraph=True):
    """Eager and compiled on the same tensors (`check` copies them, and copies have other
    identity hashes, so another iteration order): their orders must agree. Returns the counter."""
    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter, fullgraph=fullgraph)
    assert_same(fn(*args), compiled(*args))
    assert_same(fn(*args), compiled(*args))
    return counter


def test_membership_and_length():
    def fn(a, b, c):
        s = {a, b, a}
        return a in s, c in s, b not in s, len(s), (a * 2 if c not in s else a)

    check(fn, T(3), T(3), T(3), graphs=1, fullgraph=True)


def test_an_aliased_argument_is_one_member():
    def fn(a, b):
        return len({a, b}), a in {b}

    x = T(3)
    assert bytegraph.compile(fn, fullgraph=True)(x, x) == (1, True)
    check(fn, T(3), T(3), fullgraph=True)


def test_iteration_follows_eager_order():
    def fn(a, b, c):
        out = [t * 2 for t in {a, b, c}]
        return out, [t.sum() for t in {c, a}], list({b, 7, a})

    for _ in range(5):
        assert on_the_same_tensors(fn, T(3), T(3), T(3)).frame_count == 1


def test_iteration_order_is_guarded():
    """Each call's tensors have other identity hashes: the order guard re-checks the order and
    recompiles when it differs (never a silently permuted result)."""
    def fn(a, b, c):
        return [t + i for i, t in enumerate({a, b, c})]

    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter, fullgraph=True)
    for _ in range(12):
        args = (T(2), T(2), T(2))
        got, expected = compiled(*args), fn(*args)
        for g, e in zip(got, expected):
            torch.testing.assert_close(g, e, rtol=0, atol=0)
    assert 1 <= counter.frame_count <= 6  # at most one entry per order of three members
    clauses = compiled.__bg_compiled__.entries[0].guards.clauses
    assert any("tuple(map(id, {a, b, c,}))" in clause for clause in clauses), clauses


def test_add_discard_remove_pop_clear():
    def fn(a, b, c):
        s = set()
        s.add(a)
        s.add(b)
        s.add(a)
        s.discard(c)
        s.remove(b)
        first = s.pop()
        s.add(c)
        n = len(s)
        s.clear()
        return first * 2, n, len(s)

    check(fn, T(3), T(3), T(3), graphs=1, fullgraph=True)


def test_mixed_with_constants():
    def fn(a):
        s = {a, 1, "x"}
        return 1 in s, a in s, "y" in s, len(s), sorted(type(v).__name__ for v in s)

    check(fn, T(2), fullgraph=True)


def test_a_set_is_returned_and_written_outside():
    def fn(a, b, box):
        s = {a, b}
        box.append(s)
        return s

    a, b, box = T(2), T(2), []
    got = bytegraph.compile(fn, fullgraph=True)(a, b, box)
    assert type(got) is set and len(got) == 2 and a in got and b in got
    assert box == [got] and box[0] is got


def test_a_single_member_made_in_the_trace_iterates():
    def fn(a):
        return [t + 1 for t in {a * 2}]

    check(fn, T(3), graphs=1, fullgraph=True)


def test_iterating_tensors_made_in_the_trace_breaks_with_reason():
    def fn(a, b):
        return [t + 1 for t in {a * 2, b}]

    with pytest.raises(bytegraph.Unsupported, match="order depends on the tensors' identity hashes"):
        bytegraph.compile(fn, fullgraph=True)(T(2), T(2))
    check(fn, T(2), T(2))


def test_set_algebra_over_tensors_breaks_with_reason():
    def fn(a, b):
        s = {a}
        s.update([b])
        return len(s)

    with pytest.raises(bytegraph.Unsupported, match="set algebra on sets of tensors"):
        bytegraph.compile(fn, fullgraph=True)(T(2), T(2))
    check(fn, T(2), T(2))


def test_a_set_of_tensors_from_outside_breaks_with_reason():
    def fn(s, x):
        return x in s, len(s)

    a = T(2)
    with pytest.raises(bytegraph.Unsupported, match="a set holding tensors read from outside"):
        bytegraph.compile(fn, fullgraph=True)({a}, a)
    assert bytegraph.compile(fn)({a}, a) == fn({a}, a)
