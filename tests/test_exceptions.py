"""Exceptions traced like any other control flow (Note [Traced exceptions]): raise and catch
at several inlining depths, before and after graph breaks, try/except/else/finally, chaining,
exceptions raised by builtins and lookups; and a frame whose exception escapes is cached as
an eager entry, so later calls do not trace it again."""
import logging
import sys
import traceback

import pytest
import torch

import bytegraph
from tests.helpers import CompileCounter, check


class UserError(Exception):
    pass


class SubUserError(UserError):
    pass


# ---- the matrix: depth x where it is caught x where the graph break is -------------------

def _leaf(x, catch_here, brk):
    if brk == "after":
        bytegraph.graph_break()
    x = x * 2
    if catch_here:
        try:
            raise ValueError("boom", 7)
        except ValueError as e:
            x = x + e.args[1]
    else:
        raise ValueError("boom", 7)
    return x + 1


def _level(x, depth, catch_here, brk):
    """Raises (or raises and catches) at inlining depth `depth` below this frame."""
    if depth == 1:
        return _leaf(x + 1, catch_here, brk) - 1
    return _level(x + 1, depth - 1, catch_here, brk) - 1


def _root(x, depth, mode, brk):
    catch_here = mode == "same"
    if mode == "caller" and depth > 0:  # the root frame catches what a callee raised
        try:
            y = _level(x, depth, False, brk)
        except ValueError as e:
            y = x - len(e.args)
    elif depth > 0:
        y = _level(x, depth, catch_here, brk)
    else:  # the root frame raises; mode "caller" is the caller of the compiled function
        try:
            if brk == "after":
                bytegraph.graph_break()
            y = x * 2
            if catch_here:
                try:
                    raise ValueError("boom", 7)
                except ValueError as e:
                    y = y + e.args[1]
            else:
                raise ValueError("boom", 7)
        except ValueError as e:
            if mode == "uncaught":
                raise
            y = x - len(e.args)
    if brk == "before":
        bytegraph.graph_break()
    return y * 3


@pytest.mark.parametrize("brk", [None, "before", "after"])
@pytest.mark.parametrize("mode", ["same", "caller", "uncaught"])
@pytest.mark.parametrize("depth", [0, 1, 3])
def test_matrix(depth, mode, brk):
    r = check(_root, torch.randn(3), depth, mode, brk, fullgraph=brk is None)
    if mode == "uncaught":
        assert isinstance(r.eager.exc, ValueError)
    else:
        assert r.eager.exc is None
        if brk is None:
            assert r.counter.frame_count == 1


# ---- try statement shapes ------------------------------------------------------------------

def test_try_except_else_finally():
    def f(x, flag):
        log = []
        try:
            if flag:
                raise UserError("u")
            y = x + 1
        except UserError:
            y = x - 1
            log.append("except")
        else:
            log.append("else")
        finally:
            log.append("finally")
        return y, log

    check(f, torch.randn(3), True, fullgraph=True, graphs=1)
    check(f, torch.randn(3), False, fullgraph=True, graphs=1)


def test_except_as_reads_args_and_str_and_is_deleted():
    def f(x):
        try:
            raise KeyError("k", 2)
        except KeyError as e:
            a, s, r = e.args, str(e), repr(e)
        try:
            e
        except NameError:
            gone = True
        return x + a[1], s, r, gone

    check(f, torch.randn(3), fullgraph=True, graphs=1)


def test_reraise_bare_and_named():
    def inner(x):
        try:
            raise UserError("first")
        except UserError:
            x = x + 1
            raise

    def f(x):
        try:
            inner(x)
        except UserError as e:
            try:
                raise e
            except Exception as e2:
                return x * 2, str(e2), e2 is e

    check(f, torch.randn(3), fullgraph=True, graphs=1)


def test_chaining_cause_and_context():
    def f(x):
        try:
            try:
                raise ValueError("inner")
            except ValueError as e:
                raise TypeError("outer") from e
        except TypeError as t:
            cause = type(t.__cause__).__name__, t.__suppress_context__
        try:
            try:
                raise ValueError("inner")
            except ValueError:
                raise IndexError("outer")
        except IndexError as t:
            context = str(t.__context__), t.__cause__ is None, t.__suppress_context__
        try:
            try:
                raise ValueError("inner")
            except ValueError:
                raise IndexError("outer") from None
        except IndexError as t:
            suppressed = t.__suppress_context__, t.__cause__
        return x + 1, cause, context, suppressed

    check(f, torch.randn(3), fullgraph=True, graphs=1)


