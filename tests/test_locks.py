"""threading.Lock / RLock in compiled code (bytegraph/vars/locks.py): `with lock:` is a graph
break at the lock whose block resumes in a compiled resume function that runs holding the
real lock, so the block's reads and the replay of its writes happen inside the critical
section, as eagerly (torch.compile breaks here too; with fullgraph=True both raise).
Explicit `acquire`/`release` run eagerly at a break, so a non-blocking acquire of a lock held
elsewhere fails as eagerly. Differential: outputs, grads, state; threads check exclusion.
Module-level locks as context managers: a clean break and the block resumed compiled (also in
an inlined helper, and with a second break inside the block), the lock released when the
block raises; a logger whose handler prints (below) puts its records in the compared stdout."""
import threading

import pytest
import torch

import bytegraph
from helpers import check, printing_logger

X = torch.randn(3, requires_grad=True)


class Installer:
    """transformers-like: a lock around a one-time hook installation that touches no tensor."""

    def __init__(self):
        self._lock = threading.Lock()
        self.installed = []

    def __deepcopy__(self, memo):  # `check` runs eager and compiled on copies: a lock of their own
        copy = Installer()
        copy.installed = list(self.installed)
        return copy

    def ensure(self, name):
        with self._lock:
            if name not in self.installed:
                self.installed.append(name)


def test_critical_section_around_a_hook_install_matches_eager():
    def f(x, inst):
        y = x.sin()
        inst.ensure("hook")
        inst.ensure("hook")
        return y * len(inst.installed)

    check(f, X, Installer())
    inst = Installer()
    bytegraph.compile(f)(X, inst)
    assert inst.installed == ["hook"] and not inst._lock.locked()


def test_torch_compile_breaks_at_the_lock_too():
    def f(x, inst):
        inst.ensure("hook")
        return x + 1

    torch._dynamo.reset()
    with pytest.raises(Exception):
        torch.compile(f, backend="eager", fullgraph=True)(X, Installer())
    with pytest.raises(bytegraph.Unsupported, match="a threading lock"):
        bytegraph.compile(f, fullgraph=True)(X, Installer())


def test_the_block_runs_holding_the_real_lock():
    lock = threading.RLock()

    def f(x):
        with lock:
            held = lock._is_owned()
            y = x * 2
        return y, held, lock._is_owned()

    res = check(f, X)
    assert res.compiled.out[1] is True and res.compiled.out[2] is False


def test_non_blocking_acquire_of_a_lock_held_elsewhere_fails_as_eager():
    lock = threading.Lock()

    def f(x):
        if lock.acquire(blocking=False):
            lock.release()
            return x + 1
        return x - 1

    holder_ready, done = threading.Event(), threading.Event()

    def hold():
        with lock:
            holder_ready.set()
            done.wait(10)

    t = threading.Thread(target=hold)
    t.start()
    try:
        holder_ready.wait(10)
        res = check(f, X)
        assert torch.equal(res.compiled.out, X - 1)
    finally:
        done.set()
        t.join()
    assert torch.equal(bytegraph.compile(f)(X), X + 1)  # free now: acquired and released


def test_compiled_callers_in_two_threads_install_once():
    inst = Installer()
    cf = bytegraph.compile(lambda x, inst: (inst.ensure("hook"), x * 2)[1])
    cf(X, Installer())  # compile first, so both threads run the compiled code
    errors = []

    def run():
        try:
            for _ in range(20):
                cf(X, inst)
        except Exception as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=run) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and inst.installed == ["hook"]


def test_condition_wait_free_notify_matches_eager():
    cond = threading.Condition()
    seen = []

    def f(x):
        with cond:
            seen.append(1)
            cond.notify_all()
        return x + len(seen)

    check(f, X, setup=seen.clear, state=lambda: list(seen))


@pytest.mark.xfail(strict=True, reason="a critical section is a graph break: replaying its writes after the "
                                       "graph would make the decisions inside it outside the lock (see "
                                       "vars/locks.py); torch.compile breaks here too")
def test_critical_section_that_touches_no_tensor_in_one_graph():
    def f(x, inst):
        inst.ensure("hook")
        return x + 1

    check(f, X, Installer(), graphs=1, fullgraph=True)


# ------------------------------------------------------------------ module-level locks as context managers


LOG = printing_logger("tests.locks")


def T(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


LOCK = threading.Lock()
RLOCK = threading.RLock()
EVENTS = []


def _held(lock) -> bool:
    if isinstance(lock, type(RLOCK)):
        return lock._is_owned()
    return lock.locked()


def test_lock_as_context_manager_breaks_cleanly_and_resumes():
    def f(x):
        y = x + 1
        with LOCK:
            EVENTS.append("in the block")
            z = y * 2
        EVENTS.append("after")
        return z - 1

    check(f, T(3), setup=EVENTS.clear, state=lambda: list(EVENTS))
    assert not LOCK.locked()
    out = bytegraph.explain(f, T(3))
    assert any("a threading lock" in b.reason for b in out.break_reasons), out.break_reasons
    assert out.graph_count >= 2 and not out.eager_frames, out


def _locked_helper(x, lock):
    with lock:
        EVENTS.append("in")
        return x * 3


def test_rlock_in_an_inlined_helper():
    def f(x):
        y = _locked_helper(x + 1, RLOCK)
        EVENTS.append("out")
        return y + 1

    check(f, T(3), setup=EVENTS.clear, state=lambda: list(EVENTS))
    out = bytegraph.explain(f, T(3))
    assert any("a threading lock" in b.reason for b in out.break_reasons)
    assert not out.eager_frames, out.eager_frames
    assert not _held(RLOCK)


def test_lock_block_with_a_break_inside_in_a_helper():
    def helper(x):
        with LOCK:
            EVENTS.append("in")
            print("inside the block")  # a second break, inside the block's resume function
            EVENTS.append("still in")
            y = x * 2
        return y

    def f(x):
        LOG.warning("before the lock")
        y = helper(x + 1)
        LOG.warning("after the lock")
        return y - 1

    r = check(f, T(3), setup=EVENTS.clear, state=lambda: list(EVENTS))
    assert r.compiled.stdout == ("WARNING:tests.locks:before the lock\ninside the block\n"
                                 "WARNING:tests.locks:after the lock\n")
    assert not LOCK.locked()


def test_lock_released_when_the_block_raises():
    def f(x):
        try:
            with LOCK:
                raise ValueError("inside")
        except ValueError:
            pass
        return x + 1, LOCK.locked()

    check(f, T(3))
    assert not LOCK.locked()


def test_lock_under_fullgraph_raises_unsupported_naming_it():
    def f(x):
        with LOCK:
            return x + 1

    with pytest.raises(bytegraph.Unsupported, match="a threading lock"):
        bytegraph.compile(f, fullgraph=True)(T(3))
    assert not LOCK.locked()
