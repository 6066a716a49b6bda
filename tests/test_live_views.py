"""Dict views and iterators are live (Note [Live iterators] in bytegraph/vars/iterators.py):
a view sees later changes of its dict, an iterator later changes of its list, and changing
a dict or set while iterating it raises eager's RuntimeError. Snapshots would be silently
wrong here, so every case is differential."""
import collections

import pytest
import torch

import bytegraph
from tests.helpers import CompileCounter, check


def t2():
    return torch.ones(2)


# ------------------------------------------------------------------ views see later changes

@pytest.mark.parametrize("kind", ["keys", "values", "items"])
def test_view_sees_key_added_later(kind):
    def f(d, x):
        view = getattr(d, kind)()
        d["b"] = 2
        return len(list(view)), list(view), len(view), x + 1

    check(f, {"a": 1}, t2(), graphs=1)


@pytest.mark.parametrize("kind", ["keys", "values", "items"])
def test_view_sees_deletes_and_overwrites(kind):
    def f(d, x):
        view = getattr(d, kind)()
        del d["a"]
        d["c"] = 30
        d["b"] = 20
        d.pop("c")
        return list(view), x * 2

    check(f, {"a": 1, "b": 2, "c": 3}, t2(), graphs=1)


def test_view_of_dict_made_in_trace():
    def f(x):
        d = {"a": x}
        k, v, i = d.keys(), d.values(), d.items()
        d["b"] = x * 2
        return list(k), sum(v), len(i)

    check(f, t2(), graphs=1)


def test_view_types_and_names():
    def f(d, x):
        k, v, i = d.keys(), d.values(), d.items()
        return (isinstance(k, tuple), isinstance(k, list), type(k) is type({}.keys()),
                type(v).__name__, type(i).__name__, type(k).__name__, x + 1)

    r = check(f, {"a": 1}, t2(), graphs=1)
    assert r.compiled.out[:6] == (False, False, True, "dict_values", "dict_items", "dict_keys")


def test_view_mapping_attribute():
    def f(d, x):
        m = d.keys().mapping
        d["b"] = 2
        return m["b"], len(m), "a" in m, type(m).__name__, sorted(m), x + 1

    check(f, {"a": 1}, t2(), graphs=1)


def test_mapping_proxy_is_read_only():
    def f(d, x):
        d.values().mapping["a"] = 5
        return x

    check(f, {"a": 1}, t2())


def test_view_membership():
    def f(d, x):
        d["c"] = 3
        k, i = d.keys(), d.items()
        return ("a" in k, "z" in k, ("a", 1) in i, ("a", 2) in i, ("z", 1) in i, ["a", 1] in i,
                (("a", 1),) in i, 3 in d.values(), 9 in d.values(), x + 1)

    check(f, {"a": 1, "b": 2}, t2(), graphs=1)


def test_view_equality():
    def f(d, x):
        k, i, v = d.keys(), d.items(), d.values()
        return (k == {"a", "b"}, k == {"a"}, k != {"a"}, k == ["a", "b"], i == {("a", 1), ("b", 2)},
                k == {"b": 0, "a": 0}.keys(), v == v, v == d.values(), x + 1)

    check(f, {"a": 1, "b": 2}, t2(), graphs=1)


def test_view_orderings():
    def f(d, x):
        k = d.keys()
        return k < {"a", "b", "c"}, k <= {"a", "b"}, k > {"a"}, k >= {"z"}, d.items() <= {("a", 1), ("b", 2)}, x + 1

    check(f, {"a": 1, "b": 2}, t2(), graphs=1)


def test_view_set_operations():
    def f(d, e, x):
        k, i = d.keys(), d.items()
        return (k | {"z"}, k & {"a", "q"}, k - {"a"}, k ^ {"a", "z"}, {"z"} | k, ["a", "y"] - k,
                k & e.keys(), k | e.keys(), i & e.items(), i | {("q", 9)}, i - e.items(), i ^ e.items(),
                k & ["b"], k.isdisjoint(["q"]), k.isdisjoint(e), x + 1)

    r = check(f, {"a": 1, "b": 2}, {"b": 2, "c": 3}, t2(), graphs=1)
    assert all(type(v) is set for v in r.compiled.out[:13])


def test_view_set_operation_result_is_a_new_set():
    def f(d, x):
        s = d.keys() | set()
        s.add("new")
        return s, list(d), x + 1

    check(f, {"a": 1}, t2(), graphs=1)


def test_values_view_has_no_set_operations():
    def f(d, x):
        return d.values() | {1}, x

    check(f, {"a": 1}, t2())


def test_sorted_list_len_of_views():
    def f(d, x):
        v = d.values()
        d["0"] = -1
        return sorted(d.keys()), sorted(v), list(d.items()), len(d.keys()), bool(d.values()), x + 1

    check(f, {"b": 2, "a": 1}, t2(), graphs=1)