def test_traceback_is_none_until_raised():
    """`exc.__traceback__` (3.13's `contextlib.ExitStack.__exit__` reads it): None for an
    exception made but not raised, a traceback once raised and caught, here or in a callee."""
    def callee():
        raise KeyError("in callee")

    def f(x):
        made = ValueError("made")
        before = made.__traceback__ is None
        try:
            raise made
        except ValueError as e:
            here = e.__traceback__ is not None, e is made
        try:
            callee()
        except KeyError as e:
            there = e.__traceback__ is None
        return x + 1, before, here, there, made.__traceback__ is None

    check(f, torch.randn(3), fullgraph=True, graphs=1)


def test_uncaught_chained_exception_reaches_caller():
    def f(x):
        try:
            {}["missing"]
        except KeyError as e:
            raise RuntimeError("wrapped") from e

    r = check(f, torch.randn(3), fullgraph=True)
    assert isinstance(r.eager.exc, RuntimeError)


def test_builtin_lookup_errors_are_catchable():
    class Obj:
        pass

    def f(x, d, lst, obj):
        out = []
        try:
            d["nope"]
        except KeyError as e:
            out.append(e.args)
        try:
            lst[10]
        except IndexError as e:
            out.append(str(e))
        try:
            obj.missing
        except AttributeError:
            out.append("attr")
        it = iter(lst)
        next(it), next(it)
        try:
            next(it)
        except StopIteration:
            out.append("stop")
        try:
            len(5)
        except TypeError as e:
            out.append(str(e))
        try:
            int("x")
        except ValueError as e:
            out.append(str(e))
        return x + len(out), out

    check(f, torch.randn(3), {"a": 1}, [1, 2], Obj(), fullgraph=True, graphs=1)


def test_user_exception_classes_and_tuples_of_classes():
    def f(x, which):
        try:
            if which == 0:
                raise SubUserError("sub")
            if which == 1:
                raise UserError
            raise LookupError("lookup")
        except (KeyError, SubUserError) as e:
            return x + 1, type(e).__name__, e.args
        except UserError as e:
            return x + 2, type(e).__name__, e.args
        except Exception as e:
            return x + 3, type(e).__name__, str(e)

    for which in range(3):
        check(f, torch.randn(3), which, fullgraph=True, graphs=1)


def test_finally_mutates_outer_state_on_the_way_out():
    class State:
        def __init__(self):
            self.n = 0

    def inner(x, s, lst):
        try:
            lst.append(1)
            raise UserError("x")
        finally:
            s.n += 1
            lst.append(2)

    def f(x, s, lst):
        try:
            inner(x, s, lst)
        except UserError:
            pass
        return x * s.n

    check(f, torch.randn(3), State(), [], fullgraph=True, graphs=1)


def test_finally_runs_when_the_exception_escapes():
    def f(x, lst):
        try:
            lst.append(x.sum())
            raise UserError("escapes")
        finally:
            lst.append(0)

    check(f, torch.randn(3), [], fullgraph=True)


def test_nested_try_unmatched_inner_handler():
    def f(x):
        try:
            try:
                raise ValueError("v")
            except KeyError:
                return x - 100
            finally:
                x = x + 1
        except ValueError as e:
            return x * 2, e.args

    check(f, torch.randn(3), fullgraph=True, graphs=1)


def test_with_exit_that_swallows():
    class Swallow:
        def __init__(self):
            self.seen = None

        def __enter__(self):
            return self

        def __exit__(self, kind, value, tb):
            self.seen = kind.__name__ if kind is not None else None
            return kind is not None and issubclass(kind, ValueError)

    def f(x, cm):
        with cm:
            x = x + 1
            raise ValueError("swallowed")
        with cm:
            x = x * 2
        return x, cm.seen

    check(f, torch.randn(3), Swallow(), fullgraph=True, graphs=1)


