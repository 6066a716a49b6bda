"""itertools polyfills, continued (issue 12, family "itertools"): `count` (lazy, and the
clean break of a polyfill body on inputs it does not model), `groupby`, `tee`,
`chain.from_iterable` and `islice` over `count`, inside inlined helpers and across graph
breaks."""
import fractions
import itertools

import pytest
import torch

import bytegraph
from tests.helpers import check


def _x(*shape):
    return torch.randn(*shape, requires_grad=True)


def _break_reasons(fn, *args):
    return [b.reason for b in bytegraph.explain(fn)(*args).break_reasons]


# ---- count ----------------------------------------------------------------------------
def test_zip_with_count_is_one_graph():
    def fn(x, xs):
        return [x * i + t for i, t in zip(itertools.count(), xs)]

    check(fn, _x(3), [_x(3), _x(3), _x(3)], graphs=1, fullgraph=True)


def test_count_start_step_and_next():
    def fn(x):
        c = itertools.count(2.5, -0.5)
        first, second = next(c), next(c)
        ints = itertools.count(step=3, start=10)
        return x * first + second, [next(ints) for _ in range(3)], type(c) is itertools.count

    check(fn, _x(2), graphs=1, fullgraph=True)


def test_islice_of_count():
    def fn(x):
        picked = list(itertools.islice(itertools.count(5, 2), 1, 9, 3))
        return x * sum(picked), picked, list(itertools.islice(itertools.count(), 4))

    check(fn, _x(2), graphs=1, fullgraph=True)


def test_count_in_an_inlined_helper():
    def numbered(items, start):
        return list(zip(itertools.count(start), items))

    def fn(x):
        pairs = numbered([x, x + 1, x * 2], 7)
        return sum(i * t for i, t in pairs)

    check(fn, _x(3), graphs=1, fullgraph=True)


def test_count_of_other_numbers_breaks_cleanly():
    def fn(x):
        y = x * 2
        c = itertools.count(fractions.Fraction(1, 2))  # PyNumber_Check is not modelled: eager here
        return y, next(c), next(c)

    reasons = _break_reasons(fn, _x(2))
    assert "itertools.count() of a start or step other than an int or a float" in reasons, reasons
    assert "iterating over c of type count" in reasons, reasons  # the real count object, after the break
    check(fn, _x(2))


def test_count_of_a_string_raises_as_in_eager():
    def fn(x):
        return x, itertools.count("a")

    check(fn, _x(2))  # TypeError: a number is required


def test_count_before_and_after_a_graph_break():
    def fn(x):
        a = [x * i for i, _ in zip(itertools.count(1), range(2))]
        print("between")
        b = [x + i for i in itertools.islice(itertools.count(10, 5), 2)]
        return a, b

    check(fn, _x(2), graphs=2)


def test_count_live_across_a_break_runs_the_frame_eagerly_with_a_reason():
    def fn(x):
        c = itertools.count()
        y = x * next(c)
        print("break")
        return y + next(c)

    # a polyfilled iterator is a suspended generator: it is not rebuilt at a break
    assert _break_reasons(fn, _x(2)) == [
        "print() writes to stdout (and a live value cannot be rebuilt there: returning a count"
        " iterator (polyfilled) made during tracing; the frame runs eagerly)"]
    check(fn, _x(2))


# ---- groupby ------------------------------------------------------------------------------
def test_groupby_runs_and_lengths():
    def fn(x, labels):
        out = []
        for key, group in itertools.groupby(labels):
            out.append((key, len(list(group))))
        return x * sum(k * n for k, n in out), out, type(itertools.groupby(labels)) is itertools.groupby

    check(fn, _x(2), [1, 1, 2, 3, 3, 3, 1], graphs=1, fullgraph=True)


