"""Loops and branches on Python values inside compiled functions (eager vs compiled)."""
import pytest
import torch

from helpers import check

# ------------------------------------------------------------------ loops


def _loop_range(x):
    for i in range(3):
        x = x * 2 + i
    return x


def _loop_range_start_stop_step(x):
    acc = x
    for i in range(10, 2, -3):
        acc = acc - i
    return acc


def _loop_list(x):
    for w in [0.5, 2.0, -1.0]:
        x = x * w
    return x


def _loop_tuple_of_tensors(x):
    acc = torch.zeros_like(x)
    for t in (x, x.sin(), x.cos()):
        acc = acc + t
    return acc


def _loop_dict_items(x):
    d = {"a": 1.0, "b": 2.0, "c": 3.0}
    for k, v in d.items():
        x = x + v * len(k)
    return x


def _loop_dict_keys_values(x):
    d = {"p": 2, "q": 5}
    out = x
    for k in d.keys():
        out = out * d[k]
    for v in d.values():
        out = out - v
    for k in d:
        out = out + len(k)
    return out


def _loop_enumerate(x):
    out = []
    for i, v in enumerate([x, x + 1, x + 2], start=1):
        out.append(v * i)
    return out


def _loop_zip(x):
    acc = x
    for a, b in zip([1, 2, 3], (x, x * 2, x * 3)):
        acc = acc + a * b
    return acc


def _loop_reversed(x):
    out = []
    for t in reversed([x, x * 2, x * 3]):
        out.append(t.sum())
    return torch.stack(out)


def _loop_over_tensor_rows(x):
    acc = torch.zeros(x.shape[1])
    for row in x:
        acc = acc + row.relu()
    return acc


def _loop_over_tensor_with_enumerate(x):
    rows = []
    for i, row in enumerate(x):
        rows.append(row * i)
    return torch.cat(rows)


def _loop_while(x):
    i = 0
    while i < 4:
        x = x + i
        i += 1
    return x, i


def _loop_break_continue(x):
    for i in range(10):
        if i % 2 == 0:
            continue
        if i > 6:
            break
        x = x * i
    return x


def _loop_for_else(x):
    for i in range(3):
        if i == 5:
            break
    else:
        x = x + 100
    return x


def _loop_nested(x):
    acc = x
    for i in range(3):
        for j in range(i):
            acc = acc + i * j
    return acc


def _loop_over_shape(x):
    acc = x.new_zeros(())
    for d in x.shape:
        acc = acc + d
    return acc * x.sum()


def _loop_over_string(x):
    out = x
    for ch in "abc":
        out = out + ord(ch)
    return out


def _loop_iter_next(x):
    it = iter([x, x * 2, x * 3])
    a = next(it)
    b = next(it)
    rest = list(it)
    return a + b, rest, next(iter([]), "done")


def _loop_range_len(x):
    xs = [x, x.exp()]
    for i in range(len(xs)):
        xs[i] = xs[i] * (i + 1)
    return xs


LOOPS = [
    _loop_range,
    _loop_range_start_stop_step,
    _loop_list,
    _loop_tuple_of_tensors,
    _loop_dict_items,
    _loop_dict_keys_values,
    _loop_enumerate,
    _loop_zip,
    _loop_reversed,
    _loop_over_tensor_rows,
    _loop_over_tensor_with_enumerate,
    _loop_while,
    _loop_break_continue,
    _loop_for_else,
    _loop_nested,
    _loop_over_shape,
    _loop_over_string,
    _loop_iter_next,
    _loop_range_len,
]


@pytest.mark.parametrize("fn", LOOPS, ids=lambda f: f.__name__)
def test_loop(fn):
    check(fn, torch.randn(3, 4, requires_grad=True), graphs=1)


def test_loop_count_from_argument():
    def f(x, n):
        for _ in range(n):
            x = torch.sin(x)
        return x

    r = check(f, torch.randn(3), 4, graphs=1)
    assert r.counter.op_count == 4


def test_long_unrolled_loop():
    def f(x):
        for i in range(100):
            x = x + i
        return x

    check(f, torch.randn(2), graphs=1)


