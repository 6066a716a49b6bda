"""A frame with closure cells (locals captured by inner functions, or a closure's own free
variables) that breaks inside `try`/`with` resumes like any other frame (Note [Frame cells
at a break] in translate/breaks.py): closures made before the break, the code after it and
the user's handlers see the same cells as eager. Also: the resume functions' registry keys
code objects by identity, so one rebuilt after `reset()` keeps its entry."""
import contextlib
import gc
import time
import weakref

import torch

import bytegraph
from bytegraph._bytecode.instructions import instructions_of
from bytegraph.translate.resume import forget_resume_functions, is_resume_code, make_resume_function
from helpers import check


def _explain(fn, *args):
    """`explain` output of a capture that ran no frame eagerly: no eager entry, and no break
    whose frame runs the rest eagerly (`explain` lists those as break reasons only)."""
    out = bytegraph.explain(fn, *args)
    assert not out.eager_frames, out.eager_frames
    eager = [b.reason for b in out.break_reasons if "runs eagerly" in b.reason]
    assert not eager, eager
    return out


def test_cells_break_inside_try_resumes():
    def fn(x):
        scale = 2.0

        def inner(y):
            return y * scale
        try:
            y = inner(x)
            bytegraph.graph_break()
            y = inner(y) + 1
        except ValueError:
            y = x
        return y

    check(fn, torch.randn(3), graphs=2)
    assert _explain(fn, torch.randn(3)).graph_break_count == 1


def test_cells_break_inside_no_grad_with_cell_written_after_break():
    def fn(x):
        scale = 2.0

        def inner(y):
            return y * scale
        with torch.no_grad():
            y = inner(x)
            bytegraph.graph_break()
            scale = 3.0
            y = inner(y) + 1
        return y, inner(x)

    check(fn, torch.randn(3, requires_grad=True), graphs=2)


def test_cells_break_inside_try_then_handler_and_finally_run():
    def fn(x):
        acc = []

        def add(v):
            acc.append(v)
        try:
            add(x + 1)
            bytegraph.graph_break()
            add(x * 2)
            raise ValueError("boom")
        except ValueError as e:
            add(x - 1)
            message = str(e)
        finally:
            add(x * 3)
        return acc, message

    check(fn, torch.randn(2), graphs=2)


def _decorate(func):
    def wrapper(x):  # a closure: `func` is a free variable of the frame that breaks
        try:
            y = func(x)
            bytegraph.graph_break()
            return func(y)
        finally:
            pass
    return wrapper


@_decorate
def _double(x):
    return x * 2


def test_closure_free_variable_break_inside_try_in_inlined_call():
    def fn(x):
        return _double(x) + 1

    check(fn, torch.randn(3), graphs=3)
    assert not _explain(fn, torch.randn(3)).eager_frames


def test_cells_break_inside_try_with_empty_cell_runs_eagerly_with_reason():
    """A cell the code after the break may read before assigning it is empty at the break:
    the rest of the frame runs eagerly (a resumed read would raise ValueError, not
    NameError), correct, and the break names the variable."""
    def fn(x, flag):
        def get():
            return late
        try:
            bytegraph.graph_break()
            if flag:
                late = x + 1
            return late, get
        finally:
            pass

    out = bytegraph.explain(fn, torch.ones(2), True)
    torch.testing.assert_close(out.result[0], fn(torch.ones(2), True)[0])
    assert any("closure variable late may be read after the break before it is assigned" in b.reason
               for b in out.break_reasons), [b.reason for b in out.break_reasons]


def _resumable(x):
    y = x + 1
    bytegraph.graph_break()
    return y


def test_resume_code_registry_survives_rebuild_after_reset():
    code = _resumable.__code__
    at = next(i for i, inst in enumerate(instructions_of(code)) if inst.opname == "LOAD_FAST" and inst.argval == "y")
    first = make_resume_function(_resumable, code, at, (), ("y",))
    forget_resume_functions()
    second = make_resume_function(_resumable, code, at, (), ("y",))
    assert first is not second and first.__code__ == second.__code__
    del first
    gc.collect()
    assert is_resume_code(second.__code__)


# ---- Resumed inside a block: the frame's own cells are the cells after the break ------------
# Note [Frame cells at a break] (translate/breaks.py): the residual code writes the traced
# contents into the root frame's real cells and passes those, so closures made before the
# break, the code after it and the user's handlers (run in a copy of the body) share them.

class _Recorder:
    """A user context manager that records its enter/exit (and the exception type it saw)."""

    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, kind, value, tb):
        self.log.append(("exit", kind))
        return False


