"""`collections.defaultdict` and dicts keyed by tensors, differentially against eager:
made in the trace, read from outside (arguments, globals, object attributes), inside inlined
helpers and across graph breaks; and torch.optim's `optimizer.state` (a defaultdict keyed by
parameters) through `opt.step()` compiled whole."""
import collections
import copy
from collections import defaultdict

import pytest
import torch

import bytegraph
from helpers import CompileCounter, assert_same, check, check_calls, clone_inputs

# ---- defaultdict made in the trace --------------------------------------------------------------


def test_defaultdict_list_appends():
    def fn(x):
        d = defaultdict(list)
        d["a"].append(x)
        d["b"].append(x * 2)
        d["a"].append(x + 1)
        return d, d.default_factory

    check(fn, torch.randn(3, requires_grad=True), graphs=1, fullgraph=True)


def test_defaultdict_int_counts():
    def fn(x):
        counts = defaultdict(int)
        for word in ("a", "b", "a", "c", "a"):
            counts[word] += 1
        return x * counts["a"], counts

    check(fn, torch.randn(2), graphs=1, fullgraph=True)


def test_defaultdict_lambda_factory():
    def fn(x):
        d = defaultdict(lambda: 10)
        d["k"] += 5
        return x + d["k"] + d["other"], sorted(d.items())

    check(fn, torch.randn(2), graphs=1, fullgraph=True)


def test_defaultdict_dict_factory_nested_inserts():
    def fn(x):
        d = defaultdict(dict)
        d["layer1"]["w"] = x
        d["layer1"]["b"] = x.sum()
        d["layer2"]["w"] = x * 3
        return d

    check(fn, torch.randn(3), graphs=1, fullgraph=True)


def test_defaultdict_with_tensor_values_accumulates():
    def fn(xs):
        acc = defaultdict(lambda: torch.zeros(3))
        for i, x in enumerate(xs):
            acc[i % 2] = acc[i % 2] + x
        return acc[0], acc[1]

    check(fn, [torch.randn(3, requires_grad=True) for _ in range(4)], graphs=1, fullgraph=True)


def test_get_and_in_do_not_insert():
    def fn(x):
        d = defaultdict(list)
        got = d.get("missing")
        present = "missing" in d
        d["there"].append(1)
        return x + len(d), got, present, "there" in d, list(d)

    check(fn, torch.randn(2), graphs=1, fullgraph=True)


def test_setdefault_and_pop():
    def fn(x):
        d = defaultdict(int)
        a = d.setdefault("a", 5)
        b = d.setdefault("a", 7)
        d["c"] += 2
        popped = d.pop("c")
        missing = d.pop("zz", -1)
        del d["a"]
        return x * (a + b + popped + missing), d

    check(fn, torch.randn(2), graphs=1, fullgraph=True)


def test_fromkeys_has_no_factory():
    def fn(x):
        d = defaultdict.fromkeys(["a", "b"], 0)
        d["a"] += 3
        try:
            d["zz"]
        except KeyError as e:
            err = e.args
        return x + d["a"], d, d.default_factory, err

    check(fn, torch.randn(2), graphs=1, fullgraph=True)


def test_none_factory_raises_key_error_like_eager():
    def fn(x):
        d = defaultdict(None, {"a": 1})
        return d["missing"]

    check(fn, torch.randn(2))


def test_constructor_with_mapping_and_kwargs():
    def fn(x):
        d = defaultdict(list, {"a": [1]}, b=[2])
        d["a"].append(3)
        d["c"].append(4)
        return d, x + 1

    check(fn, torch.randn(2), graphs=1, fullgraph=True)


def test_bad_factory_raises_type_error():
    def fn(x):
        return defaultdict(5)

    check(fn, torch.randn(2))


def test_copy_keeps_type_and_factory():
    def fn(x):
        d = defaultdict(list)
        d["a"].append(x)
        e = d.copy()
        e["b"].append(x * 2)
        f = d.__copy__()
        return d, e, f, type(e) is defaultdict, e.default_factory is list

    check(fn, torch.randn(2), graphs=1, fullgraph=True)


def test_isinstance_and_type():
    def fn(x):
        d = defaultdict(set)
        return x + 1, isinstance(d, dict), isinstance(d, defaultdict), type(d) is defaultdict

    check(fn, torch.randn(2), graphs=1, fullgraph=True)


