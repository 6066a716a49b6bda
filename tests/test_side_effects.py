"""Python side effects replayed exactly: in-place changes of pre-existing lists, dicts and
sets, attribute writes and deletes, `global` writes (this module and another one),
`nonlocal` writes to pre-existing cells, values made during tracing that escape
(containers, closures, cells), aliasing, and reads that follow writes.

Every test is differential: eager and compiled run on fresh, equal state and then the
return value, the arguments and the module state (globals here and in
tests/support/other_module.py, identity of pre-existing containers included) must agree.
"""
import collections
import time

import pytest
import torch

import bytegraph
from helpers import CompileCounter, assert_same, check, check_calls, clone_inputs
from support import other_module

# ----------------------------------------------------------------------------- module state

G_INT = 0
G_TENSOR = None
G_LIST = []
G_DICT = {}
G_SET = set()
G_ODICT = collections.OrderedDict()
G_OBJ = None
G_FN = None
_REFS = {}


class Obj:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class WithClassAttr:
    scale = 2

    def __init__(self, t):
        self.t = t


class Counter:
    def __init__(self):
        self.calls = 0
        self.total = torch.zeros(3)

    def step(self, x):
        self.calls += 1
        self.total = self.total + x
        return x * 2


def _setup():
    """Fresh module state (new objects each time) for one run."""
    global G_INT, G_TENSOR, G_LIST, G_DICT, G_SET, G_ODICT, G_OBJ, G_FN
    G_INT = 3
    G_TENSOR = torch.arange(3.0)
    G_LIST = [1, 2]
    G_DICT = {"a": 1, "b": 2}
    G_SET = {1, 2}
    G_ODICT = collections.OrderedDict([("x", 1), ("y", 2), ("z", 3)])
    G_OBJ = Obj(v=1, t=torch.ones(3))
    G_FN = None
    _REFS.clear()
    _REFS.update(list=G_LIST, dict=G_DICT, set=G_SET, odict=G_ODICT, obj=G_OBJ)
    other_module.LEVEL = 1
    other_module.HISTORY = []
    other_module.REGISTRY = {"n": 0}
    other_module.COUNTER[0] = 0
    _REFS.update(history=other_module.HISTORY, registry=other_module.REGISTRY)


def _state():
    """Everything observable in module state, incl. whether containers kept their identity."""
    g = globals()
    return {
        "G_INT": g.get("G_INT", "<deleted>"), "G_TENSOR": G_TENSOR, "G_LIST": list(G_LIST),
        "G_DICT": dict(G_DICT), "G_DICT_keys": list(G_DICT), "G_SET": set(G_SET),
        "G_ODICT": list(G_ODICT.items()), "G_OBJ": dict(vars(G_OBJ)) if G_OBJ is not None else None,
        "G_FN": G_FN(torch.ones(2)) if callable(G_FN) else G_FN,
        "identity": [G_LIST is _REFS["list"], G_DICT is _REFS["dict"], G_SET is _REFS["set"],
                     G_ODICT is _REFS["odict"], G_OBJ is _REFS["obj"],
                     other_module.HISTORY is _REFS["history"], other_module.REGISTRY is _REFS["registry"]],
        "other.LEVEL": getattr(other_module, "LEVEL", "<deleted>"), "other.HISTORY": list(other_module.HISTORY),
        "other.REGISTRY": dict(other_module.REGISTRY), "other.COUNTER": list(other_module.COUNTER),
    }


def check_state(fn, *args, graphs=1, **kw):
    return check(fn, *args, graphs=graphs, setup=_setup, state=_state, **kw)


def t3():
    return torch.randn(3)


def tl(n=3):
    return [torch.randn(2) for _ in range(n)]


# ----------------------------------------------------------------------------- lists (arguments)

