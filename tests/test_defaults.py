"""Default arguments: inlined functions and methods with
defaults of every kind, keyword-only defaults, mutable defaults mutated on the real
default object, and `__defaults__`/`__kwdefaults__` changed after compiling (eager vs
compiled; recompiles named in the `recompiles` log)."""
import collections
import functools
import os
import types

import pytest
import torch

import bytegraph
from helpers import assert_same, check, compile_counted, line_of

HERE = os.path.abspath(__file__)


def T(*shape, grad=False):
    return torch.randn(*shape, requires_grad=grad)


# =========================================================================== helpers with defaults

W_DEFAULT = torch.randn(3, requires_grad=True)
LIN = torch.nn.Linear(3, 2)
Pair = collections.namedtuple("Pair", "a b")


def scaled(x, s=2):
    return x * s


def maybe_add(x, y=None):
    if y is None:
        return x * 3
    return x + y


def with_tuple(x, ks=(1, 2, 3)):
    return [x * k for k in ks]


def with_tensor(x, w=W_DEFAULT):
    return x * w


def with_list(x, ks=[1.0, 2.0]):  # noqa: B006  (read only)
    return x * ks[0] + ks[1]


def appends(x, log=[]):  # noqa: B006  (the point: a mutable default that grows)
    log.append(x.shape[0])
    return x * len(log)


def counts(x, seen={}):  # noqa: B006
    seen[len(seen)] = x.shape[0]
    return x + len(seen)


def with_module(x, layer=LIN):
    return layer(x)


def with_torch_fn(x, act=torch.tanh):
    return act(x)


def _double(t):
    return t * 2


def with_user_fn(x, fn=_double):
    return fn(x) + 1


def with_mode(x, mode="sum"):
    if mode == "sum":
        return x.sum()
    return x.mean()


def kwonly(x, *, alpha=0.5, beta=2):
    return x * alpha + beta


def kwonly_required_and_default(x, *, scale, shift=1.0):
    return x * scale + shift


def everything(a, b=2, *args, c=3, d=None, **kwargs):
    out = a * b + c
    if d is not None:
        out = out - d
    for v in args:
        out = out + v
    for k in sorted(kwargs):
        out = out * kwargs[k]
    return out


def with_namedtuple(x, p=Pair(2, 3)):
    return x * p.a + p.b


def with_float_and_bool(x, eps=1e-3, neg=False):
    y = x + eps
    return -y if neg else y


class Config:
    def __init__(self):
        self.scale = 4


CFG = Config()


def with_object(x, cfg=CFG):
    return x * cfg.scale


# =========================================================================== defaults of every kind


def test_int_default_used():
    check(lambda x: scaled(x), T(3, grad=True), graphs=1, fullgraph=True)


def test_int_default_overridden_positionally_and_by_keyword():
    check(lambda x: scaled(x, 5) + scaled(x, s=7), T(3, grad=True), graphs=1, fullgraph=True)


def test_none_default_and_passed_value():
    check(lambda x: maybe_add(x) + maybe_add(x, x * 2), T(3, grad=True), graphs=1, fullgraph=True)


def test_tuple_default_iterated():
    check(lambda x: with_tuple(x), T(2), graphs=1, fullgraph=True)


def test_tensor_default_is_a_graph_input():
    r = check(lambda x: with_tensor(x), T(3, grad=True), graphs=1, fullgraph=True)
    assert any(t is W_DEFAULT for t in r.counter.example_inputs[0]), "the default tensor is a graph input"


def test_tensor_default_gets_gradient():
    W_DEFAULT.grad = None

    def f(x):
        with_tensor(x).sum().backward()
        return W_DEFAULT.grad.clone()

    x = T(3)
    expected = f(x)
    W_DEFAULT.grad = None
    got = bytegraph.compile(f)(x)
    W_DEFAULT.grad = None
    assert_same(expected, got, "grad of the default tensor")


def test_list_default_read():
    check(lambda x: with_list(x), T(3), graphs=1, fullgraph=True)


def test_module_default():
    check(lambda x: with_module(x).relu(), T(4, 3, grad=True), graphs=1, fullgraph=True)


