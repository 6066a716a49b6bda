"""Guards and recompiles, counted with CompileCounter; every call is also compared with eager."""
import sys
import types
import warnings

import torch

import bytegraph
from helpers import assert_same, check_sequence, compile_counted
from support import other_module

G_TENSOR = torch.ones(3)
G_INT = 2


def _body(x):
    return (x * 2).sin() + 1


def _calls(cf, f, args_list):
    for args in args_list:
        assert_same(f(*[a.clone() if isinstance(a, torch.Tensor) else a for a in args]), cf(*args), f"f{args!r}")


def test_same_inputs_compile_once():
    cf, cnt = compile_counted(_body)
    x = torch.randn(3)
    _calls(cf, _body, [(x,)] * 5 + [(torch.randn(3),)] * 3)
    assert cnt.frame_count == 1


def test_shape_change_recompiles_and_old_entry_is_reused():
    cf, cnt = compile_counted(_body)
    _calls(cf, _body, [(torch.randn(3),), (torch.randn(4),)])
    assert cnt.frame_count == 2
    _calls(cf, _body, [(torch.randn(3),), (torch.randn(4),)])
    assert cnt.frame_count == 2


def test_rank_change_recompiles():
    cf, cnt = compile_counted(_body)
    _calls(cf, _body, [(torch.randn(3),), (torch.randn(3, 1),)])
    assert cnt.frame_count == 2


def test_dtype_change_recompiles():
    cf, cnt = compile_counted(_body)
    _calls(cf, _body, [(torch.randn(3),), (torch.randn(3, dtype=torch.float64),)])
    assert cnt.frame_count == 2


def test_requires_grad_change_recompiles_and_grads_flow():
    def f(x):
        return (x * 3).exp()

    cf, cnt = compile_counted(f)
    a = torch.randn(3)
    assert not cf(a).requires_grad
    b = torch.randn(3, requires_grad=True)
    out = cf(b)
    assert out.requires_grad
    out.sum().backward()
    b_e = b.detach().clone().requires_grad_()
    f(b_e).sum().backward()
    assert_same(b_e.grad, b.grad, "grad")
    assert cnt.frame_count == 2


def test_python_int_used_in_computation_recompiles():
    def f(x, n):
        return x * n + n

    cf, cnt = compile_counted(f)
    x = torch.randn(3)
    _calls(cf, f, [(x, 2), (x, 3), (x, 2)])
    assert cnt.frame_count == 2


def test_python_float_used_in_computation_recompiles():
    def f(x, s):
        return x * s

    cf, cnt = compile_counted(f)
    x = torch.randn(3)
    _calls(cf, f, [(x, 0.5), (x, 1.5)])
    assert cnt.frame_count == 2


def test_python_int_steering_loop_recompiles():
    def f(x, n):
        for _ in range(n):
            x = x.cos()
        return x

    cf, cnt = compile_counted(f)
    _calls(cf, f, [(torch.randn(2), 1), (torch.randn(2), 3)])
    assert cnt.frame_count == 2


def test_bool_and_none_arguments():
    def f(x, flag, y):
        if flag:
            x = x + 1
        if y is not None:
            x = x * y
        return x * 2

    r = check_sequence(f, [(torch.randn(2), True, None), (torch.randn(2), False, None),
                           (torch.randn(2), True, torch.randn(2)), (torch.randn(2), True, None)])
    assert r.counter.frame_count == 3


def test_list_length_and_contents():
    def f(xs):
        out = xs[0]
        for v in xs[1:]:
            out = out + v
        return out

    check_sequence(f, [([torch.randn(2), 1],), ([torch.randn(2), 1, 2],), ([torch.randn(2), 5],),
                       ([torch.randn(2), torch.randn(2)],)])


def test_dict_keys_and_values():
    def f(d, x):
        for k, v in d.items():
            x = x * v if k == "mul" else x + v
        return x

    check_sequence(f, [({"mul": 2}, torch.randn(2)), ({"add": 2}, torch.randn(2)),
                       ({"mul": 3, "add": 1}, torch.randn(2)), ({"add": 1, "mul": 3}, torch.randn(2))])


def test_global_tensor_rebound_between_calls():
    global G_TENSOR

    def f(x):
        return x + G_TENSOR

    cf, cnt = compile_counted(f)
    x = torch.randn(3)
    old = G_TENSOR
    try:
        assert_same(f(x), cf(x), "first")
        G_TENSOR = torch.full((3,), 5.0)
        assert_same(f(x), cf(x), "after rebinding the global")
        G_TENSOR.mul_(2)
        assert_same(f(x), cf(x), "after mutating the global in place")
    finally:
        G_TENSOR = old


