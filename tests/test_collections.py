"""collections (deque, OrderedDict, Counter, namedtuple, ChainMap) and the builtin dict/set/list
methods, traced: differential against eager (outputs, grads, stdout, outer state, exceptions),
most in one graph, with cases inside inlined helpers and across a graph break."""
import collections
import typing
from collections import ChainMap, Counter, OrderedDict, deque, namedtuple

import pytest
import torch

import bytegraph
from helpers import check

T = lambda *shape: torch.randn(*shape, requires_grad=True)  # noqa: E731

P = namedtuple("P", "a b", defaults=[5])


class NT(typing.NamedTuple):
    a: object
    b: int = 3


def _one(fn, *args):
    """One graph, no break (the extra `* 1` makes a graph even when `fn` computes nothing)."""
    check(lambda *a: (fn(*a), a[0] * 1), *args, graphs=1, fullgraph=True)


def _dq_ops(x):
    d = deque([1, 2, 3])
    d.append(x)
    d.appendleft(x + 1)
    a, b = d.pop(), d.popleft()
    return a * b, len(d), list(d), d


def _dq_ext(x):
    d = deque([1, 2, 3])
    d.extend([x, 5])
    d.extendleft([0, -1])
    d.rotate(2)
    r1 = list(d)
    d.rotate(-3)
    e = deque([1, 2, 3])
    return r1, d, d[0], d[-1], 3 in e, 9 in e, x in deque([x]), list(reversed(d)), bool(d), bool(deque())


def _dq_maxlen(x):
    d = deque([1, 2, 3, 4], maxlen=3)
    d.append(x)
    d.appendleft(x * 2)
    d.extend([7, 8])
    d.extendleft([9])
    return list(d), d.maxlen, deque([1]).maxlen, d


def _dq_misc(x):
    d = deque([x, 1, 2, 1])
    y = x * 3
    d[0] = y
    del d[1]
    e = d.copy()
    e.append(0)
    d.insert(1, 7)
    d.remove(y)
    c = deque([1, 2, 1, 3])
    return (d, e, c.count(1), c.index(1), c.index(1, 1), d == deque([7, 2, 1]), c == [1, 2, 1, 3], c + deque([5]),
            c * 2, d[-1], d.maxlen)


def _dq_clear(x):
    d = deque([x, x])
    d.clear()
    d.append(x + 1)
    return len(d), d, deque(), deque(maxlen=0)


def _dq_iter(x):
    d = deque([x, x + 1, x + 2])
    total = 0
    for v in d:
        total = total + v
    return total, [v * 2 for v in reversed(d)], sum(d), max(deque([3, 1, 2]))


def _dq_from_iter(x):
    return deque(v * 2 for v in [x, x]), deque(range(4)), deque("ab"), deque(deque([x]), 1)


def _od_new(x):
    o = OrderedDict([("a", x), ("b", 2)])
    o["c"] = x + 1
    return o, list(o.items()), list(o), OrderedDict(a=1), OrderedDict(), OrderedDict({"z": x})


def _od_move(x):
    o = OrderedDict(a=1, b=2, c=x)
    o.move_to_end("a")
    o.move_to_end("c", last=False)
    o.move_to_end("b", False)
    return list(o), o


def _od_eq(x):
    a, b = OrderedDict(a=1, b=2), OrderedDict(b=2, a=1)
    return a == b, a != b, a == dict(b=2, a=1), dict(b=2, a=1) == a, a == OrderedDict(a=1, b=2), x


def _od_popitem(x):
    o = OrderedDict(a=1, b=2, c=x)
    return o.popitem(last=False), o.popitem(), o, o.popitem(True)


def _od_views(x):
    o = OrderedDict(a=x, b=2)
    return (list(reversed(o)), list(reversed(o.keys())), list(reversed(o.values())),
            list(reversed(o.items())), list(o.values()), "a" in o.keys(), o.get("b"), o.copy())


