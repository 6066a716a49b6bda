"""Reads of `os.environ` (`[k]`, `.get(k)`, `k in`, `os.getenv(k)`): folded at trace time and
guarded per call (a changed or newly set variable recompiles); writes stay graph breaks."""
import os

import pytest
import torch

import bytegraph
from helpers import check, compile_counted

_NAME = "BYTEGRAPH_TEST_ENVIRON_READ"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    monkeypatch.delenv(_NAME, raising=False)
    monkeypatch.delenv(_NAME + "_2", raising=False)


def _flag():  # an inlined helper, as libraries write it
    return os.environ.get(_NAME, "0") == "1"


def test_get_missing_and_present(monkeypatch):
    def fn(x):
        return x * 2 if _flag() else x - 1

    check(fn, torch.randn(3), graphs=1, fullgraph=True)
    monkeypatch.setenv(_NAME, "1")
    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_getitem_and_contains(monkeypatch):
    monkeypatch.setenv(_NAME, "3")

    def fn(x):
        y = x * int(os.environ[_NAME])
        return y + (_NAME + "_2" in os.environ) + (_NAME in os.environ)

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_missing_getitem_raises_key_error_like_eager():
    def fn(x):
        try:
            return x + len(os.environ[_NAME])
        except KeyError as e:
            return x - len(str(e))

    check(fn, torch.randn(2), graphs=1)


def test_changed_variable_recompiles(monkeypatch):
    fn, counter = compile_counted(lambda x: x + 1 if _flag() else x - 1)
    x = torch.zeros(2)
    assert torch.equal(fn(x), x - 1)
    assert torch.equal(fn(x), x - 1)
    monkeypatch.setenv(_NAME, "1")
    assert torch.equal(fn(x), x + 1)
    monkeypatch.setenv(_NAME, "0")  # set, to another value than "1": a third entry
    assert torch.equal(fn(x), x - 1)
    monkeypatch.delenv(_NAME)
    assert torch.equal(fn(x), x - 1)  # the first entry again
    assert counter.frame_count == 3


def test_read_across_a_graph_break(monkeypatch):
    monkeypatch.setenv(_NAME, "1")

    def fn(x):
        x = x * 2 if _flag() else x
        bytegraph.graph_break()
        return x + 1 if _flag() else x

    check(fn, torch.randn(2), graphs=2)


def test_write_breaks_with_reason():
    def fn(x):
        os.environ[_NAME] = "1"
        return x + 1

    out = bytegraph.explain(fn, torch.ones(2))
    assert os.environ[_NAME] == "1"
    assert torch.equal(out.result, torch.full((2,), 2.0))
    assert any("__setitem__" in b.reason for b in out.break_reasons), [b.reason for b in out.break_reasons]


def test_os_getenv_is_a_read(monkeypatch):
    def fn(x):
        scale = float(os.getenv(_NAME, "2"))
        return x * scale if os.getenv(_NAME + "_2") is None else x + 1

    check(fn, torch.randn(3), graphs=1, fullgraph=True)
    monkeypatch.setenv(_NAME, "5")
    check(fn, torch.randn(3), graphs=1, fullgraph=True)
    monkeypatch.setenv(_NAME + "_2", "")
    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_os_getenv_change_recompiles(monkeypatch):
    fn, counter = compile_counted(lambda x: x + 1 if os.getenv(_NAME) == "1" else x - 1)
    x = torch.zeros(2)
    assert torch.equal(fn(x), x - 1)
    monkeypatch.setenv(_NAME, "1")
    assert torch.equal(fn(x), x + 1)
    monkeypatch.delenv(_NAME)
    assert torch.equal(fn(x), x - 1)
    assert counter.frame_count == 2


def test_os_getenvb_is_a_read(monkeypatch):
    monkeypatch.setenv(_NAME, "3")

    def fn(x):
        return x * len(os.getenvb(_NAME.encode(), b""))

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_only_os_functions_over_environ_are_inlined():
    from bytegraph.vars.trace_rules import Kind, lookup

    assert lookup(os.getenv).kind is Kind.INLINE and "os.environ" in lookup(os.getenv).reason
    for fn in (os.makedirs, os.get_exec_path, os.fsencode, os.walk):
        assert lookup(fn).kind is Kind.BREAK, fn


def test_a_write_through_os_environ_methods_still_breaks():
    def fn(x):
        os.environ.setdefault(_NAME, "7")
        return x + 1

    out = bytegraph.explain(fn, torch.ones(2))
    assert os.environ[_NAME] == "7"
    assert torch.equal(out.result, torch.full((2,), 2.0))
    assert out.break_reasons and any("os" in b.reason for b in out.break_reasons), [b.reason for b in out.break_reasons]
