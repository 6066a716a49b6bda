"""`bytegraph.explain`: every frame that ran eagerly is in `eager_frames`, whatever the cause,
and every graph break is in `break_reasons` (as torch.compile's explain lists them), so a
frame run eagerly because of a break is in both lists; a break that resumes is a break only."""
import torch

import bytegraph
from tests.helpers import check


def T(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


def _breaks_and_cannot_resume(x):
    y = x + 1
    g = lambda: y  # noqa: E731, F821  (y is deleted below on purpose; g runs before that)
    print("break")
    z = g()
    del y  # a frame that deletes a variable its closures capture is not resumed
    return z


def test_frame_run_eagerly_at_a_break_is_in_both_lists():
    check(_breaks_and_cannot_resume, T(3))
    out = bytegraph.explain(_breaks_and_cannot_resume, T(3))
    assert out.graph_break_count == 1 and out.graph_count == 0
    reason = out.break_reasons[0].reason
    assert "print() writes to stdout" in reason and "runs eagerly" in reason
    assert len(out.eager_frames) == 1, out.eager_frames
    frame = out.eager_frames[0]
    assert frame.startswith("_breaks_and_cannot_resume: ") and reason in frame
    assert "Frames run eagerly:" in str(out) and "_breaks_and_cannot_resume" in str(out)


def test_callee_run_eagerly_at_its_break_is_listed():
    def f(x):
        y = x * 2
        z = _breaks_and_cannot_resume(y)
        return z - 1

    check(f, T(3))
    out = bytegraph.explain(f, T(3))
    assert [frame.split(":")[0] for frame in out.eager_frames] == ["_breaks_and_cannot_resume"], out.eager_frames
    assert any(r.reason in out.eager_frames[0] for r in out.break_reasons)
    assert out.graph_count >= 1  # the caller's graphs around the call


def test_resumed_break_is_not_an_eager_frame():
    def f(x):
        y = x + 1
        print("break")
        return y * 2

    out = bytegraph.explain(f, T(3))
    assert out.graph_break_count == 1 and out.graph_count == 2
    assert out.eager_frames == []


def test_frame_whose_exception_escapes_is_an_eager_frame_without_a_break():
    def f(x):
        y = x + 1
        raise ValueError(f"bad {y.shape[0]}")

    check(f, T(3))
    frames = _eager_frames_of(f, T(3))
    assert len(frames) == 1 and "ValueError" in frames[0][1] and "runs eagerly" in frames[0][1]
    assert frames[0][2] is None  # not a graph break


def test_explain_of_a_callee_whose_exception_escapes_lists_it():
    def raises(x):
        y = x + 1
        print("break")  # the callee is compiled on its own at this break...
        raise ValueError(f"bad {y.shape[0]}")  # ...and its rest raises: that rest runs eagerly

    def f(x):
        try:
            return raises(x)
        except ValueError as e:
            return x * len(str(e))

    check(f, T(3))
    out = bytegraph.explain(f, T(3))
    assert any("ValueError" in frame for frame in out.eager_frames), (out.eager_frames, out.break_reasons)


def _eager_frames_of(fn, *args):
    """(qualname, reason, graph break) of each eager entry a fresh compile of `fn` made."""
    from bytegraph.runtime.compiled_function import LISTENERS

    seen = []

    def listener(compiled, entry, brk):
        if entry.kind == "eager":
            seen.append((compiled.code.co_qualname, entry.reason, brk))

    LISTENERS.append(listener)
    try:
        bytegraph.compile(fn)(*args)
    except Exception:  # the user's error, raised as eagerly
        pass
    finally:
        LISTENERS.remove(listener)
    return seen
