"""Closures and callables as values: closures over outer
frames' cells, lambdas, `functools.partial`, `functools.wraps` decorators, bound methods,
staticmethods and classmethods passed around, callables returned and escaping; closure
cells changed between calls recompile, named in the `recompiles` log (eager vs compiled).

Functions returned by the compiled function are compared by calling them (a closure made
anew by each run is a different object in eager and compiled runs).
"""
import functools
import os

import pytest
import torch

import bytegraph
from helpers import assert_same, check, compile_counted, line_of

HERE = os.path.abspath(__file__)


def T(*shape, grad=False):
    return torch.randn(*shape, requires_grad=grad)


def same_calls(fe, fc, *args, what="returned callable"):
    """The two callables (eager's and compiled's result) agree on `args`."""
    assert_same(fe(*args), fc(*args), what)


# =========================================================================== closures over outer frames


def make_scaler(k):
    def scale(x):
        return x * k

    return scale


def make_counter():
    count = 0

    def bump(x):
        nonlocal count
        count += 1
        return x * count

    def get():
        return count

    return bump, get


def test_inlined_closure_over_outer_int_cell():
    triple = make_scaler(3)
    check(lambda x: triple(x) + 1, T(3, grad=True), graphs=1, fullgraph=True)


def test_inlined_closure_over_outer_tensor_cell():
    w = T(3, grad=True)
    scale_w = make_scaler(w)
    check(lambda x: scale_w(x).sum(), T(3, grad=True), graphs=1, fullgraph=True)


def test_nonlocal_write_to_outer_cell_through_inlined_closure():
    bump_e, get_e = make_counter()
    bump_c, get_c = make_counter()

    def run(bump):
        return lambda x: bump(x) + bump(x)

    cf = bytegraph.compile(run(bump_c))
    x = T(3)
    for i in range(3):
        assert_same(run(bump_e)(x), cf(x), f"call {i}")
        assert get_e() == get_c(), (get_e(), get_c())


def test_nonlocal_write_in_compiled_closure_itself():
    bump_e, get_e = make_counter()
    bump_c, get_c = make_counter()
    cf, cnt = compile_counted(bump_c)
    x = T(2)
    for i in range(3):
        assert_same(bump_e(x), cf(x), f"call {i}")
    assert get_e() == get_c() == 3


def test_two_levels_of_outer_cells():
    def outer(a):
        def middle(b):
            def inner(x):
                return x * a + b

            return inner

        return middle(a + 1)

    fn = outer(2)
    check(lambda x: fn(x), T(3), graphs=1, fullgraph=True)


def test_closure_reads_outer_cell_written_later_in_frame():
    def f(x):
        k = 1

        def g(t):
            return t * k

        k = 4
        out = g(x)
        k = 7
        return out + g(x)

    check(f, T(3), graphs=1, fullgraph=True)


def test_nonlocal_counter_in_frame_shared_by_two_closures():
    def f(x):
        n = 0

        def inc():
            nonlocal n
            n += 1

        def get():
            return n

        inc()
        inc()
        return x * get()

    check(f, T(3), graphs=1, fullgraph=True)


def test_closure_over_list_appended_through_cell():
    def f(x):
        acc = []

        def push(t):
            acc.append(t)

        push(x)
        push(x * 2)
        return acc

    check(f, T(3, grad=True), graphs=1, fullgraph=True)


def test_closure_cell_deleted_raises_like_eager():
    def f(x):
        k = 1

        def g():
            return k  # noqa: F821  (deleted below: NameError, like eager)

        del k
        return x * g()

    check(f, T(2))


def test_cell_contents_read_through_closure_after_nonlocal_write():
    bump_e, get_e = make_counter()
    bump_c, get_c = make_counter()

    def run(bump):
        def f(x):
            bump(x)
            return x * bump.__closure__[0].cell_contents

        return f

    cf = bytegraph.compile(run(bump_c), fullgraph=True)
    x = T(2)
    for i in range(3):
        assert_same(run(bump_e)(x), cf(x), f"call {i}")
    assert get_e() == get_c() == 3