def test_with_exit_that_does_not_swallow():
    class Keep:
        def __enter__(self):
            return self

        def __exit__(self, kind, value, tb):
            return False

    def f(x):
        try:
            with Keep():
                raise UserError("kept")
        except UserError as e:
            return x + 1, str(e)

    check(f, torch.randn(3), fullgraph=True, graphs=1)


def test_raise_non_exception_is_type_error():
    def f(x):
        try:
            raise 5
        except TypeError as e:
            return x + 1, str(e)

    check(f, torch.randn(3), fullgraph=True, graphs=1)


def test_bare_raise_without_active_exception():
    def f(x):
        try:
            raise
        except RuntimeError as e:
            return x + 1, str(e)

    check(f, torch.randn(3), fullgraph=True, graphs=1)


def test_returning_a_caught_exception():
    def f(x):
        try:
            raise ValueError("v", 1)
        except ValueError as e:
            return x + 1, e

    r = check(f, torch.randn(3), fullgraph=True, graphs=1)
    assert r.compiled.out[1].args == ("v", 1) and r.compiled.out[1] is not r.eager.out[1]


# ---- the motivating case and eager cache entries -------------------------------------------

def _get(d, k, default):
    try:
        return d[k]
    except KeyError:
        return default


def test_dict_lookup_helper_is_one_graph_without_breaks():
    def f(x, d):
        return x * _get(d, "a", 2) + _get(d, "b", 3)

    check(f, torch.randn(3), {"a": 5}, fullgraph=True, graphs=1)
    out = bytegraph.explain(f, torch.randn(3), {"a": 5})
    assert out.graph_count == 1 and out.graph_break_count == 0 and out.eager_frames == []


def test_escaping_exception_is_cached_as_eager(caplog, monkeypatch):
    from bytegraph.runtime import compiled_function

    traces = []
    real_capture = compiled_function.capture

    def counting_capture(fn, *args, **kwargs):
        traces.append(fn.__name__)
        return real_capture(fn, *args, **kwargs)

    monkeypatch.setattr(compiled_function, "capture", counting_capture)

    def f(x, d):
        y = x + 1
        return y * d["missing"]

    counter = CompileCounter()
    cf = bytegraph.compile(f, backend=counter)
    with caplog.at_level(logging.DEBUG, logger="bytegraph.graph_breaks"):
        for _ in range(3):
            with pytest.raises(KeyError, match="missing"):
                cf(torch.randn(3), {"a": 1})
    entries = cf.__bg_compiled__.entries
    assert [e.kind for e in entries] == ["eager"]
    assert "frame runs eagerly: KeyError: 'missing' at " in entries[0].reason
    assert "test_exceptions.py:" in entries[0].reason
    assert traces == ["f"] and counter.frame_count == 0  # traced once, not per call
    assert sum("frame runs eagerly: KeyError" in r.getMessage() for r in caplog.records) == 1
    # other guards: a new capture, which compiles
    assert torch.equal(cf(torch.ones(3), {"missing": 2}), torch.full((3,), 4.0))
    assert [e.kind for e in cf.__bg_compiled__.entries] == ["eager", "compiled"]


def test_eager_entry_guards_are_the_ones_that_decided():
    def f(x, flag):
        if flag:
            raise UserError("flagged")
        return x + 1

    counter = CompileCounter()
    cf = bytegraph.compile(f, backend=counter)
    with pytest.raises(UserError):
        cf(torch.randn(3), True)
    assert torch.equal(cf(torch.zeros(3), False), torch.ones(3))
    assert [e.kind for e in cf.__bg_compiled__.entries] == ["eager", "compiled"]
    with pytest.raises(UserError):
        cf(torch.randn(3), True)
    assert len(cf.__bg_compiled__.entries) == 2


def test_with_exit_sees_a_traceback():
    class Check:
        def __enter__(self):
            return self

        def __exit__(self, kind, value, tb):
            self.had_tb = tb is not None
            return True

    def f(x, cm):
        with cm:
            {}["k"]
        return x + 1, cm.had_tb

    check(f, torch.randn(3), Check(), fullgraph=True, graphs=1)