def test_iteration_views_and_len():
    def fn(x):
        d = defaultdict(int)
        for k in "banana":
            d[k] += 1
        total = x * 0
        for k, v in d.items():
            total = total + v
        return total, list(d.keys()), list(d.values()), len(d), [k for k in d]

    check(fn, torch.randn(2), graphs=1, fullgraph=True)


def _make_counter():
    return {"n": 0}


def test_factory_is_a_module_level_function():
    def fn(x):
        d = defaultdict(_make_counter)
        d["a"]["n"] += 1
        d["a"]["n"] += 1
        d["b"]
        return x * d["a"]["n"], d

    check(fn, torch.randn(2), graphs=1, fullgraph=True)


def test_collections_module_attribute():
    def fn(x):
        d = collections.defaultdict(list)
        d[1].append(x * 2)
        return d

    check(fn, torch.randn(2), graphs=1, fullgraph=True)


# ---- defaultdicts from outside ------------------------------------------------------------------


def test_argument_defaultdict_insert_is_replayed():
    def fn(d, x):
        d["new"].append(x)
        d["old"].append(x * 2)
        return d["old"][0] + x

    check(fn, defaultdict(list, {"old": [torch.ones(2)]}), torch.randn(2), graphs=1, fullgraph=True)


def test_argument_defaultdict_get_does_not_insert():
    def fn(d, x):
        return x + (d.get("zz") is None) + ("zz" in d) + len(d)

    check(fn, defaultdict(int, {"a": 1}), torch.randn(2), graphs=1, fullgraph=True)


def test_argument_defaultdict_reads_are_guarded():
    def fn(d, x):
        return x * d["a"]

    c = CompileCounter()
    compiled = bytegraph.compile(fn, backend=c)
    x = torch.ones(2)
    d1, d2 = defaultdict(int, {"a": 2}), defaultdict(int)
    torch.testing.assert_close(compiled(d1, x), fn(copy.copy(d1), x))
    torch.testing.assert_close(compiled(d2, x), x * 0)
    assert dict(d2) == {"a": 0}  # the insert was replayed on the real object
    assert c.frame_count == 2  # other keys: recompiled


COUNTS = defaultdict(int)


def _reset_counts():
    COUNTS.clear()
    COUNTS["seen"] = 1


def test_global_defaultdict_inserts_replayed():
    def fn(x):
        COUNTS["calls"] += 1
        COUNTS["seen"] += 1
        return x + COUNTS["seen"]

    check(fn, torch.randn(2), setup=_reset_counts, state=lambda: dict(COUNTS), graphs=1, fullgraph=True)


class _Tracker:
    def __init__(self):
        self.by_name = defaultdict(list)

    def log(self, name, x):
        self.by_name[name].append(x)
        return len(self.by_name[name])


def test_object_attribute_defaultdict():
    def fn(t, x):
        n = t.log("a", x)
        m = t.log("a", x * 2)
        return x * (n + m)

    check(fn, _Tracker(), torch.randn(2), graphs=1, fullgraph=True)


def test_object_attribute_defaultdict_across_calls():
    def fn(t, x):
        return x * t.log("k", x)

    check_calls(fn, _Tracker(), torch.randn(2), calls=3)


# ---- inside inlined helpers and across graph breaks ---------------------------------------------


def _group(d, key, value):
    d[key].append(value)
    return d


def _group_twice(d, key, value):
    return _group(_group(d, key, value), key + "!", value * 2)


def test_defaultdict_through_inlined_helpers():
    def fn(x):
        d = _group_twice(defaultdict(list), "k", x)
        return d, len(d["k"])

    check(fn, torch.randn(2), graphs=1, fullgraph=True)


def test_defaultdict_made_before_a_graph_break():
    def fn(x):
        d = defaultdict(list)
        d["a"].append(x + 1)
        bytegraph.graph_break()
        d["a"].append(x * 2)
        d["b"].append(3)
        return d

    check(fn, torch.randn(2), graphs=2)


def test_argument_defaultdict_mutated_around_a_graph_break():
    def fn(d, x):
        d["before"] += 1
        y = x + d["before"]
        print("break")
        d["after"] += 2
        return y * d["after"]

    check(fn, defaultdict(int), torch.randn(2), graphs=2)


def _helper_breaks(d, x):
    d["inner"].append(x)
    bytegraph.graph_break()
    d["inner"].append(x + 1)
    return len(d["inner"])