def test_cell_contents_written_through_closure_attribute():
    bump_e, get_e = make_counter()
    bump_c, get_c = make_counter()

    def run(bump):
        def f(x):
            bump.__closure__[0].cell_contents = 10
            return bump(x)

        return f

    cf = bytegraph.compile(run(bump_c), fullgraph=True)
    x = T(2)
    assert_same(run(bump_e)(x), cf(x), "result")
    assert get_e() == get_c() == 11


def test_closure_of_function_made_inside():
    def f(x):
        k = 3

        def g(t):
            return t * k

        cell = g.__closure__[0]
        cell.cell_contents = 5
        return g(x), k, len(g.__closure__)

    check(f, T(3), graphs=1, fullgraph=True)


# =========================================================================== lambdas and higher-order code


def test_lambda_passed_as_argument():
    check(lambda fn, x: fn(x) + 1, lambda t: t.sin(), T(3, grad=True), graphs=1, fullgraph=True)


def test_lambda_list_from_global():
    check(lambda x: [fn(x) for fn in ACTIVATIONS], T(3), graphs=1, fullgraph=True)


ACTIVATIONS = [torch.relu, lambda t: t * 2, make_scaler(0.5), torch.sigmoid]
DISPATCH = {"sin": torch.sin, "double": lambda t: t * 2, "third": make_scaler(1 / 3)}


def test_dict_of_callables_from_global():
    check(lambda x, key: DISPATCH[key](x), T(3), "double", graphs=1, fullgraph=True)
    check(lambda x: {k: fn(x) for k, fn in DISPATCH.items()}, T(3), graphs=1, fullgraph=True)


def test_map_filter_sorted_with_lambdas():
    def f(x):
        ys = list(map(lambda t: t * 2, [x, x + 1]))
        ks = sorted([3, 1, 2], key=lambda v: -v)
        return ys, ks

    check(f, T(3), graphs=1, fullgraph=True)


def test_functools_reduce_with_lambda():
    check(lambda x: functools.reduce(lambda a, b: a * b + 1, [x, x, x]), T(3, grad=True), graphs=1, fullgraph=True)


def test_compose_returns_new_callable_used_inside():
    def compose(*fns):
        def run(x):
            for fn in reversed(fns):
                x = fn(x)
            return x

        return run

    check(lambda x: compose(torch.sin, lambda t: t + 1, make_scaler(2))(x), T(3, grad=True), graphs=1, fullgraph=True)


def test_recursive_closure():
    def f(x, n):
        def walk(t, k):
            return t if k == 0 else walk(t * 2, k - 1)

        return walk(x, n)

    check(f, T(3), 4, graphs=1, fullgraph=True)


def test_callable_object_passed_in():
    class Affine:
        def __init__(self, a, b):
            self.a, self.b = a, b

        def __call__(self, x):
            return x * self.a + self.b

    check(lambda fn, x: fn(x) + fn(fn(x)), Affine(2.0, 1.0), T(3), graphs=1, fullgraph=True)


def test_callable_returned_from_function_and_called():
    def pick(name):
        if name == "neg":
            return lambda t: -t
        return make_scaler(10)

    check(lambda x: pick("neg")(x) + pick("other")(x), T(3), graphs=1, fullgraph=True)


# =========================================================================== functools.partial


def scaled_add(x, y, scale=1.0, *, bias=0.0):
    return (x + y) * scale + bias


def test_partial_of_user_function():
    check(lambda x: functools.partial(scaled_add, x, scale=2.0)(x * 3), T(3, grad=True), graphs=1, fullgraph=True)


def test_partial_of_torch_function():
    def f(x):
        clamp = functools.partial(torch.clamp, min=-0.5)
        return clamp(x, max=0.5) + functools.partial(torch.add, alpha=2)(x, x)

    check(f, T(4), graphs=1, fullgraph=True)