def test_global_int_rebound_between_calls():
    global G_INT

    def f(x):
        return x * G_INT

    cf, cnt = compile_counted(f)
    x = torch.randn(3)
    try:
        assert_same(f(x), cf(x), "first")
        G_INT = 7
        assert_same(f(x), cf(x), "after rebinding the global")
    finally:
        G_INT = 2


def test_other_module_global_rebound(monkeypatch):
    def f(x):
        return other_module.uses_own_globals(x) * other_module.SCALE

    cf, cnt = compile_counted(f)
    x = torch.randn(4)
    assert_same(f(x), cf(x), "first")
    monkeypatch.setattr(other_module, "SCALE", 10)
    assert_same(f(x), cf(x), "after changing other_module.SCALE")
    monkeypatch.setattr(other_module, "WEIGHT", torch.zeros(4))
    assert_same(f(x), cf(x), "after changing other_module.WEIGHT")


def deep_helper(x):
    return x * 2


def deep_mid(x):
    return deep_helper(x) + 1


def deep_top(x):
    return deep_mid(x) - 1


def test_global_read_two_calls_deep_is_guarded_through_the_module_globals(monkeypatch):
    # Note [Globals sources]: deep_helper is read as G['deep_helper'], not through
    # deep_top.__globals__['deep_mid'].__globals__; replacing it must still recompile.
    def f(x, fn):
        return deep_top(x) + fn(x)

    cf, cnt = compile_counted(f)
    x = torch.randn(3)
    assert_same(f(x, deep_mid), cf(x, deep_mid), "first")
    monkeypatch.setattr(sys.modules[__name__], "deep_helper", lambda t: t - 100)
    assert_same(f(x, deep_mid), cf(x, deep_mid), "after replacing deep_helper")
    assert cnt.frame_count == 2


def test_global_function_replaced(monkeypatch):
    def f(x):
        return other_module.affine(x)

    cf, cnt = compile_counted(f)
    x = torch.randn(3)
    assert_same(f(x), cf(x), "first")
    monkeypatch.setattr(other_module, "affine", lambda t: t - 100)
    assert_same(f(x), cf(x), "after replacing other_module.affine")


def test_object_attribute_changed_between_calls():
    class Cfg:
        scale = 2

    def f(cfg, x):
        return x * cfg.scale

    cfg = Cfg()
    cf, cnt = compile_counted(f)
    x = torch.randn(3)
    assert_same(f(cfg, x), cf(cfg, x), "first")
    cfg.scale = 5
    assert_same(f(cfg, x), cf(cfg, x), "instance attribute set")
    Cfg.scale = 9
    del cfg.scale
    assert_same(f(cfg, x), cf(cfg, x), "class attribute changed")


def test_closure_cell_changed_between_calls():
    k = 2

    def f(x):
        return x * k

    cf, cnt = compile_counted(f)
    x = torch.randn(3)
    assert_same(f(x), cf(x), "first")
    k = 3  # noqa: F841  (read through the cell by f)
    assert_same(f(x), cf(x), "after rebinding the cell")


def test_defaults_changed_between_calls():
    def f(x, s=2):
        return x * s

    cf, cnt = compile_counted(f)
    x = torch.randn(3)
    assert_same(f(x), cf(x), "first")
    f.__defaults__ = (5,)
    assert_same(f(x), cf(x), "after changing __defaults__")


def test_same_code_different_closures_compiled_separately():
    f2 = other_module.make_adder(2)
    f3 = other_module.make_adder(3)
    assert f2.__code__ is f3.__code__
    c2, n2 = compile_counted(f2)
    c3, n3 = compile_counted(f3)
    x = torch.randn(3)
    for _ in range(2):
        assert_same(f2(x), c2(x), "adder(2)")
        assert_same(f3(x), c3(x), "adder(3)")


def _helper_scale(x):
    return x * 2


def _helper_shift(x):
    return x + 5


def test_called_function_replaced_by_a_copy_or_recoded():
    """A called function is guarded by its code and globals, not its identity: a copy with the
    same code and globals runs the same entry, a function whose `__code__` was replaced
    recompiles."""
    g = {}

    def f(x):
        return g["fn"](x)

    original_code = _helper_scale.__code__
    g["fn"] = _helper_scale
    cf, cnt = compile_counted(f)
    x = torch.randn(3)
    assert_same(f(x), cf(x), "first")
    g["fn"] = types.FunctionType(_helper_scale.__code__, _helper_scale.__globals__)
    assert_same(f(x), cf(x), "a copy")
    assert cnt.frame_count == 1
    try:
        g["fn"] = _helper_scale
        _helper_scale.__code__ = _helper_shift.__code__
        assert_same(f(x), cf(x), "code replaced")
        assert cnt.frame_count == 2
    finally:
        _helper_scale.__code__ = original_code


