"""`bytegraph.mark_dynamic`, `maybe_mark_dynamic` and `mark_static` on tensors and modules, and
torch.compile's own markers (`torch._dynamo.mark_dynamic` & co.: the attributes they set on a
tensor or a module class) read the same way, with torch's precedence and errors (Note [Symbolic
sizes] in graph/shapes.py). Every call is compared with eager; frame counts are the point."""
import pytest
import torch
import torch._dynamo
from torch.fx.experimental.symbolic_shapes import ConstraintViolationError

import bytegraph
from helpers import CompileCounter, assert_same

MARKERS = {
    "bytegraph": (bytegraph.mark_dynamic, bytegraph.maybe_mark_dynamic, bytegraph.mark_static),
    "torch": (torch._dynamo.mark_dynamic, torch._dynamo.maybe_mark_dynamic, torch._dynamo.mark_static),
}


@pytest.fixture(params=list(MARKERS))
def marks(request):
    """(mark_dynamic, maybe_mark_dynamic, mark_static) of bytegraph, then of torch._dynamo."""
    return MARKERS[request.param]


def run(fn, tensors, mark=None, counter=None, **compile_kwargs):
    """One compiled `fn` called on each tensor (marked by `mark(t)` first, if given), each call
    compared with eager; returns the counter."""
    counter = counter if counter is not None else CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter, **compile_kwargs)
    for i, t in enumerate(tensors):
        if mark is not None:
            mark(t)
        assert_same(fn(t.clone()), compiled(t), f"call #{i + 1} {tuple(t.shape)}")
    return counter


def double(x):
    return x * 2


def rows(*sizes):
    return [torch.randn(n, 3) for n in sizes]


def branch_on_four(x):
    if x.shape[0] == 4:
        return x + 1
    return x - 1


def branch_on_range(x):
    if x.shape[0] > 2:
        return x + 1
    return x - 1


def test_mark_dynamic_first_capture_is_symbolic(marks):
    mark_dynamic, _, _ = marks
    counter = run(double, rows(4, 5, 6), lambda t: mark_dynamic(t, 0))
    assert counter.frame_count == 1


def test_mark_dynamic_on_the_first_tensor_only_is_remembered(marks):
    """torch: the mark goes into the code's memory, so later unmarked tensors reuse the entry."""
    mark_dynamic, _, _ = marks
    counter = run(double, rows(4, 5, 6), lambda t: mark_dynamic(t, 0) if t.shape[0] == 4 else None)
    assert counter.frame_count == 1


def test_mark_dynamic_on_a_later_tensor_recompiles_once(marks):
    mark_dynamic, _, _ = marks
    counter = run(double, rows(4, 5, 6), lambda t: mark_dynamic(t, 0) if t.shape[0] == 5 else None)
    assert counter.frame_count == 2


def test_mark_dynamic_specialized_by_the_code_raises(marks):
    mark_dynamic, _, _ = marks
    x = torch.randn(4, 3)
    mark_dynamic(x, 0)
    with pytest.raises(ConstraintViolationError, match=r"x\.size\(0\).*specialized it to 4"):
        bytegraph.compile(branch_on_four, backend=CompileCounter())(x)


def test_mark_dynamic_with_a_range_guard_does_not_raise(marks):
    mark_dynamic, _, _ = marks
    counter = run(branch_on_range, rows(4, 5, 6), lambda t: mark_dynamic(t, 0))
    assert counter.frame_count == 1


def test_allow_ignore_mark_dynamic(marks, monkeypatch):
    monkeypatch.setattr(bytegraph.config, "allow_ignore_mark_dynamic", True)
    mark_dynamic, _, _ = marks
    counter = run(branch_on_four, rows(4, 5), lambda t: mark_dynamic(t, 0))
    assert counter.frame_count == 2


def test_maybe_mark_dynamic_may_specialize(marks):
    _, maybe_mark_dynamic, _ = marks
    counter = run(branch_on_four, rows(4, 5, 6), lambda t: maybe_mark_dynamic(t, 0))
    assert counter.frame_count == 2  # 4 specialized; 5 and 6 share the symbolic entry
    counter = run(double, rows(4, 5, 6), lambda t: maybe_mark_dynamic(t, 0))
    assert counter.frame_count == 1


