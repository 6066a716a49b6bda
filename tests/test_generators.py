"""Generators traced in one graph (Note [Traced generators] in translate/generators.py):
`yield from` / SEND, generators and generator expressions consumed by builtins (with
eager's short-circuit), `send`/`throw`/`close`, generators closed early or dropped (their
`finally` runs where eager runs it), generators returned to the caller, inside inlined
helpers and across graph breaks; what is not followed breaks with a reason."""
import pytest
import torch

import bytegraph
from tests.helpers import check

LOG: list = []


def _reset_log():
    LOG.clear()


def _log_state():
    return list(LOG)


def one_graph(fn, *args, **kwargs):
    return check(fn, *args, fullgraph=True, graphs=1, **kwargs)


def x3():
    return torch.randn(3, requires_grad=True)


# ---- module-level generator functions (delegated to, called from helpers) -------------------

def count_up(n, t):
    for i in range(n):
        yield t * i
    return n * 10


def with_finally(n, tag):
    try:
        for i in range(n):
            LOG.append(f"{tag} yields {i}")
            yield i
    finally:
        LOG.append(f"{tag} finally")


# ---- yield from ------------------------------------------------------------------------------

def test_yield_from_generator_summed():
    def g(x):
        yield from count_up(3, x)

    def f(x):
        return x * sum(g(x))

    one_graph(f, x3())


def test_yield_from_value_is_the_return_value():
    def g(x):
        r = yield from count_up(2, x)
        yield x + r

    def f(x):
        return list(g(x))

    one_graph(f, x3())


def test_yield_from_list_range_and_genexp():
    def g(x):
        yield from [x, x + 1]
        yield from range(2)
        yield from (x * i for i in range(2))

    def f(x):
        return list(g(x))

    one_graph(f, x3())


def test_yield_from_list_value_is_none():
    def g():
        r = yield from [1, 2]
        yield r

    def f(x):
        return x + len(list(g())), list(g())

    one_graph(f, x3())


def test_nested_yield_from_three_levels():
    def a(x):
        yield x
        return 1

    def b(x):
        r = yield from a(x)
        yield x * 2
        return r + 1

    def c(x):
        r = yield from b(x)
        yield x * r

    def f(x):
        return torch.stack(list(c(x)))

    one_graph(f, x3())


def test_send_delegates_through_yield_from():
    def inner():
        total = 0
        while True:
            v = yield total
            if v is None:
                return total
            total += v

    def outer():
        r = yield from inner()
        yield r * 10

    def f(x):
        gen = outer()
        next(gen)
        gen.send(1)
        gen.send(2)
        return x + next(gen)

    one_graph(f, x3())


def test_yield_from_in_inlined_helper_times_sum():
    def inner(x):
        yield x
        yield x * 2

    def helper(x):
        yield from inner(x)
        yield from inner(x + 1)

    def f(x):
        return x * sum(helper(x))

    one_graph(f, x3())


def test_yield_from_side_effects_interleave():
    def inner(n):
        for i in range(n):
            LOG.append(("inner", i))
            yield i

    def outer():
        LOG.append("outer start")
        yield from inner(2)
        LOG.append("outer end")

    def f(x):
        for v in outer():
            LOG.append(("got", v))
        return x + 1

    one_graph(f, x3(), setup=_reset_log, state=_log_state)


# ---- generators consumed by builtins -----------------------------------------------------

def test_str_join_of_generator_expression():
    def f(x):
        return x + len(",".join(str(i) for i in range(3))), ",".join(str(i) for i in range(3))

    one_graph(f, x3())


def test_str_join_of_yield_from_generator():
    def g():
        yield "a"
        yield from ["b", "c"]

    def f(x):
        return x + 1, "-".join(g())

    one_graph(f, x3())


def test_sum_with_start_of_tensors():
    def f(x):
        return sum((x * i for i in range(4)), x)

    one_graph(f, x3())


def test_any_short_circuits_like_eager():
    def f(x):
        seen = []

        def g():
            for i in range(5):
                seen.append(i)
                yield i > 1
        return x + any(g()), seen

    one_graph(f, x3())


def test_all_short_circuits_like_eager():
    def f(x):
        seen = []
        r = all(seen.append(i) or i < 2 for i in range(5))
        return x + r, seen

    one_graph(f, x3())


