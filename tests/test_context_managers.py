"""Context managers traced like any other Python: user classes with `__enter__`/`__exit__`
(the `as` target, exits on every path, `__exit__` seeing and swallowing the exception,
nested and multi-item `with`, managers of inlined helpers), contextlib's `contextmanager`,
`suppress`, `nullcontext`, `closing` traced from contextlib's own code, and graph breaks
inside a manager's block, which resume with the manager still active (Note [Breaks inside
blocks] in translate/breaks.py): the resume function traces the real `__exit__`."""
import contextlib

import pytest
import torch

import bytegraph
from tests.helpers import check

LOG = []


def _reset():
    LOG.clear()


def _state():
    return [repr(e) for e in LOG]


def run(fn, *args, **kwargs):
    """`check` with the module log reset before every run and compared after it."""
    return check(fn, *args, setup=_reset, state=_state, **kwargs)


class Tag:
    """Logs its enter and exit (with the exception type and message the exit sees)."""

    def __init__(self, name, swallow=False):
        self.name = name
        self.swallow = swallow
        self.entered = 0

    def __enter__(self):
        self.entered += 1
        LOG.append(("enter", self.name))
        return self

    def __exit__(self, typ, value, tb):
        LOG.append(("exit", self.name, None if typ is None else typ.__name__, str(value)))
        return self.swallow


class Scale:
    """`as` target is a tensor computed on entry; the exit records the block's result."""

    def __init__(self, x, k):
        self.x = x
        self.k = k
        self.out = None

    def __enter__(self):
        return self.x * self.k

    def __exit__(self, *exc):
        self.out = self.x + self.k
        return False


class Swallow:
    def __init__(self, *types):
        self.types = types

    def __enter__(self):
        return None

    def __exit__(self, typ, value, tb):
        LOG.append(("swallow?", typ, value.args if value is not None else None))
        return typ is not None and issubclass(typ, self.types)


class ExitRaises:
    def __enter__(self):
        return self

    def __exit__(self, typ, value, tb):
        raise KeyError("from exit")


class Counter:
    """A manager passed in from outside: its state after the call is compared."""

    def __init__(self):
        self.depth = 0
        self.total = 0

    def __enter__(self):
        self.depth += 1
        self.total += 1
        return self.depth

    def __exit__(self, *exc):
        self.depth -= 1
        return False


# ---- user classes: fullgraph, one graph ---------------------------------------------------

def test_as_target_is_the_manager():
    def f(x):
        with Tag("a") as t:
            y = x + 1
        return y * 2, t.name, t.entered

    run(f, torch.randn(3), graphs=1, fullgraph=True)


def test_as_target_is_enter_result_tensor():
    def f(x):
        s = Scale(x, 3)
        with s as y:
            z = y.sin()
        return z, s.out

    run(f, torch.randn(3, requires_grad=True), graphs=1, fullgraph=True)


def test_enter_result_unpacked():
    class Pair:
        def __enter__(self):
            return 1, 2

        def __exit__(self, *a):
            LOG.append("pair out")

    def f(x):
        with Pair() as (a, b):
            x = x * a + b
        return x

    run(f, torch.randn(3), graphs=1, fullgraph=True)


def test_exit_sees_no_exception_on_normal_path():
    def f(x):
        with Tag("n"):
            x = x + 1
        LOG.append("after")
        return x

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_exit_swallows_exception_raised_in_body():
    def f(x):
        with Tag("s", swallow=True):
            x = x + 1
            raise ValueError("boom", 3)
        return x * 2

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_exit_sees_exception_type_and_value():
    def f(x):
        with Swallow(KeyError):
            d = {}
            x = x * 2
            x = x + d["missing"]
        return x

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_exit_does_not_swallow_other_exception():
    def f(x):
        try:
            with Swallow(KeyError):
                raise ValueError("not swallowed")
        except ValueError as e:
            x = x + len(e.args[0])
        return x

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_exception_escaping_with_matches_eager():
    def f(x):
        with Tag("e"):
            x = x + 1
            raise RuntimeError("escapes")
        return x

    run(f, torch.randn(2))


