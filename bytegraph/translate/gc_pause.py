"""Automatic garbage collection paused while bytegraph captures a frame (not while the
backend compiles its graph).

Note [GC paused during a capture]
A capture allocates a burst of objects that live until it ends or longer (variables,
sources, guards, FX nodes, fake tensors): a model's warm capture makes CPython start a
dozen young collections and one of the middle generation, each walking objects that are
not garbage, about 7% of the capture (hf_bert, hf_gptj). `paused()` turns automatic
collection off for the trace and the guard build; when it turns it back on, the objects
that survived wait for the next young collection, one instead of a dozen. The backend's
compile is user code, possibly long and allocating (inductor): `resumed()` runs it with
collection on. Nothing is turned on that the user had off: `paused()` does nothing when
automatic collection is already off (the user's choice, or an enclosing capture's), and
`resumed()` only undoes this module's pause (a backend that turns collection off leaves it
off). Only automatic collection waits: reference counting frees what it always frees, and
`gc.collect()` still works.
"""
from __future__ import annotations

import contextlib
import gc

_paused_here = False  # whether automatic collection is off because of `paused()`


@contextlib.contextmanager
def paused():
    """Automatic collection off inside (if it was on), restored on the way out."""
    global _paused_here
    if not gc.isenabled():
        yield
        return
    gc.disable()
    _paused_here = True
    try:
        yield
    finally:
        if _paused_here:  # not when the backend turned collection off (`resumed`)
            _paused_here = False
            gc.enable()


@contextlib.contextmanager
def resumed():
    """Automatic collection back on inside, when `paused()` turned it off."""
    global _paused_here
    if not _paused_here:
        yield
        return
    _paused_here = False
    gc.enable()
    try:
        yield
    finally:
        if gc.isenabled():  # the backend may have turned it off: then it stays off
            gc.disable()
            _paused_here = True