def test_any_all_exhausted_and_empty():
    def f(x):
        return x + 1, any(i > 10 for i in range(3)), all(i < 10 for i in range(3)), any(()), all(i for i in ())

    one_graph(f, x3())


def test_any_generator_continues_after_short_circuit():
    def f(x):
        gen = (i for i in range(6))
        first = any(v == 2 for v in gen)
        return x + first, list(gen)

    one_graph(f, x3())


def test_tuple_list_set_of_generators():
    def f(x):
        return tuple(x * i for i in range(3)), list(x + i for i in range(2)), x + len(set(i % 2 for i in range(5)))

    one_graph(f, x3())


def test_dict_of_generator_of_pairs():
    def f(x):
        return dict((str(i), x * i) for i in range(3))

    one_graph(f, x3())


def test_sorted_min_max_of_generators():
    def f(x):
        a = sorted((-i for i in range(4)), reverse=True)
        b = min(i * i - 3 * i for i in range(5))
        c = max((i for i in range(4)), key=lambda v: -v)
        d = max((i for i in ()), default=7)
        return x + a[0] + b + c + d, a

    one_graph(f, x3())


def test_zip_enumerate_map_of_generators_are_lazy():
    def f(x):
        def g(tag, n):
            for i in range(n):
                LOG.append((tag, i))
                yield x * i
        out = [a + b for a, b in zip(g("a", 3), g("b", 2))]
        out += [i * t for i, t in enumerate(g("c", 2), 1)]
        out += list(map(lambda t: t + 1, g("d", 2)))
        return out

    one_graph(f, x3(), setup=_reset_log, state=_log_state)


def test_next_with_default_and_stop_iteration():
    def f(x):
        g = (x * i for i in range(2))
        a = next(g)
        b = next(g)
        c = next(g, None)
        try:
            next(g)
        except StopIteration:
            return a + b, c
        return a

    one_graph(f, x3())


def test_generator_expression_over_tensor_rows():
    def f(x):
        m = x.reshape(3, 1) * torch.ones(3, 2)
        return torch.stack(tuple(row.sin() for row in m))

    one_graph(f, x3())


def test_unpacking_a_generator():
    def f(x):
        a, b, c = (x * i for i in range(3))
        first, *rest = (x + i for i in range(3))
        return a + b + c + first, rest

    one_graph(f, x3())


# ---- send, throw, close, return values -------------------------------------------------------

def test_send_running_total():
    def f(x):
        def g():
            total = 0
            while True:
                v = yield total
                if v is None:
                    break
                total += v
        gen = g()
        next(gen)
        gen.send(2)
        r = gen.send(3)
        return x + r

    one_graph(f, x3())


def test_send_tensor_into_generator():
    def f(x):
        def g():
            acc = yield
            while True:
                acc = acc + (yield acc)
        gen = g()
        next(gen)
        gen.send(x)
        return gen.send(x * 2)

    one_graph(f, x3())


def test_send_non_none_to_just_started_generator_raises():
    def f(x):
        def g():
            yield 1
        try:
            g().send(5)
        except TypeError as e:
            return x + 1, str(e)

    one_graph(f, x3())


def test_return_value_in_stop_iteration():
    def f(x):
        def g():
            v = yield 1
            return v * 2
        gen = g()
        next(gen)
        try:
            gen.send(5)
        except StopIteration as e:
            first = e.value
        try:
            next(gen)
        except StopIteration as e:
            return x + first, e.value

    one_graph(f, x3())


def test_throw_caught_inside_generator():
    def f(x):
        def g():
            try:
                yield 1
            except ValueError as e:
                yield str(e)
            yield 3
        gen = g()
        a = next(gen)
        b = gen.throw(ValueError("boom"))
        return x + a + next(gen), b

    one_graph(f, x3())


def test_throw_uncaught_propagates_and_finishes():
    def f(x):
        def g():
            yield 1
            yield 2
        gen = g()
        next(gen)
        try:
            gen.throw(KeyError("k"))
        except KeyError as e:
            return x + 1, str(e), next(gen, "done")

    one_graph(f, x3())