LIST_CASES = {
    "append": lambda xs, x: (xs.append(x * 2), xs)[1],
    "append_read_len": lambda xs, x: (xs.append(x), x * len(xs))[1],
    "extend": lambda xs, x: (xs.extend([x, x + 1]), xs[-1] * 2)[1],
    "extend_tuple": lambda xs, x: (xs.extend((x.sin(),)), len(xs))[1],
    "insert_front": lambda xs, x: (xs.insert(0, x - 1), xs[0] + xs[1])[1],
    "insert_middle": lambda xs, x: (xs.insert(1, x), xs)[1],
    "pop_last": lambda xs, x: xs.pop() + x,
    "pop_first": lambda xs, x: xs.pop(0) * x,
    "pop_twice": lambda xs, x: (xs.pop(), xs.pop(), x)[2] + len(xs),
    "clear": lambda xs, x: (xs.clear(), x + len(xs))[1],
    "clear_refill": lambda xs, x: (xs.clear(), xs.append(x), xs)[2],
    "setitem": lambda xs, x: (xs.__setitem__(0, x), xs[0] + xs[1])[1],
    "setitem_negative": lambda xs, x: (xs.__setitem__(-1, xs[0] * x), xs)[1],
    "delitem": lambda xs, x: (xs.__delitem__(1), xs[1] + x)[1],
    "slice_assign": lambda xs, x: (xs.__setitem__(slice(0, 2), [x]), xs)[1],
    "reverse": lambda xs, x: (xs.reverse(), xs[0] - x)[1],
    "iadd": lambda xs, x: xs.__iadd__([x]) and xs[-1] * 3,
    "self_append": lambda xs, x: (xs.append(len(xs)), x + xs[-1])[1],
}


@pytest.mark.parametrize("name", list(LIST_CASES))
def test_list_argument_mutation(name):
    case = LIST_CASES[name]
    check(lambda xs, x: (case(xs, x), x + 1), tl(), torch.randn(2), graphs=1)


def test_list_of_ints_sort_and_remove():
    def f(xs, x):
        xs.sort()
        xs.remove(3)
        xs.sort(reverse=True)
        return x * xs[0]

    check(f, [5, 3, 1, 4], t3(), graphs=1)


def test_list_inplace_add_statement():
    def f(xs, x):
        xs += [x + 1, 7]
        return len(xs) * x

    check(f, tl(), torch.randn(2), graphs=1)


def test_list_swap_items():
    def f(xs):
        xs[0], xs[2] = xs[2], xs[0]
        return xs[0] * 2

    check(f, tl(), graphs=1)


def test_old_item_read_before_overwrite_is_returned():
    def f(xs, y):
        old = xs[0]
        xs[0] = y * 2
        return old, xs[0]

    check(f, tl(), torch.randn(2), graphs=1)


def test_list_append_new_nested_list_escapes():
    def f(xs, x):
        inner = [x * 2, 5]
        xs.append(inner)
        inner.append(x + 1)  # mutated after it escaped: final state replayed
        return x.sum()

    check(f, tl(), torch.randn(2), graphs=1)


def test_list_in_dict_argument_keeps_identity():
    def f(cfg, x):
        cfg["layers"].append(x * 2)
        cfg["n"] = len(cfg["layers"])
        return cfg

    check(f, {"layers": tl(1), "n": 1}, torch.randn(2), graphs=1)


def test_list_mutated_through_two_aliases():
    def f(a, b, x):
        a.append(x)
        b.append(x * 2)
        return len(a), a[-1] + b[-2]

    shared = tl(1)
    check(f, shared, shared, torch.randn(2), graphs=1)


def test_list_contains_itself_after_append():
    def f(xs, x):
        xs.append(xs)
        return x + len(xs)

    out = check(f, [1], t3(), graphs=1, grads=False)
    assert out.compiled.args[0][0][-1] is out.compiled.args[0][0]


# ----------------------------------------------------------------------------- dicts and sets

