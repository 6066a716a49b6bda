"""`enumerate`, `zip` and `map` iterators made during tracing, rebuilt where they escape
(returned, or live on the stack at a graph break) as the same iterator at the same
position; and `ModuleList`/`Sequential` slices."""
import pytest
import torch

import bytegraph
from helpers import check, compile_counted


def _items():
    return [torch.ones(2), torch.ones(2) * 2, torch.ones(2) * 3]


def _run_both(fn, *args):
    """(eager's rest of the returned iterator, the compiled one's, the counter)."""
    cfn, counter = compile_counted(fn)
    want = fn(*args)
    got = cfn(*args)
    assert type(got) is type(want)
    return list(want), list(got), counter


def _same(want, got):
    assert len(want) == len(got)
    for a, b in zip(want, got):
        torch.testing.assert_close(a, b)


def test_return_enumerate_advanced():
    def fn(xs):
        it = enumerate(xs, 3)
        next(it)
        return it

    want, got, _ = _run_both(fn, _items())
    _same(want, got)


def test_return_zip_advanced_strict():
    def fn(xs):
        it = zip(xs, [1, 2, 3], strict=True)
        next(it)
        return it

    want, got, _ = _run_both(fn, _items())
    _same(want, got)


def test_return_map_advanced():
    def fn(xs):
        it = map(lambda a: a * 2, iter(xs))
        next(it)
        return it

    want, got, _ = _run_both(fn, _items())
    _same(want, got)


def test_return_list_iterator():
    def fn(xs):
        it = iter(xs)
        next(it)
        return it

    want, got, _ = _run_both(fn, _items())
    _same(want, got)


def test_enumerate_on_stack_at_break_in_helper():
    """A break inside an inlined helper while the caller loops over an enumerate."""
    def helper(x):
        y = x * 2
        bytegraph.graph_break()
        return y + 1

    def fn(x, xs):
        for i, a in enumerate(xs):
            x = x + a * i
        it = enumerate(xs)
        next(it)
        return it, helper(x)  # `it` is on the stack below the breaking call

    xs = _items()
    cfn, counter = compile_counted(fn)
    it, out = cfn(torch.ones(2), xs)
    want_it, want_out = fn(torch.ones(2), xs)
    torch.testing.assert_close(out, want_out)
    _same(list(want_it), list(it))
    assert counter.frame_count == 2


def test_break_inside_loop_over_enumerate_keeps_the_prefix_graph():
    def fn(x, xs):
        x = x * 3
        for i, a in enumerate(xs):
            bytegraph.graph_break()
            x = x + a * i
        return x

    out = bytegraph.explain(fn, torch.ones(2), _items())
    torch.testing.assert_close(out.result, fn(torch.ones(2), _items()))
    assert out.graph_count >= 1


class Stack(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.ModuleList([torch.nn.Linear(4, 4) for _ in range(4)])
        self.seq = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(3)])

    def forward(self, x):
        for layer in self.layers[:3]:
            x = layer(x)
        x = self.layers[1:][-1](x)
        for layer in self.seq[::2]:
            x = layer(x)
        return x + len(self.layers[2:]) + len(self.layers[1:][1:])


def test_module_list_and_sequential_slices_one_graph():
    check(Stack(), torch.randn(2, 4), graphs=1, fullgraph=True)


def test_module_slice_index_out_of_range_raises_like_eager():
    class M(Stack):
        def forward(self, x):
            try:
                return self.layers[:2][5](x)
            except IndexError as e:
                return x + len(str(e))

    check(M(), torch.randn(2, 4), graphs=1)


def test_module_slice_across_a_break_and_returned():
    class M(Stack):
        def forward(self, x):
            sub = self.layers[1:3]
            x = sub[0](x)
            bytegraph.graph_break()
            for layer in sub:
                x = layer(x)
            return x, sub

    m = M()
    cfn, counter = compile_counted(m)
    out, sub = cfn(torch.ones(2, 4))
    want, want_sub = m(torch.ones(2, 4))
    torch.testing.assert_close(out, want)
    assert type(sub) is torch.nn.ModuleList and list(sub) == list(want_sub)
    assert counter.frame_count == 2


def test_slice_of_custom_container_breaks_with_reason():
    class MyList(torch.nn.ModuleList):
        def __init__(self, n):
            super().__init__([torch.nn.Linear(2, 2) for _ in range(n)])

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = MyList(3)

        def forward(self, x):
            return x + 1

    m = M()

    def fn(x):
        try:
            return m.layers[:2]
        except TypeError:
            return x

    out = bytegraph.explain(fn, torch.ones(2))
    assert any("slicing" in b.reason for b in out.break_reasons)
    torch.testing.assert_close(out.result, fn(torch.ones(2)))