def test_throw_into_yield_from_reaches_the_inner_generator():
    def f(x):
        log = []

        def inner():
            try:
                yield 1
            except ValueError:
                log.append("inner caught")
                yield 2
            return 5

        def outer():
            r = yield from inner()
            log.append(r)
            yield 3
        gen = outer()
        next(gen)
        a = gen.throw(ValueError)
        b = next(gen)
        return x + a + b, log

    one_graph(f, x3())


def test_close_runs_finally():
    def f(x):
        log = []

        def g():
            try:
                yield 1
                yield 2
            finally:
                log.append("fin")
        gen = g()
        a = next(gen)
        gen.close()
        log.append("closed")
        gen.close()
        return x + a, log, next(gen, "exhausted")

    one_graph(f, x3())


def test_close_of_unstarted_and_finished_generators():
    def f(x):
        def g():
            try:
                yield 1
            finally:
                LOG.append("fin")
        a = g()
        a.close()
        b = g()
        list(b)
        b.close()
        return x + 1, next(a, "a done")

    one_graph(f, x3(), setup=_reset_log, state=_log_state)


def test_close_nested_yield_from_closes_inner_first():
    def f(x):
        log = []

        def inner():
            try:
                yield 1
                yield 2
            finally:
                log.append("inner")

        def outer():
            try:
                yield from inner()
            finally:
                log.append("outer")
        gen = outer()
        next(gen)
        gen.close()
        return x + 1, log

    one_graph(f, x3())


def test_throw_into_yield_from_whose_inner_generator_returns():
    def f(x):
        def inner():
            try:
                yield 1
            except ValueError:
                return 5

        def outer():
            r = yield from inner()
            yield r * 2
        gen = outer()
        next(gen)
        return x + gen.throw(ValueError)

    one_graph(f, x3())


def test_throw_into_yield_from_propagates_what_the_inner_generator_raises():
    def f(x):
        def inner():
            yield 1

        def outer():
            try:
                yield from inner()
            except KeyError as e:
                yield str(e)
        gen = outer()
        next(gen)
        return x + 1, gen.throw(KeyError("k"))

    one_graph(f, x3())


def test_generator_ignoring_generator_exit():
    def f(x):
        def g():
            try:
                yield 1
            except GeneratorExit:
                yield 2
        gen = g()
        next(gen)
        try:
            gen.close()
        except RuntimeError as e:
            return x + 1, str(e)

    one_graph(f, x3())


def test_generator_raising_is_finished_and_caught_by_consumer():
    def f(x):
        def g():
            yield x
            raise ValueError("bad")
        out = []
        gen = g()
        try:
            for v in gen:
                out.append(v * 2)
        except ValueError as e:
            out.append(str(e))
        return out, next(gen, "finished")

    one_graph(f, x3())


def test_stop_iteration_inside_generator_becomes_runtime_error():
    def f(x):
        def g():
            yield 1
            raise StopIteration
        try:
            list(g())
        except RuntimeError as e:
            return x + 1, str(e), type(e.__cause__).__name__

    one_graph(f, x3())


def test_exception_escaping_generator_runs_eagerly_with_same_error():
    def f(x):
        def g():
            yield x
            raise KeyError("missing")
        return sum(g())

    check(f, x3())


# ---- closed early: break, return, dropped ------------------------------------------------------

def test_break_out_of_for_runs_finally_before_the_next_statement():
    def f(x):
        for v in with_finally(5, "g"):
            if v == 2:
                break
        LOG.append("after")
        return x + v

    one_graph(f, x3(), setup=_reset_log, state=_log_state)


def test_return_inside_for_runs_finally_in_the_helper():
    def helper():
        for v in with_finally(4, "h"):
            if v == 1:
                return v
        return -1

    def f(x):
        r = helper()
        LOG.append("after helper")
        return x + r

    one_graph(f, x3(), setup=_reset_log, state=_log_state)


def test_any_over_temporary_generator_runs_finally_at_the_call():
    def f(x):
        r = any(v > 1 for v in with_finally(5, "a"))
        LOG.append("after any")
        return x + r

    one_graph(f, x3(), setup=_reset_log, state=_log_state)


def test_next_of_temporary_generator_runs_finally():
    def f(x):
        r = next(with_finally(3, "n"))
        LOG.append("after next")
        return x + r

    one_graph(f, x3(), setup=_reset_log, state=_log_state)