def test_defaultdict_in_helper_with_nested_break():
    def fn(x):
        d = defaultdict(list)
        n = _helper_breaks(d, x)
        return d, n

    check(fn, torch.randn(2))


# ---- dicts keyed by tensors ---------------------------------------------------------------------


def _canon(value, args):
    """A comparable form of `value`: dicts as (type, [(key, value)]) pairs, a tensor key as the
    index of the argument tensor it is (or 'new' and its value)."""
    tensors = [a for a in _flat(args) if isinstance(a, torch.Tensor)]
    if isinstance(value, dict):
        pairs = []
        for k, v in value.items():
            if isinstance(k, torch.Tensor):
                idx = next((i for i, t in enumerate(tensors) if t is k), None)
                k = ("arg", idx) if idx is not None else ("new", k)
            pairs.append((k, _canon(v, args)))
        return (type(value), pairs)
    if isinstance(value, (list, tuple)):
        return type(value)(_canon(v, args) for v in value)
    return value


def _flat(value):
    if isinstance(value, (list, tuple)):
        for v in value:
            yield from _flat(v)
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _flat(v)
    else:
        yield value


def check_keyed(fn, *args, graphs=None, fullgraph=False, calls=1):
    """`check` for values holding tensor keys: eager and compiled on clones of `args`, outputs
    and arguments compared with tensor keys matched by identity to the argument tensors."""
    a1, a2 = clone_inputs(args), clone_inputs(args)
    counter = CompileCounter()
    bytegraph.reset()
    compiled = bytegraph.compile(fn, backend=counter, fullgraph=fullgraph)
    for _ in range(calls):
        out1, out2 = fn(*a1), compiled(*a2)
        assert_same(_canon(out1, a1), _canon(out2, a2), "output")
        assert_same(_canon(list(a1), a1), _canon(list(a2), a2), "arguments")
    if graphs is not None:
        assert counter.frame_count == graphs, counter.frame_count
    return counter


def test_dict_made_in_trace_keyed_by_tensors():
    def fn(x, y):
        d = {x: 1, y: 2}
        d[x] += 10
        return d[x] + d[y], x in d, (x + 1) in d, len(d)

    check_keyed(fn, torch.randn(2), torch.randn(2), graphs=1, fullgraph=True)


def test_tensor_keyed_dict_returned_and_iterated():
    def fn(x, y):
        d = {}
        for t in (y, x, y):
            d[t] = d.get(t, 0) + 1
        keys = [k * 1 for k in d]
        return d, keys, list(d.values())

    check_keyed(fn, torch.randn(2), torch.randn(2), graphs=1, fullgraph=True)


def test_defaultdict_keyed_by_new_tensors():
    def fn(x):
        y = x + 1
        d = defaultdict(list)
        d[y].append(1)
        d[x].append(2)
        d[y].append(3)
        return d, y

    check_keyed(fn, torch.randn(2), graphs=1, fullgraph=True)


def test_outside_dict_lookup_by_argument_tensor():
    def fn(d, x, y):
        return d[x] * 2 + d.get(y, torch.zeros(2)), x in d, y in d

    x, y = torch.randn(2), torch.randn(2)
    check_keyed(fn, {x: torch.ones(2), "c": 3}, x, y, graphs=1, fullgraph=True)


def test_outside_dict_insert_by_tensor_key_replayed():
    def fn(d, x, y):
        d[y] = x * 3
        d[x] = d[x] + 1
        return len(d)

    x, y = torch.randn(2), torch.randn(2)
    check_keyed(fn, {x: torch.ones(2)}, x, y, graphs=1, fullgraph=True)


def test_outside_dict_delete_and_pop_replayed():
    def fn(d, x, y):
        v = d.pop(x)
        del d[y]
        d[y] = v + 1
        return v, d.pop(x, None)

    x, y, z = torch.randn(2), torch.randn(2), torch.randn(2)
    check_keyed(fn, {x: torch.ones(2), y: torch.zeros(2), z: torch.ones(2)}, x, y, graphs=1, fullgraph=True)


def test_outside_defaultdict_keyed_by_tensors_state_like():
    def fn(state, params):
        for p in params:
            s = state[p]
            if len(s) == 0:
                s["step"] = torch.zeros(())
                s["avg"] = torch.zeros_like(p)
            s["step"] += 1
            s["avg"].mul_(0.5).add_(p)
        return len(state)

    params = [torch.randn(3), torch.randn(2)]
    counter = check_keyed(fn, defaultdict(dict), params, calls=4, fullgraph=True)
    assert counter.frame_count == 2  # the first call makes the state; later calls reuse one graph


