"""functools.lru_cache / functools.cache helpers whose bodies cannot be traced (they read
`importlib.metadata`, or are marked `torch.compiler.assume_constant_result`, as
transformers' `is_torch_available()` / `is_torch_greater_or_equal("2.3")`): a call with
constant arguments is made through the real wrapper at trace time and its constant result
is folded, so the caller stays one graph (Note [Cached calls made at trace time] in
bytegraph/vars/lru_cache.py). Differential: outputs, grads, the cache's contents after the
call (filled as eager's first call fills it), errors as eager; torch.compile with
fullgraph=True is the reference for the one-graph cases."""
import functools
import importlib.metadata
import sys

import pytest
import torch

import bytegraph
from helpers import check

T = lambda *shape: torch.randn(*shape, requires_grad=True)  # noqa: E731


def _torch_one_graph(fn, *args):
    """torch.compile keeps one graph too (the reference for `fullgraph=True`)."""
    torch._dynamo.reset()
    torch.compile(fn, backend="eager", fullgraph=True)(*args)


def _cache_state(*wrappers):
    """What the caches hold (their size; hits are not compared: the compiled code skips the call)."""
    return lambda: [w.cache_info().currsize for w in wrappers]


@functools.lru_cache
def package_version(name):
    return importlib.metadata.version(name)


@functools.cache
def has_package(name):
    try:
        importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@functools.lru_cache
@torch.compiler.assume_constant_result
def marked_probe(flag):
    return ("probe", flag)


CALLS = []


@functools.lru_cache
@torch.compiler.assume_constant_result
def marked_counting(n):
    CALLS.append(n)
    return n * 2


@functools.lru_cache
def metadata_then_raise(name):
    importlib.metadata.version(name)
    raise LookupError(f"no feature in {name}")


@functools.lru_cache
def metadata_as_list(name):
    return [importlib.metadata.version(name)]


def _clear(*wrappers):
    def setup():
        for w in wrappers:
            w.cache_clear()
    return setup


def test_cached_metadata_read_is_a_constant_in_one_graph():
    def f(x):
        major = int(package_version("torch").split(".")[0])
        return x * major if has_package("torch") else x

    _torch_one_graph(f, T(3))
    check(f, T(3), graphs=1, fullgraph=True, state=_cache_state(package_version, has_package))


def test_the_compiled_call_fills_the_cache_as_the_eager_call_does():
    """The trace-time call goes through the wrapper: the first compiled call leaves the cache
    holding the entry, as eager's first call would; later eager calls are hits."""
    package_version.cache_clear()
    cf = bytegraph.compile(lambda x: x * len(package_version("torch")), fullgraph=True)
    x = torch.ones(2)
    assert torch.equal(cf(x), x * len(importlib.metadata.version("torch")))
    info = package_version.cache_info()
    assert (info.currsize, info.misses, info.hits) == (1, 1, 0)
    package_version("torch")
    assert package_version.cache_info().hits == 1


def test_cached_probe_of_a_missing_package_is_a_constant():
    """The body catches importlib's PackageNotFoundError (torch.compile raises an internal error here)."""
    def f(x):
        return x.sin() if has_package("surely-not-installed-pkg") else x.cos()

    check(f, T(3), graphs=1, fullgraph=True, state=_cache_state(has_package))


def test_cached_value_already_in_the_cache_is_folded():
    package_version.cache_clear()
    package_version("torch")  # eager filled it before the compiled function runs

    def f(x):
        return x + len(package_version("torch"))

    check(f, T(2), graphs=1, fullgraph=True, state=_cache_state(package_version))
    assert package_version.cache_info().currsize == 1


def test_transformers_version_helpers_are_constants():
    import_utils = pytest.importorskip("transformers.utils.import_utils")

    def f(x):
        if import_utils.is_torch_available() and import_utils.is_torch_greater_or_equal("2.3"):
            return x.sin()
        return x.cos()

    _torch_one_graph(f, T(3))
    check(f, T(3), graphs=1, fullgraph=True)


def test_marked_constant_body_is_not_traced_and_runs_once_as_eager():
    def f(x):
        return x * marked_counting(3) + marked_counting(3), marked_probe(True)

    def setup():
        CALLS.clear()
        marked_counting.cache_clear()

    _torch_one_graph(f, T(2))
    setup()
    check(f, T(2), graphs=1, fullgraph=True, state=lambda: list(CALLS))
    assert CALLS == [3]  # the first call filled the cache: the body ran once in all four runs
    setup()
    bytegraph.compile(f, fullgraph=True)(T(2))
    assert CALLS == [3]  # the trace-time call ran it, through the wrapper


def test_untraceable_body_that_raises_raises_as_eager():
    def f(x):
        try:
            return x * len(metadata_then_raise("torch"))
        except LookupError as e:
            return x + len(str(e))

    check(f, T(2), setup=_clear(metadata_then_raise))
    check(lambda x: x * len(metadata_then_raise("torch")), T(2), setup=_clear(metadata_then_raise))


