"""Automatic garbage collection during a capture (Note [GC paused during a capture],
translate/gc_pause.py): off while tracing and building guards, on while the backend
compiles, and afterwards as the user had it, whatever happened in between."""
import gc
import pathlib
import sys

import pytest
import torch

import bytegraph


@pytest.fixture
def eager_threshold():
    """A collection on every allocation while collection is on; restored afterwards."""
    threshold, enabled = gc.get_threshold(), gc.isenabled()
    gc.set_threshold(1)
    yield
    gc.set_threshold(*threshold)
    gc.enable() if enabled else gc.disable()


def _program(x):
    ys = [x.sin() for _ in range(5)]
    d = {"a": ys, "b": {"c": x.cos()}}
    return sum(d["a"]) + d["b"]["c"]


PACKAGE = pathlib.Path(bytegraph.__file__).parent
CAPTURING = tuple(str(PACKAGE / part) for part in ("translate", "vars", "graph", "guards"))


def _capturing() -> bool:
    """Whether bytegraph's tracer or guard builder is on the stack."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_filename.startswith(CAPTURING):
            return True
        frame = frame.f_back
    return False


class _Recorder:
    """Collections started while capturing: inside the backend's compile and elsewhere."""

    def __init__(self):
        self.in_backend = False
        self.capturing = 0
        self.inside_backend = 0
        self.enabled_in_backend = None

    def callback(self, phase, info):
        if phase == "start":
            if self.in_backend:
                self.inside_backend += 1
            elif _capturing():
                self.capturing += 1

    def backend(self, gm, example_inputs):
        self.in_backend = True
        self.enabled_in_backend = gc.isenabled()
        # allocations: a collection starts when collection is on (from 3.12 at the eval breaker's
        # next check, which the comprehension's backward jumps make)
        [[] for _ in range(1000)]
        self.in_backend = False
        return gm.forward


def _capture_recorded(fn, x, recorder):
    compiled = bytegraph.compile(fn, backend=recorder.backend)
    gc.callbacks.append(recorder.callback)
    try:
        return compiled(x)
    finally:
        gc.callbacks.remove(recorder.callback)


def test_no_collection_while_tracing_one_while_the_backend_compiles(eager_threshold):
    x = torch.randn(4)
    recorder = _Recorder()
    out = _capture_recorded(_program, x, recorder)
    torch.testing.assert_close(out, _program(x))
    assert recorder.enabled_in_backend is True
    assert recorder.inside_backend > 0
    # every allocation would start one: none starts while tracing or building guards
    assert recorder.capturing == 0
    assert gc.isenabled()


def test_a_user_who_turned_collection_off_keeps_it_off(eager_threshold):
    gc.disable()
    x = torch.randn(4)
    recorder = _Recorder()
    out = _capture_recorded(_program, x, recorder)
    torch.testing.assert_close(out, _program(x))
    assert recorder.enabled_in_backend is False
    assert recorder.inside_backend == 0 and recorder.capturing == 0
    assert not gc.isenabled()


def test_a_backend_that_turns_collection_off_leaves_it_off(eager_threshold):
    def backend(gm, example_inputs):
        gc.disable()
        return gm.forward

    x = torch.randn(4)
    torch.testing.assert_close(bytegraph.compile(_program, backend=backend)(x), _program(x))
    assert not gc.isenabled()


def test_collection_back_on_after_a_capture_that_fails():
    def breaks(x):
        print("eager only")
        return x + 1

    with pytest.raises(bytegraph.Unsupported):
        bytegraph.compile(breaks, fullgraph=True)(torch.randn(2))
    assert gc.isenabled()


def test_a_backend_that_captures_again_gets_collection_back_afterwards(eager_threshold):
    inner = bytegraph.compile(lambda t: t * 2)
    seen = []

    def backend(gm, example_inputs):
        inner(torch.randn(3))  # a capture inside the backend's compile
        seen.append(gc.isenabled())
        return gm.forward

    x = torch.randn(4)
    torch.testing.assert_close(bytegraph.compile(_program, backend=backend)(x), _program(x))
    assert seen == [True]
    assert gc.isenabled()