def _od_fromkeys(x):
    return OrderedDict.fromkeys("ab", x), OrderedDict.fromkeys([1, 2]), dict.fromkeys("xy")


def _ctr_new(x):
    c = Counter("abca")
    return c["a"], c["z"], "z" in c, c, Counter({"a": 2}), Counter(a=3, b=x), Counter(), Counter([1, 1, 2])


def _ctr_mc(x):
    c = Counter("abcaabd")
    return c.most_common(2), c.most_common(), c.most_common(0), x


def _ctr_update(x):
    c = Counter("ab")
    c.update("aab")
    c.update({"b": 2}, z=1)
    c.subtract({"a": 1})
    c.subtract("z")
    c.subtract(b=10)
    return c, sorted(c.elements()), c.total(), x


def _ctr_arith(x):
    a, b = Counter("aab"), Counter("bcc")
    return a + b, a - b, b - a, a & b, a | b, +Counter(a=-1, b=2), -Counter(a=-1, b=2), x


def _ctr_inplace(x):
    a = Counter("aab")
    a += Counter("b")
    a -= Counter("a")
    a |= Counter("ccc")
    a &= Counter("abc")
    return a, x


def _ctr_with_dicts(x):
    a = Counter(a=1, b=3)
    a |= {"a": 2, "c": -1}
    b = Counter(a=1)
    b += {"z": 2}
    return a, b, Counter(a=1) | {"b": 2}, {"b": 2} | Counter(a=1), Counter(a=x) | {"b": x}, x


def _ctr_tensors(x):
    c = Counter()
    for k in ["w", "b", "w"]:
        c[k] += 1
    return x * c["w"] + c["b"] + c["zz"], c


def _ctr_misc(x):
    c = Counter("abb")
    del c["a"]
    del c["zz"]  # no KeyError for a Counter
    d = c.copy()
    d["q"] = 4
    return c, d, c == Counter(b=2), c == Counter(b=2, z=0), len(c), dict(c), list(c.items()), x


def _nt(x):
    p = P(x, 2)
    q = p._replace(b=4)
    return q, P(1)._asdict(), P._fields, P._make([x, 3]), P._field_defaults, p.a + q.b


def _nt_unpack(x):
    a, b = P(x, 2)
    p = P(b=x, a=1)
    return a + b, p[0], p[-1], p[:1], len(p), list(p), p == (1, x), isinstance(p, tuple)


def _typing_nt(x):
    n = NT(x)
    m = NT(1, b=2)._replace(a=x)
    return n, n.b, m, NT._fields, m._asdict(), NT(*[x, 1])


def _cm(x):
    c = ChainMap({"a": 1}, {"a": 2, "b": x})
    child = c.new_child({"a": 9})
    return (c["a"], c["b"], child["a"], child["b"], c.parents.maps, c.maps, "b" in c, "q" in c,
            len(c), sorted(c), c.get("q", 5), dict(c))


def _cm_write(x):
    m1, m2 = {}, {"a": 1}
    c = ChainMap(m1, m2)
    c["z"] = x
    c["a"] = 3
    del c["a"]
    return m1, m2, c["a"], c.new_child().maps, ChainMap().maps


def _dict_methods(x):
    d = {"a": 1}
    d |= {"b": x}
    e = d | {"c": 2}
    s1, s2 = d.setdefault("a", x), d.setdefault("q")
    d.update(k=x)
    d.update([("c", 1)])
    d.update({"d": 2}, e=3)
    return d, e, s1, s2, d.copy(), dict.fromkeys("ab", x), dict.fromkeys([1, 2]), d.popitem(), d


def _dict_eq(x):
    return {"a": 1} == {"a": 1}, {"a": 1} != {"b": 1}, {"a": 1, "b": 2} == {"b": 2, "a": 1}, x


