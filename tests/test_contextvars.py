"""`contextvars` in a trace: `ContextVar.get/set/reset`, Tokens, `copy_context()`,
`Context()` and `Context.run`, and the caller's context after the call (Note [Context
variables in a trace] in bytegraph/vars/context_vars.py).

Differential: eager and compiled on fresh, equal state; the variables' values after the
call are compared too (`state=`). A variable that must start unset is run in a fresh
`contextvars.Context()` per run (`check_in_fresh_contexts`), as `setup=` can set a
variable but never unset it.
"""
import contextvars
import json

import pytest
import torch
from torch import nn

import bytegraph
from helpers import check, clone_inputs, compile_counted

V = contextvars.ContextVar("V")  # 3 at the start of every run (`_setup`)
T = contextvars.ContextVar("T")  # a tensor at the start of every run (`_setup`)
D = contextvars.ContextVar("D", default=10)  # unset, except in a fresh context or between set and reset
U = contextvars.ContextVar("U")  # unset, except in a fresh context or between set and reset
_UNSET = object()


def _setup():
    V.set(3)
    T.set(torch.arange(3.0))


def _state():
    return [var.get(_UNSET) for var in (V, T, D, U)]


def checked(fn, *args, **kw):
    """`check` with the variables' state set before and compared after every run, in a copy of
    the test's context (so that what the runs set stays there)."""
    return contextvars.copy_context().run(check, fn, *args, setup=_setup, state=_state, **kw)


def check_in_fresh_contexts(fn, *args, graphs=1, fullgraph=True, calls=2):
    """`fn(*args)` eager and compiled, each call in a new empty Context: the outputs and every
    variable's value after the call must agree (and the compiled one does not recompile)."""
    cfn, counter = compile_counted(fn, fullgraph=fullgraph)
    for _ in range(calls):
        runs = []
        for f in (fn, cfn):
            inputs = clone_inputs(args)

            def body():
                out = f(*inputs)
                return out, [var.get(_UNSET) for var in (V, D, U, T)]

            runs.append(contextvars.Context().run(body))
        (eager, eager_vars), (comp, comp_vars) = runs
        _assert_equal(comp, eager)
        _assert_equal(comp_vars, eager_vars)
    assert counter.frame_count == graphs, counter.frame_count
    return counter


def _assert_equal(a, b):
    if isinstance(b, torch.Tensor):
        torch.testing.assert_close(a, b)
    elif isinstance(b, (list, tuple)):
        assert type(a) is type(b) and len(a) == len(b), (a, b)
        for x, y in zip(a, b):
            _assert_equal(x, y)
    else:
        assert a == b, (a, b)


# ----------------------------------------------------------------------------- get


def test_get_reads_the_callers_value():
    def f(x):
        return x * V.get()
    checked(f, torch.ones(3), fullgraph=True, graphs=1)


def test_get_of_an_unset_variable_answers_its_default_or_the_argument():
    def f(x):
        return x * D.get() + D.get(1) + U.get(2)
    check_in_fresh_contexts(f, torch.ones(3))


def test_get_of_a_tensor_value_is_a_graph_input():
    def f(x):
        return x + T.get()
    checked(f, torch.ones(3), fullgraph=True, graphs=1)


def test_get_of_an_unset_variable_without_default_raises_lookup_error():
    def f(x):
        return x * U.get()
    counter = check_in_fresh_contexts(_catching(f, LookupError), torch.ones(3))
    with pytest.raises(LookupError):
        contextvars.Context().run(bytegraph.compile(f), torch.ones(3))
    assert counter.frame_count == 1


def _catching(f, kind):
    def catching(x):
        try:
            return f(x)
        except kind:
            return x - 1
    return catching