def test_torch_function_default():
    check(lambda x: with_torch_fn(x) + with_torch_fn(x, torch.sigmoid), T(3, grad=True), graphs=1, fullgraph=True)


def test_user_function_default():
    check(lambda x: with_user_fn(x) + with_user_fn(x, lambda t: t - 1), T(3), graphs=1, fullgraph=True)


def test_string_default_steers_control_flow():
    check(lambda x: (with_mode(x), with_mode(x, "mean")), T(3, grad=True), graphs=1, fullgraph=True)


def test_float_and_bool_defaults():
    check(lambda x: with_float_and_bool(x) + with_float_and_bool(x, neg=True), T(3), graphs=1, fullgraph=True)


def test_namedtuple_default():
    check(lambda x: with_namedtuple(x) + with_namedtuple(x, Pair(1, 0)), T(3), graphs=1, fullgraph=True)


def test_user_object_default():
    check(lambda x: with_object(x), T(3), graphs=1, fullgraph=True)


def test_keyword_only_defaults():
    check(lambda x: kwonly(x) + kwonly(x, beta=5) + kwonly(x, alpha=x, beta=x), T(3, grad=True),
          graphs=1, fullgraph=True)


def test_keyword_only_required_and_default():
    check(lambda x: kwonly_required_and_default(x, scale=3) + kwonly_required_and_default(x, scale=1, shift=0),
          T(3), graphs=1, fullgraph=True)


def test_keyword_only_required_missing_raises_like_eager():
    check(lambda x: kwonly_required_and_default(x + 1), T(3))


def test_all_parameter_kinds_with_defaults():
    def f(x):
        return (everything(x) + everything(x, 3) + everything(x, 1, x, x, c=0, d=x)
                + everything(x, d=1.0, z=2, y=3))

    check(f, T(3, grad=True), graphs=1, fullgraph=True)


def test_defaults_through_star_args_and_kwargs_splat():
    def f(x):
        args = (x,)
        kwargs = {"alpha": 3}
        return kwonly(*args, **kwargs) + scaled(*args)

    check(f, T(3), graphs=1, fullgraph=True)


def test_default_of_function_in_other_module():
    from support import other_module

    check(lambda x: other_module.affine(x) + other_module.affine(x, 3, bias=0.0), T(3), graphs=1, fullgraph=True)


# =========================================================================== mutable defaults


def _appends_state():
    return list(appends.__defaults__[0])


def test_mutable_default_list_appended_mutates_real_default():
    appends.__defaults__[0].clear()
    before = appends.__defaults__[0]
    check(lambda x: appends(x), T(3), graphs=1, fullgraph=True,
          setup=appends.__defaults__[0].clear, state=_appends_state)
    assert appends.__defaults__[0] is before, "the default list object itself is kept"


def test_mutable_default_list_grows_across_calls():
    # eager and compiled each get their own copy of `appends` (and of its default list)
    ae, ac = _fresh(appends), _fresh(appends)
    ae.__defaults__, ac.__defaults__ = ([],), ([],)

    def calling(fn):
        return lambda x: fn(x) * 2 + fn(x + 1)

    cf, cnt = compile_counted(calling(ac))
    x = T(3)
    for i in range(3):
        assert_same(calling(ae)(x), cf(x), f"call {i}")
        assert_same(ae.__defaults__[0], ac.__defaults__[0], f"the default list after call {i}")
    assert len(ac.__defaults__[0]) == 6


def test_mutable_default_dict_mutated():
    counts.__defaults__[0].clear()
    check(lambda x: counts(x) + counts(x), T(2), graphs=1, fullgraph=True,
          setup=counts.__defaults__[0].clear, state=lambda: dict(counts.__defaults__[0]))


def root_appends(x, acc=[]):  # noqa: B006
    acc.append(x.shape[0])
    return x * len(acc)


def test_mutable_default_of_root_function_mutated():
    fe, fc = _fresh(root_appends), _fresh(root_appends)
    fe.__defaults__, fc.__defaults__ = ([],), ([],)
    default = fc.__defaults__[0]
    cf, cnt = compile_counted(fc)
    x = T(3)
    for i in range(3):
        assert_same(fe(x), cf(x), f"call {i}")
        assert_same(fe.__defaults__[0], fc.__defaults__[0], f"the default list after call {i}")
    assert fc.__defaults__[0] is default and len(default) == 3


