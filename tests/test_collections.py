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