def test_the_value_read_is_guarded():
    def f(x):
        return x * V.get()
    cfn, counter = compile_counted(f, fullgraph=True)
    for value in (3, 4, 3, "unset"):
        def body():
            if value != "unset":
                V.set(value)
            try:
                return f(torch.ones(2)), None
            except LookupError as e:
                return None, type(e)

        def compiled_body():
            if value != "unset":
                V.set(value)
            try:
                return cfn(torch.ones(2)), None
            except LookupError as e:
                return None, type(e)
        eager, comp = contextvars.Context().run(body), contextvars.Context().run(compiled_body)
        assert eager[1] is comp[1]
        if eager[0] is not None:
            torch.testing.assert_close(comp[0], eager[0])
    assert counter.frame_count == 2  # 3 and 4 (unset: the trace raises before any graph op)


def test_an_object_value_is_guarded_by_what_the_trace_used():
    M = contextvars.ContextVar("M")

    def f(x):
        return M.get()(x)
    cfn, counter = compile_counted(f, fullgraph=True)
    x = torch.randn(2, 3)
    lin, other = nn.Linear(3, 3), nn.Linear(3, 3)
    for module in (lin, lin, other, nn.Tanh()):
        token = M.set(module)
        torch.testing.assert_close(cfn(x), f(x))
        M.reset(token)
    # two Linears: one graph, their parameters read from the variable at each call; a Tanh: another
    assert counter.frame_count == 2


def test_name_and_unbound_methods():
    def f(x):
        return x * contextvars.ContextVar.get(V), V.name, contextvars.ContextVar.get(D, 5)
    checked(f, torch.ones(3), fullgraph=True, graphs=1)


def test_wrong_arguments_raise_as_eager():
    def f(x):
        errors = []
        for call in (lambda: V.get(1, 2), lambda: V.set(), lambda: V.reset(5), lambda: V.missing_attribute):
            try:
                call()
            except (TypeError, AttributeError) as e:
                errors.append(str(e))
        return x + 1, errors
    checked(f, torch.ones(3), fullgraph=True, graphs=1)


# ----------------------------------------------------------------------------- set / reset


def test_set_then_reset_leaves_the_variable_as_it_was():
    def f(x):
        token = V.set(x.sum())
        y = x * V.get()
        V.reset(token)
        return y + V.get()
    checked(f, torch.ones(3), fullgraph=True, graphs=1)


def test_set_then_reset_replays_nothing(monkeypatch):
    from bytegraph.vars import context_vars

    writes = []

    def recording(var, value):
        writes.append(var.name)
        var.set(value)
    monkeypatch.setattr(context_vars, "_set_value", recording)

    def f(x):
        token = D.set(7)
        y = x * D.get()
        D.reset(token)
        V.set(y)
        return y
    checked(f, torch.ones(3), fullgraph=True, graphs=1)
    assert writes == ["V", "V"]  # V's final value, at both compiled runs; nothing for D


def test_set_without_reset_stays_set_after_the_call():
    def f(x):
        V.set(V.get() + 1)
        T.set(x * 2)  # a tensor the graph computes
        return x + V.get()
    checked(f, torch.ones(3), fullgraph=True, graphs=1)


def test_set_of_a_variable_with_a_default_without_reset():
    def f(x):
        D.set(D.get() + 1)
        return x + D.get()
    check_in_fresh_contexts(f, torch.ones(3))


def test_set_of_an_unset_variable_without_reset():
    def f(x):
        U.set([x, 1])
        return x + 1
    check_in_fresh_contexts(f, torch.ones(3))


def test_nested_and_out_of_order_resets():
    def f(x):
        a = V.set(1)
        b = V.set(2)
        c = V.set(x)
        V.reset(b)  # back to 1, c stays unused
        first = V.get()
        d = V.set(4)
        V.reset(a)
        return first, V.get() * x, d.old_value, c.old_value, a.old_value
    checked(f, torch.ones(3), fullgraph=True, graphs=1)


def test_token_attributes():
    def f(x):
        t = U.set(x)
        u = U.set(2)
        return t.old_value is contextvars.Token.MISSING, u.old_value * 2, t.var is U, u.var.name
    check_in_fresh_contexts(f, torch.ones(3))


