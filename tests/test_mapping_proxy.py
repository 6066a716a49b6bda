"""`types.MappingProxyType(mapping)` made in the compiled function (bytegraph/vars/mapping_proxy.py,
the worked example of docs/architecture.md "Adding a kind"): a read-only live view of its
mapping, in one graph. Differential: outputs (the proxy itself rebuilt over the real dict),
the dict's final state, the TypeError a write raises; a proxy from outside breaks cleanly."""
import collections
import types

import pytest
import torch

import bytegraph
from helpers import CompileCounter, check

X = torch.randn(3, requires_grad=True)


def test_reads_go_through_the_live_mapping():
    def f(x, d):
        p = types.MappingProxyType(d)
        d["shift"] = 1.0  # a write after the proxy was made is seen through it
        y = x * p["scale"] + p.get("shift", 0.0) + p.get("missing", 3.0)
        if "bias" in p:
            y = y + 1
        return y * len(p), sorted(p), list(p.items()), list(p.values()), list(reversed(p)), bool(p)

    check(f, X, {"scale": 2.0}, graphs=1, fullgraph=True)


def test_the_proxy_is_returned_as_a_proxy_over_the_real_dict():
    """Returned, it is rebuilt once over the caller's dict (proxies cannot be deep-copied, so
    the two runs get dicts of their own here instead of `check`'s copies)."""
    def f(x, d):
        p = types.MappingProxyType(d)
        d["b"] = 2
        return x + 1, p, p, p.copy(), type(p) is types.MappingProxyType, isinstance(p, types.MappingProxyType)

    counter = CompileCounter()
    compiled = bytegraph.compile(f, backend=counter, fullgraph=True)
    for run in range(2):
        eager_d, compiled_d = {"a": 1}, {"a": 1}
        eager, out = f(X, eager_d), compiled(X, compiled_d)
        assert torch.equal(eager[0], out[0])
        assert type(out[1]) is types.MappingProxyType and out[1] is out[2]
        assert dict(out[1]) == dict(eager[1]) == compiled_d == eager_d == {"a": 1, "b": 2}
        compiled_d["c"] = 3  # a view of the caller's own dict
        assert out[1]["c"] == 3
        assert out[3] == eager[3] and type(out[3]) is dict and out[4:] == eager[4:] == (True, True)
    assert counter.frame_count == 1


def test_views_and_copies_keep_the_mapping_type():
    def f(x, d):
        p = types.MappingProxyType(d)
        keys = p.keys()
        d["c"] = 3  # the keys view is the dict's own: live
        return x * len(keys), list(keys), p.copy(), "c" in keys

    check(f, X, collections.OrderedDict(a=1, b=2), graphs=1, fullgraph=True)


@pytest.mark.parametrize("write", ["setitem", "delitem"])
def test_writes_raise_eagers_type_error(write):
    def f(x, d):
        p = types.MappingProxyType(d)
        try:
            if write == "setitem":
                p["a"] = 2
            else:
                del p["a"]
        except TypeError as e:
            return x + 1, str(e), d
        return x, None, d

    check(f, X, {"a": 1}, graphs=1, fullgraph=True)


@pytest.mark.parametrize("arg", [[("a", 1)], (1, 2)])
def test_a_list_or_tuple_is_refused_as_eager_refuses_it(arg):
    def f(x, a):
        try:
            types.MappingProxyType(a)
        except TypeError as e:
            return x + 1, str(e)
        return x, None

    check(f, X, arg, graphs=1, fullgraph=True)


PROXY = types.MappingProxyType({"scale": 2.0})


def test_a_proxy_from_outside_is_a_clean_graph_break():
    def f(x):
        return x * PROXY["scale"] + 1

    assert torch.equal(bytegraph.compile(f)(X), f(X))
    with pytest.raises(bytegraph.Unsupported, match="mappingproxy"):
        bytegraph.compile(f, fullgraph=True)(X)