def test_exit_raising_replaces_body_exception():
    def f(x):
        try:
            with ExitRaises():
                raise ValueError("inner")
        except KeyError as e:
            return x + 1, str(e), type(e.__context__).__name__
        return x

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_return_inside_block_runs_exit():
    def f(x):
        with Tag("r"):
            y = x + 1
            return y * 3
        return x

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_break_and_continue_inside_block_run_exit():
    def f(x):
        for i in range(4):
            with Tag(f"loop{i}"):
                if i == 1:
                    continue
                if i == 3:
                    break
                x = x + i
        return x

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_with_inside_loop_body_exception_swallowed_each_time():
    def f(x):
        for i in range(3):
            with Swallow(IndexError):
                x = x + [1, 2][i]
        return x

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_nested_with_exit_order():
    def f(x):
        with Tag("outer"):
            with Tag("inner"):
                x = x.cos()
            x = x + 1
        return x

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_multi_item_with():
    def f(x):
        with Tag("a") as a, Tag("b") as b:
            x = x * 2
        return x, a.name + b.name

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_multi_item_with_inner_swallows():
    def f(x):
        with Tag("a") as a, Tag("b", swallow=True):
            x = x * 2
            raise ValueError("inner only")
        return x + 1

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_manager_from_outside_state_updated():
    def f(x, c):
        with c as depth:
            with c as depth2:
                x = x + depth + depth2
        return x

    run(f, torch.randn(2), Counter(), graphs=1, fullgraph=True)


def test_manager_returned_after_block():
    def f(x):
        with Tag("ret") as t:
            x = x + 1
        return x, t

    out = run(f, torch.randn(2), graphs=1, fullgraph=True)
    assert out is not None


def test_manager_defined_in_inlined_helper():
    def helper(x):
        with Tag("helper") as t:
            return x * len(t.name)

    def f(x):
        return helper(x) + helper(x + 1)

    run(f, torch.randn(2), graphs=1, fullgraph=True)


class Stacked:
    """`__enter__`/`__exit__` that call other methods and a manager they hold."""

    def __init__(self, inner):
        self.inner = inner

    def _note(self, what):
        LOG.append(("stacked", what))

    def __enter__(self):
        self._note("in")
        return self.inner.__enter__()

    def __exit__(self, *exc):
        swallow = self.inner.__exit__(*exc)
        self._note("out")
        return swallow


def test_manager_delegating_to_inner_manager():
    def f(x):
        with Stacked(Tag("inner", swallow=True)) as t:
            x = x + len(t.name)
            raise IndexError("delegated")
        return x

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_exception_from_inlined_helper_swallowed_by_callers_with():
    def helper(x):
        raise LookupError("deep")

    def f(x):
        with Swallow(LookupError):
            x = helper(x)
        return x + 1

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_grad_mode_inside_user_manager():
    class NoGrad:
        def __enter__(self):
            self.prev = torch.is_grad_enabled()
            torch.set_grad_enabled(False)

        def __exit__(self, *a):
            torch.set_grad_enabled(self.prev)

    def f(x):
        with NoGrad():
            y = x * 2
        return y, x * 3

    run(f, torch.randn(2, requires_grad=True), graphs=1, fullgraph=True)


# ---- contextlib ---------------------------------------------------------------------------

@contextlib.contextmanager
def logged(name, value=None):
    LOG.append(("in", name))
    try:
        yield value
    finally:
        LOG.append(("out", name))


@contextlib.contextmanager
def swallowing(*types):
    try:
        yield
    except types as e:
        LOG.append(("swallowed", type(e).__name__, str(e)))


def test_contextmanager_yield_value():
    def f(x):
        with logged("g", 4) as v:
            x = x * v
        return x

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_contextmanager_yields_tensor():
    @contextlib.contextmanager
    def doubled(x):
        yield x * 2
        LOG.append("done")

    def f(x):
        with doubled(x) as y:
            z = y + 1
        return z

    run(f, torch.randn(2, requires_grad=True), graphs=1, fullgraph=True)


def test_contextmanager_return_inside_block():
    def f(x):
        with logged("ret"):
            return x + 1

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_contextmanager_nested():
    def f(x):
        with logged("a"), logged("b"):
            x = x - 1
        return x

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_contextmanager_finally_runs_on_exception():
    def f(x):
        try:
            with logged("exc"):
                raise ValueError("body")
        except ValueError as e:
            return x + len(str(e))

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_contextmanager_swallows_in_generator():
    def f(x):
        with swallowing(KeyError):
            x = x + 1
            raise KeyError("k")
        return x * 2

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_contextmanager_in_inlined_helper():
    def helper(x):
        with logged("h", 2) as k:
            return x ** k

    def f(x):
        return helper(x) + 1

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_contextmanager_as_decorator():
    @logged("deco")
    def helper(x):
        return x + 1

    def f(x):
        return helper(x) * 2

    run(f, torch.randn(2))