def _set_methods(x):
    s = {1, 2, 3}
    s.intersection_update({2, 3, 4})
    s.difference_update({3})
    s.discard(9)
    s.symmetric_difference_update({2, 7})
    t = {1, 2}
    return (s, {1, 2}.symmetric_difference({2, 3}), {1}.isdisjoint({2}), {1}.issubset({1, 2}),
            {1, 2}.issuperset({1}), t.copy(), t.union({3}, [4]), t.intersection({1}), t.difference({1}), x)


def _set_ops(x):
    s = {1, 2}
    s |= {4}
    s &= {1, 4}
    s -= {1}
    s ^= {7}
    return (s, {1, 2} | {3}, {1, 2} & {2}, {1, 2} - {2}, {1, 2} ^ {2, 3}, {1} <= {1, 2}, {1} < {1}, x)


def _set_pop(x):
    s = {5}
    return s.pop(), s, x


def _frozenset(x):
    f = frozenset({1, 2})
    return (f | frozenset({3}), f & {2}, f.union([5]), f.issubset({1, 2}), frozenset([1, 2]), f - {1},
            f ^ {2, 3}, 1 in f, x)


def _list_methods(x):
    lst = [3, 1, 2]
    lst.sort(key=lambda v: -v, reverse=True)
    m = [4, 2, 1, 3]
    m.sort(reverse=True)
    n = [1, 2]
    n.insert(0, x)
    n.insert(-1, 5)
    n.insert(100, 6)
    return lst, m, n, [1, 2, 1, 3].index(1, 1), [1, 2, 1, 3].index(1, 1, 3), [1, 2, 1].count(1)


def _list_more(x):
    a = [1, 2, 3, 2]
    a.remove(2)
    b = [1, x]
    b.reverse()
    c = b.copy()
    c *= 2
    d = [1, 2, 3, 4]
    d[1:3] = [x]
    e = [1, 2, 3, 4, 5]
    del e[0:4:2]
    f = [1, 2, x]
    return a, b, c, d, e, f.pop(0), f.pop(), f, [x] * 2, 2 * [1]


def _list_sort_key_len(x):
    lst = [[1, 2], [x], []]
    lst.sort(key=len)
    return lst


def _types(x):
    d, c, o = deque([x]), Counter("a"), OrderedDict(a=x)
    return (isinstance(d, deque), type(c) is Counter, isinstance(c, dict), type(o) is OrderedDict,
            isinstance(o, dict), isinstance(ChainMap(), collections.abc.MutableMapping), type(P(x)) is P,
            isinstance(NT(x), tuple), x)


def _od_or(x):
    o = OrderedDict(a=x)
    m = o | {"b": 1}
    n = {"c": 2} | o
    o |= {"d": 3}
    return m, n, o, type(m) is OrderedDict, type(n) is OrderedDict


def _ctr_compare(x):
    a, b = Counter("ab"), Counter("abb")
    return a <= b, b <= a, a < b, a == Counter(b=1, a=1), a != b, Counter(a=0) == Counter(), x


def _ctr_keys_order(x):
    c = Counter("cabbac")
    return list(c), list(c.values()), sorted(c), c.most_common(), dict(c.items()), x


def _dq_loop_rotate(x):
    window = deque(maxlen=2)
    outs = []
    for i in range(4):
        window.append(x * i)
        outs.append(sum(window))
    return outs, len(window)


def _set_frozen_keys(x):
    d = {frozenset({1, 2}): x, frozenset(): 1}
    return d[frozenset([2, 1])] * 2, frozenset({1}) in {frozenset({1})}, {1, 2} == frozenset({2, 1})


CASES = {name[1:]: fn for name, fn in list(globals().items())
         if name.startswith("_") and callable(fn) and name not in ("_one",) and not name.startswith("__")}


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_graph(name):
    _one(CASES[name], T(2))


@pytest.mark.parametrize("name", sorted(CASES))
def test_inside_an_inlined_helper(name):
    fn = CASES[name]

    def outer(x):
        return fn(x * 2)

    _one(outer, T(2))