def test_groupby_with_a_key_in_an_inlined_helper():
    def by_parity(values):
        return [(k, list(g)) for k, g in itertools.groupby(values, key=lambda v: v % 2)]

    def fn(x):
        groups = by_parity([1, 3, 2, 4, 6, 5])
        return [x * sum(g) + k for k, g in groups]

    check(fn, _x(3), graphs=1, fullgraph=True)


def test_groupby_of_tensors_by_label():
    def fn(pairs):
        return {label: torch.stack([t for _, t in group]).sum(0)
                for label, group in itertools.groupby(pairs, key=lambda p: p[0])}

    check(fn, [("a", _x(2)), ("a", _x(2)), ("b", _x(2)), ("c", _x(2)), ("c", _x(2))], graphs=1, fullgraph=True)


def test_groupby_group_ends_when_the_outer_iterator_moves_on():
    def fn(x):
        groups = list(itertools.groupby("aabbbc"))
        seen = [(k, list(g)) for k, g in groups]
        it = itertools.groupby([1, 1, 2])
        k1, g1 = next(it)
        first = next(g1)
        k2, g2 = next(it)
        return x + len(seen), seen, (k1, first, list(g1), k2, list(g2))

    check(fn, _x(2), graphs=1, fullgraph=True)


def test_groupby_reads_items_lazily():
    def fn(x, log):
        def source():
            for v in (1, 1, 2):
                log.append(f"read {v}")
                yield v

        out = []
        for k, g in itertools.groupby(source()):
            log.append(f"group {k}")
            out.append(x * sum(g))
        return out

    check(fn, _x(2), [], graphs=1, fullgraph=True)


# ---- tee ------------------------------------------------------------------------------------
def test_tee_interleaved():
    def fn(x, log):
        def source():
            for i in range(3):
                log.append(i)
                yield x * i

        a, b = itertools.tee(source())
        first = next(a)
        rest_b = list(b)
        return first, rest_b, list(a), log

    check(fn, _x(2), [], graphs=1, fullgraph=True)


def test_tee_counts_and_errors():
    def fn(x, n):
        its = itertools.tee([x, x + 1], n)
        return [list(it) for it in its], len(its)

    check(fn, _x(2), 3, graphs=1, fullgraph=True)
    check(fn, _x(2), 0, fullgraph=True)
    check(fn, _x(2), -1)  # ValueError: n must be >= 0


def test_tee_of_pairs_in_an_inlined_helper():
    def pairs(xs):
        a, b = itertools.tee(xs)
        next(b, None)
        return zip(a, b)

    def fn(xs):
        return [q - p for p, q in pairs(xs)]

    check(fn, [_x(2), _x(2), _x(2), _x(2)], graphs=1, fullgraph=True)


# ---- chain.from_iterable ----------------------------------------------------------------------
def test_chain_from_iterable_is_lazy_in_the_outer_iterable():
    def fn(x, log):
        def rows():
            for i in range(3):
                log.append(f"row {i}")
                yield [x * i, x + i]

        flat = itertools.chain.from_iterable(rows())
        first = next(flat)
        log.append("after first")
        return first, list(flat), type(flat) is itertools.chain

    check(fn, _x(2), [], graphs=1, fullgraph=True)


def test_chain_from_iterable_across_a_break():
    def fn(x):
        head = list(itertools.chain.from_iterable([[x], [x * 2]]))
        bytegraph.graph_break()
        tail = list(itertools.chain.from_iterable(([x + 1],)))
        return head, tail

    check(fn, _x(2), graphs=2)


@pytest.mark.parametrize("fn", [itertools.count, itertools.groupby, itertools.tee])
def test_new_polyfills_are_registered(fn):
    from bytegraph.vars.polyfills.registry import POLYFILLS

    assert fn in POLYFILLS


def test_next_of_a_real_c_iterator_breaks_instead_of_raising():
    def fn(x, it):
        return x + next(it)

    assert _break_reasons(fn, _x(2), itertools.count(3)) == ["iterating over it of type count"]
    check(fn, _x(2), itertools.count(3))