def test_token_errors_raise_as_eager():
    def f(x):
        errors = []
        t = V.set(1)
        V.reset(t)
        try:
            V.reset(t)
        except RuntimeError as e:
            errors.append(type(e).__name__ + ":used" * ("used once" in str(e)))
        try:
            D.reset(V.set(2))
        except ValueError as e:
            errors.append(type(e).__name__ + ":var" * ("different ContextVar" in str(e)))
        return x + V.get(), errors
    checked(f, torch.ones(3), fullgraph=True, graphs=1)


def test_a_returned_token_is_the_real_one():
    def f(x):
        token = V.set(x + 1)
        unused = V.set(5)
        V.reset(unused)
        return token, unused, V.get()
    cfn = bytegraph.compile(f, fullgraph=True)
    for fn in (f, cfn):
        def body():
            V.set(3)
            token, unused, value = fn(torch.ones(2))
            assert type(token) is contextvars.Token and token.var is V and token.old_value == 3
            torch.testing.assert_close(value, torch.full((2,), 2.0))
            torch.testing.assert_close(V.get(), torch.full((2,), 2.0))
            with pytest.raises(RuntimeError, match="already been used"):
                V.reset(unused)
            V.reset(token)
            assert V.get() == 3
        contextvars.Context().run(body)


def test_a_token_stored_in_an_object_is_the_real_one():
    class Holder:
        token = None

    def f(holder, x):
        holder.token = U.set(x * 2)
        return x + 1
    cfn = bytegraph.compile(f, fullgraph=True)
    for fn in (f, cfn):
        def body():
            holder = Holder()
            fn(holder, torch.ones(2))
            torch.testing.assert_close(U.get(), torch.full((2,), 2.0))
            assert holder.token.old_value is contextvars.Token.MISSING
            U.reset(holder.token)
            assert U.get("unset") == "unset"
        contextvars.Context().run(body)


# ----------------------------------------------------------------------------- graph breaks


def test_graph_break_between_set_and_reset():
    def f(x):
        token = V.set(x * 2)
        try:
            bytegraph.graph_break()
            y = V.get() + 1
        finally:
            V.reset(token)
        return y + V.get()
    checked(f, torch.ones(3))


def test_the_code_run_at_a_break_sees_the_traced_state():
    def f(x):
        token = D.set(5)
        text = json.dumps(_UNSET, default=lambda o: D.get())  # json is not traced: runs at a break
        D.reset(token)
        return x * int(text) + D.get()
    checked(f, torch.ones(3))


def test_a_token_set_before_a_break_and_reset_after_it_in_a_fresh_context():
    def f(x):
        token = U.set(x)
        print("break")
        U.reset(token)
        return x + 1
    check_in_fresh_contexts(f, torch.ones(3), fullgraph=False, graphs=1)  # `x + 1`, after the breaks


def test_creating_a_context_var_in_the_compiled_function_is_a_graph_break():
    def f(x):
        var = contextvars.ContextVar("local", default=2)
        return x * var.get()
    checked(f, torch.ones(3))
    with pytest.raises(bytegraph.Unsupported, match="creating a contextvars.ContextVar"):
        bytegraph.compile(f, fullgraph=True)(torch.ones(3))


def test_reset_with_a_token_from_outside_is_a_graph_break():
    def f(x, token):
        V.reset(token)
        return x * V.get()

    for fn in (f, bytegraph.compile(f)):
        def body():
            V.set(3)
            token = V.set(5)
            out = fn(torch.ones(2), token)
            assert V.get() == 3
            return out
        torch.testing.assert_close(contextvars.Context().run(body), torch.full((2,), 3.0))
    with pytest.raises(bytegraph.Unsupported, match="Token from outside"):
        contextvars.Context().run(lambda: bytegraph.compile(f, fullgraph=True)(torch.ones(2), V.set(1)))


