"""Python-level semantics inside compiled functions: locals, globals (here and in
another module), attributes, subscripts, number operators, building and unpacking
values, f-strings, comprehensions. Eager vs compiled (helpers.check)."""
import operator

import pytest
import torch

from helpers import check
from support import other_module
from support.other_module import SCALE, Point

G_INT = 5
G_FLOAT = 0.25
G_TENSOR = torch.linspace(-1, 1, 4)
G_LIST = [1, 2, 3]
G_DICT = {"w": 2.0, "b": -1.0}
G_STATE = {"calls": 0}
G_VALUE = 10


# ------------------------------------------------------------------ locals and globals


def test_locals_reassigned_and_swapped():
    def f(x, y):
        a = x
        b = y
        a, b = b, a
        c = a * 2
        c = c + b
        del a
        return c, b

    check(f, torch.randn(3), torch.randn(3), graphs=1)


def test_module_globals_int_float_tensor():
    def f(x):
        return x * G_INT + G_FLOAT + G_TENSOR

    check(f, torch.randn(4), graphs=1)


def test_module_global_containers():
    def f(x):
        return x * G_DICT["w"] + G_DICT["b"] + G_LIST[-1] + len(G_LIST)

    check(f, torch.randn(4), graphs=1)


def test_other_module_globals_via_attribute():
    def f(x):
        return x * other_module.SCALE + other_module.OFFSET + other_module.WEIGHT

    check(f, torch.randn(4), graphs=1)


def test_other_module_global_imported_by_name():
    def f(x):
        return x * SCALE + other_module.TABLE["b"]

    check(f, torch.randn(4), graphs=1)


def test_other_module_function_uses_its_own_globals():
    def f(x):
        return other_module.uses_own_globals(x) - 1

    check(f, torch.randn(4), graphs=1)


def _reset_state():
    G_STATE["calls"] = 0


def test_global_dict_mutation_is_replayed():
    def f(x):
        G_STATE["calls"] += 1
        G_STATE["last_shape"] = tuple(x.shape)
        return x + G_STATE["calls"]

    check(f, torch.randn(2), setup=_reset_state, state=lambda: dict(G_STATE), graphs=1)


def _set_g_value():
    global G_VALUE
    G_VALUE = 10


def test_global_statement_rebinds_module_global():
    def f(x):
        global G_VALUE
        G_VALUE = G_VALUE + 1
        return x * G_VALUE

    check(f, torch.randn(3), setup=_set_g_value, state=lambda: G_VALUE, graphs=1)


def test_other_module_list_mutation():
    def f(x):
        n = other_module.bump_counter(2)
        return x + n

    def setup():
        other_module.COUNTER[0] = 0

    check(f, torch.randn(3), setup=setup, state=lambda: list(other_module.COUNTER), graphs=1)


def test_builtins_shadowed_by_global():
    def f(x):
        return len(x), x.sum()

    check(f, torch.randn(5), graphs=1)


# ------------------------------------------------------------------ attributes


class Box:
    def __init__(self, t, k):
        self.t = t
        self.k = k


def test_attribute_reads():
    def f(b):
        return b.t * b.k

    check(f, Box(torch.randn(3), 4), graphs=1)


def test_attribute_write_on_input_object():
    def f(b):
        b.k = b.k + 1
        b.t = b.t * 2
        b.new_attr = "set"
        return b.t.sum()

    check(f, Box(torch.randn(3), 4), graphs=1)


def test_object_created_inside_function():
    def f(x):
        p = Point(x, x * 2)
        q = p.scaled(3)
        return q.norm2(), q.y

    check(f, torch.randn(3), graphs=1)


def test_getattr_default_on_missing_attribute():
    def f(b, x):
        return x + getattr(b, "missing", 7) + getattr(b, "k", 0)

    check(f, Box(None, 2), torch.randn(3), graphs=1)


# ------------------------------------------------------------------ subscripts and slices

