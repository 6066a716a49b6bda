"""`enumerate`, `zip` and `map` iterators made during tracing, rebuilt where they escape
(returned, or live on the stack at a graph break) as the same iterator at the same
position; `ModuleList`/`Sequential` slices. And a real `enumerate` from outside, traced
(`builder._build_enumerate`): a for-loop over `enumerate(...)` with a graph break in its body
resumes (the resume function receives the real enumerate), and an enumerate passed in and
advanced by the compiled function is left where eager leaves it (the replay advances it; its
iterator's own replay leaves those steps out). Over lists, tuples and dict values (a
ModuleList), with `start`, across nested breaks."""
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


# ---- a real enumerate from outside, across breaks and advanced by the compiled function ----

def _explained(fn, *args):
    bytegraph.reset()
    return bytegraph.explain(fn, *args)


def test_break_in_the_body_of_a_loop_over_enumerate_resumes():
    def fn(x, xs):
        out = []
        for i, v in enumerate(xs, start=5):
            x = x * v + i
            print(i)
            out.append(i)
        return x, out

    check(fn, torch.randn(2), [1.0, 2.0, 3.0])
    explained = _explained(fn, torch.randn(2), [1.0, 2.0, 3.0])
    assert not explained.eager_frames, explained.eager_frames
    assert explained.graph_count == 3 and explained.graph_break_count == 3


LAYERS = torch.nn.ModuleList([torch.nn.Linear(3, 3) for _ in range(3)])


def _layer(i, layer, x):  # an inlined helper that breaks: the loop resumes in a continuation
    y = layer(x)
    print("layer", i)
    return y


def test_nested_break_in_a_loop_over_enumerate_of_a_module_list():
    def fn(x):
        for i, layer in enumerate(LAYERS):
            x = _layer(i, layer, x) + i
        return x

    check(fn, torch.randn(2, 3))
    explained = _explained(fn, torch.randn(2, 3))
    assert not explained.eager_frames, explained.eager_frames
    assert explained.graph_count == 4, [b.reason for b in explained.break_reasons]
    assert all("print()" in b.reason for b in explained.break_reasons)


def test_enumerate_passed_in_is_left_where_eager_leaves_it():
    def fn(x, e):
        i, v = next(e)
        j, w = next(e)
        return x * v + w + i + j

    xs = [2.0, 3.0, 4.0, 5.0]
    compiled = bytegraph.compile(fn)
    for _ in range(2):  # the second call hits the entry the first one made
        e_eager, e_comp = enumerate(xs, 10), enumerate(xs, 10)
        torch.testing.assert_close(compiled(torch.ones(2), e_comp), fn(torch.ones(2), e_eager))
        assert next(e_comp) == next(e_eager) == (12, 4.0)
    assert _explained(fn, torch.ones(2), enumerate(xs)).graph_break_count == 0


def test_enumerate_and_its_iterator_advanced_both():
    def fn(x, it, e):
        a = next(e)
        b = next(it)  # the enumerate's iterator, advanced directly
        c = next(e)
        return x + a[1] + b + c[1], a[0], c[0]

    for make in (lambda: iter([1.0, 2.0, 3.0, 4.0, 5.0]), lambda: iter({"a": 1.0, "b": 2.0, "c": 3.0,
                                                                        "d": 4.0, "e": 5.0}.values())):
        it_eager, it_comp = make(), make()
        e_eager, e_comp = enumerate(it_eager), enumerate(it_comp)
        bytegraph.reset()
        got = bytegraph.compile(fn)(torch.zeros(1), it_comp, e_comp)
        want = fn(torch.zeros(1), it_eager, e_eager)
        assert got[1:] == want[1:]
        torch.testing.assert_close(got[0], want[0])
        assert next(e_comp) == next(e_eager) == (2, 4.0)
        assert next(it_comp) == next(it_eager) == 5.0
        fresh = make()
        assert _explained(fn, torch.zeros(1), fresh, enumerate(fresh)).graph_break_count == 0


def test_enumerate_passed_in_and_exhausted():
    def fn(x, e):
        for i, v in e:
            x = x + v * i
        return x

    xs = (1.0, 2.0, 3.0)
    e_eager, e_comp = enumerate(xs), enumerate(xs)
    bytegraph.reset()
    torch.testing.assert_close(bytegraph.compile(fn)(torch.zeros(2), e_comp), fn(torch.zeros(2), e_eager))
    assert next(e_comp, None) is None and next(e_eager, None) is None
    assert _explained(fn, torch.zeros(2), enumerate(xs)).graph_break_count == 0


def test_enumerate_over_a_list_the_graph_changes_is_eagers():
    def fn(x, xs, e):
        i, v = next(e)
        xs.append(9.0)
        return x * v + i

    xs_eager, xs_comp = [1.0, 2.0], [1.0, 2.0]
    e_eager, e_comp = enumerate(xs_eager), enumerate(xs_comp)
    bytegraph.reset()
    torch.testing.assert_close(bytegraph.compile(fn)(torch.ones(2), xs_comp, e_comp),
                               fn(torch.ones(2), xs_eager, e_eager))
    assert xs_comp == xs_eager
    assert list(e_comp) == list(e_eager) == [(1, 2.0), (2, 9.0)]
    xs = [1.0, 2.0]
    reasons = [b.reason for b in _explained(fn, torch.ones(2), xs, enumerate(xs)).break_reasons]
    assert any("advancing a real enumerate over a list" in r for r in reasons), reasons
