"""Threads and garbage collection.

Threads: several threads calling one compiled function while it compiles get eager's
results and one cache entry per function (Note [Compile lock] in
`runtime/compiled_function.py`); the per-call path takes no lock.

Garbage collection: a compiled model or function that the user drops is collected, with
no `bytegraph.reset()`: no bytegraph cache (guards, installed graph globals, callee
wrappers, break markers, resume functions, the fake-tensor memo) keeps it alive.
"""
from __future__ import annotations

import gc
import threading
import time
import weakref

import torch

import bytegraph
from bytegraph.runtime import compiled_function

# ----------------------------------------------------------------------------- threads


class SlowBackend:
    """Counts compiled graphs; sleeps in each compile to widen the window where another
    thread could miss too."""

    def __init__(self, seconds=0.2):
        self.seconds = seconds
        self.graphs = 0

    def __call__(self, gm, example_inputs):
        self.graphs += 1
        time.sleep(self.seconds)
        return gm.forward


def _in_threads(n, work):
    """Run `work(i)` in `n` threads that start together; returns the results by index."""
    barrier = threading.Barrier(n)
    results, errors = [None] * n, []

    def run(i):
        barrier.wait()
        try:
            results[i] = work(i)
        except BaseException as e:  # reported by the test thread
            errors.append(e)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a thread hangs"
    if errors:
        raise errors[0]
    return results


def single(x):
    return (x * 2).sin() + 1


def with_break(x):
    y = x.cos() * 3
    bytegraph.graph_break()
    return y + x.sum()


def _entries_of(fn) -> int:
    return len(fn.__bg_compiled__.entries)


def _callee_entries() -> list[int]:
    return [len(w.__bg_compiled__.entries) for w in compiled_function._callees.values()]


def test_threads_missing_at_once_compile_once():
    backend = SlowBackend()
    cfn = bytegraph.compile(single, backend=backend)
    inputs = [torch.full((3,), float(i)) for i in range(3)]
    results = _in_threads(3, lambda i: cfn(inputs[i]))
    for x, out in zip(inputs, results):
        torch.testing.assert_close(out, single(x))
    assert backend.graphs == 1
    assert _entries_of(cfn) == 1


def test_threads_compiling_a_break_and_its_resume_function():
    backend = SlowBackend(0.1)
    cfn = bytegraph.compile(with_break, backend=backend)
    inputs = [torch.randn(4) for _ in range(3)]
    results = _in_threads(3, lambda i: cfn(inputs[i]))
    for x, out in zip(inputs, results):
        torch.testing.assert_close(out, with_break(x))
    assert backend.graphs == 2  # before and after the break, once each
    assert _entries_of(cfn) == 1
    assert _callee_entries() == [1]
    later = torch.randn(4)
    torch.testing.assert_close(cfn(later), with_break(later))
    assert backend.graphs == 2


def test_threads_with_different_shapes_get_one_entry_each():
    backend = SlowBackend(0.05)
    cfn = bytegraph.compile(single, backend=backend)
    inputs = [torch.randn(2 + i % 2) for i in range(4)]
    results = _in_threads(4, lambda i: cfn(inputs[i]))
    for x, out in zip(inputs, results):
        torch.testing.assert_close(out, single(x))
    assert backend.graphs == 2
    assert _entries_of(cfn) == 2
    names = cfn.__code__.co_names  # the wrapper's code tries exactly the two entries
    assert sorted(n for n in names if n.startswith("__bg_g")) == ["__bg_g0", "__bg_g1"]


def test_the_per_call_path_takes_no_lock():
    cfn = bytegraph.compile(single, backend="eager")
    x = torch.randn(3)
    cfn(x)
    done = threading.Event()

    def call():
        cfn(x)
        done.set()

    with compiled_function.COMPILE_LOCK:  # held by this thread: a hit in another must not wait
        thread = threading.Thread(target=call)
        thread.start()
        assert done.wait(timeout=30), "a cache hit waited for the compile lock"
    thread.join()


# ----------------------------------------------------------------------------- garbage collection


def _collected(*refs) -> bool:
    gc.collect()
    return all(r() is None for r in refs)


class Net(torch.nn.Module):
    def __init__(self, breaks: bool):
        super().__init__()
        self.breaks = breaks
        self.a = torch.nn.Linear(64, 64)
        self.b = torch.nn.Linear(64, 8)
        self.register_buffer("big", torch.zeros(256, 256))

    def forward(self, x):
        h = torch.relu(self.a(x)) + self.big[0, :64]
        if self.breaks:
            bytegraph.graph_break()
        return self.b(h)