def _graphs_and_no_eager_frame(fn, *args, graphs):
    check(fn, *args, graphs=graphs)
    _explain(fn, *args)


def test_cell_written_before_break_inside_try_finally_read_by_closure_after():
    def fn(x):
        k = 1.0

        def scaled(y):
            return y * k
        try:
            k = 2.0
            y = scaled(x).sin()
            bytegraph.graph_break()
            k = k + 1.0
            y = scaled(y)
        finally:
            y = y + k
        return y, k

    _graphs_and_no_eager_frame(fn, torch.randn(3, requires_grad=True), graphs=2)


def test_cell_holding_graph_tensor_crosses_break_inside_try_except():
    def fn(x):
        t = x * 3

        def read():
            return t + 1
        try:
            bytegraph.graph_break()
            out = read() * t
        except RuntimeError:
            out = None
        return out, t

    _graphs_and_no_eager_frame(fn, torch.randn(4, requires_grad=True), graphs=2)


def test_handler_after_break_reads_cells_written_before_it():
    def fn(x):
        stage = "start"

        def where():
            return stage
        try:
            stage = "traced"
            y = x + 1
            bytegraph.graph_break()
            y = y * 2
            raise KeyError(where())
        except KeyError as e:
            return y, stage, where(), str(e)

    _graphs_and_no_eager_frame(fn, torch.randn(2), graphs=2)


def test_breaking_instruction_raises_into_handler_that_reads_the_cells():
    """The breaking call raises: the user's handler runs in a copy of the body on the
    frame's real cells, which hold what the trace wrote."""
    def fn(x, delay):
        note = "before"

        def get():
            return note
        try:
            note = "written in the trace"
            y = x + 1
            time.sleep(delay)  # a BREAK trace rule; raises ValueError for a negative delay
            note = "after"
        except ValueError:
            return y * 2, note, get()
        return y, note, get()

    _graphs_and_no_eager_frame(fn, torch.randn(2), -1.0, graphs=1)


def test_cell_written_before_break_inside_user_with_block():
    def fn(x, log):
        level = 0

        def tag(v):
            return v + level
        with _Recorder(log):
            level = 5
            y = tag(x)
            bytegraph.graph_break()
            level += 1
            y = tag(y)
        log.append(level)
        return y, tag(x)

    _graphs_and_no_eager_frame(fn, torch.randn(3), [], graphs=2)


def test_cell_written_after_break_inside_enable_grad_under_no_grad():
    def fn(x):
        w = 2.0

        def mul(v):
            return v * w
        with torch.enable_grad():
            y = mul(x)
            bytegraph.graph_break()
            w = 4.0
            y = mul(y)
        return y, mul(x), w

    with torch.no_grad():
        _graphs_and_no_eager_frame(fn, torch.randn(3, requires_grad=True), graphs=2)


def test_cell_written_by_a_closure_called_before_the_break_inside_try():
    def fn(x):
        count = 0

        def bump(v):
            nonlocal count
            count += 1
            return v + count
        try:
            y = bump(x)
            y = bump(y)
            bytegraph.graph_break()
            y = bump(y)
        finally:
            y = y * count
        return y, count

    _graphs_and_no_eager_frame(fn, torch.randn(2), graphs=2)


def test_nested_closures_read_the_cell_after_a_break_inside_try():
    def fn(x):
        base = x + 1

        def outer():
            def inner():
                return base * 2
            return inner
        get = outer()
        try:
            bytegraph.graph_break()
            base = base - 3
            y = get() + outer()()
        finally:
            pass
        return y

    _graphs_and_no_eager_frame(fn, torch.randn(3, requires_grad=True), graphs=2)


def test_closure_made_before_break_and_one_made_after_share_the_cell():
    def fn(x):
        v = 1

        def first():
            return v
        try:
            bytegraph.graph_break()

            def second():
                nonlocal v
                v = v + 10
                return v
            second()
        finally:
            same = first.__closure__[0] is second.__closure__[0]
        return x + first(), v, same

    check(fn, torch.randn(2), graphs=1)
    assert not _explain(fn, torch.randn(2)).eager_frames
    out = bytegraph.compile(fn)(torch.zeros(2))
    assert out[1] == 11 and out[2] is True


def test_argument_captured_as_cell_rebound_before_break_inside_try():
    def fn(x, n):
        def times():
            return x * n
        try:
            x = x + 1
            n = n + 1
            bytegraph.graph_break()
            y = times()
            x = x * 0
        finally:
            y = y + times()
        return y

    _graphs_and_no_eager_frame(fn, torch.randn(3, requires_grad=True), 2, graphs=2)