def test_reassigned_local_closes_the_generator_there():
    def f(x):
        gen = with_finally(3, "r")
        next(gen)
        LOG.append("before")
        gen = None
        LOG.append("after")
        return x + 1, gen

    one_graph(f, x3(), setup=_reset_log, state=_log_state)


def test_generator_dies_with_its_helper_frame():
    def helper():
        gen = with_finally(3, "frame")
        return next(gen)

    def f(x):
        r = helper()
        LOG.append("after helper")
        return x + r

    one_graph(f, x3(), setup=_reset_log, state=_log_state)


def test_generator_kept_in_a_list_is_not_closed():
    def f(x):
        keep = []
        gen = with_finally(3, "kept")
        next(gen)
        keep.append(gen)
        gen = None
        LOG.append("dropped the local")
        rest = list(keep[0])
        LOG.append("consumed")
        return x + sum(rest)

    one_graph(f, x3(), setup=_reset_log, state=_log_state)


def test_generator_in_a_zip_stays_open_while_zip_runs():
    def f(x):
        z = zip(with_finally(4, "z"), range(2))
        pairs = [a for a, _ in z]
        LOG.append("zip done")
        z = None
        LOG.append("zip dropped")
        return x + sum(pairs)

    one_graph(f, x3(), setup=_reset_log, state=_log_state)


def test_with_block_exit_runs_on_break():
    def f(x):
        def g():
            with torch.no_grad():
                yield x * 2
                yield x * 3
        for v in g():
            break
        return v + x, torch.is_grad_enabled()

    one_graph(f, x3())


def test_generator_finally_at_the_end_of_the_compiled_function():
    def f(x):
        gen = with_finally(3, "end")
        return x + next(gen)

    one_graph(f, x3(), setup=_reset_log, state=_log_state)


# ---- returned to the caller --------------------------------------------------------------------

def test_unstarted_generator_expression_returned_runs_lazily():
    def f(x):
        return (x * i for i in range(3))

    r = check(f, x3(), fullgraph=True)
    gen = r.compiled.out
    assert list(t.tolist() for t in gen) == list(t.tolist() for t in r.eager.out)


def test_unstarted_generator_returned_with_side_effects_deferred():
    def g(t, n):
        LOG.append("started")
        for i in range(n):
            yield t + i

    def f(x):
        gen = g(x * 2, 2)
        LOG.append("made")
        return gen

    _reset_log()
    eager = f(torch.ones(2))
    expected = (list(LOG), [t.tolist() for t in eager], list(LOG))
    _reset_log()
    bytegraph.reset()
    gen = bytegraph.compile(f, fullgraph=True)(torch.ones(2))
    assert (list(LOG), [t.tolist() for t in gen], list(LOG)) == expected


def test_started_generator_returned_resumes_where_the_trace_stopped():
    def g(t, n):
        total = 0
        for i in range(n):
            total += i
            LOG.append(("yield", i))
            got = yield t * total
            LOG.append(("got", got))

    def f(x):
        gen = g(x, 4)
        a = next(gen)
        b = gen.send("one")
        return a + b, gen

    _reset_log()
    eager_out = f(torch.ones(2))
    eager = (eager_out[0].tolist(), list(LOG), eager_out[1].send("two").tolist(), [t.tolist() for t in eager_out[1]],
             list(LOG), eager_out[1].__name__, eager_out[1].__qualname__)
    _reset_log()
    bytegraph.reset()
    out = bytegraph.compile(f, fullgraph=True)(torch.ones(2))
    compiled = (out[0].tolist(), list(LOG), out[1].send("two").tolist(), [t.tolist() for t in out[1]], list(LOG),
                out[1].__name__, out[1].__qualname__)
    assert compiled == eager


def test_started_generator_expression_returned():
    def f(x):
        gen = (x * i for i in range(4))
        next(gen)
        return gen

    bytegraph.reset()
    gen = bytegraph.compile(f, fullgraph=True)(torch.ones(2))
    assert [t.tolist() for t in gen] == [[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]]