# ---- values from outside: read, mutated (replayed on the real object), guarded ----------

def test_deque_argument_mutated_and_replayed():
    def f(d, x):
        d.append(x)
        d.appendleft(d.pop() * 2)
        d.rotate(1)
        return d[0] + 1, len(d)

    check(f, deque([1, 2, 3], maxlen=4), T(2), graphs=1, fullgraph=True)
    check(f, deque([T(2), 5]), T(2), graphs=1, fullgraph=True)


def test_deque_argument_maxlen_eviction_replayed():
    def f(d, x):
        d.extend([x, x + 1, x + 2])
        return d.maxlen

    check(f, deque([1, 2], maxlen=3), T(2), graphs=1, fullgraph=True)


def test_deque_argument_keeps_identity_when_returned():
    def f(d, x):
        d.popleft()
        return d, x * 2

    check(f, deque([1, 2, 3]), T(2), graphs=1, fullgraph=True)


def test_deque_guarded_by_length_and_maxlen():
    def f(d, x):
        return x * len(d) + (d.maxlen or 0)

    compiled = bytegraph.compile(f, backend="eager")
    x = torch.ones(2)
    for d in (deque([1, 2]), deque([1, 2], maxlen=5), deque([1, 2, 3]), deque([1, 2], maxlen=5)):
        torch.testing.assert_close(compiled(d, x), f(d, x))


GLOBAL_DQ = deque([1, 2])
GLOBAL_CTR = Counter("ab")
GLOBAL_OD = OrderedDict(a=1, b=2)


def _reset_globals():
    global GLOBAL_DQ, GLOBAL_CTR, GLOBAL_OD
    GLOBAL_DQ = deque([1, 2])
    GLOBAL_CTR = Counter("ab")
    GLOBAL_OD = OrderedDict(a=1, b=2)


def _globals_state():
    return list(GLOBAL_DQ), GLOBAL_DQ.maxlen, dict(GLOBAL_CTR), list(GLOBAL_OD.items())


def test_globals_mutated_in_place():
    def f(x):
        GLOBAL_DQ.append(3)
        GLOBAL_DQ.popleft()
        GLOBAL_CTR.update("bbc")
        GLOBAL_CTR["a"] -= 1
        GLOBAL_OD.move_to_end("a")
        GLOBAL_OD["c"] = 3
        return x * GLOBAL_CTR["b"] + len(GLOBAL_DQ)

    check(f, T(2), graphs=1, fullgraph=True, setup=_reset_globals, state=_globals_state)


def test_counter_argument_updated_and_replayed():
    def f(c, x):
        c.update(["w", "w", "q"])
        c.subtract({"q": 2})
        del c["zz"]
        return x * c["w"], c.most_common(1)

    check(f, Counter(w=1, v=3), T(2), graphs=1, fullgraph=True)


def test_counter_argument_inplace_operator_keeps_identity():
    def f(c, x):
        alias = c
        c += Counter(a=1, b=-5)
        return alias is c, x + c["a"]

    check(f, Counter(a=1, b=2), T(2), graphs=1, fullgraph=True)


def test_ordered_dict_argument_reordered_and_replayed():
    def f(o, x):
        o.move_to_end("a")
        o.popitem(last=False)
        o["z"] = x * 2
        return list(o), o == OrderedDict([("c", 3), ("a", 1), ("z", o["z"])])

    check(f, OrderedDict(a=1, b=2, c=3), T(2), graphs=1, fullgraph=True)


def test_ordered_dict_equality_is_order_sensitive_with_tensors():
    def f(x):
        a = OrderedDict([("p", x), ("q", 1)])
        b = OrderedDict([("q", 1), ("p", x)])
        return a == b, dict(a) == dict(b), a == dict(b), a != b

    _one(f, T(2))