SUBSCRIPT = {
    "list_index": lambda xs: xs[1] * xs[-1],
    "list_slice": lambda xs: sum(xs[1:3], xs[0]),
    "list_step_slice": lambda xs: [t * 2 for t in xs[::-2]],
    "tuple_index": lambda xs: tuple(xs)[2] + tuple(xs)[-2],
    "tuple_slice": lambda xs: torch.cat(tuple(xs)[:2]),
    "dict_get": lambda xs: {"a": xs[0], "b": xs[1]}["b"] * 2,
    "dict_get_default": lambda xs: {"a": xs[0]}.get("zz", xs[3]) - {"a": xs[0]}.get("a"),
    "nested": lambda xs: [[xs[0], xs[1]], [xs[2]]][0][1] + xs[3],
}


@pytest.mark.parametrize("name", list(SUBSCRIPT))
def test_subscripts_of_containers(name):
    xs = [torch.randn(2) for _ in range(4)]
    check(SUBSCRIPT[name], xs, graphs=1)


def test_store_subscript_and_slice_on_list_input():
    def f(xs):
        xs[0] = xs[0] * 2
        xs[1:3] = [xs[2], xs[1]]
        del xs[-1]
        return xs[0] + xs[1]

    check(f, [torch.randn(2) for _ in range(4)], graphs=1)


def test_dict_input_store_and_delete():
    def f(d):
        d["y"] = d["x"] + 1
        del d["z"]
        return d["y"] * 2

    check(f, {"x": torch.randn(3), "z": 1}, graphs=1)


# ------------------------------------------------------------------ python numbers

INT_OPS = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "truediv": lambda a, b: a / b,
    "floordiv": lambda a, b: a // b,
    "mod": lambda a, b: a % b,
    "pow": lambda a, b: a ** b,
    "lshift": lambda a, b: a << b,
    "rshift": lambda a, b: a >> b,
    "and": lambda a, b: a & b,
    "or": lambda a, b: a | b,
    "xor": lambda a, b: a ^ b,
    "lt": lambda a, b: a < b,
    "ge": lambda a, b: a >= b,
    "eq": lambda a, b: a == b,
    "ne": lambda a, b: a != b,
}


@pytest.mark.parametrize("op", list(INT_OPS))
def test_int_operator_feeds_tensor(op):
    def f(x, a, b):
        return x * INT_OPS[op](a, b)

    check(f, torch.randn(3), -7, 3, graphs=1)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "lt", "eq"])
def test_float_operator_feeds_tensor(op):
    def f(x, a, b):
        return x + INT_OPS[op](a, b)

    check(f, torch.randn(3), 7.5, -2.0, graphs=1)


def test_unary_python_number_ops():
    def f(x, a, b):
        return x * -a, x + (+b), x - (~a), not a, -b

    check(f, torch.randn(2), 3, 1.5, graphs=1)


def test_inplace_python_number_ops():
    def f(x, a):
        a += 1
        a *= 3
        a -= 2
        a //= 2
        a **= 2
        a %= 11
        b = 2.0
        b /= 4
        return x * a + b

    check(f, torch.randn(2), 4, graphs=1)