def test_reading_into_a_traceback_breaks_under_fullgraph():
    """A raised exception's `__traceback__` is only passed along and compared
    (`test_traceback_is_none_until_raised`); what it holds is not traced."""
    def f(x):
        try:
            raise ValueError("v")
        except ValueError as e:
            return x + 1, e.__traceback__.tb_lineno

    with pytest.raises(bytegraph.Unsupported, match="traceback"):
        bytegraph.compile(f, fullgraph=True)(torch.randn(3))


def test_generator_that_raises_is_finished():
    def gen():
        yield 1
        raise UserError("in generator")

    def f(x):
        g = gen()
        out = [next(g)]
        try:
            next(g)
        except UserError as e:
            out.append(str(e))
        out.append(next(g, "done"))
        return x + 1, out

    check(f, torch.randn(3), fullgraph=True, graphs=1)


# ---- exception classes with their own constructor, across graph breaks -----------------

class CodedError(Exception):
    """`args` is not what the constructor takes: rebuilding it by `CodedError(*args)` fails."""

    def __init__(self, msg, code):
        super().__init__(msg)
        self.code = code


class CodedOSError(OSError):
    def __init__(self, code, label):
        super().__init__(code, "coded")
        self.label = label


def _three_fresh_calls(fn, x, outcome=None):
    outcome = outcome or _outcome
    compiled = bytegraph.compile(fn)
    for _ in range(3):
        check(fn, x)
        eager, got = outcome(fn, x), outcome(compiled, x)
        assert got == eager


def _outcome(fn, x):
    try:
        out = fn(x.clone())
        return ("returned", repr(out))
    except Exception as e:  # the exception itself is what is compared
        return ("raised", type(e), e.args, vars(e), str(e))


def test_custom_constructor_exception_caught_across_a_graph_break():
    def fn(x):
        try:
            y = x + 1
            raise CodedError("bad", 7)
        except CodedError as e:
            bytegraph.graph_break()
            return y * e.code + len(e.args)

    _three_fresh_calls(fn, torch.ones(2))


def test_custom_constructor_exception_raised_after_a_graph_break():
    def fn(x):
        y = x + 1
        bytegraph.graph_break()
        if y.sum() > 0:
            raise CodedError("raised", 3)
        return y

    _three_fresh_calls(fn, torch.ones(2))


def test_custom_constructor_exception_reraised_across_a_graph_break():
    def fn(x):
        try:
            raise CodedOSError(5, "five")
        except OSError as e:
            bytegraph.graph_break()
            e.label = e.label + "!"
            raise

    _three_fresh_calls(fn, torch.ones(2))


def test_custom_constructor_exception_reraised_by_name_across_a_graph_break():
    def fn(x):
        try:
            raise CodedOSError(5, "five")
        except OSError as e:
            bytegraph.graph_break()
            e.label = e.label + "!"
            raise e

    _three_fresh_calls(fn, torch.ones(2))


def test_custom_constructor_exception_kept_in_a_local_across_a_break():
    def fn(x):
        err = CodedError("kept", 2)
        bytegraph.graph_break()
        return x * err.code, err.args

    _three_fresh_calls(fn, torch.ones(2))


def test_bare_raise_in_an_except_block_resumed_after_a_graph_break():
    def fn(x):
        try:
            raise ValueError(5)
        except ValueError:
            bytegraph.graph_break()
            raise

    check(fn, torch.ones(2))


# ---- a graph break inside a handler: the rest runs with the handled exception re-established ----
# (Note [Handlers at a break] in translate/breaks.py): bare `raise`, `raise ... from`, implicit
# `__context__` chaining, `sys.exc_info()` and the handler's POP_EXCEPT behave as eagerly.


def _chained_outcome(fn, x):
    """What `_outcome` compares, plus the chaining of a raised exception and the user line
    its traceback ends at."""
    try:
        out = fn(x.clone())
        return ("returned", repr(out))
    except Exception as e:  # the exception itself is what is compared
        last = traceback.extract_tb(e.__traceback__)[-1]
        context = e.__context__
        return ("raised", repr(e), repr(context), repr(context and context.__context__), repr(e.__cause__),
                e.__suppress_context__, (last.filename, last.lineno))


def test_raise_from_in_an_except_block_resumed_after_a_graph_break():
    def fn(x):
        try:
            raise ValueError(5)
        except ValueError as e:
            bytegraph.graph_break()
            raise TypeError("converted") from e

    _three_fresh_calls(fn, torch.ones(2), _chained_outcome)


