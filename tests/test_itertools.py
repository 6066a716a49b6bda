"""itertools' C callables traced through polyfills (`vars/polyfills/`): each in one graph
with eager's results and argument errors; callbacks run in eager's order, inputs are read
when eager reads them and consumed as far as eager consumes them, inside inlined helpers and
across graph breaks. `count` is lazy, and a polyfill body on inputs it does not model (a
`count` of other numbers) breaks cleanly; `groupby` reads lazily and ends a group when the
outer iterator moves on; `tee`; `chain.from_iterable` is lazy in the outer iterable.
Differential: outputs, grads and outer state as eager, most in one graph."""
import fractions
import itertools
import operator

import pytest
import torch

import bytegraph
from helpers import check

T = lambda *shape: torch.randn(*shape, requires_grad=True)  # noqa: E731
I = itertools


def _one(fn, *args):
    """One graph, no break (the extra `* 1` makes a graph even when `fn` computes nothing)."""
    check(lambda *a: (fn(*a), a[0] * 1), *args, graphs=1, fullgraph=True)


CASES = {
    "accumulate": lambda x: list(I.accumulate([x, x * 2, x * 3])),
    "accumulate_func": lambda x: list(I.accumulate([x, x + 1, x], operator.mul)),
    "accumulate_initial": lambda x: list(I.accumulate([1, 2], initial=x)),
    "accumulate_empty": lambda x: (list(I.accumulate([])), list(I.accumulate([], initial=x))),
    "compress": lambda x: list(I.compress([x, x + 1, x + 2, x + 3], [1, 0, True])),
    "cycle": lambda x: list(I.islice(I.cycle([x, x + 1]), 5)),
    "cycle_empty": lambda x: (list(I.cycle([])), x + 1),
    "dropwhile": lambda x: list(I.dropwhile(lambda v: v < 3, [1, 2, 3, 1, 5])) + [x],
    "takewhile": lambda x: list(I.takewhile(lambda v: v < 3, [1, 2, 3, 1])) + [x],
    "filterfalse": lambda x: (list(I.filterfalse(lambda v: v % 2, range(6))), list(I.filterfalse(None, [0, 1, 0])), x),
    "starmap": lambda x: list(I.starmap(operator.add, [(x, 1), (x, x)])),
    "islice_stop": lambda x: list(I.islice([x, x + 1, x + 2], 2)),
    "islice_start_stop_step": lambda x: list(I.islice(range(10), 1, 8, 3)) + [x],
    "islice_none": lambda x: (list(I.islice([x, x], None)), list(I.islice(range(5), 2, None))),
    "islice_zero": lambda x: (list(I.islice([x], 0)), list(I.islice(range(5), 4, 2))),
    "pairwise": lambda x: (list(I.pairwise([x, x + 1, x + 2])), list(I.pairwise([x]))),
    "product": lambda x: list(I.product([x, x + 1], [2, 3])),
    "product_repeat": lambda x: (list(I.product([0, 1], repeat=2)), list(I.product()), x * 2),
    "combinations": lambda x: (list(I.combinations(range(4), 2)), list(I.combinations([x], 2)), x),
    "combinations_r0": lambda x: (list(I.combinations([1, 2], 0)), x),
    "cwr": lambda x: (list(I.combinations_with_replacement([1, 2, 3], 2)),
                      list(I.combinations_with_replacement([], 0)), x),
    "permutations": lambda x: (list(I.permutations([1, 2, 3])), list(I.permutations(range(4), 2)), x),
    "permutations_tensors": lambda x: sum(a * b for a, b in I.permutations([x, x + 1, x + 2], 2)),
    "repeat": lambda x: (list(I.repeat(x, 3)), list(I.repeat(x, -1)), list(I.repeat(1, times=2))),
    "repeat_forever": lambda x: list(zip(range(3), I.repeat(x))),
    "zip_longest": lambda x: list(I.zip_longest([x, x + 1, x], [1], fillvalue=0)),
    "zip_longest_none": lambda x: (list(I.zip_longest()), list(I.zip_longest([x], [], "ab"))),
    "chain_types": lambda x: (type(I.islice([], 1)) is I.islice, isinstance(I.product(), I.product),
                              type(I.repeat(1)) is I.repeat, type(I.zip_longest()) is I.zip_longest, x),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_itertools_one_graph(name):
    _one(CASES[name], T(2))


ERRORS = {
    "islice_no_args": lambda x: I.islice([x]),
    "islice_neg": lambda x: I.islice([x], -1),
    "islice_str": lambda x: I.islice([x], "a"),
    "islice_step0": lambda x: I.islice([x], 0, 1, 0),
    "islice_many": lambda x: I.islice([x], 0, 1, 1, 1),
    "product_neg": lambda x: I.product([x], repeat=-1),
    "product_str": lambda x: I.product([x], repeat="a"),
    "product_not_iterable": lambda x: I.product(1),
    "combinations_neg": lambda x: I.combinations([x], -1),
    "combinations_order": lambda x: I.combinations(1, "a"),
    "permutations_neg": lambda x: I.permutations([x], -1),
    "repeat_none": lambda x: I.repeat(x, None),
    "pairwise_int": lambda x: I.pairwise(1),
    "starmap_bad": lambda x: list(I.starmap(operator.add, [x])),
}


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_itertools_argument_errors_as_eager(name):
    fn = ERRORS[name]
    with pytest.raises((TypeError, ValueError)):
        fn(torch.ones(1))
    check(fn, T(2))


def test_callbacks_run_in_eager_order_and_inputs_are_read_at_call_time():
    def f(x):
        log = []

        def gen():
            for i in range(3):
                log.append(("gen", i))
                yield x * i

        def pred(v):
            log.append("pred")
            return True

        p = I.product(gen(), [1])  # pools are read at construction
        log.append("made")
        t = I.takewhile(pred, gen())
        log.append("made2")
        return list(p), list(t), log

    _one(f, T(2))


def test_islice_consumes_as_much_as_eager():
    def f(x):
        it = iter([x, x + 1, x + 2, x + 3, x + 4])
        a = list(I.islice(it, 1, 3))
        b = list(I.islice(it, 0))
        return a, b, list(it)

    _one(f, T(2))


def test_zip_longest_does_not_ask_an_exhausted_input_again():
    def f(x):
        log = []

        def gen():
            log.append("start")
            yield x
            log.append("end")

        return list(I.zip_longest(gen(), [1, 2, 3])), log

    _one(f, T(2))


def test_polyfills_inside_an_inlined_helper():
    def helper(xs):
        return [a + b for a, b in I.pairwise(I.accumulate(xs))]

    def f(x):
        return helper([x, x * 2, x * 3]), list(I.starmap(operator.mul, I.product([x], [2, 3])))

    _one(f, T(2))


def test_across_a_graph_break():
    def f(x):
        it = I.islice(I.cycle([x, x + 1]), 3)
        bytegraph.graph_break()
        return list(it)

    check(f, T(2))

    def g(x):
        pairs = list(I.combinations([x, x * 2, x * 3], 2))
        bytegraph.graph_break()
        return [a * b for a, b in pairs]

    check(g, T(2), graphs=2)


def test_pre_existing_list_consumed_and_mutated():
    def f(x, xs):
        for a, b in I.zip_longest(xs, [x], fillvalue=x):
            xs.append(a * b)
            if len(xs) > 5:
                break
        return xs

    check(f, T(2), [T(2), T(2)], graphs=1, fullgraph=True)


def test_repeat_still_serves_pair_helpers():
    def f(x):
        return x.reshape(tuple(I.repeat(2, 2))).sum()

    _one(f, T(4))


def _break_reasons(fn, *args):
    return [b.reason for b in bytegraph.explain(fn)(*args).break_reasons]


# ---- count ----------------------------------------------------------------------------
def test_zip_with_count_is_one_graph():
    def fn(x, xs):
        return [x * i + t for i, t in zip(itertools.count(), xs)]

    check(fn, T(3), [T(3), T(3), T(3)], graphs=1, fullgraph=True)


def test_count_start_step_and_next():
    def fn(x):
        c = itertools.count(2.5, -0.5)
        first, second = next(c), next(c)
        ints = itertools.count(step=3, start=10)
        return x * first + second, [next(ints) for _ in range(3)], type(c) is itertools.count

    check(fn, T(2), graphs=1, fullgraph=True)


def test_islice_of_count():
    def fn(x):
        picked = list(itertools.islice(itertools.count(5, 2), 1, 9, 3))
        return x * sum(picked), picked, list(itertools.islice(itertools.count(), 4))

    check(fn, T(2), graphs=1, fullgraph=True)


def test_count_in_an_inlined_helper():
    def numbered(items, start):
        return list(zip(itertools.count(start), items))

    def fn(x):
        pairs = numbered([x, x + 1, x * 2], 7)
        return sum(i * t for i, t in pairs)

    check(fn, T(3), graphs=1, fullgraph=True)


def test_count_of_other_numbers_breaks_cleanly():
    def fn(x):
        y = x * 2
        c = itertools.count(fractions.Fraction(1, 2))  # PyNumber_Check is not modelled: eager here
        return y, next(c), next(c)

    reasons = _break_reasons(fn, T(2))
    assert "itertools.count() of a start or step other than an int or a float" in reasons, reasons
    assert "iterating over c of type count" in reasons, reasons  # the real count object, after the break
    check(fn, T(2))


def test_count_of_a_string_raises_as_in_eager():
    def fn(x):
        return x, itertools.count("a")

    check(fn, T(2))  # TypeError: a number is required


def test_count_before_and_after_a_graph_break():
    def fn(x):
        a = [x * i for i, _ in zip(itertools.count(1), range(2))]
        print("between")
        b = [x + i for i in itertools.islice(itertools.count(10, 5), 2)]
        return a, b

    check(fn, T(2), graphs=2)


def test_count_live_across_a_break_runs_the_frame_eagerly_with_a_reason():
    def fn(x):
        c = itertools.count()
        y = x * next(c)
        print("break")
        return y + next(c)

    # a polyfilled iterator is a suspended generator: it is not rebuilt at a break
    assert _break_reasons(fn, T(2)) == [
        "print() writes to stdout (and a live value cannot be rebuilt there: returning a count"
        " iterator (polyfilled) made during tracing; the frame runs eagerly)"]
    check(fn, T(2))


# ---- groupby ------------------------------------------------------------------------------
def test_groupby_runs_and_lengths():
    def fn(x, labels):
        out = []
        for key, group in itertools.groupby(labels):
            out.append((key, len(list(group))))
        return x * sum(k * n for k, n in out), out, type(itertools.groupby(labels)) is itertools.groupby

    check(fn, T(2), [1, 1, 2, 3, 3, 3, 1], graphs=1, fullgraph=True)


def test_groupby_with_a_key_in_an_inlined_helper():
    def by_parity(values):
        return [(k, list(g)) for k, g in itertools.groupby(values, key=lambda v: v % 2)]

    def fn(x):
        groups = by_parity([1, 3, 2, 4, 6, 5])
        return [x * sum(g) + k for k, g in groups]

    check(fn, T(3), graphs=1, fullgraph=True)


def test_groupby_of_tensors_by_label():
    def fn(pairs):
        return {label: torch.stack([t for _, t in group]).sum(0)
                for label, group in itertools.groupby(pairs, key=lambda p: p[0])}

    check(fn, [("a", T(2)), ("a", T(2)), ("b", T(2)), ("c", T(2)), ("c", T(2))], graphs=1, fullgraph=True)


def test_groupby_group_ends_when_the_outer_iterator_moves_on():
    def fn(x):
        groups = list(itertools.groupby("aabbbc"))
        seen = [(k, list(g)) for k, g in groups]
        it = itertools.groupby([1, 1, 2])
        k1, g1 = next(it)
        first = next(g1)
        k2, g2 = next(it)
        return x + len(seen), seen, (k1, first, list(g1), k2, list(g2))

    check(fn, T(2), graphs=1, fullgraph=True)


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

    check(fn, T(2), [], graphs=1, fullgraph=True)


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

    check(fn, T(2), [], graphs=1, fullgraph=True)


def test_tee_counts_and_errors():
    def fn(x, n):
        its = itertools.tee([x, x + 1], n)
        return [list(it) for it in its], len(its)

    check(fn, T(2), 3, graphs=1, fullgraph=True)
    check(fn, T(2), 0, fullgraph=True)
    check(fn, T(2), -1)  # ValueError: n must be >= 0


def test_tee_of_pairs_in_an_inlined_helper():
    def pairs(xs):
        a, b = itertools.tee(xs)
        next(b, None)
        return zip(a, b)

    def fn(xs):
        return [q - p for p, q in pairs(xs)]

    check(fn, [T(2), T(2), T(2), T(2)], graphs=1, fullgraph=True)


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

    check(fn, T(2), [], graphs=1, fullgraph=True)


def test_chain_from_iterable_across_a_break():
    def fn(x):
        head = list(itertools.chain.from_iterable([[x], [x * 2]]))
        bytegraph.graph_break()
        tail = list(itertools.chain.from_iterable(([x + 1],)))
        return head, tail

    check(fn, T(2), graphs=2)


@pytest.mark.parametrize("fn", [itertools.count, itertools.groupby, itertools.tee])
def test_count_groupby_and_tee_are_registered_polyfills(fn):
    from bytegraph.vars.polyfills.registry import POLYFILLS

    assert fn in POLYFILLS


def test_next_of_a_real_c_iterator_breaks_instead_of_raising():
    def fn(x, it):
        return x + next(it)

    assert _break_reasons(fn, T(2), itertools.count(3)) == ["iterating over it of type count"]
    check(fn, T(2), itertools.count(3))


BAD_SIGNATURES = {
    "product_unknown_keyword": (I.product, ([1, 2, 3],), {"fake_arg": 1}),
    "permutations_no_arguments": (I.permutations, (), {}),
    "permutations_three_arguments": (I.permutations, ([1, 2, 3], 1, 2), {}),
    "permutations_unknown_keyword": (I.permutations, ([1, 2, 3],), {"fake_arg": 1}),
    "combinations_missing_r": (I.combinations, ([1, 2, 3],), {}),
    "pairwise_keyword": (I.pairwise, (), {"iterable": [1, 2]}),
}


@pytest.mark.parametrize("name", sorted(BAD_SIGNATURES))
def test_arguments_the_signature_does_not_take_are_an_unsupported_call(name):
    """As torch.compile: the call breaks the graph (fullgraph=True reports it); it runs eagerly
    at the break and raises eager's own TypeError."""
    callee, args, kwargs = BAD_SIGNATURES[name]

    def fn(*args, **kwargs):
        return torch.tensor(list(callee(*args, **kwargs)))

    with pytest.raises(TypeError):
        fn(*args, **kwargs)
    qualified = f"itertools\\.{callee.__name__}"
    with pytest.raises(bytegraph.Unsupported, match=rf"{qualified}\(\) called with arguments its signature does not"):
        bytegraph.compile(fn, fullgraph=True)(*args, **kwargs)
    check(fn, *args, **kwargs)
