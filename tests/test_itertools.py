"""Standard-library C callables traced through polyfills (`vars/polyfills/`): itertools.
Differential: outputs, grads and outer state as eager, most in one graph."""
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
