"""A module of the tests package that imports relatively inside functions (for
tests/test_python_corners.py): `from .helpers import ...` resolved from `__package__`."""
import torch


def uses_relative_import(x):
    from .helpers import CompileCounter  # tests.helpers, already imported by the test
    from . import helpers

    return x + 1, CompileCounter is helpers.CompileCounter


def imports_a_missing_name(x):
    y = x + 1
    from . import _no_such_module_here  # noqa: F401  (eager: ImportError)
    return y


def _unused(x):
    return torch.relu(x)