def test_outside_tensor_keyed_dict_presence_guarded():
    def fn(d, x):
        return x + 1 if x in d else x - 1

    x = torch.randn(2)
    compiled = bytegraph.compile(fn, backend=(c := CompileCounter()), fullgraph=True)
    d = {x: 1}
    torch.testing.assert_close(compiled(d, x), x + 1)
    del d[x]
    torch.testing.assert_close(compiled(d, x), x - 1)
    d[x] = 2
    torch.testing.assert_close(compiled(d, x), x + 1)
    assert c.frame_count == 2


def test_outside_tensor_keyed_dict_len_guarded():
    def fn(d, x):
        return x * len(d)

    x, y = torch.randn(2), torch.randn(2)
    compiled = bytegraph.compile(fn, backend=(c := CompileCounter()), fullgraph=True)
    d = {x: 1}
    torch.testing.assert_close(compiled(d, x), x)
    d[y] = 2
    torch.testing.assert_close(compiled(d, x), x * 2)
    assert c.frame_count == 2


def _lookup(d, t):
    return d[t] * 2


def test_tensor_keyed_dict_in_inlined_helper():
    def fn(d, x):
        return _lookup(d, x) + _lookup({x: x}, x)

    x = torch.randn(2)
    check_keyed(fn, {x: torch.ones(2)}, x, graphs=1, fullgraph=True)


def test_tensor_keyed_dict_across_graph_break():
    def fn(d, x, y):
        d[y] = x + 1
        print("break")
        return d[x] + d[y]

    x, y = torch.randn(2), torch.randn(2)
    check_keyed(fn, {x: torch.ones(2)}, x, y, graphs=2)


def test_iterating_outside_tensor_keyed_dict_breaks_with_reason():
    def fn(d, x):
        return [v for v in d.values()]

    x = torch.randn(2)
    with pytest.raises(bytegraph.Unsupported, match="a dict with tensor keys read from outside"):
        bytegraph.compile(fn, fullgraph=True)({x: 1}, x)
    check_keyed(fn, {x: 1}, x)


def test_set_of_tensors_is_traced():
    """Sets of tensors made in the trace (tests/test_tensor_sets.py; Note [Sets of tensors])."""
    def fn(x, y):
        return len({x, y})

    x, y = torch.randn(2), torch.randn(2)
    assert bytegraph.compile(fn, fullgraph=True)(x, y) == 2
    check_keyed(fn, torch.randn(2), torch.randn(2))


def test_missing_tensor_key_breaks_with_reason():
    def fn(d, x):
        return d[x]

    with pytest.raises(bytegraph.Unsupported, match="KeyError"):
        bytegraph.compile(fn, fullgraph=True)({}, torch.randn(2))


# ---- torch.optim: optimizer.state through opt.step() ---------------------------------------------

_OPTIMIZERS = [
    (torch.optim.SGD, dict(lr=0.1, momentum=0.9)),
    (torch.optim.Adam, dict(lr=0.1)),
    (torch.optim.AdamW, dict(lr=0.1, weight_decay=0.1)),
]


def _model_and_optimizer(cls, kwargs, foreach):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2))
    return model, cls(model.parameters(), foreach=foreach, **kwargs)


def _backward(model, x):
    model.zero_grad()
    model(x).square().sum().backward()


def _assert_state_equal(o1, o2):
    for g1, g2 in zip(o1.param_groups, o2.param_groups):
        for p1, p2 in zip(g1["params"], g2["params"]):
            torch.testing.assert_close(p2, p1)
            s1, s2 = o1.state[p1], o2.state[p2]
            assert list(s1) == list(s2)
            for key, value in s1.items():
                assert type(s2[key]) is type(value)
                if isinstance(value, torch.Tensor):
                    torch.testing.assert_close(s2[key], value)
                else:
                    assert s2[key] == value
    assert len(o1.state) == len(o2.state)