def test_grad_mode_change_recompiles():
    def f(x):
        return x * 2

    cf, cnt = compile_counted(f)
    x = torch.randn(3, requires_grad=True)
    assert cf(x).requires_grad
    with torch.no_grad():
        out = cf(x)
        assert not out.requires_grad
        assert_same(f(x), out, "under no_grad")
    assert cnt.frame_count == 2
    assert cf(x).requires_grad
    assert cnt.frame_count == 2


def test_noncontiguous_input():
    def f(x):
        return x.view(-1) if x.is_contiguous() else x.reshape(-1) * 2

    check_sequence(f, [(torch.randn(3, 4),), (torch.randn(4, 3).t(),), (torch.randn(3, 4),)])


# ------------------------------------------------------------------ cache limit


def _recorded(fn):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        fn()
    return [m for m in w if issubclass(m.category, UserWarning)]


def test_cache_size_limit_default():
    assert bytegraph.config.cache_size_limit == 8


def test_cache_size_limit_exceeded_runs_eagerly_with_one_warning():
    def f(shaped_arg):
        return shaped_arg.sum(0) * 2

    cf, cnt = compile_counted(f, dynamic=False)  # static shapes: each size is an entry

    def calls():
        for n in list(range(1, 16)) + list(range(1, 16)):
            x = torch.randn(n)
            assert_same(f(x), cf(x), f"size {n}")

    ws = _recorded(calls)
    limit = bytegraph.config.cache_size_limit
    assert cnt.frame_count == limit
    assert len(ws) == 1, [str(m.message) for m in ws]
    assert "shaped_arg" in str(ws[0].message), str(ws[0].message)


def test_cache_size_limit_configurable_int_guard(monkeypatch):
    monkeypatch.setattr(bytegraph.config, "cache_size_limit", 2)

    def f(x, n_steps):
        for _ in range(n_steps):
            x = x + 1
        return x

    cf, cnt = compile_counted(f)

    def calls():
        for n in [1, 2, 3, 4, 5, 1, 4]:
            x = torch.randn(2)
            assert_same(f(x, n), cf(x, n), f"n_steps={n}")

    ws = _recorded(calls)
    assert cnt.frame_count == 2
    assert len(ws) == 1, [str(m.message) for m in ws]
    assert "n_steps" in str(ws[0].message), str(ws[0].message)


def test_reset_compiles_again():
    cf, cnt = compile_counted(_body)
    x = torch.randn(3)
    cf(x)
    cf(x)
    assert cnt.frame_count == 1
    bytegraph.reset()
    assert_same(_body(x), cf(x), "after reset")
    assert cnt.frame_count == 2


def test_reset_clears_cache_limit_state(monkeypatch):
    monkeypatch.setattr(bytegraph.config, "cache_size_limit", 1)
    cf, cnt = compile_counted(_body)
    _recorded(lambda: [cf(torch.randn(n)) for n in (1, 2, 3)])
    assert cnt.frame_count == 1
    bytegraph.reset()
    cf(torch.randn(5))
    assert cnt.frame_count == 2


def test_two_compiled_wrappers_of_one_function_use_their_own_backends():
    def f(x):
        return x.relu() + 1

    c1, n1 = compile_counted(f)
    c2, n2 = compile_counted(f)
    x = torch.randn(3)
    assert_same(f(x), c1(x), "first wrapper")
    assert_same(f(x), c2(x), "second wrapper")
    assert n1.frame_count == 1
    assert n2.frame_count == 1


# ------------------------------------------------------------------ argument kinds changing between calls


def test_argument_type_changes_between_calls():
    def f(x, y):
        return x * y

    check_sequence(f, [(torch.randn(2), torch.randn(2)), (torch.randn(2), 3), (torch.randn(2), 2.5),
                       (torch.randn(2), True), (torch.randn(2), torch.randn(2))])


def test_string_argument_changes_between_calls():
    def f(x, mode):
        if mode == "sum":
            return x.sum()
        if mode.startswith("me"):
            return x.mean()
        return x * len(mode)

    check_sequence(f, [(torch.randn(3), "sum"), (torch.randn(3), "mean"), (torch.randn(3), "other"),
                       (torch.randn(3), "sum")])