DICT_CASES = {
    "set_new_key": lambda d, x: (d.__setitem__("new", x * 2), d["new"] + 1)[1],
    "overwrite": lambda d, x: (d.__setitem__("a", x), d)[1],
    "delete": lambda d, x: (d.__delitem__("a"), x + len(d))[1],
    "pop": lambda d, x: d.pop("a") * x,
    "pop_default": lambda d, x: x + d.pop("zz", 4),
    "update_dict": lambda d, x: (d.update({"a": x, "c": 3}), d)[1],
    "update_kwargs": lambda d, x: (d.update(c=x.cos()), d["c"])[1],
    "setdefault_new": lambda d, x: d.setdefault("q", x * 3) + 1,
    "setdefault_existing": lambda d, x: (d.setdefault("a", x), d)[1],
    "clear": lambda d, x: (d.clear(), x * 2)[1],
    "delete_readd_moves_to_end": lambda d, x: (d.__delitem__("a"), d.__setitem__("a", x), list(d))[1],
    "augmented_value": lambda d, x: (d.__setitem__("b", d["b"] + 1), x * d["b"])[1],
}


@pytest.mark.parametrize("name", list(DICT_CASES))
def test_dict_argument_mutation(name):
    case = DICT_CASES[name]
    check(lambda d, x: (case(d, x), x + 1), {"a": torch.randn(3), "b": 2}, t3(), graphs=1)


def test_dict_augmented_assignment_statement():
    def f(d, x):
        d["b"] += 1
        d["a"] *= 2
        return x + d["b"]

    check(f, {"a": torch.randn(3), "b": 2}, t3(), graphs=1)


def test_ordered_dict_argument_keeps_type_and_order():
    def f(d, x):
        del d["x"]
        d["x"] = x
        d["w"] = 0
        return d, x + 1

    check(f, collections.OrderedDict([("x", 1), ("y", 2)]), t3(), graphs=1)


SET_CASES = {
    "add": lambda s, x: (s.add(9), x * len(s))[1],
    "discard": lambda s, x: (s.discard(1), s.discard(42), x + len(s))[1],
    "remove": lambda s, x: (s.remove(2), x - len(s))[1],
    "update": lambda s, x: (s.update([7, 8]), x * 2)[1],
    "clear": lambda s, x: (s.clear(), x + 1)[1],
}


@pytest.mark.parametrize("name", list(SET_CASES))
def test_set_argument_mutation(name):
    check(SET_CASES[name], {1, 2, 3}, t3(), graphs=1)


# ----------------------------------------------------------------------------- attributes

def test_attr_set_existing_int():
    def f(o, x):
        o.v = o.v + 10
        return x * o.v

    check(f, Obj(v=1), t3(), graphs=1)


def test_attr_set_new():
    def f(o, x):
        o.fresh = "yes"
        o.n = 4
        return x + o.n

    check(f, Obj(v=1), t3(), graphs=1)


def test_attr_set_graph_tensor():
    def f(o, x):
        o.t = o.t * x
        return o.t.sum()

    check(f, Obj(t=torch.randn(3, requires_grad=True)), t3(), graphs=1)


def test_attr_set_to_input_tensor_keeps_identity():
    def f(o, x):
        o.t = x
        return o.t + 1

    r = check(f, Obj(t=None), t3(), graphs=1)
    assert r.compiled.args[0][0].t is r.compiled.args[0][1]


def test_attr_delete():
    def f(o, x):
        del o.v
        return x * 2

    check(f, Obj(v=1, w=2), t3(), graphs=1)


def test_attr_delete_then_hasattr_and_getattr_default():
    def f(o, x):
        del o.v
        return x + getattr(o, "v", 5) + hasattr(o, "v")

    check(f, Obj(v=1), t3(), graphs=1)


def test_attr_set_then_hasattr():
    def f(o, x):
        o.extra = 3
        return x * hasattr(o, "extra") + o.extra

    check(f, Obj(), t3(), graphs=1)


def test_attr_swap():
    def f(o, x):
        o.a, o.b = o.b, o.a
        return x + o.a

    check(f, Obj(a=torch.ones(3), b=torch.zeros(3)), t3(), graphs=1)


def test_attr_set_new_list_then_append():
    def f(o, x):
        o.items = []
        o.items.append(x * 2)
        o.items.append(x * 3)
        return len(o.items)

    check(f, Obj(), t3(), graphs=1)


def test_attr_list_appended():
    def f(o, x):
        o.items.append(x + 1)
        return o.items[0] * 2

    check(f, Obj(items=tl(1)), torch.randn(2), graphs=1)