def test_mark_dynamic_of_a_size_one_dimension_specializes_it(marks):
    """Sizes 0 and 1 are never symbolic: no error, the next size compiles dynamic."""
    mark_dynamic, maybe_mark_dynamic, _ = marks
    assert run(double, rows(1, 5), lambda t: mark_dynamic(t, 0)).frame_count == 2
    assert run(double, rows(1, 5, 6), lambda t: maybe_mark_dynamic(t, 0)).frame_count == 2


def test_mark_dynamic_counts_with_automatic_dynamic_off_and_dynamic_false(marks, monkeypatch):
    mark_dynamic, _, _ = marks
    monkeypatch.setattr(bytegraph.config, "automatic_dynamic_shapes", False)
    assert run(double, rows(4, 5, 6), lambda t: mark_dynamic(t, 0)).frame_count == 1
    monkeypatch.setattr(bytegraph.config, "automatic_dynamic_shapes", True)
    assert run(double, rows(4, 5, 6), lambda t: mark_dynamic(t, 0), dynamic=False).frame_count == 1


def test_mark_static_beats_automatic_dynamic(marks):
    _, _, mark_static = marks
    assert run(double, rows(4, 5, 6), lambda t: mark_static(t, 0)).frame_count == 3
    assert run(double, rows(4, 5, 6), mark_static).frame_count == 3  # every dimension


def test_mark_static_under_dynamic_true(marks):
    _, _, mark_static = marks
    counter = run(double, rows(4, 5, 6), lambda t: mark_static(t, 0) if t.shape[0] == 4 else None, dynamic=True)
    assert counter.frame_count == 2  # the static 4, then one symbolic entry


def test_mark_dynamic_beats_mark_static(marks):
    mark_dynamic, _, mark_static = marks

    def both(t):
        mark_static(t, 0)
        mark_dynamic(t, 0)

    assert run(double, rows(4, 5, 6), both).frame_count == 1


def test_negative_dimensions(marks):
    mark_dynamic, _, _ = marks
    cols = [torch.randn(2, n) for n in (3, 4, 6)]
    assert run(lambda x: x.mean(-1), cols, lambda t: mark_dynamic(t, -1)).frame_count == 1


def test_bytegraph_markers_check_their_arguments():
    with pytest.raises(IndexError, match="out of range"):
        bytegraph.maybe_mark_dynamic(torch.randn(2, 3), 5)
    with pytest.raises(TypeError, match="tensor or an nn.Module"):
        bytegraph.mark_static([1, 2])
    with pytest.raises(TypeError, match="no dimension"):
        bytegraph.mark_static(torch.nn.Linear(2, 2), 0)


# ---------------------------------------------------------------- modules


class Scale(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c

    def forward(self, x):
        return x * self.c


def _compile_each(modules, counter):
    x = torch.randn(4, 4)
    for module in modules:
        assert_same(module(x), bytegraph.compile(module, backend=counter, fullgraph=True)(x), f"c={module.c}")
    return counter.frame_count


def test_module_int_attributes_go_dynamic_across_instances_of_a_class():
    """Without a mark, the changed int of a second instance makes it symbolic (the class's
    forward is one code object), and the third instance reuses that entry."""
    assert _compile_each([Scale(10), Scale(20), Scale(30)], CompileCounter()) == 2


@pytest.mark.parametrize("marker", ["bytegraph", "torch"])
def test_mark_static_module_class_keeps_ints_constant(marker):
    """torch's test_mark_static_nn_module: a static-marked class's int attributes are constants."""
    mark_static = MARKERS[marker][2]

    class Marked(Scale):
        pass

    assert mark_static(Marked) is Marked
    assert _compile_each([Marked(10), Marked(20), Marked(30)], CompileCounter()) == 3


def test_mark_static_module_instance():
    marked = [bytegraph.mark_static(Scale(c)) for c in (10, 20, 30)]
    assert _compile_each(marked, CompileCounter()) == 3


class Holder(torch.nn.Module):
    def __init__(self, n):
        super().__init__()
        self.table = torch.randn(n)

    def forward(self, x):
        return x + self.table.sum()


@pytest.mark.parametrize("marked, frames", [(False, 2), (True, 3)])
def test_mark_static_module_keeps_its_tensors_static(marked, frames):
    counter = CompileCounter()
    x = torch.randn(3)
    compiled = []  # kept alive: a later wrapper reuses the entries of the live ones (a collected one's are gone)
    for n in (2, 3, 4):
        module = Holder(n)
        if marked:
            bytegraph.mark_static(module)
        compiled.append(bytegraph.compile(module, backend=counter))
        assert_same(module(x), compiled[-1](x), f"table of {n}")
    assert counter.frame_count == frames