def test_dtype_argument_changes_between_calls():
    def f(x, dt):
        return x.to(dt) * 2, torch.ones(2, dtype=dt)

    check_sequence(f, [(torch.randn(2), torch.float64), (torch.randn(2), torch.int32),
                       (torch.randn(2), torch.float64)])


def test_tensor_inside_list_changes_shape():
    def f(xs):
        return torch.cat([t * 2 for t in xs])

    check_sequence(f, [([torch.randn(2), torch.randn(3)],), ([torch.randn(2), torch.randn(4)],),
                       ([torch.randn(2, 1), torch.randn(3, 1)],)])


def test_parameter_vs_tensor_argument():
    def f(x):
        return x * 2, isinstance(x, torch.nn.Parameter)

    check_sequence(f, [(torch.randn(2),), (torch.nn.Parameter(torch.randn(2)),), (torch.randn(2),)])


def test_star_args_count_changes():
    def f(*xs):
        out = xs[0]
        for t in xs[1:]:
            out = out + t
        return out, len(xs)

    check_sequence(f, [(torch.randn(2),), (torch.randn(2), torch.randn(2)),
                       (torch.randn(2), torch.randn(2), torch.randn(2)), (torch.randn(2),)])


def test_keyword_argument_values_change():
    def f(x, *, scale=1.0, shift=0):
        return x * scale + shift

    cf, cnt = compile_counted(f)
    x = torch.randn(3)
    for kw in [{}, {"scale": 2.0}, {"shift": 1}, {"shift": 1, "scale": 2.0}, {"scale": 2.0, "shift": 1}, {}]:
        assert_same(f(x, **kw), cf(x, **kw), f"f(x, **{kw})")


def test_stride_read_in_python_guards_stride():
    def f(x):
        return x.reshape(-1) * x.stride(0)

    check_sequence(f, [(torch.randn(3, 4),), (torch.randn(4, 3).t(),), (torch.randn(3, 4)[:, ::1],)])


def test_global_list_length_changes():
    def f(x):
        out = x
        for w in _WEIGHTS:
            out = out * w
        return out

    cf, cnt = compile_counted(f)
    x = torch.randn(2)
    try:
        assert_same(f(x), cf(x), "two weights")
        _WEIGHTS.append(5.0)
        assert_same(f(x), cf(x), "three weights")
        _WEIGHTS[0] = -1.0
        assert_same(f(x), cf(x), "first weight changed")
    finally:
        _WEIGHTS[:] = [2.0, 3.0]


_WEIGHTS = [2.0, 3.0]


def test_called_with_positional_then_keyword():
    def f(x, y):
        return x - y

    cf, cnt = compile_counted(f)
    a, b = torch.randn(2), torch.randn(2)
    assert_same(f(a, b), cf(a, b), "positional")
    assert_same(f(a, y=b), cf(a, y=b), "keyword y")
    assert_same(f(y=a, x=b), cf(y=a, x=b), "keywords swapped")


# ------------------------------------------------------------------ values equal by == but not the same


def test_true_vs_1_vs_1_point_0():
    def f(x, n):
        return x * n, n + 1, type(n).__name__, isinstance(n, bool)

    check_sequence(f, [(torch.randn(2), True), (torch.randn(2), 1), (torch.randn(2), 1.0), (torch.randn(2), True)])


def test_negative_zero_vs_zero():
    import math

    def f(x, s):
        return x * math.copysign(1.0, s), str(s)

    check_sequence(f, [(torch.randn(2), 0.0), (torch.randn(2), -0.0), (torch.randn(2), 0.0)])


def test_nan_argument_does_not_recompile_every_call():
    def f(x, s):
        return x + s

    cf, cnt = compile_counted(f)
    x = torch.randn(2)
    for _ in range(4):
        assert_same(f(x, float("nan")), cf(x, float("nan")), "nan")
    assert cnt.frame_count == 1


def test_tuple_vs_list_argument():
    def f(x, seq):
        return x * len(seq), type(seq).__name__, seq * 2

    check_sequence(f, [(torch.randn(2), [1, 2]), (torch.randn(2), (1, 2)), (torch.randn(2), [1, 2])])


def test_default_dtype_changed_between_calls():
    def f(x):
        return torch.zeros(3) + 1.5, torch.tensor([1.0, 2.0]), x * 2.5

    cf, cnt = compile_counted(f)
    x = torch.arange(3)
    assert_same(f(x), cf(x), "float32 default")
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert_same(f(x), cf(x), "float64 default")
    finally:
        torch.set_default_dtype(old)
    assert_same(f(x), cf(x), "back to float32 default")


