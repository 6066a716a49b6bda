"""Arguments the compiled function never reads install no guard (Note [Arguments wrapped when
read] in translate/lazy_arguments.py): another value for them reuses the entry, as under
torch.compile, which guards lazily; an argument read anywhere (a branch, a closure, `super()`,
the live locals of a graph break) is guarded where it is first read. Every call is compared with
eager; frame counts are the point."""
import pytest
import torch

import bytegraph
from helpers import CompileCounter, assert_same, line_of


def run(fn, calls, **kwargs):
    """One compiled `fn` called with each argument tuple of `calls`, each compared with eager;
    returns (counter, compiled)."""
    counter = CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter, **kwargs)
    for i, args in enumerate(calls):
        assert_same(fn(*args), compiled(*args), f"call #{i + 1}")
    return counter, compiled


def guard_texts(compiled, entry=0) -> list:
    return [g.describe() for g in compiled.__bg_compiled__.entries[entry].guards.guards]


def ignores_mode(x, mode, options, other):
    return x + 1


def test_unused_arguments_are_not_guarded():
    x = torch.randn(3)
    calls = [(x, "train", [1, 2], torch.randn(2)), (x, "eval", (3,), None), (x, 7, {"a": 1}, "t")]
    counter, compiled = run(ignores_mode, calls, fullgraph=True)
    assert counter.frame_count == 1
    texts = guard_texts(compiled)
    assert not any(name in text for text in texts for name in ("mode", "options", "other")), texts
    assert counter.graphs[0].code.count("l_") >= 1 and "other" not in counter.graphs[0].code


def reads_mode_in_a_branch(x, mode, unused):
    y = x + 1
    return y * 2 if mode == "double" else y  # MODE-READ


def test_an_argument_read_is_guarded_where_it_is_read():
    x = torch.randn(3)
    calls = [(x, "double", 1), (x, "double", 2), (x, "same", 3)]
    counter, compiled = run(reads_mode_in_a_branch, calls)
    assert counter.frame_count == 2  # the value of mode decided the trace, not `unused`'s
    (mode_guard,) = [g for g in compiled.__bg_compiled__.entries[0].guards.guards if "mode" in g.describe()]
    assert mode_guard.user_location.endswith(f":{line_of('# MODE-READ', __file__)}")


def closure_reads(x, scale):
    def inner(t):
        return t * scale
    return inner(x)


def test_an_argument_read_by_a_closure_is_guarded():
    x = torch.randn(3)
    counter, compiled = run(closure_reads, [(x, 2.0), (x, 2.0), (x, 3.0)], dynamic=False)
    assert counter.frame_count == 2
    assert any("scale" in text for text in guard_texts(compiled))


class Base(torch.nn.Module):
    def forward(self, x):
        return x + 1


class Child(Base):
    def forward(self, x):
        return super().forward(x) * 2


def test_self_read_only_by_super_is_guarded():
    counter, _ = run(lambda m, x: m(x), [(Child(), torch.randn(3)), (Child(), torch.randn(3))])
    assert counter.frame_count == 1


def unused_across_a_break(x, note, extra):
    y = x * 2
    print("a graph break")
    return y + 1


def test_unread_arguments_live_at_a_graph_break_are_passed_on():
    x = torch.randn(3)
    counter, _ = run(unused_across_a_break, [(x, "a", [1]), (x, "a", [1])])
    assert counter.frame_count == 2


def deletes_an_argument(x, junk):
    del junk
    return x + 1


def test_deleting_an_unread_argument():
    x = torch.randn(3)
    counter, _ = run(deletes_an_argument, [(x, 1), (x, "two")])
    assert counter.frame_count == 1


def appends_to_second(a, b):
    b.append(1)
    return a


def test_aliased_arguments_read_in_reverse_order_stay_aliased():
    shared = []
    counter, compiled = run(lambda a, b: (b.append(1), a)[1], [(shared, shared)])
    assert shared == [1, 1]  # eager, then compiled: the same list through both names
    distinct = ([], [])
    assert_same(compiled(*distinct), distinct[0])
    assert distinct == ([], [1])
    assert counter.frame_count == 0  # no graph; the aliasing recompiled (two entries)
    assert len(compiled.__bg_compiled__.entries) == 2


def first_read_order(x, y):
    return y * 2 + x


def test_graph_inputs_come_in_the_order_first_read():
    counter, _ = run(first_read_order, [(torch.randn(3), torch.randn(3))])
    placeholders = [n.name for n in counter.graphs[0].graph.nodes if n.op == "placeholder"]
    assert placeholders == ["l_y_", "l_x_"]


def f_patches(x, key, patches):
    return x * x + 1


def apply_patches(f, x, keys):
    patches = []
    for key, patch in keys:
        patches.append(patch)
    x = f(x, key, patches)
    return x


@pytest.mark.xfail(strict=True, reason="a tuple of constants read from outside is guarded as one value "
                                       "(one clause) when it is wrapped, here when the loop unpacks it, "
                                       "although its items are never used (torch.compile guards items lazily)")
def test_items_of_unpacked_constant_tuples_are_not_guarded():
    """torch's test_no_recompile_over_unused_objects."""
    x = torch.rand(10)
    counter, _ = run(apply_patches, [(f_patches, x, [("a", 1), ("b", 2)]), (f_patches, x, [("c", 3), ("d", 4)])],
                     fullgraph=True)
    assert counter.frame_count == 1