def test_nested_partials():
    def f(x):
        p = functools.partial(scaled_add, scale=3.0)
        q = functools.partial(p, x)
        r = functools.partial(q, bias=1.0)
        return r(x), r(x, scale=0.5)

    check(f, T(3), graphs=1, fullgraph=True)


def test_partial_keywords_overridden_at_call():
    def f(x):
        p = functools.partial(scaled_add, bias=5.0, scale=2.0)
        return p(x, x, bias=-1.0)

    check(f, T(3), graphs=1, fullgraph=True)


PARTIALS = [functools.partial(scaled_add, scale=2.0), functools.partial(torch.mul, other=3.0)]


def test_partials_from_global_list():
    check(lambda x: PARTIALS[0](x, x) + PARTIALS[1](x), T(3), graphs=1, fullgraph=True)


def test_partial_passed_in_with_tensor_argument():
    w = T(3, grad=True)
    check(lambda p, x: p(x), functools.partial(scaled_add, w, bias=1.0), T(3, grad=True), graphs=1, fullgraph=True)


def test_partial_attributes_read():
    p = functools.partial(scaled_add, 1.0, scale=4.0)
    check(lambda x: x * p.keywords["scale"] + p.args[0] + (p.func is scaled_add), T(3), graphs=1, fullgraph=True)


def test_partial_of_lambda_and_of_bound_method():
    class Box:
        def __init__(self, k):
            self.k = k

        def mul(self, x, extra=0):
            return x * self.k + extra

    def f(b, x):
        return functools.partial(lambda a, c: a - c, c=1)(x) + functools.partial(b.mul, extra=2)(x)

    check(f, Box(3), T(3), graphs=1, fullgraph=True)


def test_partial_made_inside_and_returned():
    def f(x):
        return functools.partial(scaled_add, x * 2, scale=3.0)

    x = T(3)
    pe, pc = f(x), bytegraph.compile(f)(x)
    assert pc.func is scaled_add and pc.keywords == {"scale": 3.0}
    same_calls(pe, pc, torch.ones(3))


def test_global_partial_replaced_recompiles(monkeypatch):
    monkeypatch.setitem(globals(), "PARTIALS", list(PARTIALS))

    def f(x):
        return PARTIALS[0](x, x)

    cf, cnt = compile_counted(f)
    x = T(3)
    assert_same(f(x), cf(x), "first")
    PARTIALS[0] = functools.partial(scaled_add, scale=-1.0)
    assert_same(f(x), cf(x), "after replacing the partial")
    assert cnt.frame_count == 2


# =========================================================================== functools.wraps decorators


def logged(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs) + 1

    return wrapper


def repeat(n):
    def deco(fn):
        @functools.wraps(fn)
        def wrapper(x):
            for _ in range(n):
                x = fn(x)
            return x

        return wrapper

    return deco


@logged
def decorated(x, k=2):
    return x * k


@repeat(3)
@logged
def stacked(x):
    return x * 2


def test_wraps_decorated_function_called():
    check(lambda x: decorated(x) + decorated(x, k=5), T(3, grad=True), graphs=1, fullgraph=True)


def test_stacked_decorators_with_arguments():
    check(lambda x: stacked(x), T(3), graphs=1, fullgraph=True)


def test_calling_through_wrapped():
    check(lambda x: decorated.__wrapped__(x) + stacked.__wrapped__.__wrapped__(x), T(3), graphs=1, fullgraph=True)


def test_wrapper_metadata_read():
    def f(x):
        assert decorated.__name__ == "decorated" and decorated.__qualname__ == "decorated"
        return x * len(decorated.__name__)

    check(f, T(3), graphs=1, fullgraph=True)


def test_decorator_applied_inside_compiled_function():
    def f(x):
        @logged
        def inner(t):
            return t * 3

        return inner(x) + len(inner.__name__)

    check(f, T(3), graphs=1, fullgraph=True)