def test_generator_suspended_in_try_returned_breaks_with_a_reason():
    def f(x):
        gen = with_finally(3, "ret")
        next(gen)
        return x + 1, gen

    bytegraph.reset()
    with pytest.raises(bytegraph.Unsupported, match="suspended inside try/with"):
        bytegraph.compile(f, fullgraph=True)(torch.ones(2))
    out = bytegraph.explain(f, torch.ones(2))
    assert [b.category for b in out.break_reasons] == ["unsupported output"]
    assert "cannot be rebuilt" in out.break_reasons[0].reason


# ---- inside inlined helpers ----------------------------------------------------------------------

def test_generator_made_in_helper_consumed_in_caller():
    def make(t):
        for i in range(3):
            yield t + i

    def helper(t):
        return make(t)

    def f(x):
        return sum(helper(x))

    one_graph(f, x3())


def test_generator_passed_to_helper_and_partly_consumed():
    def take(gen, n):
        return [next(gen) for _ in range(n)]

    def f(x):
        gen = (x * i for i in range(5))
        a = take(gen, 2)
        return a, sum(gen)

    one_graph(f, x3())


def test_generator_method_of_user_class():
    class Bag:
        def __init__(self, items):
            self.items = items

        def doubled(self):
            for t in self.items:
                yield t * 2

    def f(x, bag):
        return sum(bag.doubled()) + x

    one_graph(f, x3(), Bag([torch.ones(3), torch.arange(3.0)]))


def test_generator_reading_outer_state_lazily():
    def f(x):
        items = [x]
        gen = (t * 2 for t in items)
        items.append(x + 1)
        return list(gen)

    one_graph(f, x3())


def test_generator_closure_writes_nonlocal():
    def f(x):
        count = 0

        def g():
            nonlocal count
            for i in range(3):
                count += 1
                yield x * i
        total = sum(g())
        return total, count

    one_graph(f, x3())


# ---- across a graph break --------------------------------------------------------------------

def test_generator_consumed_before_and_after_a_break_elsewhere():
    def f(x):
        a = sum(x * i for i in range(3))
        print("between")
        b = sum(x + i for i in range(2))
        return a + b

    check(f, x3(), graphs=2)


def test_unstarted_generator_live_across_a_break():
    def f(x):
        gen = (x * i for i in range(3))
        print("hi")
        return sum(gen)

    check(f, x3())


def test_started_generator_live_across_a_break_is_correct():
    def f(x):
        gen = (x * i for i in range(4))
        a = next(gen)
        print("hi")
        return a + sum(gen)

    check(f, x3())


def test_generator_function_state_crosses_a_break():
    def f(x):
        def g(n):
            acc = x
            for i in range(n):
                acc = acc * 2
                yield acc + i
        gen = g(3)
        a = next(gen)
        print("mid")
        b = next(gen)
        return a + b + sum(gen)

    check(f, x3())


def test_send_after_a_break_reaches_the_yield():
    def f(x):
        def g():
            total = 0
            while True:
                v = yield total
                total = total + v
        gen = g()
        next(gen)
        gen.send(x)
        print("mid")
        return gen.send(x * 2)

    check(f, x3())


def test_generator_with_nonlocal_cell_crosses_a_break():
    def f(x):
        count = 0

        def g():
            nonlocal count
            for i in range(3):
                count += 1
                yield x * i
        gen = g()
        next(gen)
        print("mid")
        s = sum(gen)
        return s, count

    check(f, x3())


def test_nested_generators_cross_a_break():
    def f(x):
        def inner():
            for i in range(3):
                yield x + i

        def outer():
            for v in inner():
                yield v * 2
        gen = outer()
        next(gen)
        print("mid")
        return list(gen)

    check(f, x3())


def test_print_inside_for_over_generator():
    def f(x):
        y = x
        for t in (x * i for i in range(3)):
            print("step")
            y = y + t
        return y

    check(f, x3())


def test_generator_in_try_live_across_a_break_runs_eagerly_with_reason():
    def f(x):
        gen = with_finally(3, "brk")
        a = next(gen)
        print("mid")
        return x + a + sum(gen)

    check(f, x3(), setup=_reset_log, state=_log_state)
    bytegraph.reset()
    out = bytegraph.explain(f, torch.ones(2))
    assert any("suspended inside try/with" in b.reason for b in out.break_reasons)


def test_graph_break_inside_generator_body():
    def f(x):
        def g():
            for i in range(3):
                print(i)
                yield x * i
        return sum(g())

    check(f, x3())