def test_suppress():
    def f(x):
        with contextlib.suppress(KeyError, IndexError):
            x = x + 1
            x = x + [][0]
        return x

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_suppress_lets_other_exceptions_through():
    def f(x):
        try:
            with contextlib.suppress(KeyError):
                raise ValueError("through")
        except ValueError as e:
            x = x + len(e.args)
        return x

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_suppress_no_exception():
    def f(x):
        with contextlib.suppress(KeyError):
            x = x * 3
        return x

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_nullcontext():
    def f(x):
        with contextlib.nullcontext() as n:
            x = x + 1
        with contextlib.nullcontext(x) as y:
            z = y * 2
        return z, n

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_nullcontext_or_manager_chosen_by_flag():
    def f(x, flag):
        cm = Tag("maybe") if flag else contextlib.nullcontext()
        with cm:
            x = x + 1
        return x

    run(f, torch.randn(2), True, graphs=1, fullgraph=True)
    run(f, torch.randn(2), False, graphs=1, fullgraph=True)


def test_closing():
    class Resource:
        def __init__(self):
            self.closed = False

        def close(self):
            self.closed = True
            LOG.append("closed")

    def f(x):
        with contextlib.closing(Resource()) as r:
            x = x + 1
        return x, r.closed

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_abstract_context_manager_subclass():
    class Sub(contextlib.AbstractContextManager):
        def __exit__(self, *a):
            LOG.append("sub exit")

    def f(x):
        with Sub() as s:
            x = x + 1
        return x, type(s).__name__

    run(f, torch.randn(2), graphs=1, fullgraph=True)


# ---- graph breaks inside a manager's block ------------------------------------------------

def _graphs_and_breaks(fn, *args):
    out = bytegraph.explain(fn)(*args)
    return out.graph_count, [r.reason for r in out.break_reasons]


def test_break_inside_user_with_resumes_in_block():
    def f(x):
        with Tag("brk") as t:
            y = x + 1
            print("hi")
            y = y + 1
        return y, t.entered

    run(f, torch.randn(2), graphs=2)
    graphs, reasons = _graphs_and_breaks(f, torch.randn(2))
    assert graphs == 2 and len(reasons) == 1 and "print" in reasons[0] and "eagerly" not in reasons[0]


def test_break_inside_with_exit_runs_once_after_rest():
    def f(x):
        with Tag("once"):
            y = x + 1
            bytegraph.graph_break()
            LOG.append("after break")
            y = y * 2
        LOG.append("after block")
        return y

    run(f, torch.randn(2), graphs=2)


def test_break_inside_with_manager_from_outside():
    def f(x, c):
        with c as depth:
            x = x + depth
            print("mid", c.depth)
            x = x * 2
        return x, c.depth

    run(f, torch.randn(2), Counter(), graphs=2)


def test_break_inside_with_manager_mutated_after_break():
    def f(x):
        with Tag("m") as t:
            x = x + 1
            print("hi")
            t.name = "renamed"
            x = x + 1
        return x, t.name

    run(f, torch.randn(2), graphs=2)


def test_break_inside_nested_user_withs():
    def f(x):
        with Tag("o"):
            with Tag("i"):
                x = x + 1
                print("deep")
                x = x * 3
            x = x - 1
        return x

    run(f, torch.randn(2), graphs=2)


def test_break_inside_with_then_exception_swallowed():
    def f(x):
        with Tag("sw", swallow=True):
            x = x + 1
            print("before raise")
            raise ValueError("after break")
        return x * 2

    run(f, torch.randn(2), graphs=2)


def test_break_inside_with_then_return():
    def f(x):
        with Tag("ret"):
            x = x + 1
            print("brk")
            return x * 5

    run(f, torch.randn(2), graphs=2)


def test_break_inside_with_in_loop():
    def f(x):
        for i in range(3):
            with Tag(f"it{i}"):
                x = x + i
                print("loop", i)
                x = x * 2
        return x

    run(f, torch.randn(2))


def test_break_inside_multi_item_with():
    def f(x):
        with Tag("a"), Tag("b"):
            x = x + 1
            print("two")
            x = x + 2
        return x

    run(f, torch.randn(2), graphs=2)


def test_break_inside_suppress_resumes():
    def f(x):
        with contextlib.suppress(KeyError):
            x = x + 1
            print("in suppress")
            x = x + {}["k"]
        return x * 2

    run(f, torch.randn(2), graphs=2)