def test_attr_dict_updated():
    def f(o, x):
        o.cfg["k"] = x
        o.cfg.pop("old")
        return x * 3

    check(f, Obj(cfg={"old": 1}), t3(), graphs=1)


def test_nested_object_attribute():
    def f(o, x):
        o.child.v = o.child.v * 2
        o.child.t = x + 1
        return o.child.t * o.child.v

    check(f, Obj(child=Obj(v=2)), t3(), graphs=1)


def test_setattr_and_delattr_builtins():
    def f(o, x):
        setattr(o, "a", x * 2)
        delattr(o, "b")
        return o.a + 1

    check(f, Obj(a=None, b=1), t3(), graphs=1)


def test_attr_shadows_class_attribute():
    def f(o, x):
        o.scale = o.scale + 1
        return o.t * o.scale + x

    check(f, WithClassAttr(t3()), t3(), graphs=1)


def test_object_reached_by_two_paths_is_one_object():
    def f(o, same, x):
        o.v = 5
        return x * same.v

    obj = Obj(v=1)
    check(f, obj, obj, t3(), graphs=1)


def test_object_in_list_argument():
    def f(objs, x):
        for o in objs:
            o.v = o.v + 1
        objs[0].v = objs[0].v * 10
        return x * objs[1].v

    check(f, [Obj(v=1), Obj(v=2)], t3(), graphs=1)


def test_method_writes_self_attributes():
    def f(c, x):
        y = c.step(x)
        return y + c.total

    check(f, Counter(), t3(), graphs=1)


def test_attr_set_to_lambda_closure():
    def f(o, x):
        k = x * 2
        o.fn = lambda t: t + k
        return o.fn(x)

    cfn = bytegraph.compile(f)
    x, oe, oc = t3(), Obj(), Obj()
    assert torch.allclose(f(oe, x), cfn(oc, x))
    assert torch.allclose(oe.fn(x), oc.fn(x))
    assert oc.fn.__qualname__ == oe.fn.__qualname__


def test_attr_write_same_object_as_returned_new_list():
    def f(o, x):
        box = [x + 1]
        o.a = box
        o.b = box
        return box

    r = check(f, Obj(), t3(), graphs=1)
    o = r.compiled.args[0][0]
    assert o.a is o.b is r.compiled.out


# ----------------------------------------------------------------------------- globals

def test_global_int_rebind():
    def f(x):
        global G_INT
        G_INT = G_INT + 1
        return x * G_INT

    check_state(f, t3())


def test_global_tensor_rebind_from_graph():
    def f(x):
        global G_TENSOR
        G_TENSOR = G_TENSOR * 2 + x
        return G_TENSOR.sum()

    check_state(f, t3())


def test_global_new_name_created_and_deleted():
    def f(x):
        global G_INT
        del G_INT
        return x + 1

    check_state(f, t3())


def test_global_rebound_to_new_list():
    def f(x):
        global G_LIST
        G_LIST = [x, 1]
        return x * 2

    check_state(f, t3())


def test_global_list_mutated_keeps_identity():
    def f(x):
        G_LIST.append(x.sum())
        G_LIST.pop(0)
        return x * len(G_LIST)

    check_state(f, t3())


def test_global_dict_mutated_keeps_identity():
    def f(x):
        G_DICT["c"] = 3
        del G_DICT["a"]
        G_DICT["b"] += 10
        return x * G_DICT["b"]

    check_state(f, t3())


def test_global_ordered_dict_order():
    def f(x):
        G_ODICT.pop("x")
        G_ODICT["x"] = 9
        G_ODICT.setdefault("w", 0)
        return x + len(G_ODICT)

    check_state(f, t3())


def test_global_set_mutated():
    def f(x):
        G_SET.add(5)
        G_SET.discard(1)
        return x * len(G_SET)

    check_state(f, t3())


def test_global_object_attributes():
    def f(x):
        G_OBJ.v = G_OBJ.v + 1
        G_OBJ.t = G_OBJ.t + x
        return G_OBJ.t * G_OBJ.v

    check_state(f, t3())