def test_bound_method_replaced_on_instance():
    class M:
        def act(self, t):
            return t + 1

    def f(m, x):
        return m.act(x)

    m = M()
    cf, cnt = compile_counted(f)
    x = torch.randn(2)
    assert_same(f(m, x), cf(m, x), "class method")
    m.act = lambda t: t * 100
    assert_same(f(m, x), cf(m, x), "instance attribute shadows the method")
    del m.act
    M.act = lambda self, t: t - 5
    assert_same(f(m, x), cf(m, x), "class method replaced")


def test_global_tensor_replaced_by_other_shape_and_dtype():
    global G_TENSOR

    def f(x):
        return x.sum() + G_TENSOR.sum(), G_TENSOR.dtype

    cf, cnt = compile_counted(f)
    x = torch.randn(3)
    old = G_TENSOR
    try:
        assert_same(f(x), cf(x), "first")
        G_TENSOR = torch.ones(5, 2)
        assert_same(f(x), cf(x), "other shape")
        G_TENSOR = torch.ones(3, dtype=torch.int64)
        assert_same(f(x), cf(x), "other dtype")
    finally:
        G_TENSOR = old


def test_closure_cell_tensor_changes_shape():
    w = torch.ones(3)

    def f(x):
        return x.sum() * w

    cf, cnt = compile_counted(f)
    x = torch.randn(3)
    assert_same(f(x), cf(x), "first")
    w = torch.ones(2, 2)  # noqa: F841
    assert_same(f(x), cf(x), "after rebinding the cell to another shape")


# ------------------------------------------------------------------ more state read by tracing


_G_CFG = {"w": 2.0, "mode": "mul"}


def test_global_dict_value_changed_between_calls():
    def f(x):
        if _G_CFG["mode"] == "mul":
            return x * _G_CFG["w"]
        return x + _G_CFG["w"]

    cf, cnt = compile_counted(f)
    x = torch.randn(2)
    try:
        assert_same(f(x), cf(x), "first")
        _G_CFG["w"] = 5.0
        assert_same(f(x), cf(x), "w changed")
        _G_CFG["mode"] = "add"
        assert_same(f(x), cf(x), "mode changed")
        _G_CFG["extra"] = 1
        assert_same(f(x), cf(x), "unrelated key added")
    finally:
        _G_CFG.clear()
        _G_CFG.update({"w": 2.0, "mode": "mul"})


def test_nested_attribute_changed_between_calls():
    class Sub:
        k = 1

    class Cfg:
        def __init__(self):
            self.sub = Sub()

    def f(cfg, x):
        return x * cfg.sub.k

    cfg = Cfg()
    cf, cnt = compile_counted(f)
    x = torch.randn(2)
    assert_same(f(cfg, x), cf(cfg, x), "first")
    cfg.sub.k = 4
    assert_same(f(cfg, x), cf(cfg, x), "cfg.sub.k changed")
    cfg.sub = Sub()
    assert_same(f(cfg, x), cf(cfg, x), "cfg.sub replaced")


def test_kwdefaults_changed_between_calls():
    def f(x, *, s=2):
        return x * s

    cf, cnt = compile_counted(f)
    x = torch.randn(2)
    assert_same(f(x), cf(x), "first")
    f.__kwdefaults__ = {"s": 7}
    assert_same(f(x), cf(x), "after changing __kwdefaults__")


def test_inlined_callee_closure_changed_between_calls():
    k = 2

    def callee(t):
        return t * k

    def f(x):
        return callee(x) + 1

    cf, cnt = compile_counted(f)
    x = torch.randn(2)
    assert_same(f(x), cf(x), "first")
    k = 10  # noqa: F841
    assert_same(f(x), cf(x), "callee's cell rebound")


def test_inlined_callee_defaults_changed_between_calls():
    def callee(t, s=2):
        return t * s

    def f(x):
        return callee(x) + 1

    cf, cnt = compile_counted(f)
    x = torch.randn(2)
    assert_same(f(x), cf(x), "first")
    callee.__defaults__ = (9,)
    assert_same(f(x), cf(x), "callee's defaults changed")


def test_builtin_shadowed_by_module_global_after_compile():
    def f(x):
        return x * len(x)

    cf, cnt = compile_counted(f)
    x = torch.randn(3)
    assert_same(f(x), cf(x), "builtin len")
    globals()["len"] = lambda v: 100
    try:
        assert_same(f(x), cf(x), "module global `len` now shadows the builtin")
    finally:
        del globals()["len"]
    assert_same(f(x), cf(x), "builtin len again")