def test_iter_of_view_is_live_and_typed():
    def f(d, x):
        it = iter(d.values())
        first = next(it)
        d["b"] = 20  # overwriting a value: no size change, the iterator sees the new value
        return first, list(it), type(iter(d.items())).__name__, type(iter(d)).__name__, x + 1

    check(f, {"a": 1, "b": 2, "c": 3}, t2(), graphs=1)


# ------------------------------------------------------------------ list iterators are live

def test_list_iterator_sees_append():
    def f(xs, x):
        it = iter(xs)
        xs.append(4)
        return sum(it), x + 1

    check(f, [1, 2, 3], t2(), graphs=1)


@pytest.mark.parametrize("grow", ["append", "iadd", "extend", "insert"])
@pytest.mark.parametrize("wrap", ["iter", "enumerate", "zip", "map", "genexpr"])
def test_advanced_iterators_see_growth(wrap, grow):
    def f(xs, x):
        if wrap == "iter":
            it = iter(xs)
        elif wrap == "enumerate":
            it = enumerate(xs)
        elif wrap == "zip":
            it = zip(xs, xs)
        elif wrap == "map":
            it = map(lambda a: a * 10, xs)
        else:
            it = (a + 1 for a in xs)
        first = next(it)
        if grow == "append":
            xs.append(7)
        elif grow == "iadd":
            xs += [7, 8]
        elif grow == "extend":
            xs.extend([7, 8])
        else:
            xs.insert(0, 0)
        return first, list(it), x + 1

    check(f, [1, 2, 3], t2(), graphs=1)


def test_for_loop_over_list_its_body_appends_to():
    def f(xs, x):
        for v in xs:
            if v < 4:
                xs.append(v + 2)
            x = x + v
        return x, xs

    check(f, [1, 2], t2(), graphs=1)


def test_exhausted_list_iterator_stays_exhausted():
    def f(xs, x):
        it = iter(xs)
        first = list(it)
        xs.append(9)
        return first, list(it), next(it, "end"), x + 1

    check(f, [1, 2], t2(), graphs=1)


def test_list_iterator_after_shrinking():
    def f(xs, x):
        it = iter(xs)
        next(it), next(it)
        xs.pop()
        xs.pop()
        return list(it), xs, x + 1

    check(f, [1, 2, 3, 4], t2(), graphs=1)


def test_next_with_default():
    def f(xs, d, x):
        it, dt = iter(xs), iter(d)
        return next(it, "a"), next(it, "b"), next(it, "c"), next(dt, 0), next(dt, 0), x + 1

    check(f, [1, 2], {"k": 1}, t2(), graphs=1)


def test_iterator_types():
    def f(x):
        its = [iter([]), iter(()), iter(range(2)), iter("ab"), iter({}), iter({1}), iter({}.values()),
               iter({}.items()), reversed([]), reversed(()), reversed({}), reversed({}.items()),
               reversed(range(3)), reversed("ab")]
        return [type(it).__name__ for it in its], x + 1

    check(f, t2(), graphs=1)


def test_iterators_over_tuples_ranges_strings():
    def f(t, s, x):
        a, b, c = iter(t), iter(range(5)), iter(s)
        next(a), next(b), next(c), next(c)
        return list(a), list(b), list(c), list(reversed(t)), list(reversed(s)), list(reversed(range(4))), x + 1

    check(f, (1, 2, 3), "hello", t2(), graphs=1)


# ------------------------------------------------------------------ reversed

def test_reversed_list_is_live():
    def f(xs, x):
        r = reversed(xs)
        first = next(r)
        xs.append(9)  # not seen: the position counts down from where it was
        xs[0] = 100  # seen
        return first, list(r), x + 1

    check(f, [1, 2, 3], t2(), graphs=1)


def test_reversed_list_after_shrinking():
    def f(xs, x):
        r = reversed(xs)
        xs.clear()
        return list(r), x + 1

    check(f, [1, 2, 3], t2(), graphs=1)


@pytest.mark.parametrize("kind", [None, "keys", "values", "items"])
def test_reversed_dict_and_views(kind):
    def f(d, x):
        r = reversed(d) if kind is None else reversed(getattr(d, kind)())
        first = next(r)
        d["b"] = 20
        return first, list(r), x + 1

    check(f, {"a": 1, "b": 2, "c": 3}, t2(), graphs=1)


def test_reversed_dict_changed_size_raises():
    def f(d, x):
        r = reversed(d)
        next(r)
        d["z"] = 0
        return next(r), x

    check(f, {"a": 1, "b": 2}, t2())


def test_reversed_set_is_a_type_error():
    def f(s, x):
        return list(reversed(s)), x

    check(f, {1, 2}, t2())