def test_break_inside_nullcontext_resumes():
    def f(x):
        with contextlib.nullcontext(3) as k:
            x = x + k
            print("in nullcontext")
            x = x * k
        return x

    run(f, torch.randn(2), graphs=2)


def test_break_inside_user_with_under_no_grad():
    def f(x):
        with torch.no_grad():
            with Tag("ng"):
                y = x * 2
                print("ng")
                y = y + 1
        return y, x * 3

    run(f, torch.randn(2, requires_grad=True), graphs=2)


def test_break_inside_with_in_inlined_helper():
    def helper(x):
        with Tag("h"):
            x = x + 1
            print("helper")
            return x * 2

    def f(x):
        return helper(x) + 1

    run(f, torch.randn(2))
    graphs, reasons = _graphs_and_breaks(f, torch.randn(2))
    assert all("eagerly" not in r for r in reasons), reasons


def test_break_inside_contextmanager_block_named_and_correct():
    def f(x):
        with logged("gen"):
            x = x + 1
            print("in gen")
            x = x + 1
        return x

    run(f, torch.randn(2))
    _, reasons = _graphs_and_breaks(f, torch.randn(2))
    assert "print" in reasons[0] and "generator" in reasons[0], reasons


def test_fullgraph_break_inside_with_raises_unsupported():
    def f(x):
        with Tag("fg"):
            print("no")
            return x

    cf = bytegraph.compile(f, fullgraph=True)
    with pytest.raises(bytegraph.Unsupported, match="print"):
        cf(torch.randn(2))


def _raises_eagerly(text):
    import json

    return json.loads(text)  # json is not traced: the call is a graph break that raises


def test_breaking_call_raises_inside_swallowing_manager():
    def f(x):
        with Tag("swb", swallow=True):
            x = x + 1
            x = x + _raises_eagerly("{")
        return x * 2

    run(f, torch.randn(2))


def test_breaking_call_raises_through_manager():
    def f(x):
        with Tag("thr"):
            x = x + 1
            x = x + _raises_eagerly("[")
        return x

    run(f, torch.randn(2))


class GradOff:
    def __enter__(self):
        self.prev = torch.is_grad_enabled()
        torch.set_grad_enabled(False)
        return self

    def __exit__(self, *a):
        torch.set_grad_enabled(self.prev)
        return False


def test_break_inside_user_grad_manager():
    def f(x):
        with GradOff():
            y = x * 2
            print("grad", torch.is_grad_enabled())
            y = y * x
        return y, x * 3, torch.is_grad_enabled()

    run(f, torch.randn(2, requires_grad=True), graphs=2)


def test_break_inside_with_inside_try_finally():
    def f(x):
        try:
            with Tag("tf"):
                x = x + 1
                print("tf")
                x = x * 2
        finally:
            LOG.append("finally")
        return x

    run(f, torch.randn(2), graphs=2)


class Res:
    def close(self):
        LOG.append("closed")


def test_break_inside_closing():
    def f(x):
        with contextlib.closing(Res()):
            x = x + 1
            print("closing")
            x = x - 3
        return x

    run(f, torch.randn(2), graphs=2)


def test_suppress_in_inlined_helper():
    def get(d, k, x):
        with contextlib.suppress(KeyError):
            return x + d[k]
        return x - 1

    def f(x):
        return get({"a": 1}, "a", x) + get({}, "b", x)

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_exception_from_exit_escapes_with_type_and_message():
    def f(x):
        with ExitRaises():
            x = x + 1
        return x

    run(f, torch.randn(2))


OUTSIDE = []


def test_contextmanager_made_outside():
    def setup():
        _reset()
        OUTSIDE[:] = [logged("outside", 2)]

    def f(x):
        with OUTSIDE[0] as v:
            x = x + v
        return x

    check(f, torch.randn(2), setup=setup, state=_state)


def test_exit_stack_matches_eager():
    def f(x):
        with contextlib.ExitStack() as stack:
            t = stack.enter_context(Tag("es"))
            stack.callback(LOG.append, "callback")
            x = x + len(t.name)
        return x

    run(f, torch.randn(2))


class LoudEnter:
    def __enter__(self):
        print("entering")
        LOG.append("loud enter")
        return 7

    def __exit__(self, *a):
        LOG.append(("loud enter's exit", a[0]))


class LoudExit:
    def __enter__(self):
        return 7

    def __exit__(self, typ, value, tb):
        print("exiting", typ)
        LOG.append(("loud exit", typ, value))
        return typ is KeyError