def test_new_exception_in_an_except_block_after_a_graph_break_chains_its_context():
    def fn(x):
        try:
            raise ValueError(5)
        except ValueError:
            y = x + 1
            bytegraph.graph_break()
            raise KeyError(y.sum().item())

    _three_fresh_calls(fn, torch.ones(2), _chained_outcome)


def test_sys_exc_info_in_an_except_block_after_a_graph_break():
    def fn(x):
        try:
            raise ValueError(5)
        except ValueError as e:
            bytegraph.graph_break()
            kind, value, tb = sys.exc_info()
            return x + 1, kind, value is e, value.args, tb is not None

    _three_fresh_calls(fn, torch.ones(2), _chained_outcome)


def test_the_handler_end_restores_the_callers_exception_after_a_graph_break():
    def fn(x):
        try:
            raise ValueError(5)
        except ValueError:
            bytegraph.graph_break()
            y = x + 1
        return y, repr(sys.exc_info()[1])

    def called_while_handling(f):
        def run(x):
            try:
                raise KeyError("the caller's")
            except KeyError:
                return f(x), repr(sys.exc_info()[1])
        return run

    _three_fresh_calls(fn, torch.ones(2), _chained_outcome)
    compiled = bytegraph.compile(fn)
    for _ in range(3):
        assert _chained_outcome(called_while_handling(compiled), torch.ones(2)) == \
            _chained_outcome(called_while_handling(fn), torch.ones(2))


def test_nested_handlers_resumed_after_a_graph_break():
    def fn(x):
        try:
            raise ValueError("outer")
        except ValueError as outer:
            try:
                raise KeyError("inner")
            except KeyError as inner:
                bytegraph.graph_break()
                seen = (sys.exc_info()[1] is inner, inner.__context__ is outer)
            if sys.exc_info()[1] is not outer or not all(seen):
                return x
            raise

    _three_fresh_calls(fn, torch.ones(2), _chained_outcome)


def test_bare_raise_in_the_inner_of_nested_handlers_after_a_graph_break():
    def fn(x):
        try:
            raise ValueError("outer")
        except ValueError:
            try:
                raise KeyError("inner")
            except KeyError:
                bytegraph.graph_break()
                raise

    _three_fresh_calls(fn, torch.ones(2), _chained_outcome)


def test_graph_break_in_a_finally_block_on_the_exception_path():
    def fn(x):
        try:
            raise ValueError(5)
        finally:
            bytegraph.graph_break()
            x.add_(1)

    _three_fresh_calls(fn, torch.ones(2), _chained_outcome)


def test_graph_break_in_a_finally_block_that_raises_chains_the_pending_exception():
    def fn(x):
        try:
            raise ValueError(5)
        finally:
            bytegraph.graph_break()
            raise KeyError("from finally")

    _three_fresh_calls(fn, torch.ones(2), _chained_outcome)


def test_graph_break_in_a_with_block_inside_an_except_block_then_bare_raise():
    def fn(x):
        try:
            raise ValueError(5)
        except ValueError:
            with torch.no_grad():
                bytegraph.graph_break()
                y = x * 2
            raise

    _three_fresh_calls(fn, torch.ones(2), _chained_outcome)


def _reraise_after_a_break(x):
    bytegraph.graph_break()
    raise


def test_bare_raise_in_a_callee_that_breaks_inside_an_except_block():
    def fn(x):
        try:
            raise ValueError(5)
        except ValueError:
            _reraise_after_a_break(x)

    _three_fresh_calls(fn, torch.ones(2), _chained_outcome)


def test_bare_raise_after_a_graph_break_in_an_except_block_of_a_resume_function():
    def fn(x):
        y = x * 2
        bytegraph.graph_break()
        try:
            raise ValueError(5)
        except ValueError as e:
            y = y + e.args[0]
            bytegraph.graph_break()
            raise

    _three_fresh_calls(fn, torch.ones(2), _chained_outcome)


def test_exception_caught_from_an_inlined_callee_reraised_after_a_graph_break():
    def raises(x):
        raise KeyError(3)

    def fn(x):
        try:
            raises(x)
        except KeyError as e:
            bytegraph.graph_break()
            if sys.exc_info()[1] is not e:
                return x
            raise

    # the traceback ends at the call in `fn`: the inlined callee's frame was never real
    _three_fresh_calls(fn, torch.ones(2))