def test_global_read_after_write_in_helper():
    def set_int(v):
        global G_INT
        G_INT = v

    def f(x):
        set_int(7)
        return x * G_INT

    check_state(f, t3())


def test_global_closure_escapes():
    def f(x):
        global G_FN
        k = x.sum()
        G_FN = lambda t: t * 2 + k  # noqa: E731
        return x + 1

    check_state(f, t3())


def test_other_module_global_rebind():
    def f(x):
        return x * other_module.raise_level(2)

    check_state(f, t3())


def test_other_module_global_read_after_write():
    def f(x):
        other_module.raise_level(3)
        return x + other_module.LEVEL

    check_state(f, t3())


def test_other_module_global_containers():
    def f(x):
        n = other_module.record(x * 2)
        other_module.record(x * 3)
        return x * n + other_module.REGISTRY["n"]

    check_state(f, t3())


def test_other_module_attribute_assignment():
    def f(x):
        other_module.LEVEL = 40
        return x + other_module.LEVEL

    check_state(f, t3())


def test_other_module_global_deleted():
    def f(x):
        other_module.drop_level()
        return x + hasattr(other_module, "LEVEL")

    check_state(f, t3())


def test_other_module_counter_list():
    def f(x):
        return x + other_module.bump_counter(3) + other_module.bump_counter()

    check_state(f, t3())


# ----------------------------------------------------------------------------- cells and closures

def _make_counter():
    n = 0

    def inc(k=1):
        nonlocal n
        n += k
        return n

    def get():
        return n

    return inc, get


def test_nonlocal_write_to_preexisting_cell():
    def make_f():
        inc, get = _make_counter()

        def f(x):
            inc(2)
            return x * inc()

        return f, get

    fe, ge = make_f()
    fc, gc = make_f()
    cfn = bytegraph.compile(fc)
    for _ in range(3):
        x = t3()
        assert torch.allclose(fe(x), cfn(x))
        assert ge() == gc()


def test_nonlocal_cell_visible_to_other_closure():
    def f(x):
        inc, get = state
        inc(5)
        return x + get()

    for compiled in (False, True):
        state = _make_counter()
        g = bytegraph.compile(f) if compiled else f
        outs = [g(torch.ones(3)) for _ in range(3)]
        if not compiled:
            expected = outs
        else:
            for e, c in zip(expected, outs):
                assert torch.equal(e, c)
        assert state[1]() == 15


def test_root_function_free_variable_written():
    def make():
        total = torch.zeros(3)

        def f(x):
            nonlocal total
            total = total + x
            return total * 2

        return f, lambda: total

    fe, ge = make()
    fc, gc = make()
    cfn = bytegraph.compile(fc)
    for _ in range(3):
        x = t3()
        assert torch.allclose(fe(x), cfn(x))
        assert torch.allclose(ge(), gc())


def test_root_function_free_variable_deleted():
    def make():
        v = 1

        def f(x):
            nonlocal v
            del v
            return x + 1

        def has():
            try:
                v  # noqa: B018
                return True
            except NameError:
                return False

        return f, has

    fe, he = make()
    fc, hc = make()
    fe(torch.ones(2))
    bytegraph.compile(fc)(torch.ones(2))
    assert he() == hc() is False


def test_returned_lambda_captures_graph_tensor():
    def f(x):
        y = x * 3
        return lambda t: t + y

    cfn = bytegraph.compile(f)
    x = t3()
    assert torch.allclose(f(x)(x), cfn(x)(x))


def test_returned_closure_with_nonlocal_state():
    def f(x):
        count = 0

        def bump():
            nonlocal count
            count += 1
            return count * x

        bump()
        return bump

    cfn = bytegraph.compile(f)
    x = t3()
    be, bc = f(x), cfn(x)
    assert torch.allclose(be(), bc()) and torch.allclose(be(), bc())


def test_two_returned_closures_share_one_cell():
    def f(x):
        acc = x * 0

        def add(t):
            nonlocal acc
            acc = acc + t

        def get():
            return acc

        return add, get

    cfn = bytegraph.compile(f)
    add, get = cfn(t3())
    add(torch.ones(3))
    add(torch.ones(3))
    assert torch.equal(get(), torch.full((3,), 2.0))