def test_decorated_closure_returned_keeps_metadata():
    def f(x):
        @logged
        def inner(t):
            return t * x

        return inner

    x = T(3)
    ie, ic = f(x), bytegraph.compile(f)(x)
    assert ic.__name__ == ie.__name__ == "inner"
    assert ic.__wrapped__.__name__ == "inner"
    same_calls(ie, ic, torch.ones(3))


def test_function_attributes_set_and_read_inside():
    def f(x):
        def g(t):
            return t * 2

        g.calls = 3
        g.__doc__ = "doubles"
        return g(x) * g.calls, g.__doc__, hasattr(g, "calls"), hasattr(g, "missing"), g.__dict__

    check(f, T(3), graphs=1, fullgraph=True)


def test_function_with_attributes_escapes():
    def f(x):
        def g(t: torch.Tensor, k: int = 2) -> torch.Tensor:
            """Scales."""
            return t * k

        g.tag = x.shape[0]
        g.__name__ = "renamed"
        return g

    x = T(3)
    ge, gc = f(x), bytegraph.compile(f)(x)
    for attr in ("__name__", "__qualname__", "__doc__", "__module__", "__annotations__", "__dict__", "__defaults__"):
        assert getattr(gc, attr) == getattr(ge, attr), (attr, getattr(gc, attr), getattr(ge, attr))
    same_calls(ge, gc, torch.ones(3))


def test_missing_function_attribute_raises_like_eager():
    def f(x):
        def g(t):
            return t

        return g(x), g.nothing

    check(f, T(3))


def test_wraps_applied_to_global_function_inside():
    def f(x):
        wrapped = logged(scaled_add)
        return wrapped(x, x, bias=1.0), wrapped.__name__, wrapped.__wrapped__ is scaled_add

    check(f, T(3), graphs=1, fullgraph=True)


# =========================================================================== methods as values


class Calc:
    def __init__(self, k):
        self.k = k

    def mul(self, x):
        return x * self.k

    def add(self, x, y=1):
        return x + self.k + y

    @staticmethod
    def neg(x):
        return -x

    @staticmethod
    def sq(x):
        return x * x

    @classmethod
    def make(cls, k):
        return cls(k)

    @classmethod
    def kind(cls):
        return cls.__name__


def apply_all(fns, x):
    return [fn(x) for fn in fns]


def test_bound_methods_in_list():
    def f(c, x):
        fns = [c.mul, c.add, Calc.neg]
        return [fn(x) for fn in fns]

    check(f, Calc(3), T(3), graphs=1, fullgraph=True)


def test_bound_methods_in_dict():
    def f(c, x):
        ops = {"m": c.mul, "a": c.add}
        return ops["m"](x) + ops["a"](x, y=5)

    check(f, Calc(2), T(3), graphs=1, fullgraph=True)


def test_bound_method_passed_to_another_function():
    check(lambda c, x: apply_all([c.mul, c.add], x), Calc(4), T(3), graphs=1, fullgraph=True)


def test_bound_method_passed_in_as_argument():
    c = Calc(5)
    check(lambda m, x: m(x) * 2, c.mul, T(3, grad=True), graphs=1, fullgraph=True)


def test_bound_method_list_passed_in():
    c = Calc(5)
    check(lambda ms, x: apply_all(ms, x), [c.mul, c.add, Calc(2).mul], T(3), graphs=1, fullgraph=True)


def test_classmethod_objects_passed_in():
    check(lambda ms, x: [m(2).mul(x) for m in ms], [Calc.make, Calc(1).make], T(3), graphs=1, fullgraph=True)


def test_bound_method_of_nn_module_returned():
    lin = torch.nn.Linear(3, 3)

    def f(x):
        return lin.forward, lin(x)

    r = check(f, T(2, 3), graphs=1, fullgraph=True)
    assert r.compiled.out[0].__self__ is lin


