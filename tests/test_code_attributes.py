"""Code-object attributes (`fn.__code__.co_*`) of functions read by the trace: folded to
guarded constants (the function's code is guarded), in the root frame, inside inlined
helpers, for closures and functions made during tracing, and across a graph break."""
import functools

import pytest
import torch

import bytegraph
from helpers import check, compile_counted


def _scaled(x, y=1.0, *, z=2.0):
    return x * y + z


def _other(x):
    return x - 1


def _arity(fn):
    code = fn.__code__
    return code.co_argcount + code.co_kwonlyargcount + len(code.co_varnames)


def test_code_attributes_of_an_argument_are_constants():
    def fn(f, x):
        code = f.__code__
        flags = code.co_flags & 0x04  # *args
        return x * code.co_argcount + code.co_kwonlyargcount + flags + len(code.co_name) + (
            "test_code_attributes" in code.co_filename) + code.co_varnames.index("z") + code.co_firstlineno * 0

    check(fn, _scaled, torch.randn(3), graphs=1, fullgraph=True)


def test_code_attribute_inside_inlined_helper():
    def fn(x):
        return x * _arity(_scaled) + _arity(_other)

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_decorator_reading_varnames_of_closure_variable():
    """What transformers' forward decorators do: `func.__code__.co_varnames` of the wrapped
    function, read from the wrapper's closure on every call."""
    def uses_names(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            names = func.__code__.co_varnames[:func.__code__.co_argcount]
            bound = dict(zip(names, args))
            bound.update(kwargs)
            return func(**bound)
        return wrapper

    @uses_names
    def inner(x, scale):
        return x * scale

    check(lambda x: inner(x, scale=3.0) + inner(x, 2.0), torch.randn(4), graphs=1, fullgraph=True)


def test_code_of_function_made_during_tracing():
    def fn(x):
        def local(a, b, c=1):
            return a + b + c
        return x * local.__code__.co_argcount + len(local.__code__.co_varnames)

    check(fn, torch.randn(2), graphs=1, fullgraph=True)


def test_code_attributes_across_a_graph_break():
    def fn(f, x):
        x = x * f.__code__.co_argcount
        bytegraph.graph_break()
        return x + f.__code__.co_kwonlyargcount

    check(fn, _scaled, torch.randn(3), graphs=2)


def test_another_function_recompiles():
    fn, counter = compile_counted(lambda f, x: x * f.__code__.co_argcount)
    x = torch.ones(2)
    assert torch.equal(fn(_scaled, x), x * 2)
    assert torch.equal(fn(_other, x), x * 1)
    assert counter.frame_count == 2


def test_reassigned_code_is_seen():
    def target(a):
        return a

    fn, counter = compile_counted(lambda f, x: x * f.__code__.co_argcount)
    x = torch.ones(2)
    assert torch.equal(fn(target, x), x)
    target.__code__ = _scaled.__code__
    assert torch.equal(fn(target, x), x * 2)
    assert counter.frame_count == 2


def test_code_method_breaks_with_reason():
    def fn(f, x):
        return x + len(list(f.__code__.co_lines()))

    out = bytegraph.explain(fn, _other, torch.ones(2))
    assert torch.equal(out.result, fn(_other, torch.ones(2)))
    assert any("co_lines" in b.reason for b in out.break_reasons)


def test_missing_code_attribute_raises_like_eager():
    def fn(f, x):
        try:
            return f.__code__.co_nonexistent
        except AttributeError:
            return x + 1

    check(fn, _other, torch.ones(2))


@pytest.mark.parametrize("attr", ["co_varnames", "co_argcount", "co_flags", "co_name", "co_filename",
                                  "co_kwonlyargcount", "co_posonlyargcount", "co_qualname", "co_freevars",
                                  "co_cellvars", "co_nlocals"])
def test_each_attribute_folds(attr):
    def fn(f, x):
        value = getattr(f.__code__, attr)
        return x + len(str(value))

    check(fn, _scaled, torch.ones(2), graphs=1, fullgraph=True)