def kw_appends(x, *, acc=[]):  # noqa: B006
    acc.append(len(acc))
    return x + len(acc)


def test_mutable_keyword_only_default_mutates_real_default():
    kw_appends.__kwdefaults__["acc"].clear()
    check(lambda x: kw_appends(x) * kw_appends(x), T(3), graphs=1, fullgraph=True,
          setup=kw_appends.__kwdefaults__["acc"].clear, state=lambda: list(kw_appends.__kwdefaults__["acc"]))


def test_mutable_default_passed_explicitly_is_not_the_default():
    appends.__defaults__[0].clear()

    def f(x, mine):
        return appends(x, mine) + appends(x)

    check(f, T(3), [], graphs=1, fullgraph=True, setup=appends.__defaults__[0].clear, state=_appends_state)


# =========================================================================== methods, nested functions


class Scaler:
    factor = 3

    def __init__(self, bias=0.5):
        self.bias = bias

    def apply(self, x, times=2, *, extra=0.0):
        return x * self.factor * times + self.bias + extra

    @staticmethod
    def static(x, k=4):
        return x * k

    @classmethod
    def klass(cls, x, k=5):
        return x * cls.factor + k


def test_method_defaults_on_passed_object():
    check(lambda s, x: s.apply(x) + s.apply(x, 1, extra=2.0), Scaler(), T(3, grad=True), graphs=1, fullgraph=True)


def test_constructor_default_for_object_made_inside():
    check(lambda x: Scaler().apply(x) + Scaler(bias=2.0).apply(x), T(3), graphs=1, fullgraph=True)


def test_staticmethod_and_classmethod_defaults():
    check(lambda s, x: s.static(x) + Scaler.static(x, 1) + s.klass(x) + Scaler.klass(x, k=0),
          Scaler(), T(3), graphs=1, fullgraph=True)


def test_nested_function_default_references_local_tensor():
    def f(x):
        w = x * 2

        def g(t, w=w):
            return t + w

        return g(x) + g(x, x)

    check(f, T(3, grad=True), graphs=1, fullgraph=True)


def test_nested_function_default_is_snapshot_not_cell():
    def f(x):
        k = 2

        def g(t, k=k):
            return t * k

        k = 10
        return g(x) + k

    check(f, T(3), graphs=1, fullgraph=True)


def test_lambda_defaults_capture_loop_variable():
    def f(x):
        fns = [lambda t, i=i: t * i for i in range(4)]
        return [fn(x) for fn in fns]

    check(f, T(2), graphs=1, fullgraph=True)


def test_nested_keyword_only_default_from_argument():
    def f(x, n):
        def g(t, *, reps=n):
            return t * reps

        return g(x) + g(x, reps=1)

    check(f, T(3), 3, graphs=1, fullgraph=True)


def test_nested_mutable_default_shared_between_calls_inside():
    def f(x):
        def g(t, acc=[]):  # noqa: B006
            acc.append(t)
            return len(acc)

        return x * (g(x) + g(x) + g(x))

    check(f, T(3), graphs=1, fullgraph=True)


def test_returned_function_with_mutable_default_keeps_it():
    def f(x):
        def g(t, acc=[]):  # noqa: B006
            acc.append(1)
            return t * len(acc)

        g(x)
        return g

    ge, gc = f(T(3)), bytegraph.compile(f)(T(3))
    x = T(3)
    for i in range(3):
        assert_same(ge(x), gc(x), f"returned g, call {i}")
    assert_same(ge.__defaults__, gc.__defaults__, "the escaped default list")


def test_reading_defaults_attributes():
    def f(x):
        return x * scaled.__defaults__[0] + len(kwonly.__kwdefaults__)

    check(f, T(3), graphs=1, fullgraph=True)


def test_partial_of_function_with_defaults():
    def f(x):
        p = functools.partial(everything, c=1)
        return p(x) + p(x, 3, d=2)

    check(f, T(3), graphs=1, fullgraph=True)