def test_yield_from_in_helper_after_a_break():
    def inner(x):
        yield x
        return 2

    def helper(x):
        bytegraph.graph_break()
        r = yield from inner(x)
        yield x * r

    def f(x):
        return sum(helper(x + 1))

    check(f, x3())


def test_generator_finally_with_break_before_it():
    def f(x):
        print("start")
        for v in with_finally(4, "b"):
            if v == 1:
                break
        LOG.append("after")
        return x + v

    check(f, x3(), graphs=1, setup=_reset_log, state=_log_state)


def test_exception_leaving_a_frame_with_an_open_generator_breaks_with_reason():
    def helper():
        gen = with_finally(3, "exc")
        next(gen)
        raise ValueError("out")

    def f(x):
        try:
            helper()
        except ValueError:
            LOG.append("handled")
        return x + 1

    check(f, x3(), setup=_reset_log, state=_log_state)
    bytegraph.reset()
    with pytest.raises(bytegraph.Unsupported, match="closed when the traceback dies"):
        bytegraph.compile(f, fullgraph=True)(torch.ones(2))


def test_finished_generator_returned_is_exhausted():
    def f(x):
        gen = (x * i for i in range(2))
        total = sum(gen)
        return total, gen

    r = one_graph(f, x3())
    gen = r.compiled.out[1]
    assert type(gen).__name__ == "generator" and gen.__name__ == "<genexpr>"
    assert list(gen) == [] and list(r.eager.out[1]) == []


def test_next_reports_the_return_value():
    def f(x):
        def g():
            yield x
            return 7
        gen = g()
        a = next(gen)
        try:
            next(gen)
        except StopIteration as e:
            return a + e.value

    one_graph(f, x3())


def test_generator_returned_from_helper_after_partial_use_in_list():
    def f(x):
        gens = [(x + i for i in range(2)) for _ in range(2)]
        return [sum(g) for g in gens]

    one_graph(f, x3())


def test_yield_from_itertools_chain_dict_and_str():
    import itertools

    def g(x, d):
        yield from itertools.chain([x], [x + 1])
        yield from d
        yield from "ab"

    def f(x):
        return list(g(x, {"k": 1, "j": 2}))

    one_graph(f, x3())


def test_generator_is_its_own_iterator_and_a_generator_type():
    import types

    def f(x):
        gen = (x * i for i in range(2))
        return x + 1, iter(gen) is gen, isinstance(gen, types.GeneratorType), gen.gi_running, list(gen)

    one_graph(f, x3())


def test_generator_method_objects_called_later():
    def f(x):
        def g():
            v = yield x
            yield v * 2
        gen = g()
        step, send = gen.__next__, gen.send
        return step(), send(x + 1)

    one_graph(f, x3())


def test_data_dependent_any_over_tensors_breaks_with_reason():
    def f(x):
        return x + any(t.sum() > 0 for t in (x, -x))

    check(f, x3())
    bytegraph.reset()
    with pytest.raises(bytegraph.Unsupported):
        bytegraph.compile(f, fullgraph=True)(torch.ones(2))


def test_max_with_key_interleaves_items_and_keys():
    def f(x):
        def g():
            for i in range(3):
                LOG.append(("item", i))
                yield i

        def key(v):
            LOG.append(("key", v))
            return -v
        return x + max(g(), key=key) + min(g(), key=key)

    one_graph(f, x3(), setup=_reset_log, state=_log_state)


def test_filter_of_generator_is_lazy():
    def f(x):
        def g():
            for i in range(6):
                LOG.append(("item", i))
                yield i

        def keep(v):
            LOG.append(("pred", v))
            return v % 2
        it = filter(keep, g())
        first = next(it)
        LOG.append("between")
        return x + first + sum(it), list(filter(None, (i % 3 for i in range(5))))

    one_graph(f, x3(), setup=_reset_log, state=_log_state)


def test_sum_adds_as_items_come():
    class Acc:
        def __init__(self, v):
            self.v = v

        def __add__(self, other):
            LOG.append(("add", other))
            return Acc(self.v + other)

    def f(x):
        def g():
            for i in range(3):
                LOG.append(("item", i))
                yield i
        return x + sum(g(), Acc(0)).v

    one_graph(f, x3(), setup=_reset_log, state=_log_state)
