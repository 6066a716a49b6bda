"""Golden cases: side effects on lists, dicts, sets, attributes, globals and closure cells,
replayed after the graph (with and without graph breaks)."""
import torch

import bytegraph

from .harness import case


def T(*shape, grad=False):
    return torch.randn(*shape, requires_grad=grad)


class Box:
    def __init__(self, value=None):
        self.value = value


COUNTER = 0
STORE = {}


def _reset_globals():
    global COUNTER
    COUNTER = 0
    STORE.clear()


def _globals_state():
    return COUNTER, dict(STORE)


# ---------------------------------------------------------------- containers

@case(lambda: (T(3), [1, 2]))
def list_append(x, out):
    out.append(x * 2)
    return x + 1


@case(lambda: (T(3), [T(3), T(3)]))
def list_setitem_and_pop(x, xs):
    xs[0] = x + xs[0]
    last = xs.pop()
    return last * 2


@case(lambda: (T(3), [3, 1, 2]))
def list_inplace_methods(x, xs):
    xs.sort()
    xs.reverse()
    xs.extend([7, 8])
    xs.insert(0, 9)
    return x * xs[0]


@case(lambda: (T(3), {"a": 1}))
def dict_setitem_and_del(x, d):
    d["b"] = x * 2
    del d["a"]
    return x + 1


@case(lambda: (T(3), {"a": 1, "b": 2}))
def dict_update_pop_setdefault(x, d):
    d.update(c=3)
    p = d.pop("a")
    d.setdefault("z", x)
    return x * p


@case(lambda: (T(3), {1, 2}))
def set_add_discard(x, s):
    s.add(5)
    s.discard(1)
    return x * len(s)


@case(lambda: (T(3), [1]))
def list_aliasing_two_paths(x, xs):
    holder = [xs, xs]
    holder[0].append(x)
    return len(holder[1]), x + 1


@case(lambda: (T(3),))
def new_list_escapes(x):
    out = [x]
    out.append(x + 1)
    return out, out


# ---------------------------------------------------------------- attributes

@case(lambda: (T(3), Box(1)))
def attribute_write(x, b):
    b.value = b.value + 1
    b.extra = x * 2
    return x


@case(lambda: (T(3), Box(T(3))))
def attribute_tensor_update(x, b):
    b.value = b.value + x
    return b.value * 2


@case(lambda: (T(3), Box(5)))
def attribute_delete(x, b):
    v = b.value
    del b.value
    return x * v


@case(lambda: (T(3),))
def new_object_escapes(x):
    b = Box(x + 1)
    b.other = [x]
    return b


# ---------------------------------------------------------------- globals

@case(lambda: (T(3),), setup=_reset_globals, state=_globals_state)
def global_counter(x):
    global COUNTER
    COUNTER = COUNTER + 1
    return x * 2


@case(lambda: (T(3),), setup=_reset_globals, state=_globals_state)
def global_dict_mutation(x):
    STORE["k"] = 3
    STORE["t"] = x.shape[0]
    return x + len(STORE)


# ---------------------------------------------------------------- closure cells


def _make_counter():
    count = 0

    def bump(x):
        nonlocal count
        count += 1
        return x * count

    return bump


@case(make=True, args=lambda: (T(3),))
def closure_nonlocal_write():
    return _make_counter()


@case(lambda: (T(3),))
def inner_closure_made_in_frame(x):
    k = 2

    def scale(t):
        return t * k

    k = 3
    return scale(x)


@case(lambda: (T(3),))
def closure_read_after_definition(x):
    y = x + 1

    def get():
        return y

    return get() * 2, get.__name__


# ---------------------------------------------------------------- side effects across breaks

@case(lambda: (T(3), []))
def list_append_before_break(x, out):
    out.append(1)
    print("break")
    out.append(2)
    return x + len(out)


@case(lambda: (T(3), Box(0)))
def attribute_write_before_break(x, b):
    b.value = 7
    bytegraph.graph_break()
    return x * b.value


@case(lambda: (T(3),), setup=_reset_globals, state=_globals_state)
def global_write_before_break(x):
    global COUNTER
    COUNTER = 10
    print("break")
    return x + COUNTER


@case(lambda: (T(3), {"a": 1}))
def dict_mutation_before_break(x, d):
    d["b"] = 2
    bytegraph.graph_break()
    d["c"] = 3
    return x * len(d)


@case(lambda: (T(3),))
def cell_shared_across_break(x):
    n = 1

    def add(t):
        return t + n

    y = add(x)
    print("cells cross")
    n = 5
    return add(y)


def _make_accumulator():
    total = []

    def acc(x):
        total.append(x.shape[0])
        print("acc")
        return x * len(total)

    return acc


@case(make=True, args=lambda: (T(3),))
def closure_cell_list_across_break():
    return _make_accumulator()


@case(lambda: (T(3), iter([1, 2, 3])), grads=False, rerun=False)
def list_iterator_consumed_across_break(x, it):
    a = next(it)
    print("break")
    b = next(it)
    return x * (a + b)


def _appends(out, t):
    out.append("inner")
    print("nested")
    out.append("after")
    return t * 2


@case(lambda: (T(3), []))
def nested_break_after_append(x, out):
    out.append("outer")
    return _appends(out, x) + len(out)


@case(lambda: (T(3), iter((1, 2, 3))), grads=False, rerun=False)
def tuple_iterator_consumed_across_break(x, it):
    a = next(it)
    print("break")
    b = next(it)
    return x * (a + b)