def test_division_by_zero_raises():
    def f(x, a):
        y = x + 1
        return y / (a // 0)

    check(f, torch.randn(2), 3)


def test_mixed_int_float_bool_arithmetic():
    def f(x, n):
        v = n / 2 + True + (n > 1) * 2.5
        return x * v, v

    check(f, torch.randn(2), 3, graphs=1)


def test_chained_comparison():
    def f(x, a):
        if 0 < a < 10 <= a * 4:
            return x + 1
        return x - 1

    check(f, torch.randn(2), 3, graphs=1)
    check(f, torch.randn(2), 1, graphs=1)


# ------------------------------------------------------------------ identity and membership


def test_is_and_is_not():
    def f(x, y, z):
        a = x * 2 if y is None else x + y
        b = a + 1 if z is not None else -a
        return a, b, x is x, y is x

    check(f, torch.randn(2), None, 3, graphs=1)
    check(f, torch.randn(2), torch.randn(2), None, graphs=1)


def test_in_and_not_in():
    def f(x, key, ks):
        out = x
        if key in ks:
            out = out + 1
        if "zz" not in ks:
            out = out * 2
        if 3 in (1, 2, 3):
            out = out - 1
        return out, key in {"p": 1}, 2 in range(5)

    check(f, torch.randn(2), "b", ["a", "b"], graphs=1)


def test_tensor_identity_check_and_list_membership_by_identity():
    def f(x, y):
        xs = [x, y]
        return (x in xs), xs.index(x), (x is xs[0]), (y is xs[1])

    check(f, torch.randn(2), torch.randn(2))


# ------------------------------------------------------------------ building values


def test_build_tuple_list_set_dict_slice_string():
    def f(x, n):
        t = (x, n)
        l = [x, x * 2, n]
        s = {n, n + 1, n}
        d = {"a": x, n: "int-key", ("t", 1): n}
        sl = slice(0, n)
        st = "n=" + str(n) + "/" + repr("q")
        return t, l, sorted(s), d, sl.stop, st

    check(f, torch.randn(2), 3, graphs=1)


def test_string_methods():
    def f(x, name):
        key = name.upper().strip() + "_" + "-".join(["a", "b"])
        parts = "x,y,z".split(",")
        return x * len(key) + len(parts), key.startswith("AB"), key.replace("_", ":"), f"{name!r:>8}"

    check(f, torch.randn(2), " abc ", graphs=1)


def test_fstring_dict_keys():
    def f(xs):
        out = {}
        for i, t in enumerate(xs):
            out[f"layer_{i}.weight"] = t * i
            out[f"{i:03d}|{t.shape[0]}"] = t.sum()
        return out

    check(f, [torch.randn(3) for _ in range(3)], graphs=1)


def test_fstring_in_passing_assert():
    def f(x, n):
        assert x.shape[0] == n, f"expected {n} rows, got {x.shape[0]}"
        assert n > 0, "positive"
        return x * 2

    check(f, torch.randn(4), 4, graphs=1)


def test_failing_assert_with_fstring_message():
    def f(x, n):
        y = x * 2
        assert y.shape[0] == n, f"expected {n} rows, got {y.shape[0]}"
        return y

    check(f, torch.randn(4), 3)


def test_percent_and_format_strings():
    def f(x, n):
        s = "%d-%s" % (n, "a") + "{}:{:.2f}".format(n, 1.5)
        return {s: x + n}

    check(f, torch.randn(2), 7, graphs=1)


# ------------------------------------------------------------------ unpacking

UNPACK = {}


def _unpack_tuple(x):
    a, b = x * 1, x * 2
    (c, d), e = (a, b), a + b
    return c + d + e


def _unpack_star_tail(x):
    a, *b = [x, x + 1, x + 2]
    return a, b


def _unpack_star_head(x):
    *a, b = (x, x + 1, x + 2)
    return a, b


def _unpack_star_middle(x):
    a, *b, c = range(5)
    return x * a + c + len(b), b


def _unpack_tensor_rows(x):
    r0, r1 = x
    return r0 - r1


def _unpack_dict_keys(x):
    k1, k2 = {"a": 1, "b": 2}
    return x * 2, k1 + k2


def _unpack_splat_into_call(x):
    args = (x, 2)
    kwargs = {"alpha": 3}
    return torch.add(*args, **kwargs)


def _unpack_star_in_literals(x):
    xs = [x, x]
    t = (*xs, x * 3)
    d = {**{"a": 1}, "b": x, **{"c": 3}}
    s = {*range(3), 7}
    return t, d, sorted(s), [*t, *xs]


def _unpack_for_targets(x):
    out = x
    for i, (a, b) in enumerate([(1, 2), (3, 4)]):
        out = out + i * a - b
    return out


def _unpack_tensor_split(x):
    a, b, *rest = x.split(1)
    return a + b, len(rest)


@pytest.mark.parametrize(
    "fn",
    [
        _unpack_tuple,
        _unpack_star_tail,
        _unpack_star_head,
        _unpack_star_middle,
        _unpack_tensor_rows,
        _unpack_dict_keys,
        _unpack_splat_into_call,
        _unpack_star_in_literals,
        _unpack_for_targets,
    ],
    ids=lambda f: f.__name__,
)
def test_unpacking(fn):
    check(fn, torch.randn(2, 3, requires_grad=True), graphs=1)


def test_unpack_tensor_split_star():
    check(_unpack_tensor_split, torch.randn(4, 2), graphs=1)


def test_unpack_wrong_count_raises():
    def f(x):
        y = x + 1
        a, b = [y, y, y]
        return a + b

    check(f, torch.randn(2))


# ------------------------------------------------------------------ comprehensions


def test_list_comprehension():
    def f(xs):
        return [t * i for i, t in enumerate(xs) if i != 1]

    check(f, [torch.randn(2) for _ in range(4)], graphs=1)


def test_dict_comprehension():
    def f(x):
        return {f"k{i}": x ** i for i in range(3)}

    check(f, torch.randn(3), graphs=1)


def test_set_comprehension():
    def f(x, n):
        s = {i % 3 for i in range(n)}
        return x * len(s), sorted(s)

    check(f, torch.randn(2), 7, graphs=1)


def test_nested_comprehension_closes_over_locals():
    def f(x, k):
        grid = [[x * (i + j + k) for j in range(2)] for i in range(2)]
        return torch.stack([torch.stack(r) for r in grid])

    check(f, torch.randn(3), 2, graphs=1)


def test_generator_expression_into_sum_and_tuple():
    def f(xs):
        return sum(t.sum() for t in xs), tuple(t + 1 for t in xs)

    check(f, [torch.randn(2) for _ in range(3)], graphs=1)


# ------------------------------------------------------------------ misc expressions


def test_conditional_expression_and_boolean_shortcircuit():
    def f(x, a, b):
        c = a or b
        d = a and b
        e = (b if a > 1 else -b) or 99
        return x * c + d + e, (None or "default")

    check(f, torch.randn(2), 0, 5, graphs=1)
    check(f, torch.randn(2), 3, 5, graphs=1)


def test_walrus():
    def f(x, n):
        if (m := n * 2) > 3:
            x = x + m
        return x, [y for k in range(3) if (y := k * m) > 0]

    check(f, torch.randn(2), 3, graphs=1)


def test_operator_module_on_tensors():
    def f(x, y):
        return operator.add(x, y), operator.mul(x, 2), operator.getitem(x, 0), operator.neg(y)

    check(f, torch.randn(3, requires_grad=True), torch.randn(3), graphs=1)


def test_lambda_stored_in_local():
    def f(x):
        sq = lambda t, p=2: t ** p  # noqa: E731
        return sq(x) + sq(x, p=3)

    check(f, torch.randn(3, requires_grad=True), graphs=1)


def test_class_attribute_and_method_lookup():
    class Scaler:
        factor = 3

        def __init__(self, bias):
            self.bias = bias

        def apply(self, x):
            return x * self.factor + self.bias

        @staticmethod
        def twice(x):
            return x * 2

        @classmethod
        def make(cls):
            return cls(1.0)

    def f(x):
        s = Scaler.make()
        return s.apply(x) + Scaler.twice(x) + s.twice(x)

    check(f, torch.randn(3), graphs=1)


def test_property_on_user_object():
    class Holder:
        def __init__(self, t):
            self._t = t

        @property
        def doubled(self):
            return self._t * 2

    def f(h):
        return h.doubled + 1

    check(f, Holder(torch.randn(3)), graphs=1)


class _Plain:
    def __init__(self):
        self.n = 1


_ONE, _OTHER = _Plain(), _Plain()


def test_instance_dict_identity():
    def f(x):
        made = _Plain()
        return (x + 1, _ONE.__dict__ is _ONE.__dict__, _ONE.__dict__ is not _OTHER.__dict__,
                made.__dict__ is made.__dict__, made.__dict__ is _ONE.__dict__)

    check(f, torch.randn(3), graphs=1, grads=False)