def test_chain_map_argument_writes_go_to_the_first_map():
    def f(c, x):
        c["new"] = x
        c["a"] = c["a"] + 1
        return c["b"] * 2, len(c)

    check(f, ChainMap({"a": 1}, {"a": 5, "b": T(2)}), T(2), graphs=1, fullgraph=True)


def test_namedtuple_from_outside():
    def f(p, n, x):
        q = p._replace(a=x)
        return q, p.b + x, n._asdict(), type(p)._make([1, x]), n.a * 2

    check(f, P(T(2), 3), NT(T(2)), T(2), graphs=1, fullgraph=True)


def test_returned_new_values_have_eager_types():
    def f(x):
        return (deque([x, 1], maxlen=3), Counter(a=2), OrderedDict(b=x), ChainMap({"a": x}).maps,
                P(x), NT(x, 1), dict.fromkeys("ab"), x * 1)

    check(f, T(2), graphs=1, fullgraph=True)


# ---- across a graph break: alive and mutated on both sides ----------------------------

def test_deque_alive_across_a_break():
    def f(x):
        d = deque([x], maxlen=3)
        d.append(x + 1)
        print("break")
        d.appendleft(x * 3)
        d.append(x * 4)
        return list(d), d.maxlen

    check(f, T(2), graphs=2)


def test_argument_deque_mutated_on_both_sides_of_a_break():
    def f(d, x):
        d.append(x + 1)
        print("break", len(d))
        d.popleft()
        d.append(x * 2)
        return len(d)

    check(f, deque([1, 2, 3], maxlen=3), T(2), graphs=2)


def test_counter_alive_across_a_break():
    def f(x):
        c = Counter("aab")
        c["z"] += 1
        y = x * c["a"]
        print("break", c["a"])
        c.update("zz")
        return y * c["z"], c, c.most_common(1)

    check(f, T(2), graphs=2)


def test_ordered_dict_and_chain_map_across_a_break():
    def f(x):
        o = OrderedDict(a=x + 1, b=2)
        m = {"k": 1}
        c = ChainMap(m, {"j": x})
        print("break")
        o.move_to_end("a")
        c["q"] = 5
        return list(o.items()), m, c["j"] * 2

    check(f, T(2), graphs=2)


def test_break_inside_helper_with_deque():
    def helper(d, x):
        d.append(x)
        print("inside", len(d))
        d.rotate(1)
        return d[0]

    def f(x):
        d = deque([1, 2])
        return helper(d, x) + 1, list(d)

    check(f, T(2))


# ---- errors as eager ----------------------------------------------------------------

ERRORS = {
    "deque_pop_empty": lambda x: deque().pop(),
    "deque_popleft_empty": lambda x: deque([], maxlen=2).popleft(),
    "deque_index_range": lambda x: deque([x])[3],
    "deque_slice": lambda x: deque([x])[0:1],
    "deque_full_insert": lambda x: deque([x], maxlen=1).insert(0, 1),
    "deque_remove_missing": lambda x: deque([1, 2]).remove(5),
    "deque_negative_maxlen": lambda x: deque([x], maxlen=-1),
    "deque_index_missing": lambda x: deque([1]).index(4),
    "deque_mutated_while_iterating": lambda x: _mutate_while_iterating(deque([x, x])),
    "deque_mutated_after_last": lambda x: [d := deque([x]), [d.clear() for v in d]],
    "list_remove_missing": lambda x: [1, 2].remove(3),
    "list_index_missing": lambda x: [1, 2].index(3),
    "list_index_window": lambda x: [1, 2, 1].index(2, 2),
    "tuple_index_missing": lambda x: (1, x).index(5, 0, 1),
    "deque_insert_str": lambda x: deque([x]).insert("a", 1),
    "deque_rotate_float": lambda x: deque([x]).rotate(1.5),
    "set_pop_empty": lambda x: set().pop(),
    "set_ior_list": lambda x: _ior({1}, [2]),
    "od_move_missing": lambda x: OrderedDict(a=x).move_to_end("q"),
    "od_popitem_empty": lambda x: OrderedDict().popitem(),
    "counter_fromkeys": lambda x: Counter.fromkeys("ab"),
    "counter_and_dict": lambda x: Counter(a=1) & {"a": x},
    "counter_plus_int": lambda x: Counter(a=1) + 1,
    "chain_map_missing": lambda x: ChainMap({"a": x})["b"],
    "chain_map_del_missing": lambda x: ChainMap({}, {"a": x}).__delitem__("a"),
    "nt_make_length": lambda x: P._make([x]),
    "nt_replace_bad": lambda x: P(x)._replace(c=1),
}