# =========================================================================== defaults changed after compiling


def _fresh(fn):
    """A copy of `fn` with its own defaults (so a test can change them freely)."""
    new = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = dict(fn.__kwdefaults__) if fn.__kwdefaults__ else None
    return new


def root_with_default(x, s=2):
    return x * s  # DEF-ROOT


def test_root_defaults_changed_recompiles_and_log_names_default(recompile_log):
    f = _fresh(root_with_default)
    cf, cnt = compile_counted(f)
    x = T(3)
    assert_same(f(x), cf(x), "first")
    f.__defaults__ = (5,)
    assert_same(f(x), cf(x), "after f.__defaults__ = (5,)")
    assert cnt.frame_count == 2
    text = recompile_log.text()
    assert "defaults of root_with_default" in text, text
    assert f"{HERE}:{line_of('# DEF-ROOT', HERE)}" in text, text
    assert_same(f(x), cf(x), "third call, no recompile")
    assert cnt.frame_count == 2


def root_with_kwdefault(x, *, s=2):
    return x * s  # DEF-ROOT-KW


def test_root_kwdefaults_changed_recompiles_and_log_names_default(recompile_log):
    f = _fresh(root_with_kwdefault)
    cf, cnt = compile_counted(f)
    x = T(3)
    assert_same(f(x), cf(x), "first")
    f.__kwdefaults__ = {"s": 7}
    assert_same(f(x), cf(x), "after f.__kwdefaults__ = {'s': 7}")
    assert cnt.frame_count == 2
    text = recompile_log.text()
    assert "defaults of root_with_kwdefault" in text, text
    assert f"{HERE}:{line_of('# DEF-ROOT-KW', HERE)}" in text, text


def helper_with_default(t, s=2):
    return t * s


def calls_helper(x):
    return helper_with_default(x) + 1  # DEF-HELPER


def test_helper_defaults_changed_recompiles_and_log_names_default(recompile_log, monkeypatch):
    monkeypatch.setitem(globals(), "helper_with_default", _fresh(helper_with_default))
    cf, cnt = compile_counted(calls_helper)
    x = T(3)
    assert_same(calls_helper(x), cf(x), "first")
    helper_with_default.__defaults__ = (9,)
    assert_same(calls_helper(x), cf(x), "after helper.__defaults__ = (9,)")
    assert cnt.frame_count == 2
    text = recompile_log.text()
    assert "defaults of global helper_with_default" in text, text
    assert f"{HERE}:{line_of('# DEF-HELPER', HERE)}" in text, text


def helper_with_kwdefault(t, *, s=2):
    return t * s


def calls_kw_helper(x):
    return helper_with_kwdefault(x) + 1  # DEF-HELPER-KW


def test_helper_kwdefaults_changed_recompiles_and_log_names_default(recompile_log, monkeypatch):
    monkeypatch.setitem(globals(), "helper_with_kwdefault", _fresh(helper_with_kwdefault))
    cf, cnt = compile_counted(calls_kw_helper)
    x = T(3)
    assert_same(calls_kw_helper(x), cf(x), "first")
    helper_with_kwdefault.__kwdefaults__ = {"s": -1}
    assert_same(calls_kw_helper(x), cf(x), "after helper.__kwdefaults__ changed")
    assert cnt.frame_count == 2
    text = recompile_log.text()
    assert "defaults of global helper_with_kwdefault" in text, text
    assert f"{HERE}:{line_of('# DEF-HELPER-KW', HERE)}" in text, text


def two_defaults(t, a=1, b=2):
    return t * a + b


def test_helper_defaults_lengthened_shifts_binding(monkeypatch):
    # (1, 2) -> (1, 1, 2) would keep __defaults__[0] == 1, but now `t` has a default too
    # and b == 2 moves: the length of __defaults__ must be guarded, not only the items read.
    monkeypatch.setitem(globals(), "two_defaults", _fresh(two_defaults))

    def f(x):
        return two_defaults(x)

    cf, cnt = compile_counted(f)
    x = T(3)
    assert_same(f(x), cf(x), "first")
    two_defaults.__defaults__ = (1, 2, 10)  # [0] and [1] unchanged, but now a = 2, b = 10
    assert_same(f(x), cf(x), "after __defaults__ got longer")
    assert cnt.frame_count == 2


