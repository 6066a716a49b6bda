"""torch.autocast / torch.amp.autocast (CPU) inside compiled code: captured in the graph
with eager's dtypes on the eager, aot_eager and inductor backends, exits on every path,
graph breaks inside blocks resumed under autocast, and the autocast queries folded from the
traced state (Note [Autocast in the trace])."""
import pytest
import torch

import bytegraph
from tests.helpers import CompileCounter, check, compile_counted

BF16 = torch.bfloat16
TOL = dict(rtol=2e-2, atol=2e-2)  # inductor's bfloat16 kernels round differently



BACKENDS = ["eager", "aot_eager", "inductor"]


def _x(*shape, grad=True):
    return torch.randn(*shape, requires_grad=grad)


def _state():
    return (torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"), torch.is_autocast_cache_enabled())


@pytest.fixture(autouse=True)
def _autocast_state_is_restored():
    before = _state()
    yield
    after = _state()
    if after != before:  # put it back, so one failure does not spread to the next tests
        torch.set_autocast_enabled("cpu", before[0])
        torch.set_autocast_dtype("cpu", before[1])
        torch.set_autocast_cache_enabled(before[2])
    assert after == before, "the autocast state leaked out of the test"


# ---- one graph ----------------------------------------------------------------------
def matmul_block(x, w):
    y = x @ w
    with torch.autocast("cpu", dtype=BF16):
        z = y @ w
        q = torch.relu(z) * 2
    return q + 1, z.dtype, (q.float() + y).sum()


def linear_in_block(x, lin):
    with torch.amp.autocast("cpu", dtype=BF16):
        h = lin(x)
        out = torch.nn.functional.gelu(h)
    return out.float().sum(), out


def nested_blocks(x, w):
    # cache off: eager's weight cache would hand the float16 block the bfloat16 cast of the
    # leaf `x` made earlier (keyed by tensor, not dtype), which compiled graphs do not model
    with torch.autocast("cpu", dtype=BF16, cache_enabled=False):
        a = x @ w
        with torch.autocast("cpu", enabled=False):
            b = x @ w
            with torch.autocast("cpu", dtype=torch.float16):
                c = x @ w
        d = a @ w
    return a, b, c, d


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("fn,make", [
    (matmul_block, lambda: (_x(3, 4), _x(4, 4))),
    (linear_in_block, lambda: (_x(2, 5), torch.nn.Linear(5, 3))),
    (nested_blocks, lambda: (_x(3, 3), _x(3, 3))),
], ids=["matmul", "linear", "nested"])
def test_one_graph_on_each_backend(backend, fn, make):
    check(fn, *make(), backend=CompileCounter(backend), graphs=1, fullgraph=True, **TOL)


def test_graph_records_enter_and_exit_nodes():
    def fn(x):
        with torch.autocast("cpu", dtype=BF16):
            return x @ x

    counter = check(fn, _x(3, 3), graphs=1, fullgraph=True).counter
    ops = counter.ops()
    assert ops[0] is torch.amp.autocast_mode._enter_autocast
    assert ops[-1] is torch.amp.autocast_mode._exit_autocast


def test_enabled_false_block_inside_ambient_autocast():
    def fn(x):
        a = x @ x
        with torch.autocast("cpu", enabled=False):
            b = x @ x
        return a, b, torch.is_autocast_enabled("cpu")

    compiled, counter = compile_counted(fn, fullgraph=True)
    torch.manual_seed(0)
    with torch.autocast("cpu", dtype=BF16):
        x = _x(3, 3)
        expected, got = fn(x), compiled(x)
    for e, g in zip(expected[:2], got[:2]):
        assert e.dtype == g.dtype
        torch.testing.assert_close(g, e)
    assert expected[2] is got[2] is True
    assert counter.frame_count == 1


def test_dtype_defaults_to_the_enclosing_blocks_dtype():
    def fn(x):
        with torch.autocast("cpu", dtype=torch.float16):
            with torch.autocast("cpu"):  # dtype None: the current autocast dtype (float16)
                y = x @ x
        with torch.autocast("cpu"):  # the CPU default, bfloat16
            z = x @ x
        return y, z

    check(fn, _x(3, 3), graphs=1, fullgraph=True)


def test_cache_disabled_and_float16():
    def fn(x, w):
        with torch.autocast("cpu", dtype=torch.float16, cache_enabled=False):
            c = torch.is_autocast_cache_enabled()
            y = torch.mm(x, w)
        return y, c, torch.is_autocast_cache_enabled()

    check(fn, _x(2, 3), _x(3, 2), graphs=1, fullgraph=True)


def test_queries_reflect_the_block():
    def fn(x):
        before = torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")
        with torch.autocast("cpu", dtype=torch.float16):
            inside = (torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu"),
                      torch.is_autocast_enabled(), torch.amp.is_autocast_available("cpu"))
            y = x * 2 if torch.is_autocast_enabled("cpu") else x
        after = torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")
        return y, before, inside, after

    check(fn, _x(3), graphs=1, fullgraph=True)


def test_return_inside_the_block():
    def fn(x, w, flag):
        with torch.autocast("cpu", dtype=BF16):
            y = x @ w
            if flag:
                return y, torch.is_autocast_enabled("cpu")
            y = y + 1
        return y, torch.is_autocast_enabled("cpu")

    check(fn, _x(2, 2), _x(2, 2), True, graphs=1, fullgraph=True)
    check(fn, _x(2, 2), _x(2, 2), False, graphs=1, fullgraph=True)


def test_exception_caught_outside_the_block():
    def fn(x, w):
        try:
            with torch.autocast("cpu", dtype=BF16):
                y = x @ w
                raise ValueError("inside autocast")
        except ValueError as e:
            z = x @ w  # float32 again: the block's exit ran on the way out
            return y, z, str(e), torch.is_autocast_enabled("cpu")

    check(fn, _x(2, 2), _x(2, 2), graphs=1, fullgraph=True)


def test_exception_escaping_the_block():
    def fn(x, w):
        with torch.autocast("cpu", dtype=BF16):
            y = x @ w
            if y.shape[0] == 2:
                raise KeyError("escapes")
        return y

    check(fn, _x(2, 2), _x(2, 2))  # runs eagerly (the exception reaches the caller), state restored


def test_block_inside_an_inlined_helper():
    def helper(x, w):
        with torch.autocast("cpu", dtype=BF16):
            return torch.tanh(x @ w)

    def fn(x, w):
        return helper(x, w) + 1, (x @ w).dtype

    check(fn, _x(3, 3), _x(3, 3), graphs=1, fullgraph=True)


def test_helper_called_inside_the_block():
    def helper(x, w):
        return torch.addmm(x, x, w), torch.is_autocast_enabled("cpu")

    def fn(x, w):
        with torch.autocast("cpu", dtype=BF16):
            y, on = helper(x, w)
        return y, on, helper(x, w)

    check(fn, _x(3, 3), _x(3, 3), graphs=1, fullgraph=True)


@torch.autocast("cpu", dtype=BF16)
def _decorated(x, w):
    return x @ w


def test_decorator_applied_outside():
    def fn(x, w):
        return _decorated(x, w) * 2, (x @ w).dtype

    check(fn, _x(3, 3), _x(3, 3), graphs=1, fullgraph=True)


def test_decorator_applied_in_the_trace():
    def mm(x, w):
        return x @ w, torch.get_autocast_dtype("cpu")

    def fn(x, w):
        y, dtype = torch.autocast("cpu", dtype=torch.float16)(mm)(x, w)
        return y, dtype, x @ w

    check(fn, _x(3, 3), _x(3, 3), graphs=1, fullgraph=True)


AMP = torch.autocast("cpu", dtype=BF16)


def test_global_autocast_object_and_local_one():
    def fn(x, w):
        ctx = torch.autocast("cpu", dtype=torch.float16)
        with AMP:
            a = x @ w
        with ctx:
            b = x @ w
        with ctx:  # entered again
            c = b @ w
        return a, b, c

    check(fn, _x(3, 3), _x(3, 3), graphs=1, fullgraph=True)


def test_autocast_with_no_grad_and_backward():
    def fn(x, w):
        with torch.autocast("cpu", dtype=BF16):
            y = x @ w
            with torch.no_grad():
                s = (x @ w).sum()
            out = (y * s).float()
        return out.sum()

    check(fn, _x(3, 3), _x(3, 3), graphs=1, fullgraph=True)


def test_ambient_autocast_is_guarded():
    def fn(x):
        return x @ x, torch.is_autocast_enabled("cpu")

    compiled, counter = compile_counted(fn, fullgraph=True)
    x = _x(2, 2)
    with torch.autocast("cpu", dtype=BF16):
        got = compiled(x)
        assert got[0].dtype == BF16 and got[1] is True
    got = compiled(x)  # the ambient state changed: a new entry
    assert got[0].dtype == torch.float32 and got[1] is False
    with torch.autocast("cpu", dtype=torch.float16):
        assert compiled(x)[0].dtype == torch.float16
    assert counter.frame_count == 3


def test_ambient_autocast_after_a_capture_outside_it():
    def fn(x):
        y = x @ x
        return y, y.dtype

    compiled, counter = compile_counted(fn)
    x = _x(2, 2)
    compiled(x)
    with torch.autocast("cpu", dtype=BF16):
        assert compiled(x)[1] == fn(x)[1]


# ---- graph breaks inside blocks -----------------------------------------------------
def break_in_block(x, w):
    y = x @ w
    with torch.autocast("cpu", dtype=BF16):
        z = y @ w
        print("inside autocast", torch.is_autocast_enabled("cpu"))
        z = torch.relu(z @ w)
        on = torch.is_autocast_enabled("cpu")
    return z + 1, on, (x @ w).dtype


@pytest.mark.parametrize("backend", BACKENDS)
def test_break_inside_block_on_each_backend(backend):
    check(break_in_block, _x(3, 3), _x(3, 3), backend=CompileCounter(backend), graphs=2, **TOL)


def test_break_inside_nested_blocks():
    def fn(x, w):
        with torch.autocast("cpu", dtype=BF16, cache_enabled=False):  # see nested_blocks
            a = x @ w
            with torch.autocast("cpu", dtype=torch.float16):
                b = x @ w
                bytegraph.graph_break()
                c = b.float() @ w
            d = a @ w
        return a, b, c, d, x @ w

    check(fn, _x(3, 3), _x(3, 3), graphs=2)


def test_break_in_a_loop_inside_a_block():
    def fn(x, w):
        out = []
        with torch.autocast("cpu", dtype=BF16):
            for i in range(3):
                x = torch.tanh(x @ w)
                print("step", i)
                out.append(x.dtype)
        return x, out, (x.float() @ w).dtype

    check(fn, _x(3, 3), _x(3, 3), **TOL)  # eager casts `w` once (weight cache), each graph once


def test_break_inside_block_of_an_inlined_helper():
    def helper(x, w):
        with torch.autocast("cpu", dtype=BF16):
            y = x @ w
            print("helper", torch.get_autocast_dtype("cpu"))
            return y @ w

    def fn(x, w):
        a = helper(x, w)
        return a, a.float() @ w

    check(fn, _x(3, 3), _x(3, 3), **TOL)


def test_break_in_helper_called_inside_block():
    def helper(x, w):
        y = x @ w
        bytegraph.graph_break()
        return y @ w, torch.is_autocast_enabled("cpu")

    def fn(x, w):
        with torch.autocast("cpu", dtype=BF16):
            y, on = helper(x, w)
            z = y @ w
        return y, on, z, x @ w

    check(fn, _x(3, 3), _x(3, 3))


def test_break_then_exception_leaves_the_block():
    def fn(x, w):
        try:
            with torch.autocast("cpu", dtype=BF16):
                y = x @ w
                print("before raise")
                raise RuntimeError(f"bad {y.dtype}")
        except RuntimeError as e:
            return x @ w, str(e), torch.is_autocast_enabled("cpu")

    check(fn, _x(2, 2), _x(2, 2))


def test_two_blocks_with_a_break_in_each():
    def fn(x, w):
        with torch.autocast("cpu", dtype=BF16):
            a = x @ w
            bytegraph.graph_break()
            a = a @ w
        b = x @ w
        with torch.autocast("cpu", dtype=torch.float16):
            c = x @ w
            bytegraph.graph_break()
            c = c @ w
        return a, b, c, x @ w

    check(fn, _x(3, 3), _x(3, 3), **TOL)


def test_break_inside_block_under_fullgraph_is_reported():
    with pytest.raises(bytegraph.Unsupported, match="print"):
        bytegraph.compile(break_in_block, fullgraph=True)(_x(3, 3), _x(3, 3))


# ---- what still breaks --------------------------------------------------------------
def _break_reasons(fn, *args):
    return [b.reason for b in bytegraph.explain(fn)(*args).break_reasons]


def test_deprecated_cpu_amp_autocast_breaks_with_a_reason():
    def fn(x):
        with torch.cpu.amp.autocast():
            return x @ x

    assert any("torch.cpu.amp.autocast" in r for r in _break_reasons(fn, _x(2, 2)))


def test_other_device_breaks_with_a_reason():
    def fn(x):
        with torch.autocast("cuda"):
            return x @ x

    with pytest.warns(UserWarning):
        assert any("device 'cuda'" in r for r in _break_reasons(fn, _x(2, 2)))


def test_breaking_call_raises_inside_the_block():
    import json

    def fn(x, w):
        try:
            with torch.autocast("cpu", dtype=BF16):
                y = x @ w
                json.loads("not json")  # a break whose instruction raises: the block's exit runs
        except ValueError as e:
            return y, x @ w, type(e).__name__, torch.is_autocast_enabled("cpu")

    check(fn, _x(2, 2), _x(2, 2))


def test_autocast_object_live_across_a_break():
    def fn(x, w):
        ctx = torch.autocast("cpu", dtype=torch.float16)
        y = x @ w
        print("before the block")
        with ctx:
            z = y @ w
        return z, isinstance(ctx, torch.autocast)

    check(fn, _x(2, 2), _x(2, 2), graphs=2)


@torch.autocast("cpu", dtype=BF16)
def _decorated_with_break(x, w):
    y = x @ w
    print("inside the decorated function")
    return y @ w, torch.is_autocast_enabled("cpu")


def test_break_inside_a_function_decorated_outside():
    def fn(x, w):
        y, on = _decorated_with_break(x, w)
        return y, on, x @ w

    check(fn, _x(3, 3), _x(3, 3), **TOL)


def test_exception_from_a_block_in_a_helper_caught_by_the_caller():
    def helper(x, w):
        with torch.autocast("cpu", dtype=BF16):
            y = x @ w
            raise IndexError(f"from the helper {y.dtype}")

    def fn(x, w):
        try:
            helper(x, w)
        except IndexError as e:
            return x @ w, str(e), torch.is_autocast_enabled("cpu")

    check(fn, _x(2, 2), _x(2, 2), graphs=1, fullgraph=True)


def test_generator_suspended_inside_a_block():
    def gen(x, w):
        with torch.autocast("cpu", dtype=BF16):
            yield x @ w  # the caller runs under autocast while the generator waits here
        yield x @ w

    def fn(x, w):
        g = gen(x, w)
        a = next(g)
        inside = (x @ w, torch.is_autocast_enabled("cpu"))
        b = next(g)
        return a, inside, b, torch.is_autocast_enabled("cpu")

    check(fn, _x(2, 2), _x(2, 2), graphs=1, fullgraph=True)