# ------------------------------------------------------------------ branches


def _branch_int(x, n):
    if n > 2:
        return x * n
    elif n == 2:
        return x - n
    return x + n


@pytest.mark.parametrize("n", [1, 2, 3])
def test_if_on_int(n):
    check(_branch_int, torch.randn(3), n, graphs=1)


def _branch_none(x, y):
    if y is None:
        return x * 2
    return x + y


def test_if_on_none():
    check(_branch_none, torch.randn(3), None, graphs=1)
    check(_branch_none, torch.randn(3), torch.randn(3), graphs=1)


def _branch_isinstance(x, y):
    if isinstance(y, torch.Tensor):
        return x + y
    if isinstance(y, (int, float)):
        return x * y
    if isinstance(y, (list, tuple)) and len(y) == 2:
        return x + y[0] + y[1]
    return x


@pytest.mark.parametrize("y", [torch.ones(3), 3, 2.5, [1, 2], (3, 4)], ids=["tensor", "int", "float", "list", "tuple"])
def test_if_isinstance(y):
    check(_branch_isinstance, torch.randn(3), y, graphs=1)


def _branch_len(x, xs):
    if len(xs) == 0:
        return x.neg()
    if not xs:
        return x
    return x + len(xs)


def test_if_on_len_and_truthiness():
    check(_branch_len, torch.randn(2), [], graphs=1)
    check(_branch_len, torch.randn(2), [1, 2], graphs=1)


def test_if_on_tensor_metadata():
    def f(x):
        if x.dim() == 2 and x.shape[0] > 1:
            x = x.sum(0)
        if x.dtype == torch.float32:
            x = x * 2
        if x.requires_grad:
            x = x + 1
        return x - 0.5

    check(f, torch.randn(3, 2, requires_grad=True), graphs=1)
    check(f, torch.randn(3).double(), graphs=1)


def test_if_on_string_and_dict_membership():
    def f(x, mode, opts):
        if mode == "double":
            x = x * 2
        if opts.get("bias"):
            x = x + opts["bias"]
        if "scale" in opts:
            x = x * opts["scale"]
        return x.abs()

    check(f, torch.randn(2), "double", {"bias": 1.5, "scale": 3}, graphs=1)
    check(f, torch.randn(2), "single", {}, graphs=1)


def test_early_return_inside_loop():
    def f(x):
        for i in range(10):
            x = x + 1
            if i == 3:
                return x, i
        return x, -1

    check(f, torch.randn(2), graphs=1)


def test_tensor_bool_in_branch_matches_eager():
    # data-dependent control flow: whatever bytegraph does (break/eager), it must agree
    def f(x):
        y = x.sum()
        if y > 0:
            return x + 1
        return x - 1

    check(f, torch.ones(3))
    check(f, -torch.ones(3))


def test_item_in_python_control_flow_matches_eager():
    def f(x):
        n = int(x.max().item())
        out = x
        for _ in range(n):
            out = out * 2
        return out

    check(f, torch.tensor([1.0, 3.0]))


def test_try_except_handled_inside():
    def f(x, d):
        try:
            v = d["missing"]
        except KeyError:
            v = 2
        return x * v

    check(f, torch.randn(2), {})


def test_try_finally_runs():
    def f(x, log):
        try:
            y = x + 1
        finally:
            log.append("finally")
        return y

    check(f, torch.randn(2), [])


def test_exception_raised_after_side_effects():
    def f(x, log):
        log.append("before")
        y = x * 2
        if y.shape[0] == 2:
            raise ValueError(f"bad size {y.shape[0]}")
        return y

    check(f, torch.randn(2), [])


def test_with_block_user_context_manager():
    class Recorder:
        def __init__(self, log):
            self.log = log

        def __enter__(self):
            self.log.append("enter")
            return self

        def __exit__(self, *exc):
            self.log.append("exit")
            return False

    def f(x, log):
        with Recorder(log):
            y = x + 1
        return y

    check(f, torch.randn(2), [])