# ----------------------------------------------------------------------------- contexts


def test_copy_context_run_discards_the_sets():
    def inner(x, scale):
        V.set(scale)
        D.set(x)
        return x * V.get() + D.get()

    def f(x):
        V.set(4)  # before the copy: the copy sees it
        ctx = contextvars.copy_context()
        V.set(6)  # after: it does not
        y = ctx.run(inner, x, scale=2)
        z = ctx.run(lambda: V.get() + D.get())  # the context keeps the first run's sets
        return y, z, V.get(), D.get()
    checked(f, torch.ones(3), fullgraph=True, graphs=1)


def test_an_empty_context():
    def f(x):
        ctx = contextvars.Context()
        return ctx.run(lambda: x * D.get() + V.get(1)), V in ctx, ctx.get(V, "absent")
    checked(f, torch.ones(3), fullgraph=True, graphs=1)


def test_context_lookups():
    def f(x):
        ctx = contextvars.copy_context()
        ctx.run(D.set, 2)
        return x * ctx[D] + ctx.get(V, 0), D in ctx, U in ctx, ctx.copy().get(D), D.get()
    check_in_fresh_contexts(f, torch.ones(3))


def test_context_wrong_arguments_raise_as_eager():
    def f(x):
        ctx = contextvars.copy_context()
        errors = []
        for call in (lambda: ctx.copy(1), lambda: ctx.get(), lambda: ctx.get(V, 1, 2), lambda: ctx.get(V, default=1),
                     lambda: ctx.get(1), lambda: ctx[V], lambda: ctx.run(), lambda: contextvars.Context(1),
                     lambda: contextvars.copy_context(1)):
            try:
                call()
            except (TypeError, KeyError) as e:
                errors.append((type(e).__name__, str(e) if type(e) is TypeError else None))
        return x + 1, errors
    check_in_fresh_contexts(f, torch.ones(3))


def test_a_token_of_a_copied_context_is_rejected_in_the_caller():
    def f(x):
        ctx = contextvars.copy_context()
        token = ctx.run(V.set, 5)
        try:
            V.reset(token)
        except ValueError as e:
            return x * V.get(), "different Context" in str(e)
    checked(f, torch.ones(3), fullgraph=True, graphs=1)


def test_entering_a_context_twice_raises():
    def f(x):
        ctx = contextvars.copy_context()
        try:
            ctx.run(ctx.run, lambda: None)
        except RuntimeError as e:
            return x + 1, "already entered" in str(e)
    checked(f, torch.ones(3), fullgraph=True, graphs=1)


def test_a_break_inside_context_run():
    def inner(x):
        V.set(5)
        print("inside")
        return x * V.get()

    def f(x):
        y = x + 1
        ctx = contextvars.copy_context()
        z = ctx.run(inner, y)  # the break inside: this call runs eagerly, in the rebuilt copy
        return z + V.get(), ctx.run(V.get)
    checked(f, torch.ones(3))


def test_a_returned_context_is_rebuilt():
    def f(x):
        empty = contextvars.Context()
        empty.run(D.set, 4)
        empty.run(U.set, x * 2)
        return x + 1, contextvars.copy_context(), empty

    for fn in (f, bytegraph.compile(f, fullgraph=True)):
        def body():
            V.set(7)
            _, copy, empty = fn(torch.ones(2))
            assert copy[V] == 7 and copy.get(D, "unset") == "unset" and len(copy) == 1
            assert empty.get(V, "unset") == "unset" and empty[D] == 4 and len(empty) == 2
            torch.testing.assert_close(empty[U], torch.full((2,), 2.0))
        contextvars.Context().run(body)