# ---- every side effect before a raise happens once per call, in order ----------------------

SCALE = 1.0
LOG = []
DEFAULT_CODE = 1


class ScalingError(Exception):
    """Its constructor writes a global (Note [Exception constructors run while tracing])."""

    def __init__(self, msg):
        global SCALE
        SCALE *= 1.5
        super().__init__(msg)


class LoggedError(Exception):
    def __init__(self, msg):
        LOG.append(msg)
        super().__init__(msg)


class DefaultCodeError(Exception):
    def __init__(self, msg):
        super().__init__(msg)
        self.code = DEFAULT_CODE


def _set_scale(value):
    global SCALE
    SCALE = value


def _scale_and_raise(x):
    global SCALE
    SCALE *= 1.5
    raise ValueError("inner")


def _calls_with_state(fn, ns, between=None):
    """`fn(x, n)` for each n of `ns`, from SCALE == 1.0 and an empty LOG, state carried from one
    call to the next: (outcome, SCALE, LOG) after each call."""
    global SCALE, DEFAULT_CODE
    SCALE, DEFAULT_CODE = 1.0, 1
    LOG.clear()
    out = []
    for i, n in enumerate(ns):
        if between is not None:
            between(i)
        try:
            result = ("returned", repr(fn(torch.ones(6), n)))
        except Exception as e:  # the exception itself is what is compared
            result = ("raised", repr(e), repr(e.__context__), vars(e))
        out.append((result, SCALE, list(LOG)))
    return out


def _state_across_calls(fn, ns=(1, 2, 3), between=None):
    """Eager and compiled agree on every call's outcome and the module state after it."""
    eager = _calls_with_state(fn, ns, between)
    bytegraph.reset()
    compiled = _calls_with_state(bytegraph.compile(fn), ns, between)
    assert compiled == eager


def test_exception_constructor_writing_a_global_runs_once_per_call():
    def fn(x, n):
        raise ScalingError("bad")

    _state_across_calls(fn)


def test_exception_constructor_writing_a_global_caught_in_the_frame():
    def fn(x, n):
        try:
            raise ScalingError("bad")
        except ScalingError:
            return x * SCALE

    _state_across_calls(fn)


def test_exception_constructor_writing_a_global_after_a_graph_break():
    def fn(x, n):
        y = x + n
        bytegraph.graph_break()
        raise ScalingError(y.sum().item())

    _state_across_calls(fn)


def test_exception_constructor_appending_to_a_module_list():
    def fn(x, n):
        try:
            raise LoggedError(n)
        except LoggedError as e:
            return x + e.args[0]

    _state_across_calls(fn)


def test_exception_constructor_reading_a_global_sees_its_current_value():
    def set_default(i):
        global DEFAULT_CODE
        DEFAULT_CODE = 10 * i

    def fn(x, n):
        try:
            raise DefaultCodeError("bad")
        except DefaultCodeError as e:
            return x * e.code

    _state_across_calls(fn, between=set_default)


def test_exception_constructor_that_only_fills_its_instance_is_captured():
    def fn(x):
        try:
            raise CodedError("bad", 7)
        except CodedError as e:
            return x * e.code

    check(fn, torch.ones(2), graphs=1)


def _write_break_raise(x, n):
    global SCALE
    SCALE = SCALE + 0.5
    bytegraph.graph_break()
    raise ValueError(n)


def _write_then_raise_in_callee(x, n):
    global SCALE
    SCALE *= 1.5
    return _scale_and_raise(x * n)


def _write_then_shape_mismatch(x, n):
    global SCALE
    SCALE = SCALE + n
    return x + torch.ones(n + 5)


def _augmented_write_in_try_reraised(x, n):
    global SCALE
    try:
        SCALE *= 1.5
        raise KeyError(n)
    except KeyError:
        raise


def _write_in_inlined_function_then_data_dependent_raise(x, n):
    _set_scale(SCALE + n)
    y = x * SCALE
    if n > 1:
        raise ValueError(y.sum().item())
    return y