def test_helper_defaults_removed_raises_like_eager(monkeypatch):
    monkeypatch.setitem(globals(), "helper_with_default", _fresh(helper_with_default))
    cf, cnt = compile_counted(calls_helper)
    x = T(3)
    assert_same(calls_helper(x), cf(x), "first")
    helper_with_default.__defaults__ = None
    with pytest.raises(TypeError):
        calls_helper(x)
    with pytest.raises(TypeError):
        cf(x)


def test_helper_tensor_default_replaced_same_shape_no_recompile(monkeypatch):
    monkeypatch.setitem(globals(), "with_tensor", _fresh(with_tensor))

    def f(x):
        return with_tensor(x)

    cf, cnt = compile_counted(f)
    x = T(3)
    assert_same(f(x), cf(x), "first")
    with_tensor.__defaults__ = (torch.randn(3, requires_grad=True),)
    assert_same(f(x), cf(x), "new tensor, same metadata")
    assert cnt.frame_count == 1
    with_tensor.__defaults__ = (torch.randn(1),)
    assert_same(f(x), cf(x), "new tensor, new shape")
    assert cnt.frame_count == 2


def test_helper_default_list_contents_changed_between_calls(monkeypatch):
    monkeypatch.setitem(globals(), "with_list", _fresh(with_list))

    def f(x):
        return with_list(x)

    cf, cnt = compile_counted(f)
    x = T(3)
    assert_same(f(x), cf(x), "first")
    with_list.__defaults__[0][1] = 100.0
    assert_same(f(x), cf(x), "default list item changed in place")
    with_list.__defaults__[0].append(3.0)
    assert_same(f(x), cf(x), "default list grew")


def test_unused_default_change_does_not_recompile(monkeypatch):
    monkeypatch.setitem(globals(), "helper_with_default", _fresh(helper_with_default))

    def f(x):
        return helper_with_default(x, 3)

    cf, cnt = compile_counted(f)
    x = T(3)
    assert_same(f(x), cf(x), "first")
    helper_with_default.__defaults__ = (11,)
    assert_same(f(x), cf(x), "default not used by the call")
    assert cnt.frame_count == 1


SCALERS = [lambda t, i=i: t * i for i in range(3)]


def test_lambdas_with_same_code_and_other_defaults_swapped(monkeypatch):
    monkeypatch.setitem(globals(), "SCALERS", list(SCALERS))

    def f(x):
        return SCALERS[0](x) + SCALERS[2](x)

    cf, cnt = compile_counted(f)
    x = T(3)
    assert_same(f(x), cf(x), "first")
    SCALERS.reverse()  # same code objects, different defaults
    assert_same(f(x), cf(x), "after swapping the lambdas")
    assert cnt.frame_count == 2


def test_setting_defaults_inside_compiled_function_runs_like_eager(monkeypatch):
    monkeypatch.setitem(globals(), "helper_with_default", _fresh(helper_with_default))

    def f(x):
        y = x * 2
        helper_with_default.__defaults__ = (7,)
        return helper_with_default(y)

    check(f, T(3), setup=lambda: setattr(helper_with_default, "__defaults__", (2,)),
          state=lambda: helper_with_default.__defaults__)


def test_method_default_changed_between_calls():
    class M:
        def run(self, x, k=2):
            return x * k

    def f(m, x):
        return m.run(x)

    cf, cnt = compile_counted(f)
    m, x = M(), T(3)
    assert_same(f(m, x), cf(m, x), "first")
    M.run.__defaults__ = (6,)
    assert_same(f(m, x), cf(m, x), "after M.run.__defaults__ changed")
    assert cnt.frame_count == 2


def test_closure_function_default_changed_between_calls():
    def g(t, k=2):
        return t + k

    def f(x):
        return g(x) * 2

    cf, cnt = compile_counted(f)
    x = T(3)
    assert_same(f(x), cf(x), "first")
    g.__defaults__ = (-3,)
    assert_same(f(x), cf(x), "after the closure function's defaults changed")
    assert cnt.frame_count == 2