def test_bound_method_returned_from_inlined_function():
    def pick(c, name):
        return c.mul if name == "mul" else c.add

    check(lambda c, x: pick(c, "mul")(x) + pick(c, "add")(x), Calc(3), T(3), graphs=1, fullgraph=True)


def test_bound_method_returned_from_compiled_function():
    def f(c, x):
        c.k = c.k + 1
        return c.mul

    ce, cc = Calc(2), Calc(2)
    me, mc = f(ce, T(3)), bytegraph.compile(f)(cc, T(3))
    assert mc.__self__ is cc and mc.__func__ is Calc.mul
    same_calls(me, mc, torch.ones(3))


def test_methods_of_every_kind_returned():
    def f(c, x):
        return x * 2, Calc.make, c.make, Calc.neg, c.neg, Calc(3).mul, c.add

    check(f, Calc(2), T(3), graphs=1, fullgraph=True)


def test_one_bound_method_returned_twice_is_one_object():
    def f(c, x):
        m = c.mul
        return m, m, c.mul, m(x)

    r = check(f, Calc(2), T(3), graphs=1, fullgraph=True)
    out = r.compiled.out
    assert out[0] is out[1] and out[0] is not out[2]


def test_method_object_passed_in_is_returned_itself():
    def f(ms, x):
        return ms[0], ms[0](x)

    c = Calc(2)
    r = check(f, [c.mul], T(3), graphs=1, fullgraph=True)
    assert r.compiled.out[0] is r.compiled.args[0][0][0]


def test_partial_and_bound_method_escape_into_argument_list():
    def f(out, c, x):
        out.append(functools.partial(scaled_add, x * 2, bias=1.0))
        out.append(Calc(4).mul)
        out.append(c.mul)
        return x + 1

    r = check(f, [], Calc(3), T(3), graphs=1, fullgraph=True)
    stored = r.compiled.args[0][0]
    assert_same(r.eager.args[0][0][0](torch.ones(3)), stored[0](torch.ones(3)), "stored partial called")
    assert stored[2].__self__ is r.compiled.args[0][1]


def test_bound_method_of_nn_module_as_value():
    lin = torch.nn.Linear(3, 3)

    def f(x):
        fwd = lin.forward
        return apply_all([fwd, lin], x)

    check(f, T(2, 3), graphs=1, fullgraph=True)


def test_getattr_method_by_name():
    check(lambda c, x, name: getattr(c, name)(x), Calc(3), T(3), "add", graphs=1, fullgraph=True)


def test_unbound_function_from_class_called_with_instance():
    check(lambda c, x: Calc.mul(c, x) + type(c).add(c, x), Calc(3), T(3), graphs=1, fullgraph=True)


def test_staticmethods_in_dict_from_class_dict():
    table = {name: Calc.__dict__[name] for name in ("neg", "sq")}

    def f(x):
        return [table[name](x) for name in ("neg", "sq")]

    check(f, T(3, grad=True), graphs=1, fullgraph=True)


def test_staticmethod_objects_in_list_built_inside():
    def f(x):
        fns = [Calc.__dict__["neg"], Calc.__dict__["sq"]]
        return [fn(x) for fn in fns]

    check(f, T(3), graphs=1, fullgraph=True)


def test_staticmethod_through_instance_and_class():
    check(lambda c, x: c.neg(x) + Calc.sq(x) + apply_all([c.sq], x)[0], Calc(1), T(3), graphs=1, fullgraph=True)


def test_classmethod_called_and_passed_around():
    def f(c, x):
        make = Calc.make
        other = make(5)
        fns = [c.make, Calc.make]
        return other.mul(x) + fns[0](2).mul(x) + fns[1](3).add(x), c.kind()

    check(f, Calc(1), T(3), graphs=1, fullgraph=True)


def test_classmethod_of_subclass_binds_subclass():
    class Sub(Calc):
        pass

    check(lambda x: (Sub.kind(), Sub.make(2).mul(x), Sub(1).kind()), T(3), graphs=1, fullgraph=True)