def test_mutable_result_of_an_untraceable_body_breaks_with_the_reason():
    fn = lambda x: (metadata_as_list("torch"), x + 1)  # noqa: E731
    check(fn, T(2), setup=_clear(metadata_as_list))
    reasons = [r.reason for r in bytegraph.explain(fn, T(2)).break_reasons]
    assert any("metadata_as_list" in r and "is not an immutable constant" in r for r in reasons), reasons


class Box:
    pass


def test_untraceable_body_after_a_pending_write_breaks():
    """A write the trace replays after the graph could be read by the body: not called early."""
    box = Box()

    def f(x, box):
        box.seen = 1
        return x * len(package_version("torch"))

    check(f, T(2), box, setup=_clear(package_version))
    reasons = [r.reason for r in bytegraph.explain(f, T(2), Box()).break_reasons]
    assert any("package_version" in r and "whose body breaks the graph" in r for r in reasons), reasons


def test_constant_result_is_reused_by_later_calls_without_a_recompile():
    package_version.cache_clear()
    cf = bytegraph.compile(lambda x: x + len(package_version("torch")))
    x = torch.ones(2)
    for _ in range(3):
        assert torch.equal(cf(x), x + len(package_version("torch")))
    assert package_version.cache_info().currsize == 1


MARKED_CALLS = []


@torch.compiler.assume_constant_result
def marked_plain(name):
    MARKED_CALLS.append(name)
    return importlib.metadata.version(name)


def test_marked_function_without_a_cache_is_called_at_trace_time():
    """`torch.compiler.assume_constant_result` on a plain function (Note [Constant results]):
    called once per trace, as torch.compile does; eager calls it every time."""
    def f(x):
        return x * len(marked_plain("torch"))

    _torch_one_graph(f, T(2))
    MARKED_CALLS.clear()
    res = check(f, T(2), graphs=1, fullgraph=True)
    assert res.compiled.out is not None
    cf = bytegraph.compile(f, fullgraph=True)
    MARKED_CALLS.clear()
    for _ in range(3):
        cf(T(2))
    assert MARKED_CALLS == ["torch"]  # the trace's call; later calls run the graph


def test_marked_function_with_a_tensor_argument_breaks():
    @torch.compiler.assume_constant_result
    def marked_scale(t):
        return 2

    fn = lambda x: x * marked_scale(x)  # noqa: E731
    check(fn, T(2))
    reasons = [r.reason for r in bytegraph.explain(fn, T(2)).break_reasons]
    assert any("marked torch.compiler.assume_constant_result" in r for r in reasons), reasons


# ---- unhashable arguments: the wrapper raises TypeError before the body runs, as eager ------
BODY_RUNS = []


@functools.lru_cache
def cached_len(items, scale=1):
    BODY_RUNS.append(len(items))
    return len(items) * scale


@functools.lru_cache(maxsize=0)
def uncached_len(items):
    return len(items)


class EqOnly:
    """`__eq__` without `__hash__`: instances are unhashable."""

    def __eq__(self, other):
        return self is other


class PrintingHash:
    def __hash__(self):
        print("hashed")
        return 1


@pytest.mark.parametrize("call", [
    lambda x: cached_len([1, 2]),
    lambda x: cached_len({"a": 1}),
    lambda x: cached_len({1, 2}),
    lambda x: cached_len((1, [2])),
    lambda x: cached_len((1, 2), scale=[3]),
    lambda x: cached_len(EqOnly()),
    lambda x: cached_len([x]),
], ids=["list", "dict", "set", "list in a tuple", "keyword", "class without __hash__", "list of tensors"])
def test_unhashable_argument_raises_as_eager(call):
    fn = lambda x: x * call(x)  # noqa: E731
    BODY_RUNS.clear()
    check(fn, T(2), state=lambda: list(BODY_RUNS))
    check(fn, T(2), fullgraph=True, state=lambda: list(BODY_RUNS))  # the traced call raises it too


def test_unhashable_argument_error_caught_in_the_trace_is_one_graph():
    def fn(x, items):
        try:
            return x * cached_len(items)
        except TypeError as e:
            return x - len(str(e))

    BODY_RUNS.clear()
    check(fn, T(2), [1, 2, 3], graphs=1, fullgraph=True, state=lambda: list(BODY_RUNS))
    assert BODY_RUNS == []


def test_uncached_wrapper_does_not_hash():
    """`lru_cache(maxsize=0)` calls the function without making a key: no TypeError."""
    check(lambda x: x * uncached_len([1, 2, 3]), T(2))


def test_hash_written_in_python_before_an_unhashable_argument_runs_as_eager():
    """The key is hashed in order: a user `__hash__` (which prints) runs before the list raises."""
    check(lambda x, p: x * cached_len(p, scale=[1]), T(2), PrintingHash())


@pytest.mark.xfail(sys.version_info >= (3, 12), strict=True,
                   reason="slices are hashable from 3.12: the key hashes and the body, which writes a global, "
                          "is not captured under fullgraph (no constant is unhashable there)")
def test_unhashable_constant_argument_raises_as_eager():
    check(lambda x: x * cached_len((1, slice(2))), T(2), fullgraph=True, state=lambda: list(BODY_RUNS))