def test_returned_closure_with_defaults_and_kwdefaults():
    def f(x):
        def g(t, k=x * 2, *, j=3):
            return t * k + j

        return g

    cfn = bytegraph.compile(f)
    x = t3()
    ge, gc = f(x), cfn(x)
    assert gc.__qualname__ == ge.__qualname__
    assert torch.allclose(ge(x), gc(x)) and torch.allclose(ge(x, j=1), gc(x, j=1))


def test_closure_over_argument_escapes():
    def f(xs):
        return lambda: xs

    cfn = bytegraph.compile(f)
    xs = [1]
    assert cfn(xs)() is xs


# ----------------------------------------------------------------------------- aliasing and escapes

def test_new_list_returned_and_stored_in_argument():
    def f(xs, x):
        new = [x * 2]
        xs.append(new)
        return new

    r = check(f, [], t3(), graphs=1)
    assert r.compiled.args[0][0][0] is r.compiled.out


def test_new_dict_stored_in_dict_argument():
    def f(d, x):
        d["sub"] = {"t": x + 1, "n": 2}
        d["same"] = d["sub"]
        return d["sub"]["t"]

    r = check(f, {}, t3(), graphs=1)
    d = r.compiled.args[0][0]
    assert d["sub"] is d["same"]


def test_new_tuple_stored_in_global():
    def f(x):
        global G_TENSOR
        G_TENSOR = (x + 1, 2)
        return x

    check_state(f, t3())


def test_argument_list_stored_in_global():
    def f(xs, x):
        global G_LIST
        G_LIST = xs
        xs.append(1)
        return x + 1

    r = check_state(f, [], t3(), rerun=False)
    assert G_LIST is r.compiled.args[0][0]


def test_aliased_dict_arguments():
    def f(a, b, x):
        a["k"] = x
        return b["k"] * 2, len(b)

    shared = {"z": 1}
    check(f, shared, shared, t3(), graphs=1)


def test_mutations_then_returned_input_is_identity():
    def f(xs, d, x):
        xs.append(x)
        d["x"] = x
        return xs, d, x + 1

    check(f, [], {}, t3(), graphs=1)


def test_pop_then_reinsert_same_tensor():
    def f(xs):
        t = xs.pop(0)
        xs.append(t)
        return xs

    check(f, tl(), graphs=0)


# ----------------------------------------------------------------------------- iterators passed in

def _consume_and_compare(fn, make_args):
    """Run `fn` eagerly and compiled on fresh tuple iterators; outputs and what is left
    in every iterator afterwards must agree."""
    eager_args, comp_args = make_args(), make_args()
    expected = fn(*eager_args)
    got = bytegraph.compile(fn)(*comp_args)
    assert_same(expected, got)
    for e, c in zip(eager_args, comp_args):
        if type(e) is type(iter(())):
            assert_same(list(e), list(c), "items left in the iterator")


def _tensor_iterator():
    return iter(tuple(torch.arange(3.0) + i for i in range(4)))


def test_tuple_iterator_passed_in_is_advanced():
    def f(it, x):
        return next(it) + x

    _consume_and_compare(f, lambda: (_tensor_iterator(), torch.ones(3)))


def test_one_tuple_iterator_reached_twice_is_one_iterator():
    def f(a, b, x):
        y = next(a)
        return y + x, list(b)

    def args():
        it = _tensor_iterator()
        return it, it, torch.ones(3)

    _consume_and_compare(f, args)


def test_tuple_iterator_advanced_before_a_break():
    def f(it, x):
        y = next(it) * x
        print("between")
        return y + next(it)

    _consume_and_compare(f, lambda: (_tensor_iterator(), torch.ones(3)))


def test_loop_over_graph_tensors_with_a_break_resumes():
    def f(x):
        out = []
        for t in [x + 1, x * 2]:
            print("item")
            out.append(t.sin())
        return out

    r = check(f, torch.randn(3, requires_grad=True))
    assert r.counter.frame_count >= 2  # resumed, not the whole frame run eagerly


