"""Golden cases: graph breaks in the root frame and inside inlined calls, in loops and in
try/with blocks, resume functions and continuations, `fullgraph=True` failures."""
import time

import torch

import bytegraph

from .harness import case


def T(*shape, grad=False):
    return torch.randn(*shape, requires_grad=grad)


# ---------------------------------------------------------------- breaks in the root frame

@case(lambda: (T(3),))
def print_in_middle(x):
    y = x * 2
    print("between")
    return y + 1


@case(lambda: (T(3),))
def explicit_break(x):
    a = x.exp()
    bytegraph.graph_break()
    return a.log()


@case(lambda: (T(3),))
def break_at_start(x):
    print("start")
    return x.sin()


@case(lambda: (T(3),))
def break_at_end(x):
    y = x.cos()
    print("end")
    return y


@case(lambda: (T(3, grad=True),))
def two_breaks_three_graphs(x):
    y = x.sin()
    print("first")
    z = y.cos()
    bytegraph.graph_break()
    return z * 3


@case(lambda: (T(3),))
def item_call(x):
    s = (x * 2).sum().item()
    return x + s


@case(lambda: (T(3),))
def branch_on_tensor(x):
    y = x + 1
    if y.sum() > 0:
        return y * 2
    return y - 2


@case(lambda: (T(3),))
def time_call(x):
    y = x + 1
    time.time()
    return y * 2


@case(lambda: (T(3), T(3)))
def stack_values_across_break(x, y):
    return x + 1, print("on the stack"), y * 2


@case(lambda: (T(3),))
def many_live_locals(x):
    a, b, c = x + 1, x + 2, [x, 3]
    d = {"k": x * 4}
    print("live")
    return a + b + c[0] + d["k"] * c[1]


@case(lambda: (T(3),))
def adjacent_breaks_no_empty_graph(x):
    y = x + 1
    print("a")
    print("b")
    return y


# ---------------------------------------------------------------- breaks in loops

@case(lambda: (T(3),))
def break_in_range_loop(x):
    for i in range(3):
        x = x * 2
        print("iteration", i)
    return x


@case(lambda: ([T(2), T(2)], T(2)))
def break_in_list_loop(xs, w):
    out = []
    for t in xs:
        out.append(t * w)
        bytegraph.graph_break()
    return out


@case(lambda: (T(3),))
def break_in_while_loop(x):
    n = 0
    while n < 2:
        x = x + n
        print("n", n)
        n += 1
    return x


@case(lambda: (torch.ones(3),))
def data_dependent_while(x):
    while x.sum() < 10:
        x = x * 2
    return x


@case(lambda: (T(3),))
def loop_break_statement_after_print(x):
    for i in range(5):
        print(i)
        if i == 1:
            break
        x = x + 1
    return x


# ---------------------------------------------------------------- breaks in try/with blocks

@case(lambda: (T(3),))
def break_in_try_finally(x):
    log = []
    try:
        y = x + 1
        print("in try")
        y = y * 2
    finally:
        log.append("finally")
    return y, log


@case(lambda: (T(3),))
def break_in_try_except(x):
    try:
        y = x * 2
        bytegraph.graph_break()
        raise ValueError("boom")
    except ValueError as e:
        y = y + len(str(e))
    return y


@case(lambda: (T(3, grad=True),))
def break_in_no_grad(x):
    y = x * 2
    with torch.no_grad():
        z = y + 1
        print("inside no_grad")
        z = z * 3
    return y + z


@case(lambda: (T(3, grad=True),))
def break_in_enable_grad_under_no_grad(x):
    with torch.no_grad():
        y = x * 2
        with torch.enable_grad():
            z = x * 3
            print("inside enable_grad")
            z = z + 1
    return y, z


@case(lambda: (T(3, grad=True),))
def set_grad_enabled_false_across_break(x):
    torch.set_grad_enabled(False)
    y = x * 2
    print("grad off")
    torch.set_grad_enabled(True)
    return y + x


# ---------------------------------------------------------------- breaks inside inlined calls


def helper_print(t):
    u = t * 3
    print("helper")
    return u - 1


def helper_level2(t):
    return helper_print(t + 1) * 2


def helper_level1(t):
    return helper_level2(t.sin()) + 0.5


@case(lambda: (T(3),))
def nested_break_one_level(x):
    y = helper_print(x)
    return y + 1


@case(lambda: (T(3, grad=True),))
def nested_break_three_levels(x):
    return helper_level1(x).cos()


def helper_item(t, k=2):
    s = (t * k).sum().item()
    return t * s


@case(lambda: (T(3),))
def nested_item_with_default(x):
    return helper_item(x) + helper_item(x, k=3)


def helper_loop_break(t):
    for i in range(2):
        t = t + i
        bytegraph.graph_break()
    return t


@case(lambda: (T(3),))
def nested_break_in_loop(x):
    return helper_loop_break(x * 2) * 3


class Breaker:
    def __init__(self, k):
        self.k = k

    def scale(self, t):
        print("method breaks")
        return t * self.k


@case(lambda: (T(3),))
def nested_break_in_method(x):
    b = Breaker(4)
    return b.scale(x + 1) - 1


def helper_try_break(t):
    try:
        print("in helper try")
        return t + 1
    finally:
        pass


@case(lambda: (T(3),))
def nested_break_inside_try_restarts(x):
    return helper_try_break(x * 2) * 3


@case(lambda: (T(3),))
def nested_break_under_partial(x):
    import functools

    f = functools.partial(helper_print, x)
    return f() + 1


# ---------------------------------------------------------------- frames that run eagerly


@case(lambda: (T(3),))
def raise_in_user_code(x):
    y = x + 1
    if y.shape[0] == 3:
        raise ValueError("three")
    return y


@case(lambda: (T(3),))
def break_with_deleted_cell(x):
    k = 2

    def g():
        return k  # noqa: F821  (deleted below on purpose: the frame deletes a captured cell)

    del k
    print("cells")
    return x + 1


@case(lambda: (T(3),))
def break_reading_locals(x):
    y = x + 1
    print("locals", sorted(locals()))
    return y


# ---------------------------------------------------------------- fullgraph=True


@case(lambda: (T(3),), mode="unsupported")
def fullgraph_print(x):
    y = x * 2
    print("not capturable")
    return y


@case(lambda: (T(3),), mode="unsupported")
def fullgraph_item(x):
    return x + x.sum().item()


@case(lambda: (T(3),), mode="unsupported")
def fullgraph_branch_on_tensor(x):
    if x.sum() > 0:
        return x
    return -x


@case(lambda: (T(3),), mode="unsupported")
def fullgraph_nested(x):
    return helper_level1(x)


@case(lambda: (T(3),), mode="unsupported")
def fullgraph_explicit(x):
    bytegraph.graph_break()
    return x


@case(lambda: (T(3),), mode="unsupported")
def fullgraph_time(x):
    return x * time.time()


class Managed:
    """A user context manager: the break inside its block resumes with it still active."""

    def __init__(self, log):
        self.log = log

    def __enter__(self):
        self.log.append("enter")
        return self

    def __exit__(self, typ, value, tb):
        self.log.append(("exit", typ))
        return False


@case(lambda: (T(3), []))
def break_in_user_with(x, log):
    with Managed(log) as m:
        y = x * 2
        print("inside a user with")
        m.log.append("after the break")
        y = y + 1
    return y, log
