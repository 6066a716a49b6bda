"""A global frozenset of classes (`type(x) in _ATOMIC_TYPES`, as CPython 3.12's dataclasses
reads it): a constant guarded by identity, since a frozenset cannot change and classes hash
by identity; membership folds in the trace."""
import torch

from helpers import check, compile_counted

ATOMIC = frozenset({int, float, str, type(None), torch.Tensor})


class Meta(type):
    def __eq__(cls, other):
        return other is int or super().__eq__(other)

    __hash__ = type.__hash__


class LikeInt(metaclass=Meta):
    pass


ODD = frozenset({LikeInt})


def test_membership_of_a_class_folds_in_one_graph():
    def f(x, n):
        out = x
        for value in (x, n, 2.5, "s", [1]):
            out = out + (1 if type(value) in ATOMIC else 10)
        return out

    check(f, torch.randn(3), 4, graphs=1)


def test_a_replaced_frozenset_recompiles():
    global ATOMIC
    saved = ATOMIC

    def f(x):
        return x + 1 if type(x) in ATOMIC else x - 1

    compiled, counter = compile_counted(f)
    x = torch.randn(2)
    try:
        assert torch.equal(compiled(x), x + 1)
        ATOMIC = frozenset({int})
        assert torch.equal(compiled(x), x - 1)
    finally:
        ATOMIC = saved
    assert counter.frame_count == 2


def test_classes_with_their_own_equality_are_compared_as_eager():
    def f(x):
        return x + 1 if int in ODD else x - 1

    check(f, torch.randn(2))


def test_fullgraph_capture_of_a_dataclass_asdict():
    import dataclasses

    @dataclasses.dataclass
    class Point:
        x: float
        y: int

    def f(t):
        return t * dataclasses.asdict(Point(2.0, 3))["y"]

    check(f, torch.randn(2), fullgraph=True, graphs=1)
