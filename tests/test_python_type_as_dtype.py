"""A Python number type where torch takes a dtype (`torch.tensor(0, dtype=int)`,
`x.to(float)`, `torch.full(..., dtype=bool)`): torch's argument parser reads it as the dtype it
stands for, and so does the graph (FX code cannot spell the class itself)."""
import pytest
import torch

from tests.helpers import check


@pytest.mark.parametrize("kind", [int, float, bool, complex], ids=lambda k: k.__name__)
def test_python_type_as_dtype_of_a_factory(kind):
    def fn(x):
        return x.sum() + torch.tensor(0, dtype=kind).real.to(x.dtype), torch.zeros(2, dtype=kind)

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_python_type_as_dtype_of_a_conversion():
    def fn(x):
        return x.to(int), x.to(dtype=float), torch.full((2,), 1, dtype=bool)

    check(fn, torch.randn(3) * 4, graphs=1, fullgraph=True)