def test_loop_iterator_also_held_in_a_local_across_a_break():
    def f(x):
        it = iter([x + 1, x + 2, x + 3, x + 4])
        out = []
        for t in it:
            print("item")
            out.append(t + next(it))
        return out

    check(f, torch.randn(3, requires_grad=True))


# ----------------------------------------------------------------------------- several calls

def _run_calls(fn, make_args, calls, setup=_setup, state=_state):
    """Eager and compiled, `calls` calls each on their own state (args made once)."""
    results = []
    counter = CompileCounter()
    for compiled in (False, True):
        setup()
        args = make_args()
        g = bytegraph.compile(fn, backend=counter) if compiled else fn
        outs = []
        for _ in range(calls):
            torch.manual_seed(0)
            outs.append((g(*args), clone_inputs(args), state()))
        results.append(outs)
    for i, (e, c) in enumerate(zip(*results)):
        assert_same(e, c, f"call #{i + 1}")
    return counter


def test_growing_list_argument_over_calls():
    def f(xs, x):
        xs.append(x * len(xs))
        return xs[-1]

    t = t3()
    counter = _run_calls(f, lambda: ([], t), 4)
    assert counter.frame_count == 4  # the length guard fails each call: recompiles, stays right


def test_global_counter_dict_over_calls():
    def f(x):
        G_DICT["a"] += 1
        return x * G_DICT["a"]

    t = t3()
    _run_calls(f, lambda: (t,), 3)


def test_attribute_accumulator_over_calls():
    def f(c, x):
        c.total = c.total + x
        return c.total * 2

    t = t3()
    counter = _run_calls(f, lambda: (Counter(), t), 5)
    assert counter.frame_count == 1


def test_check_calls_list_and_attr():
    def f(o, x):
        o.hist.append(1)
        o.last = x * 2
        return o.last

    check_calls(f, Obj(hist=[]), t3(), calls=3)


def test_counter_attribute_few_compiles():
    def f(c, x):
        c.calls += 1
        return x * 2

    t = t3()
    counter = _run_calls(f, lambda: (Counter(), t), 20)
    assert counter.frame_count <= 2
    assert Counter().calls == 0


def test_counter_attribute_via_method_few_compiles():
    def f(c, x):
        return c.step(x) + 1

    t = t3()
    counter = _run_calls(f, lambda: (Counter(), t), 20)
    assert counter.frame_count <= 2


def test_global_int_counter_few_compiles():
    def f(x):
        global G_INT
        G_INT += 1
        return x + 1

    t = t3()
    counter = _run_calls(f, lambda: (t,), 20)
    assert counter.frame_count <= 2


def test_counter_used_in_graph_is_guarded():
    def f(c, x):
        c.calls += 1
        return x * c.calls  # feeds the graph: value must be specialized and re-checked

    t = t3()
    _run_calls(f, lambda: (Counter(), t), 4)


def test_counter_used_in_control_flow_is_guarded():
    def f(c, x):
        c.calls += 1
        if c.calls % 2:
            return x + 1
        return x - 1

    t = t3()
    _run_calls(f, lambda: (Counter(), t), 4)


def test_aliasing_guard_rechecked():
    def f(a, b, x):
        a.append(1)
        return x * len(b)

    counter = CompileCounter()
    cfn = bytegraph.compile(f, backend=counter)
    for shared in (True, False, True):
        for g in (f, cfn):
            a = [0]
            b = a if shared else [0]
            r = g(a, b, torch.ones(2))
            if g is f:
                expected = (r, list(a), list(b))
            else:
                assert_same(expected, (r, list(a), list(b)))
    assert counter.frame_count == 2


def test_failed_trace_leaves_no_side_effect():
    def f(o, x):
        o.v = 5
        print("eager")  # unsupported: the whole frame runs eagerly, exactly once
        return x

    o = Obj(v=1)
    bytegraph.compile(f)(o, t3())
    assert o.v == 5


# ----------------------------------------------------------------------------- cost

def _mutating_fn(n):
    lines = ["def f(xs, d, o, x):"]
    for i in range(n):
        lines.append(("    xs.append(x)", f"    d['k{i % 50}'] = x", f"    o.a{i % 50} = {i}")[i % 3])
    lines.append("    return x + 1")
    ns = {}
    exec("\n".join(lines), ns)
    return ns["f"]