def _compiled_module_refs(breaks: bool, train: bool):
    model = Net(breaks)
    compiled = bytegraph.compile(model)
    x = torch.randn(2, 64)
    out = compiled(x)
    if train:
        out.sum().backward()
    torch.testing.assert_close(out, model(x))
    return weakref.ref(model), weakref.ref(model.big), weakref.ref(compiled._bg_compiled)


def test_a_compiled_module_is_collected():
    refs = _compiled_module_refs(breaks=False, train=True)
    assert _collected(*refs)


def test_a_compiled_module_with_a_graph_break_is_collected():
    refs = _compiled_module_refs(breaks=True, train=True)
    assert _collected(*refs)


def _module_as_argument_refs():
    model = Net(True)

    @bytegraph.compile
    def step(m, x):
        return m(x).sum()

    step(model, torch.randn(2, 64))
    return weakref.ref(model), weakref.ref(step.__bg_compiled__)


def test_a_module_passed_to_a_compiled_function_is_collected():
    refs = _module_as_argument_refs()
    assert _collected(*refs)


def _closure_refs(breaks: bool):
    weight = torch.randn(512, 512)

    def helper(x):
        y = x @ weight
        if breaks:
            bytegraph.graph_break()
        return y.relu()

    def fn(x):
        return helper(x + 1) * weight[0, 0]

    compiled = bytegraph.compile(fn)
    x = torch.randn(3, 512)
    torch.testing.assert_close(compiled(x), fn(x))
    return weakref.ref(weight), weakref.ref(compiled.__bg_compiled__), weakref.ref(helper)


def test_a_compiled_closure_over_a_big_tensor_is_collected():
    refs = _closure_refs(breaks=False)
    assert _collected(*refs)


def test_a_compiled_closure_whose_callee_breaks_is_collected():
    refs = _closure_refs(breaks=True)
    assert _collected(*refs)


def test_a_dropped_compiled_function_takes_its_graph_globals_along():
    def fn(x):
        return x.sin() * 2

    compiled = bytegraph.compile(fn)
    compiled(torch.randn(3))
    name = compiled.__bg_compiled__.entries[0].graph_name
    assert name in globals()
    del compiled, fn
    gc.collect()
    assert name not in globals()


def test_reset_empties_the_resume_function_and_continuation_caches():
    """They are keyed by the user's code and hold resume functions (with their globals):
    without this every function ever compiled with a break stays cached."""
    from bytegraph.translate import continuation, resume

    def inner(x):
        bytegraph.graph_break()
        return x + 1

    def fn(x):
        return inner(x * 2) * 3

    compiled = bytegraph.compile(fn)
    x = torch.randn(3)
    torch.testing.assert_close(compiled(x), fn(x))
    assert any(key[0] is fn.__code__ or key[0] is inner.__code__ for key in resume._cache)
    assert continuation._cache
    bytegraph.reset()
    assert not resume._cache and not continuation._cache
    torch.testing.assert_close(compiled(x), fn(x))  # compiles again after the reset


def test_reset_removes_graph_globals():
    compiled = bytegraph.compile(single)
    compiled(torch.randn(3))
    name = compiled.__bg_compiled__.entries[0].graph_name
    assert name in globals()
    bytegraph.reset()
    gc.collect()
    assert name not in globals()
    torch.testing.assert_close(compiled(torch.ones(3)), single(torch.ones(3)))


def call_in_try(helper, x):
    try:  # the break cannot resume inside `helper`: this frame breaks at the call, compiling `helper`
        return helper(x + 1) * 2
    finally:
        x.add_(0)


def _closure_called_in_try_refs():
    weight = torch.randn(512, 512)

    def helper(x):
        y = x @ weight
        bytegraph.graph_break()
        return y.relu()

    compiled = bytegraph.compile(call_in_try)
    x = torch.randn(3, 512)
    torch.testing.assert_close(compiled(helper, x.clone()), call_in_try(helper, x.clone()))
    assert any(w.__bg_original__ is helper for w in compiled_function._callees.values())
    return weakref.ref(weight), weakref.ref(compiled.__bg_compiled__), weakref.ref(helper)


def test_a_graph_broken_callee_compiled_at_the_break_is_collected():
    refs = _closure_called_in_try_refs()
    assert _collected(*refs)


def _compiled_calling_compiled_refs():
    weight = torch.randn(512, 512)

    @bytegraph.compile
    def inner(x):
        return x @ weight

    @bytegraph.compile
    def outer(x):
        return inner(x).relu()

    x = torch.randn(3, 512)
    torch.testing.assert_close(outer(x), (x @ weight).relu())
    return weakref.ref(weight), weakref.ref(inner.__bg_compiled__), weakref.ref(outer.__bg_compiled__)


def test_a_compiled_function_inlined_into_another_is_collected():
    refs = _compiled_calling_compiled_refs()
    assert _collected(*refs)