def _mutate_while_iterating(d):
    for v in d:
        d.append(v)


def _ior(s, other):
    s |= other
    return s


@pytest.mark.parametrize("name", sorted(ERRORS))
def test_errors_as_eager(name):
    fn = ERRORS[name]
    with pytest.raises(Exception):
        fn(torch.ones(1))
    check(fn, T(2))


def test_error_caught_in_the_trace():
    def f(x):
        d = deque()
        try:
            d.pop()
        except IndexError as e:
            msg = str(e)
        try:
            [1].remove(2)
        except ValueError:
            msg += "!"
        return x * 2, msg

    _one(f, T(2))


def test_namedtuple_class_made_in_the_trace_breaks_with_its_reason():
    def f(x):
        Q = namedtuple("Q", "u v")
        return Q(x, 1).u * 2

    out = bytegraph.explain(f, torch.ones(2))
    assert any("collections.namedtuple() makes a new class each call" in str(r) for r in out.break_reasons)
    torch.testing.assert_close(out.result, f(torch.ones(2)))


def test_loop_over_a_deque_with_a_break_inside():
    def f(x):
        d = deque([x, x + 1, x + 2], maxlen=5)
        total = x * 0
        for v in d:
            print("item")
            total = total + v
        d.append(total)
        return total, d

    check(f, T(2), graphs=4)  # one graph per stretch between the prints


def test_loop_over_counter_items_with_a_break_inside():
    def f(x):
        c = Counter("abcab")
        out = x * 0
        for key, n in c.items():
            print(key)
            out = out + x * n
        return out, c

    check(f, T(2), graphs=4)


def test_printing_collections_values():
    def f(x):
        print(deque([1, 2], maxlen=3), Counter("aab"), OrderedDict(a=1), P(1, 2), NT(3))
        return x + 1

    check(f, T(2))


def test_counter_equality_with_tensor_counts_breaks_with_its_reason():
    def f(x):
        return Counter(a=x) == Counter(a=x + 1)

    out = bytegraph.explain(f, torch.ones(1))
    assert any("comparing a Counter with a Counter" in str(r) for r in out.break_reasons)
    assert out.result == f(torch.ones(1))


def test_chain_map_views_break_with_their_reason():
    def f(x):
        return [k for k in ChainMap({"a": x}).keys()], x + 1

    out = bytegraph.explain(f, torch.ones(1))
    assert any("KeysView" in str(r) for r in out.break_reasons)
    check(f, T(2))


class _History(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(2, 2)
        self.seen = deque(maxlen=2)
        self.counts = Counter()

    def forward(self, x):
        y = self.lin(x)
        self.seen.append(y.detach())
        self.counts["calls"] += 1
        return y + sum(self.seen)


def test_module_attribute_deque_and_counter_mutated_every_call():
    torch.manual_seed(0)
    model = _History()
    eager_model = _History()
    eager_model.load_state_dict(model.state_dict())
    compiled = bytegraph.compile(model, backend="eager")
    for _ in range(3):
        x = torch.randn(1, 2)
        torch.testing.assert_close(compiled(x), eager_model(x))
    assert len(model.seen) == 2 and model.counts == Counter(calls=3) == eager_model.counts
    for a, b in zip(model.seen, eager_model.seen):
        torch.testing.assert_close(a, b)