# ------------------------------------------------------------------ changed size during iteration

def test_adding_a_key_while_iterating_a_dict_raises():
    def f(d, x):
        for k in d:
            d[k + "x"] = 1
        return x

    check(f, {"a": 1}, t2())


def test_next_on_dict_iterator_after_size_change_raises():
    def f(d, x):
        it = iter(d.items())
        next(it)
        del d["b"]
        return next(it), x

    check(f, {"a": 1, "b": 2, "c": 3}, t2())


def test_dict_size_change_error_is_sticky():
    def f(d, x):
        it = iter(d)
        next(it)
        d["z"] = 0
        first = second = None
        try:
            next(it)
        except RuntimeError as e:
            first = str(e)
        del d["z"]  # the size is back, but the iterator stays broken
        try:
            next(it)
        except RuntimeError as e:
            second = str(e)
        return first, second, x

    r = check(f, {"a": 1, "b": 2}, t2())
    assert r.compiled.out[:2] == ("dictionary changed size during iteration",) * 2


def test_try_except_runtime_error_around_dict_iteration():
    def f(d, x):
        try:
            for k in d:
                d[k * 2] = 0
        except RuntimeError as e:
            return str(e), x * 2
        return "no error", x

    check(f, {"a": 1}, t2())


def test_adding_to_a_set_while_iterating_raises():
    def f(s, x):
        for v in s:
            s.add(v + 100)
        return x

    check(f, {1, 2}, t2())


def test_set_iterator_after_discard_raises():
    def f(s, x):
        it = iter(s)
        next(it)
        s.discard(2)
        return next(it), x

    check(f, {1, 2, 3}, t2())


def test_overwriting_values_while_iterating_is_fine():
    def f(d, x):
        for k in d:
            d[k] = d[k] * 2
            x = x + d[k]
        return x, d

    check(f, {"a": 1, "b": 2}, t2(), graphs=1)


def test_exhausted_dict_iterator_ignores_later_changes():
    def f(d, x):
        it = iter(d)
        keys = list(it)
        d["z"] = 0
        return keys, next(it, "end"), x + 1

    check(f, {"a": 1}, t2(), graphs=1)


def test_same_size_key_change_breaks_instead_of_guessing():
    def f(d, x):
        it = iter(d)
        next(it)
        del d["b"]
        d["b"] = 5  # same size, 'b' moved to the end: CPython walks its table
        return list(it), x + 1

    check(f, {"a": 1, "b": 2, "c": 3}, t2())


# ------------------------------------------------------------------ OrderedDict

def test_ordered_dict_views_popitem_move_to_end():
    def f(d, x):
        k = d.keys()
        d.move_to_end("a")
        last = d.popitem()
        first = d.popitem(last=False)
        d.move_to_end("c", last=False)
        return list(k), last, first, type(k).__name__, list(reversed(d.values())), x + 1

    check(f, collections.OrderedDict(a=1, b=2, c=3, d=4, e=5), t2(), graphs=1)


def test_ordered_dict_mutated_during_iteration_raises():
    def f(d, x):
        it = iter(d)
        next(it)
        d["z"] = 0
        return next(it), x

    check(f, collections.OrderedDict(a=1, b=2), t2())


def test_dict_popitem():
    def f(d, x):
        k = d.keys()
        a = d.popitem()
        return a, list(k), x + 1

    check(f, {"a": 1, "b": 2}, t2(), graphs=1)


def test_popitem_of_empty_dict_raises():
    def f(d, x):
        return d.popitem(), x

    check(f, {}, t2())
    check(f, collections.OrderedDict(), t2())


# ------------------------------------------------------------------ stored, returned, across breaks

def test_views_and_iterators_returned_and_stored():
    def f(d, xs, x):
        k = d.keys()
        it = iter(xs)
        next(it)
        box = [k, it, k]
        return box, x + 1

    cnt = CompileCounter()
    cf = bytegraph.compile(f, backend=cnt)
    d_e, d_c, xs_e, xs_c = {"a": 1}, {"a": 1}, [1, 2, 3], [1, 2, 3]
    (be, _), (bc, _) = f(d_e, xs_e, t2()), cf(d_c, xs_c, t2())
    assert cnt.frame_count == 1
    assert type(bc[0]) is type(be[0]) and bc[0] is bc[2] and type(bc[1]) is type(be[1])
    d_e["b"], d_c["b"] = 2, 2
    xs_e.append(4), xs_c.append(4)
    assert list(bc[0]) == list(be[0]) == ["a", "b"]
    assert list(bc[1]) == list(be[1]) == [2, 3, 4]
    assert bc[0].mapping == d_c