def test_break_inside_enter_resumes_after_with_entry():
    def f(x):
        x = x * 2
        with LoudEnter() as k:
            x = x + k
        return x + 1

    run(f, torch.randn(2), graphs=2)
    _, reasons = _graphs_and_breaks(f, torch.randn(2))
    assert len(reasons) == 1 and "print" in reasons[0] and "eagerly" not in reasons[0], reasons


def test_break_inside_exit_on_normal_path():
    def f(x):
        x = x * 2
        with LoudExit() as k:
            x = x + k
        return x + 1

    run(f, torch.randn(2), graphs=2)


def test_break_inside_exit_on_exception_path():
    def f(x):
        x = x * 2
        with LoudExit():
            x = x + 1
            raise KeyError("swallowed by a loud exit")
        return x + 1

    run(f, torch.randn(2))


def test_break_inside_exit_exception_not_swallowed():
    def f(x):
        with LoudExit():
            x = x + 1
            raise ValueError("through a loud exit")
        return x

    run(f, torch.randn(2))


def test_contextmanager_made_outside_breaks_at_enter_and_resumes():
    def setup():
        _reset()
        OUTSIDE[:] = [logged("outside", 2)]

    def f(x):
        x = x * 3
        with OUTSIDE[0] as v:
            x = x + v
        return x

    check(f, torch.randn(2), setup=setup, state=_state)
    setup()
    out = bytegraph.explain(f)(torch.randn(2))
    assert out.graph_count >= 1 and not out.eager_frames, out
    assert any("generator" in r.reason for r in out.break_reasons), out


@pytest.fixture
def exit_stack_on_lists(monkeypatch):
    """ExitStack keeps its exits in a `collections.deque`, which has no tracker on this
    branch (it comes with the collections work): with contextlib's `deque` replaced by
    `list` (the same append/pop/truth), the rest of ExitStack is traced in one graph."""
    monkeypatch.setattr(contextlib, "deque", list)


def test_exit_stack_enter_context_and_callback(exit_stack_on_lists):
    def f(x):
        with contextlib.ExitStack() as stack:
            t = stack.enter_context(Tag("es"))
            stack.callback(LOG.append, "callback")
            x = x + len(t.name)
        return x

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_exit_stack_unwinds_in_reverse_and_swallows(exit_stack_on_lists):
    def f(x):
        with contextlib.ExitStack() as stack:
            stack.enter_context(Tag("outer", swallow=True))
            stack.enter_context(Tag("inner"))
            x = x + 1
            raise ValueError("through the stack")
        return x * 2

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_exit_stack_in_inlined_helper(exit_stack_on_lists):
    def helper(x, names):
        with contextlib.ExitStack() as stack:
            for n in names:
                stack.enter_context(Tag(n))
            return x * len(names)

    def f(x):
        return helper(x, ["a", "b", "c"]) + 1

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_sys_exc_info_inside_handler():
    import sys

    def f(x):
        before = sys.exc_info()
        try:
            raise KeyError("k")
        except KeyError:
            t, v, tb = sys.exc_info()
            return x + len(str(v)), t, before, tb is None

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_method_type_binds_function():
    import types

    def f(x):
        t = Tag("bound")
        enter = types.MethodType(Tag.__enter__, t)
        same = enter()
        return x + t.entered, same is t

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_exit_found_on_the_class_not_the_instance():
    def f(x):
        t = Tag("cls")
        t.__exit__ = lambda *a: LOG.append("instance exit") or True
        try:
            with t:
                raise ValueError("the class's exit does not swallow")
        except ValueError:
            x = x + 1
        return x * 2

    run(f, torch.randn(2), graphs=1, fullgraph=True)


class EnterOnly:
    def __enter__(self):
        return self


def test_object_without_exit_raises_type_error():
    def f(x):
        x = x + 1
        with EnterOnly():
            x = x + 2
        return x

    run(f, torch.randn(2))


def test_object_without_protocol_raises_type_error_caught():
    def f(x):
        try:
            with Res():
                x = x + 2
        except TypeError as e:
            return x + len(str(e))
        return x

    run(f, torch.randn(2), graphs=1, fullgraph=True)


def test_method_type_refuses_none_instance():
    import types

    def f(x):
        try:
            types.MethodType(Tag.__enter__, None)
        except TypeError as e:
            return x + len(str(e))
        return x

    run(f, torch.randn(2), graphs=1, fullgraph=True)
