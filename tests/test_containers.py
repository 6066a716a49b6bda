"""Lists, tuples, dicts, sets and namedtuples: built, mutated and returned inside compiled
functions, and passed in and mutated in place (eager vs compiled)."""
import collections

import pytest
import torch

from helpers import check

Pair = collections.namedtuple("Pair", ["first", "second"])


def _list_methods(x):
    xs = [x]
    xs.append(x * 2)
    xs.extend([x * 3, x * 4])
    xs.insert(1, x - 1)
    last = xs.pop()
    first = xs.pop(0)
    xs.reverse()
    del xs[0]
    return xs, last + first, len(xs), xs.index(xs[0])


def _list_sort_ints(x):
    ks = [3, 1, 2]
    ks.sort()
    ks.sort(key=lambda v: -v)
    return x * ks[0], ks, ks.count(1), [1, 2] + [3], [0] * 3


def _dict_methods(x):
    d = {"a": x}
    d["b"] = x * 2
    d.update({"c": x * 3}, e=1)
    d.setdefault("a", None)
    d.setdefault("f", 4)
    v = d.pop("b")
    keys = list(d.keys())
    vals = [type(v_).__name__ for v_ in d.values()]
    return d, v, keys, vals, "c" in d, d.get("zz"), len(d)


def _dict_items_reconstructed(x):
    d = dict(zip(["p", "q"], [x, x + 1]))
    return {k: v * 2 for k, v in d.items()}, dict(sorted({"b": 1, "a": 2}.items()))


def _set_ops(x):
    s = {1, 2, 3}
    s.add(4)
    s.discard(1)
    t = s | {9}
    u = s & {2, 3, 10}
    w = s - {2}
    return x * len(t), sorted(u), sorted(w), 4 in s, s.issubset({2, 3, 4, 5})


def _tuple_ops(x):
    t = ("a", 1, x)
    t2 = t + (2,)
    nums = (1, 2, 1)
    return t2[1:3], len(t2), t2.index("a"), nums.count(1), t * 1, (x * 2,) * 2


def _namedtuple_build_and_read(x):
    p = Pair(x, x * 2)
    q = p._replace(second=p.first + 1)
    return q, q.first + q[1], p._fields


def _nested_structures(x):
    return {"list": [x, (x * 2, {"deep": x * 3})], "tuple": ((), [], {})}


def _list_of_tensors_to_stack(x):
    rows = []
    for i in range(3):
        rows.append(x * i)
    return torch.stack(rows), torch.cat(rows[1:])


@pytest.mark.parametrize(
    "fn",
    [
        _list_methods,
        _list_sort_ints,
        _dict_methods,
        _dict_items_reconstructed,
        _set_ops,
        _tuple_ops,
        _namedtuple_build_and_read,
        _nested_structures,
        _list_of_tensors_to_stack,
    ],
    ids=lambda f: f.__name__,
)
def test_container_inside(fn):
    check(fn, torch.randn(3, requires_grad=True), graphs=1)


# ------------------------------------------------------------------ containers as inputs


def test_list_input_appended_and_returned():
    def f(xs):
        xs.append(xs[0] + xs[1])
        return xs

    check(f, [torch.randn(2), torch.randn(2)], graphs=1)


def test_list_input_cleared_and_refilled():
    def f(xs):
        total = xs[0] * 0
        for t in xs:
            total = total + t
        xs.clear()
        xs.extend([total, total * 2])
        return total

    check(f, [torch.randn(2) for _ in range(3)], graphs=1)


def test_list_input_sorted_in_place_and_popped():
    def f(xs, x):
        xs.sort()
        v = xs.pop()
        return x * v

    check(f, [5, 1, 3], torch.randn(2), graphs=1)


def test_dict_input_mutated():
    def f(d, x):
        d["out"] = x * d["scale"]
        d["scale"] += 1
        d.pop("drop")
        return d["out"]

    check(f, {"scale": 2, "drop": None}, torch.randn(3), graphs=1)


def test_nested_input_mutation_keeps_identity():
    def f(cfg, x):
        cfg["layers"].append(x * 2)
        cfg["layers"][0].mul_(3)
        return cfg["layers"], cfg

    check(f, {"layers": [torch.randn(2)]}, torch.randn(2), graphs=1)


def test_aliased_list_inputs():
    def f(a, b):
        a.append(b[0] * 2)
        return len(b), b[-1] + 1

    shared = [torch.randn(2)]
    check(f, shared, shared, graphs=1)


def test_returning_input_containers_keeps_identity():
    def f(xs, d, t):
        return xs, d, t, xs[0] + d["k"]

    check(f, [torch.randn(2)], {"k": torch.randn(2)}, (torch.randn(2),), graphs=1)


def test_new_list_built_from_input_list_is_not_input():
    def f(xs):
        ys = list(xs)
        ys.append(xs[0] * 2)
        zs = xs[:]
        zs.pop()
        return ys, zs, xs

    check(f, [torch.randn(2), torch.randn(2)], graphs=1)


def test_namedtuple_input():
    def f(p):
        return p.first * p.second, p[0] - p[1], type(p).__name__

    check(f, Pair(torch.randn(3), torch.randn(3, requires_grad=True)), graphs=1)


def test_tuple_of_dicts_of_lists_input():
    def f(inp):
        (a, b), cfg = inp
        return a @ b * cfg["alpha"][1]

    check(f, ((torch.randn(2, 3), torch.randn(3, 2)), {"alpha": [0.0, 2.0]}), graphs=1)


def test_dict_with_int_and_tuple_keys():
    def f(d, x):
        out = x
        for key in sorted(d, key=str):
            out = out + d[key]
        return out, {(1, 2): out, 3: x}

    check(f, {1: 1.0, (2, 3): 2.0, "s": 3.0}, torch.randn(2), graphs=1)


def test_list_comparison_and_concat():
    def f(xs, x):
        a = [1, 2] == [1, 2]
        b = (1, 2) < (1, 3)
        c = xs + [4]
        return x * (a + b), c, xs * 2, [] or [0]

    check(f, [1, 2], torch.randn(2), graphs=1)


def test_index_error_raised_with_side_effects():
    def f(xs, x):
        xs.append(x)
        return xs[10] + 1

    check(f, [], torch.randn(2))


def test_key_error_message_matches():
    def f(d, x):
        return x * d["missing"]

    check(f, {"present": 1}, torch.randn(2))


def test_tuple_count_comparing_tensor_raises_like_eager():
    # tuple.count compares with ==; a multi-element tensor's bool() raises in eager
    def f(x):
        t = (x * 2, 1)
        return t.count(1)

    check(f, torch.randn(3))