@pytest.mark.parametrize("foreach", [False, True], ids=["for-loop", "foreach"])
@pytest.mark.parametrize("cls,kwargs", _OPTIMIZERS, ids=[c.__name__ for c, _ in _OPTIMIZERS])
def test_step_three_steps_one_graph_each(cls, kwargs, foreach):
    x = torch.randn(6, 4)
    m1, o1 = _model_and_optimizer(cls, kwargs, foreach)
    m2, o2 = _model_and_optimizer(cls, kwargs, foreach)
    counter = CompileCounter()
    bytegraph.reset()
    step = bytegraph.compile(o2.step, backend=counter, fullgraph=True)
    new_graphs, state_ids = [], []
    for _ in range(5):
        _backward(m1, x)
        o1.step()
        _backward(m2, x)
        before = counter.frame_count
        step()
        new_graphs.append(counter.frame_count - before)
        _assert_state_equal(o1, o2)
        state_ids.append([id(t) for s in o2.state.values() for t in s.values()])
    assert state_ids[0] == state_ids[-1]  # the state tensors are updated in place, not replaced
    # one graph per capture: the first step creates the state, the second reads it; then cached
    assert new_graphs == [1, 1, 0, 0, 0]
    state_tensors = {id(t) for s in o2.state.values() for t in s.values() if isinstance(t, torch.Tensor)}
    assert state_tensors, "the optimizer state holds tensors made by the graph"
    # on later steps the state tensors are inputs of the graph, mutated in place
    assert state_tensors <= {id(t) for t in counter.example_inputs[-1]}


@pytest.mark.parametrize("cls,kwargs", _OPTIMIZERS, ids=[c.__name__ for c, _ in _OPTIMIZERS])
def test_changed_lr_recompiles_once(cls, kwargs):
    x = torch.randn(6, 4)
    m1, o1 = _model_and_optimizer(cls, kwargs, False)
    m2, o2 = _model_and_optimizer(cls, kwargs, False)
    counter = CompileCounter()
    bytegraph.reset()
    step = bytegraph.compile(o2.step, backend=counter, fullgraph=True)
    counts = []
    for lr in (0.1, 0.1, 0.05, 0.05, 0.1):
        for o in (o1, o2):
            o.param_groups[0]["lr"] = lr
        _backward(m1, x)
        o1.step()
        _backward(m2, x)
        step()
        counts.append(counter.frame_count)
        _assert_state_equal(o1, o2)
    assert counts == [1, 2, 3, 3, 3]  # state made, state read, new lr; back to the old lr: cached


_TRAIN_OPTIMIZERS = {"sgd": lambda p: torch.optim.SGD(p, lr=0.05, momentum=0.9),
                     "adam": lambda p: torch.optim.Adam(p, lr=0.01)}


class _CallCounter(CompileCounter):
    """Counts graph calls too."""

    def __init__(self):
        super().__init__()
        self.calls = 0

    def __call__(self, gm, example_inputs):
        forward = super().__call__(gm, example_inputs)

        def run(*args):
            self.calls += 1
            return forward(*args)
        return run


@pytest.mark.parametrize("opt_name", list(_TRAIN_OPTIMIZERS))
def test_training_step_at_most_two_graphs_per_step(opt_name):
    def train_step(model, opt, x, y):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    torch.manual_seed(0)
    m1 = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4))
    m2 = copy.deepcopy(m1)
    o1, o2 = _TRAIN_OPTIMIZERS[opt_name](m1.parameters()), _TRAIN_OPTIMIZERS[opt_name](m2.parameters())
    counter = _CallCounter()
    bytegraph.reset()
    step = bytegraph.compile(train_step, backend=counter)
    gen = torch.Generator().manual_seed(1)
    calls = []
    for i in range(3):
        x, y = torch.randn(6, 8, generator=gen), torch.randint(0, 4, (6,), generator=gen)
        before = counter.calls
        torch.testing.assert_close(step(m2, o2, x, y), train_step(m1, o1, x, y))
        calls.append(counter.calls - before)
        _assert_state_equal(o1, o2)
    assert calls == [2, 2, 2]  # forward+loss, optimizer step (backward and zero_grad run eagerly)
    assert counter.frame_count == 3  # the step's graph is captured again once the state exists


# ---- foreach ops with tensor scalars (Adam's foreach path) ---------------------------------------


def test_foreach_addcdiv_with_per_item_tensor_scalars():
    def fn(a, b, c, s):
        torch._foreach_addcdiv_([a, b], [c, c], [c.abs() + 1, c.abs() + 2], s)
        out = torch._foreach_addcmul([a, b], [c, c], [c, c], s)
        return a, b, out

    check(fn, torch.randn(3), torch.randn(3), torch.randn(3), torch.tensor([0.5, -2.0]), graphs=1, fullgraph=True)