def test_a_context_that_cannot_be_rebuilt_is_a_graph_break():
    def f(x):
        V.set(8)
        return x + 1, contextvars.copy_context()
    for fn in (f, bytegraph.compile(f)):
        def body():
            V.set(7)
            out, ctx = fn(torch.ones(2))
            torch.testing.assert_close(out, torch.full((2,), 2.0))
            assert dict(ctx) == {V: 8} and V.get() == 8
        contextvars.Context().run(body)
    with pytest.raises(bytegraph.Unsupported, match="reaching code outside the graph"):
        contextvars.copy_context().run(bytegraph.compile(f, fullgraph=True), torch.ones(3))


def test_iterating_a_context_is_a_graph_break():
    def f(x):
        ctx = contextvars.copy_context()
        return x + len(ctx)
    checked(f, torch.ones(3))
    with pytest.raises(bytegraph.Unsupported, match="iterating a Context"):
        bytegraph.compile(f, fullgraph=True)(torch.ones(3))


def test_a_context_from_outside_is_a_graph_break():
    def f(x, ctx):
        return ctx.run(lambda: x * V.get())
    for fn in (f, bytegraph.compile(f)):
        def body():
            V.set(2)
            ctx = contextvars.copy_context()
            V.set(9)
            return fn(torch.ones(2), ctx)
        torch.testing.assert_close(contextvars.Context().run(body), torch.full((2,), 2.0))


# ----------------------------------------------------------------------------- the `kernels` pattern


class WrappedContextVar:
    """A Python wrapper whose get/set/reset call a ContextVar's (as `kernels`'
    CompileableContextVar outside torch.compile)."""

    def __init__(self, name):
        self.context_var = contextvars.ContextVar(name, default=None)

    def get(self):
        return self.context_var.get()

    def set(self, value):
        return self.context_var.set(value)

    def reset(self, token):
        self.context_var.reset(token)


ACTIVE = WrappedContextVar("ACTIVE")


def routed(fn):
    """`kernels`' `use_kernelized_func`: the forward runs with a dict of active functions set."""
    def decorate(cls):
        orig_forward = cls.forward

        def new_forward(self, *args, **kwargs):
            active = dict(ACTIVE.get() or {})
            active[fn.__name__] = (self, fn)
            token = ACTIVE.set(active)
            try:
                return orig_forward(self, *args, **kwargs)
            finally:
                ACTIVE.reset(token)
        cls.forward = new_forward
        return cls
    return decorate


def act(x):
    found = (ACTIVE.get() or {}).get("act")
    return torch.relu(x) if found is None else torch.relu(x) * 2


@routed(act)
class Inner(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return act(self.lin(x))


@routed(act)
class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.inner = Inner()
        self.lin = nn.Linear(4, 4)

    def forward(self, x):
        return self.lin(self.inner(x)) + act(x)


def test_kernels_pattern_is_one_graph():
    torch.manual_seed(0)
    model = Outer()
    check(lambda x: model(x), torch.randn(2, 4, requires_grad=True), fullgraph=True, graphs=1,
          state=lambda: ACTIVE.get())


def test_kernels_pattern_with_a_break_inside():
    def act_breaking(x):
        print("inside")
        return act(x)

    @routed(act_breaking)
    class Layer(nn.Module):
        def forward(self, x):
            return act_breaking(x) + 1

    model = Layer()
    check(lambda x: model(x), torch.randn(2, 4), state=lambda: ACTIVE.get())


def test_kernels_layer_of_the_installed_package():
    """The real `kernels` wrapper (transformers >= 5.25 wraps hub-kernel layers with it):
    correct, whatever it breaks on (it keys a dict by `id()` of a function)."""
    layer = pytest.importorskip("kernels._internals.layer.layer")

    @layer.use_kernel_forward_from_hub("BgTestIdentity")
    def identity(x):
        return x

    @layer.use_kernelized_func(identity)
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 4)

        def forward(self, x):
            return identity(self.lin(x)) * 2

    model = Model()
    check(lambda x: model(x), torch.randn(2, 4), state=lambda: layer._ACTIVE_KERNEL_FUNCS.get())