def test_returned_dict_iterator_is_real_and_positioned():
    def f(d, x):
        it = iter(d.items())
        next(it)
        return it, x + 1

    cf = bytegraph.compile(f, backend=CompileCounter())
    d_e, d_c = {"a": 1, "b": 2, "c": 3}, {"a": 1, "b": 2, "c": 3}
    it_e, it_c = f(d_e, t2())[0], cf(d_c, t2())[0]
    assert type(it_c) is type(it_e)
    assert next(it_c) == next(it_e) == ("b", 2)
    d_e["z"], d_c["z"] = 0, 0
    with pytest.raises(RuntimeError, match="changed size"):
        next(it_c)


def test_view_kept_across_break_sees_later_change():
    def f(d, x):
        k = d.keys()
        y = x * 2
        print("x")
        d["z"] = 1
        return list(k), y

    check(f, {"a": 1}, t2(), graphs=1)


def test_view_of_new_dict_kept_across_break():
    def f(x):
        d = {"a": x}
        v = d.values()
        print("x")
        d["b"] = x * 3
        return sum(v), len(v)

    check(f, t2())


def test_list_iterator_kept_across_break():
    def f(xs, x):
        it = iter(xs)
        next(it)
        y = x + 1
        bytegraph.graph_break()
        xs.append(5)
        return list(it), y

    check(f, [1, 2, 3], t2(), graphs=1)


def test_list_iterator_over_new_list_kept_across_break():
    def f(x):
        xs = [1, 2]
        it = iter(xs)
        next(it)
        xs.append(3)
        y = x + 1
        bytegraph.graph_break()
        xs.append(4)
        return list(it), xs, y * 2

    check(f, t2(), graphs=2)


def test_list_iterator_past_the_old_end_across_break():
    def f(xs, x):
        it = iter(xs)
        xs.append(3)
        xs.append(4)
        a, b, c = next(it), next(it), next(it)  # past the length the real list has before the replay
        y = x + a
        print("b")
        xs.append(5)
        return list(it), (a, b, c), xs, y

    check(f, [1, 2], t2())


def test_dict_iterators_kept_across_break():
    def f(d, s, x):
        a, b, c = iter(d), iter(d.items()), iter(s)
        next(a), next(b), next(c)
        y = x + 1
        print("b")
        return list(a), list(b), sorted(c), y

    check(f, {"a": 1, "b": 2, "c": 3}, {5, 6, 7}, t2(), graphs=1)


def test_dict_iterator_across_break_then_dict_grows():
    def f(d, x):
        it = iter(d)
        next(it)
        y = x + 1
        print("b")
        d["z"] = 1
        return next(it), y

    check(f, {"a": 1, "b": 2}, t2())


def test_for_loop_over_dict_with_break_in_body():
    def f(d, x):
        for k, v in d.items():
            x = x + v
            print(k)
        return x

    check(f, {"a": 1, "b": 2, "c": 3}, t2())


def test_for_loop_over_list_with_break_in_body_and_append():
    def f(xs, x):
        for v in xs:
            if v < 3:
                xs.append(v + 10)
            x = x + v
            print(v)
        return x, xs

    check(f, [1, 2], t2())


def test_real_list_iterator_argument():
    def f(it, xs, x):
        a = next(it)
        xs.append(a)
        return a, list(it), x + 1

    cf = bytegraph.compile(f, backend=CompileCounter())
    e_list, c_list = [1, 2, 3], [1, 2, 3]
    it_e, it_c = iter(e_list), iter(c_list)
    assert f(it_e, e_list, t2())[:2] == cf(it_c, c_list, t2())[:2]
    assert e_list == c_list and list(it_e) == list(it_c) == []
    e_list.append(7), c_list.append(7)
    assert list(it_e) == list(it_c) == []


def test_real_list_iterator_argument_partly_consumed():
    def f(it, x):
        return next(it), x + 1

    cf = bytegraph.compile(f, backend=CompileCounter())
    e_list, c_list = [1, 2, 3], [1, 2, 3]
    it_e, it_c = iter(e_list), iter(c_list)
    for _ in range(2):
        assert f(it_e, t2())[0] == cf(it_c, t2())[0]
    e_list.append(4), c_list.append(4)
    assert list(it_e) == list(it_c) == [3, 4]


def test_real_dict_view_and_iterator_arguments():
    def f(k, it, d, x):
        d["q"] = 0
        return list(k), len(k), next(it), x + 1

    cf = bytegraph.compile(f, backend=CompileCounter())
    for fn in (f, cf):
        d = {"a": 1, "b": 2}
        out = fn(d.keys(), iter({"m": 1, "n": 2}), d, t2())
        assert out[:3] == (["a", "b", "q"], 3, "m")


def test_lazy_iterator_types():
    def f(xs, x):
        return type(map(abs, xs)).__name__, type(zip(xs)) is zip, isinstance(enumerate(xs), enumerate), x + 1

    check(f, [1], t2(), graphs=1)