# =========================================================================== closures escaping


def test_returned_closure_shares_cell_with_later_calls():
    def f(x):
        total = x * 0

        def add(t):
            nonlocal total
            total = total + t
            return total

        add(x)
        return add

    ae, ac = f(torch.ones(3)), bytegraph.compile(f)(torch.ones(3))
    for i in range(3):
        same_calls(ae, ac, torch.full((3,), float(i)), what=f"returned add, call {i}")
    assert_same(ae.__closure__[0].cell_contents, ac.__closure__[0].cell_contents, "the escaped cell")


def test_returned_pair_of_closures_share_one_real_cell():
    def f(x):
        n = 1

        def inc():
            nonlocal n
            n += 1

        def scale(t):
            return t * n

        inc()
        return inc, scale, x * n

    inc_e, sc_e, oe = f(T(2))
    inc_c, sc_c, oc = bytegraph.compile(f)(T(2))
    assert inc_c.__closure__[0] is sc_c.__closure__[0]
    inc_e()
    inc_c()
    same_calls(sc_e, sc_c, torch.ones(2))


REGISTRY = []


def test_closure_escapes_into_global_list(monkeypatch):
    monkeypatch.setitem(globals(), "REGISTRY", [])

    def f(x):
        k = x.shape[0]
        REGISTRY.append(lambda t: t * k)
        return x + 1

    cf = bytegraph.compile(f)
    x = T(3)
    assert_same(f(x), cf(x), "result")
    assert len(REGISTRY) == 2
    same_calls(REGISTRY[0], REGISTRY[1], torch.ones(2), what="registered closures")


def test_closure_escapes_into_attribute_of_argument():
    class Holder:
        pass

    def f(h, x):
        y = x * 2
        h.fn = lambda t: t + y
        return h.fn(x)

    he, hc = Holder(), Holder()
    x = T(3)
    assert_same(f(he, x), bytegraph.compile(f)(hc, x), "result")
    same_calls(he.fn, hc.fn, torch.ones(3))


def test_closure_returned_over_outer_cell_of_compiled_function():
    bump_e, get_e = make_counter()
    bump_c, get_c = make_counter()

    def mk(bump):
        def f(x):
            bump(x)
            return lambda: bump(x)

        return f

    fe, fc = mk(bump_e), bytegraph.compile(mk(bump_c))
    x = T(2)
    re, rc = fe(x), fc(x)
    same_calls(re, rc)
    same_calls(re, rc)
    assert get_e() == get_c() == 3


def _inc_then_get(x, fns):
    fns[0]()
    return x * fns[1]()


def test_cells_shared_at_trace_then_distinct():
    # inc and get share one cell when traced; later calls pass closures over distinct cells
    cf = bytegraph.compile(_inc_then_get)
    x = T(2)
    for i, shared in enumerate((True, False, True, False)):
        pairs_e = [make_counter_pair(), make_counter_pair()]
        pairs_c = [make_counter_pair(), make_counter_pair()]

        def fns(pairs):
            return [pairs[0][0], pairs[0][1] if shared else pairs[1][1]]

        assert_same(_inc_then_get(x, fns(pairs_e)), cf(x, fns(pairs_c)), f"call {i} (shared={shared})")


def test_cells_distinct_at_trace_then_shared():
    cf = bytegraph.compile(_inc_then_get)
    x = T(2)
    for i, shared in enumerate((False, True, False, True)):
        pairs_e = [make_counter_pair(), make_counter_pair()]
        pairs_c = [make_counter_pair(), make_counter_pair()]

        def fns(pairs):
            return [pairs[0][0], pairs[0][1] if shared else pairs[1][1]]

        assert_same(_inc_then_get(x, fns(pairs_e)), cf(x, fns(pairs_c)), f"call {i} (shared={shared})")


def make_counter_pair():
    n = 0

    def inc():
        nonlocal n
        n += 1

    def get():
        return n

    return inc, get