def _writes_around_a_break_then_raise(x, n):
    global SCALE
    SCALE = SCALE + n
    bytegraph.graph_break()
    LOG.append(n)
    _set_scale(SCALE * 2)
    raise ValueError(n)


def _writes_in_handler_around_a_break_reraised(x, n):
    global SCALE
    try:
        SCALE *= 1.5
        bytegraph.graph_break()
        raise KeyError(n)
    except KeyError:
        SCALE += 1
        raise


def _write_in_finally_of_a_raising_callee(x, n):
    global SCALE
    SCALE *= 1.5
    try:
        return _scale_and_raise(x)
    finally:
        SCALE += n


def _write_then_tensor_condition_raise(x, n):
    global SCALE
    SCALE = SCALE + n
    if (x * SCALE).sum() > 20:
        raise ValueError("big")
    return x


def _writes_in_a_loop_with_a_break_then_raise(x, n):
    global SCALE
    for i in range(n):
        SCALE = SCALE + 0.5
        if i == 1:
            bytegraph.graph_break()
    raise ValueError(SCALE)


def _write_then_view_error(x, n):
    global SCALE
    SCALE += 0.5
    LOG.append(SCALE)
    return x.view(n + 3, -1)


@pytest.mark.parametrize("fn", [
    _write_break_raise, _write_then_raise_in_callee, _write_then_shape_mismatch, _augmented_write_in_try_reraised,
    _write_in_inlined_function_then_data_dependent_raise, _writes_around_a_break_then_raise,
    _writes_in_handler_around_a_break_reraised, _write_in_finally_of_a_raising_callee,
    _write_then_tensor_condition_raise, _writes_in_a_loop_with_a_break_then_raise, _write_then_view_error,
], ids=lambda fn: fn.__name__.strip("_"))
@pytest.mark.parametrize("ns", [(1, 2, 3), (2, 3, 4), (3, 3, 3)], ids=str)
def test_global_written_before_an_exception_leaves(fn, ns):
    _state_across_calls(fn, ns)


def test_exception_object_passed_in_and_raised_reads_its_current_args():
    def fn(x, e):
        try:
            raise e
        except ValueError as caught:
            return x + caught.args[0], caught is e

    compiled = bytegraph.compile(fn)
    for v in (1, 2, 3):
        eager, got = fn(torch.ones(1), ValueError(v)), compiled(torch.ones(1), ValueError(v))
        assert repr(got) == repr(eager)


# ---- the exception the caller is handling (Note [The caller's exception]) -------------------------


def _in_and_out_of_a_handler(fn):
    """`fn(x)` outside any handler and inside one handling KeyError('the caller's'), alternately:
    what it returns or raises, with the chaining it saw."""
    def run(f, handling):
        def call():
            try:
                out = f(torch.ones(2))
                return ("returned", repr(out))
            except Exception as e:  # the exception itself is what is compared
                return ("raised", repr(e), repr(e.__context__))
        if not handling:
            return call()
        try:
            raise KeyError("the caller's")
        except KeyError:
            return call()

    compiled = bytegraph.compile(fn)
    for handling in (False, True, False, True, True):
        assert run(compiled, handling) == run(fn, handling)


def test_new_exception_caught_in_a_function_called_inside_a_handler_chains_the_callers():
    def fn(x):
        try:
            raise ValueError(1)
        except ValueError as e:
            return x + 1, repr(e.__context__), repr(sys.exc_info()[1])

    _in_and_out_of_a_handler(fn)


def test_sys_exc_info_outside_any_handler_of_a_function_called_inside_one():
    def fn(x):
        return x * 2, repr(sys.exc_info()[1])

    _in_and_out_of_a_handler(fn)


def test_bare_raise_outside_any_handler_reraises_the_callers_exception():
    def fn(x):
        y = x + 1
        try:
            raise
        except RuntimeError as e:
            return y, str(e)

    _in_and_out_of_a_handler(fn)


@pytest.mark.parametrize("text", [str, repr])
def test_str_of_a_caught_custom_constructor_exception_is_folded_in_one_graph(text):
    def raises(k):
        raise CodedError(f"coded {k}", k * 3)

    def fn(x):
        try:
            raises(2)
        except CodedError as e:
            return x * e.code, text(e), e.args

    check(fn, torch.ones(2), graphs=1, fullgraph=True)