def test_recursive_closure_crosses_break_inside_try():
    def fn(x):
        def fact(n):
            return 1 if n <= 1 else n * fact(n - 1)
        try:
            y = x * fact(3)
            bytegraph.graph_break()
            y = y + fact(4)
        finally:
            pass
        return y, fact(2)

    _graphs_and_no_eager_frame(fn, torch.randn(2), graphs=2)


def test_break_in_loop_inside_try_with_cell_accumulating():
    def fn(x):
        total = 0.0

        def add(v):
            nonlocal total
            total = total + v
        try:
            for i in range(3):
                add(float(i))
                x = x * 2
                bytegraph.graph_break()
                x = x + total
        finally:
            x = x - total
        return x, total

    _graphs_and_no_eager_frame(fn, torch.randn(2), graphs=4)


def test_break_inside_except_body_writes_cells_for_the_body_copy():
    """A break in an `except` body takes the body-copy path: the copy runs on the frame's
    own cells, which must hold what the trace wrote before the break."""
    def fn(x):
        factor = 1.0

        def scale(v):
            return v * factor
        try:
            raise ValueError("x")
        except ValueError:
            factor = 3.0
            y = scale(x)
            bytegraph.graph_break()
            y = y + factor
            factor = 5.0
            y = scale(y)
        return y, factor, scale(x)

    _graphs_and_no_eager_frame(fn, torch.randn(3), graphs=1)


def test_break_in_block_of_contextmanager_with_cell_written_before_it():
    """A break inside the block of a `contextlib.contextmanager`: the block resumes with the
    cell written before the break (the manager's exit, iterating its real generator, breaks
    again in the resume function)."""
    @contextlib.contextmanager
    def managed(log):
        log.append("in")
        yield
        log.append("out")

    def fn(x, log):
        k = 2

        def mul(v):
            return v * k
        y = mul(x)
        with managed(log):
            k = 7
            y = mul(y)
            bytegraph.graph_break()
            log.append(k)
            y = mul(y)
        return y, k

    check(fn, torch.randn(2), [])


def test_decorator_wrapper_with_free_variable_and_counter_breaks_inside_try():
    """The transformers pattern: a decorator's wrapper (free variables: the function and a
    counter cell of the decorator) breaks inside try/finally."""
    def deco(func):
        calls = 0

        def wrapper(x):
            nonlocal calls
            calls += 1
            try:
                y = func(x)
                bytegraph.graph_break()
                return func(y) + calls
            finally:
                pass
        return wrapper

    @deco
    def inc(v):
        return v + 1

    def fn(x):
        return inc(x) * 2

    counter = inc.__closure__[inc.__code__.co_freevars.index("calls")]

    def reset():
        counter.cell_contents = 0
    check(fn, torch.randn(3), graphs=3, setup=reset, state=lambda: counter.cell_contents)
    assert not _explain(fn, torch.randn(3)).eager_frames


@torch.autocast("cpu", dtype=torch.bfloat16)
def _autocast_decorated(a, b):
    y = a @ b
    bytegraph.graph_break()
    return y @ b, torch.is_autocast_enabled("cpu")


def test_torch_autocast_decorator_wrapper_resumes_inside_its_block():
    """torch's `@autocast` wrapper (free variables: the manager and the function) breaks
    inside its `with` block: the block resumes with autocast still active."""
    def fn(a, b):
        y, on = _autocast_decorated(a, b)
        return y.float() + 1, on, (a @ b).dtype

    check(fn, torch.randn(4, 4), torch.randn(4, 4), rtol=1e-2, atol=1e-2)
    assert not _explain(fn, torch.randn(4, 4), torch.randn(4, 4)).eager_frames


class _Key:
    pass


_KEY = _Key()


def _make_weak_table_reader():
    table = {weakref.ref(_KEY): 3}  # keys the tracer does not follow

    def read(x):
        try:
            y = x + 1
            bytegraph.graph_break()
            return y * len(table)
        finally:
            pass
    return read


_read_weak_table = _make_weak_table_reader()


def test_cell_the_trace_never_read_holding_an_untraceable_value():
    """Whether a cell the code after the break reads is empty is asked of its contents,
    wrapped only then: a value the tracer does not follow keeps that frame from resuming
    (with the reason), and the caller's capture goes on around the call."""
    def fn(x):
        return _read_weak_table(x * 2) - 1

    check(fn, torch.randn(3))
    reasons = [b.reason for b in bytegraph.explain(fn, torch.randn(3)).break_reasons]
    assert any("the closure variable table holds a value the tracer cannot follow (a dict with keys other "
               "than constants and tensors)" in r for r in reasons), reasons
    assert bytegraph.explain(fn, torch.randn(3)).graphs, "the caller is still captured"