# =========================================================================== closure cells changed between calls


def make_root_closure():
    k = 3

    def f(x):
        return x * k  # CELL-ROOT

    def set_k(v):
        nonlocal k
        k = v

    return f, set_k


def test_root_closure_cell_changed_recompiles_and_log_names_it(recompile_log):
    f, set_k = make_root_closure()
    cf, cnt = compile_counted(f)
    x = T(3)
    assert_same(f(x), cf(x), "first")
    set_k(5)
    assert_same(f(x), cf(x), "after k = 5")
    assert cnt.frame_count == 2
    text = recompile_log.text()
    assert "closure variable k == 3" in text, text
    assert f"{HERE}:{line_of('# CELL-ROOT', HERE)}" in text, text
    assert_same(f(x), cf(x), "third call")
    assert cnt.frame_count == 2


def make_helper_closure():
    k = 2

    def helper(t):
        return t + k  # CELL-HELPER

    def set_k(v):
        nonlocal k
        k = v

    return helper, set_k


def test_inlined_helper_closure_cell_changed_recompiles_and_log_names_it(recompile_log):
    helper, set_k = make_helper_closure()

    def f(x):
        return helper(x) * 2

    cf, cnt = compile_counted(f)
    x = T(3)
    assert_same(f(x), cf(x), "first")
    set_k(-4)
    assert_same(f(x), cf(x), "after the helper's k = -4")
    assert cnt.frame_count == 2
    text = recompile_log.text()
    assert "closure variable k of closure variable helper == 2" in text, text
    assert f"{HERE}:{line_of('# CELL-HELPER', HERE)}" in text, text


def test_closure_cell_tensor_replaced_between_calls():
    w = torch.ones(3)

    def f(x):
        return x * w

    cf, cnt = compile_counted(f)
    x = T(3)
    assert_same(f(x), cf(x), "first")
    w = torch.full((3,), 2.0)  # noqa: F841  (read through the cell)
    assert_same(f(x), cf(x), "same metadata, new values")
    assert cnt.frame_count == 1
    w = torch.ones(4)  # noqa: F841
    with pytest.raises(RuntimeError):
        f(x)
    with pytest.raises(RuntimeError):
        cf(x)


def test_closure_cell_function_rebound_between_calls():
    act = torch.relu

    def f(x):
        return act(x) + 1

    cf, cnt = compile_counted(f)
    x = T(3)
    assert_same(f(x), cf(x), "first")
    act = torch.tanh  # noqa: F841
    assert_same(f(x), cf(x), "after act = torch.tanh")
    assert cnt.frame_count == 2


def test_unused_closure_cell_change_does_not_recompile():
    mode = "a"
    unused = 1

    def f(x):
        if mode == "a":
            return x + 1
        return x + unused

    cf, cnt = compile_counted(f)
    x = T(3)
    assert_same(f(x), cf(x), "first")
    unused = 2  # noqa: F841
    assert_same(f(x), cf(x), "a cell the trace never read changed")
    assert cnt.frame_count == 1


def test_closure_over_unsupported_value_not_read_does_not_break():
    table = {(1, 2): "tuple keys are not traced"}

    def f(x, use):
        if use:
            return x, len(table)
        return x + 1

    check(f, T(3), False, graphs=1, fullgraph=True)



def _plain_function():
    return 1


def test_type_params_of_functions_read_and_written():
    # PEP 695's `__type_params__` (3.12+, copied by functools.update_wrapper); on 3.11 the read
    # of an outside function's raises AttributeError, eagerly and compiled alike
    def f(x):
        def inner():
            return 2

        inner.__type_params__ = ()
        return x + len(inner.__type_params__) + len(_plain_function.__type_params__)

    check(f, torch.randn(2))


def test_type_params_set_to_a_non_tuple_raises_as_eager():
    def f(x):
        def inner():
            return 2

        inner.__type_params__ = [int]
        return x + len(inner.__type_params__)

    check(f, torch.randn(2))