def test_foreach_sub_with_zero_dim_alpha():
    def fn(a, b, t):
        out = torch._foreach_sub([a, b], [b, a], alpha=t)
        torch._foreach_sub_([a, b], [b, b], alpha=t)
        return out, a, b

    check(fn, torch.randn(3), torch.randn(3), torch.tensor(0.25), graphs=1, fullgraph=True)


def test_copying_outside_tensor_keyed_dict_breaks_with_reason():
    def fn(d, x):
        e = dict(d)
        e.update(d)
        return {**d}, e

    x = torch.randn(2)
    with pytest.raises(bytegraph.Unsupported, match="a dict with tensor keys read from outside"):
        bytegraph.compile(fn, fullgraph=True)({x: 1}, x)
    check_keyed(fn, {x: 1, "a": 2}, x)


def test_outside_dict_views_of_tensor_keyed_dict_across_break():
    def fn(d, x):
        keys = d.keys()
        print("break")
        return [k + 1 for k in keys], len(keys)

    x = torch.randn(2)
    check_keyed(fn, {x: 1}, x)


def test_tensor_keyed_dict_made_in_trace_across_graph_break():
    def fn(x, y):
        z = x * 2
        d = {x: z, z: y}
        print("break")
        d[y] = d[z] + d[x]
        return d, z

    check_keyed(fn, torch.randn(2), torch.randn(2), graphs=2)


def _count_into(d, t):
    d[t] += 1
    bytegraph.graph_break()
    d[t] += 1
    return d[t]


def test_tensor_keyed_defaultdict_in_helper_with_nested_break():
    def fn(x):
        d = defaultdict(int)
        return _count_into(d, x) + _count_into(d, x), d

    check_keyed(fn, torch.randn(2))


def test_fromkeys_on_an_instance():
    def fn(x):
        d = defaultdict(list).fromkeys("ab")
        return x + 1, d, d.default_factory

    check(fn, torch.randn(2), graphs=1, fullgraph=True)


@pytest.mark.parametrize("make", [lambda p: torch.optim.Adam(p, lr=0.1),  # foreach=None: torch decides
                                  lambda p: torch.optim.Adam(p, lr=0.1, amsgrad=True, foreach=True),
                                  lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.5, nesterov=True)],
                         ids=["adam-default", "adam-amsgrad-foreach", "sgd-nesterov"])
def test_step_variants_match_eager(make):
    x = torch.randn(6, 4)
    torch.manual_seed(0)
    m1 = torch.nn.Linear(4, 3)
    m2 = copy.deepcopy(m1)
    o1, o2 = make(m1.parameters()), make(m2.parameters())
    counter = CompileCounter()
    bytegraph.reset()
    step = bytegraph.compile(o2.step, backend=counter, fullgraph=True)
    for _ in range(3):
        _backward(m1, x)
        o1.step()
        _backward(m2, x)
        step()
        _assert_state_equal(o1, o2)
    assert counter.frame_count == 2


def test_cnn_adam_weights_other_than_noise_bias_match_eager():
    """The CNN of test_training_step.py with Adam: every weight but conv.bias (whose gradient is
    rounding noise, BatchNorm follows it) equals eager's within 1e-5 after 5 compiled steps."""
    from test_training_step import _SmallCNN, _train_step

    torch.manual_seed(0)
    m1 = _SmallCNN()
    m2 = copy.deepcopy(m1)
    o1, o2 = torch.optim.Adam(m1.parameters(), lr=0.01), torch.optim.Adam(m2.parameters(), lr=0.01)
    counter = _CallCounter()
    bytegraph.reset()
    step = bytegraph.compile(_train_step, backend=counter)
    gen = torch.Generator().manual_seed(1)
    for _ in range(5):
        x, y = torch.randn((2, 3, 8, 8), generator=gen), torch.randint(0, 3, (2,), generator=gen)
        torch.testing.assert_close(step(m2, o2, x, y), _train_step(m1, o1, x, y), rtol=1e-5, atol=1e-5)
    for (name, p1), p2 in zip(m1.state_dict().items(), m2.state_dict().values()):
        if name not in ("conv.bias", "bn.running_mean"):  # running_mean follows conv.bias
            torch.testing.assert_close(p2, p1, rtol=1e-5, atol=1e-5, msg=f"{name} after 5 steps")
    assert counter.calls == 10  # forward+loss and the optimizer step, each step