def _trace_seconds(n):
    """Best CPU time of this process for one capture of `n` writes: CPU time, not wall time,
    so the other test worker on a 2-core machine does not decide the ratio."""
    fn = _mutating_fn(n)
    best = float("inf")
    for _ in range(3):
        bytegraph.reset()
        cfn = bytegraph.compile(fn, backend=CompileCounter())
        start = time.process_time()
        cfn([], {}, Obj(), torch.ones(2))
        best = min(best, time.process_time() - start)
    return best


def test_mutation_tracking_cost_is_linear():
    fn = _mutating_fn(60)
    xs, d, o = [], {}, Obj()
    bytegraph.compile(fn)(xs, d, o, torch.ones(2))
    assert len(xs) == 20 and len(d) == 20 and o.a2 == 2
    t1, t2 = _trace_seconds(1000), _trace_seconds(2000)
    assert t2 / t1 < 3.5, (t1, t2)  # linear (bench/mutation_cost.py checks <= 2.3 quietly)


# ----------------------------------------------------------------------------- objects made in the trace

class Pt:
    def __init__(self, x, y=1):
        self.x = x
        self.y = y

    def norm2(self):
        return self.x * self.x + self.y * self.y


class Slotted:
    __slots__ = ("v",)

    def __init__(self, v):
        self.v = v


def test_new_object_returned():
    def f(x):
        p = Pt(x * 2)
        p.z = p.norm2()
        return p

    check(f, t3(), graphs=1)


def test_new_object_stored_in_argument_attribute_and_list():
    def f(o, xs, x):
        p = Pt(x + 1, y=x)
        o.point = p
        xs.append(p)
        p.y = p.y * 3  # written after it escaped: the final state is what escapes
        return x

    r = check(f, Obj(), [], t3(), graphs=1)
    o, xs = r.compiled.args[0][0], r.compiled.args[0][1]
    assert o.point is xs[0]


def test_new_object_in_global():
    def f(x):
        global G_OBJ
        G_OBJ = Pt(x.sum(), 5)
        return x - 1

    check_state(f, t3())


def test_new_object_used_only_inside():
    def f(x):
        p = Pt(x, 2)
        p.x = p.x + 1
        del p.y
        return p.x * hasattr(p, "y") + p.x

    check(f, t3(), graphs=1)


def test_new_slotted_object_is_still_correct():
    def f(o, x):
        s = Slotted(x)
        o.s = s
        return s.v + 1

    r = check(f, Obj(), t3(), graphs=None)  # not traced as a new object (slots): still exact
    assert isinstance(r.compiled.args[0][0].s, Slotted)


def test_attr_deleted_then_readded_moves_to_end():
    def f(o, x):
        del o.a
        o.b = 1
        o.a = x * 2
        return x + 1

    r = check(f, Obj(a=0, c=1), t3(), graphs=1)
    assert list(vars(r.compiled.args[0][0])) == ["c", "b", "a"]


# ----------------------------------------------------------------------------- unpinned ints

UNPINNED_USES = {
    "view_shape": lambda o, x: x.view(o.n, -1) * 2,
    "list_index": lambda o, x: ([x][o.i - 1] + o.n, o.n),
    "arith_and_format": lambda o, x: (x * (o.n + o.i), f"{o.n - 1}"),
    "dim_and_containers": lambda o, x: (x.sum(dim=o.i - 1), [o.n] * 2, {o.n: 1}),
    "returned_expression": lambda o, x: (x + 1, o.n * 3 - o.i, -o.n),
}


@pytest.mark.parametrize("name", list(UNPINNED_USES))
def test_unpinned_int_uses_are_exact_across_values(name):
    from helpers import check_sequence

    fn = UNPINNED_USES[name]
    check_sequence(fn, [(Obj(n=2, i=1), torch.randn(2, 2)), (Obj(n=4, i=1), torch.randn(4, 1)),
                        (Obj(n=2, i=1), torch.randn(2, 2))])
