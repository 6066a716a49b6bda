"""Corners of Python semantics a symbolic interpreter must model exactly: numeric edge cases,
truthiness, scoping, imports inside functions (relative ones too, resolved from
`__package__`), exotic statements (eager vs compiled)."""
import pytest
import torch

import bytegraph
import tests.helpers  # noqa: F401  (loaded: tests/_relative_import_user.py imports it relatively)
from helpers import check


def _neg_int_div_mod(x):
    return x * (-7 // 2), (-7 % 3, 7 % -3, -7 // -2, divmod(-7, 2), -7.5 // 2, -7.5 % 2)


def _round_half_even(x):
    return x + round(2.5), (round(0.5), round(-0.5), round(3.5), round(2.675, 2), round(-1.5))


def _float_int_conversions(x):
    return x * int(-2.7), (int(2.9), int(-0.5), float(3), int(True), float("inf") > 1e308, int("0x1f", 16))


def _big_ints(x):
    n = 2 ** 100
    return x + (n % 7), (n // 3, n.bit_length(), -n >> 90, (n * n) % 1000)


def _truthiness(x):
    vals = [0, 1, 0.0, "", "a", [], [0], (), {}, {"k": 0}, None, range(0), range(2)]
    return [bool(v) for v in vals], [not v for v in vals[:4]], x * 1


def _int_float_bool_equality(x):
    return (1 == 1.0, True == 1, 0 == False, hash(1) == hash(1.0), x is not True, x - 1)  # noqa: E712


def _nan_inf(x):
    nan, inf = float("nan"), float("inf")
    return (nan == nan, nan != nan, inf > 10**300, -inf < -inf, nan is nan, x + 2)


def _string_comparisons(x):
    return ("a" < "b", "abc" < "abd", "B" < "a", "a" * 3, "abc"[::-1], "x" in "xyz", x / 2)


def _loop_variable_leaks(x):
    for i in range(3):
        pass
    j = -1
    for j in []:
        pass
    return x * i, j


def _while_true_break(x):
    n = 0
    while True:
        n += 1
        x = x + n
        if n >= 3:
            break
    return x, n


def _return_in_finally_overrides(x):
    try:
        return x * 2
    finally:
        x = x + 100  # does not change the already-evaluated return value


def _import_inside_function(x):
    import math

    from torch.nn import functional as F_local

    return F_local.relu(x) * math.pi


def _del_and_rebind(x):
    y = x * 2
    del y
    y = x * 3
    return y


def _star_unpack_tensor_into_call(x):
    def add3(a, b, c):
        return a + b * 2 + c * 3

    return add3(*x), torch.stack([*x])


def _dict_kwargs_constructor(x):
    kw = {"a": 1, "b": 2}
    d = dict(**kw, c=x)
    d2 = {**d, "a": 10}
    return d2, list(d2), d2["c"] * 2


def _dict_order_after_delete_reinsert(x):
    d = {"a": 1, "b": 2, "c": 3}
    del d["a"]
    d["a"] = 4
    d["b"] = 5
    return list(d.items()), x * d["a"]


def _sort_stability_with_key(x):
    pairs = [(1, "b"), (0, "a"), (1, "a"), (0, "b")]
    return sorted(pairs, key=lambda p: p[0]), x + 1


def _hash_id_type_names(x):
    return (hash((1, "a")) == hash((1, "a")), type(x).__name__, type(x.shape).__name__, type(1.0) is float, x * 2)


def _complex_and_bytes(x):
    z = (1 + 2j) * 2j
    b = b"ab" + bytes([99])
    return x * z.real, z, b, len(b), b[0]


def _ellipsis_and_none_constants(x):
    e = ...
    return x[e, 0], e is Ellipsis, None is None


def _zip_strict_ok(x):
    return [a * b for a, b in zip([1, 2], [x, x], strict=True)]


def _any_all_generators(x):
    vals = [1, 0, 3]
    return any(v > 2 for v in vals), all(v >= 0 for v in vals), x * sum(v for v in vals if v)


def _sorted_tensors_by_size(x):
    ts = [x[:3], x, x[:1]]
    return [t * 2 for t in sorted(ts, key=lambda t: t.shape[0])]


def _min_max_on_tuples_and_strings(x):
    return min((2, "b"), (1, "z")), max("hello"), x * max(len("ab"), 1)


def _augmented_assignment_on_subscript_and_attr(x):
    d = {"k": x * 1}
    d["k"] += 1
    l = [x - 1]
    l[0] *= 2
    return d["k"], l[0]


def _nested_tuple_unpack_in_comprehension(x):
    data = [((1, 2), x), ((3, 4), x * 2)]
    return [a * t + b for (a, b), t in data]


def _shadowing_builtin_locally(x):
    len = 5  # noqa: F841  (shadows the builtin in this frame only)
    sum = lambda *a: 0  # noqa: E731
    return x * len + sum(1, 2)


def _string_formatting_of_metadata(x):
    return f"{x.shape}|{x.dtype}|{x.device}|{tuple(x.shape)!r}|{x.ndim:>4}", x + 1


def _conditional_function_definition(x, flag=True):
    if flag:
        def g(t):
            return t + 1
    else:
        def g(t):
            return t - 1
    return g(x)


CORNERS = [
    _neg_int_div_mod,
    _round_half_even,
    _float_int_conversions,
    _big_ints,
    _truthiness,
    _int_float_bool_equality,
    _nan_inf,
    _string_comparisons,
    _loop_variable_leaks,
    _while_true_break,
    _return_in_finally_overrides,
    _import_inside_function,
    _del_and_rebind,
    _star_unpack_tensor_into_call,
    _dict_kwargs_constructor,
    _dict_order_after_delete_reinsert,
    _sort_stability_with_key,
    _hash_id_type_names,
    _complex_and_bytes,
    _ellipsis_and_none_constants,
    _zip_strict_ok,
    _any_all_generators,
    _sorted_tensors_by_size,
    _min_max_on_tuples_and_strings,
    _augmented_assignment_on_subscript_and_attr,
    _nested_tuple_unpack_in_comprehension,
    _shadowing_builtin_locally,
    _string_formatting_of_metadata,
    _conditional_function_definition,
]


@pytest.mark.parametrize("fn", CORNERS, ids=lambda f: f.__name__.lstrip("_"))
def test_corner(fn):
    check(fn, torch.randn(3, requires_grad=True), graphs=1)


# ------------------------------------------------------------------ constructs that may run eagerly


def _class_defined_inside(x):
    class Local:
        k = 3

        def go(self, t):
            return t * self.k

    return Local().go(x)


def _zip_strict_mismatch(x):
    return list(zip([1, 2], [x], strict=True))


def _str_of_tensor(x):
    return f"{x.sum() > 100}", str(x.shape), x + 1


def _tolist_and_item(x):
    return x.tolist(), x.sum().item(), x * 2


def _data_dependent_python_loop(x):
    out = []
    for v in x.tolist():
        if v > 0:
            out.append(v)
    return out


def _tensor_as_dict_key(x):
    d = {x: "tensor key"}
    return d[x], len(d)


def _with_autocast(x):
    with torch.autocast("cpu", dtype=torch.bfloat16):
        y = x @ x.T
    return y, y.dtype


@pytest.mark.parametrize(
    "fn",
    [_class_defined_inside, _zip_strict_mismatch, _str_of_tensor, _tolist_and_item,
     _data_dependent_python_loop, _tensor_as_dict_key, _with_autocast],
    ids=lambda f: f.__name__.lstrip("_"),
)
def test_may_run_eagerly_but_must_match(fn):
    check(fn, torch.tensor([[1.0, -2.0], [3.0, 0.5]]))


# ------------------------------------------------------------------ relative imports inside functions


def T(*shape):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(0))


def test_relative_import_of_a_loaded_module_is_traced():
    from tests import _relative_import_user

    check(_relative_import_user.uses_relative_import, T(3), graphs=1, fullgraph=True)


def test_relative_import_of_a_missing_name_breaks():
    from tests import _relative_import_user

    check(_relative_import_user.imports_a_missing_name, T(3))  # eager's ImportError
    with pytest.raises(bytegraph.Unsupported, match="`from . import _no_such_module_here`, which is not imported yet"):
        bytegraph.compile(_relative_import_user.imports_a_missing_name, fullgraph=True)(T(3))
