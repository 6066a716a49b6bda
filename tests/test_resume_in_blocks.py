"""Graph breaks inside `try`/`except`/`finally` and `with` blocks resume (Note [Breaks inside
blocks] in translate/breaks.py): the code after the break is captured with the user's
handlers still in force, `finally` runs once, an exception raised by the breaking instruction
or by the code after it reaches the user's handler, and a grad-mode block (`no_grad`,
`enable_grad`, `set_grad_enabled`) restores the mode where it ends; breaks in an `except`
body, inside a user context manager and in a compiled module's forward match eager too.
Frames with cells breaking inside blocks: tests/test_resume_cells_in_blocks.py.

Every test is differential (``helpers.check``: outputs, gradients, printed output,
mutated arguments, no recompile on a second call); most also count the graphs, or the
frames run eagerly, through `bytegraph.explain`.
"""
from __future__ import annotations

import torch

import bytegraph
from helpers import check, eager_rests, explain_counts


def T(*shape, grad=False):
    return torch.randn(*shape, requires_grad=grad)


def test_break_in_try_code_after_raises_and_is_caught():
    def f(x):
        try:
            y = x * 2
            print("in try")
            z = y + 1
            if z.shape[0] == 3:
                raise ValueError("boom")
        except ValueError:
            z = y * 3
        return z.sin()

    check(f, T(3, grad=True))
    # the resume function raises and catches in its own frame: it compiles too (Note [Traced exceptions])
    assert explain_counts(f, T(3))[:2] == (2, 1)


def test_break_in_try_rest_is_compiled():
    def f(x):
        try:
            y = x * 2
            print("in try")
            z = y.cos() + 1
        except RuntimeError:
            z = x
        return z * 2

    check(f, T(3, grad=True), graphs=2)
    assert explain_counts(f, T(3)) == (2, 1, [1, 3])


def test_breaking_call_raises_inside_try():
    def boom(t):
        raise KeyError("k")

    def f(x):
        y = x + 1
        try:
            torch._C._log_api_usage_once("bytegraph.test")
            y = y * 2
            boom(y)
        except KeyError as e:
            return y - 1, str(e)
        return y, ""

    check(f, T(3, grad=True))


def test_breaking_instruction_itself_raises_inside_try():
    def f(x, d):
        y = x * 2
        try:
            v = d["missing"].item()
        except KeyError:
            v = -1.0
        return y + v

    check(f, T(3, grad=True), {"present": torch.ones(())})


def test_break_in_try_finally_runs_finally():
    def f(x, log):
        try:
            y = x * 2
            bytegraph.graph_break()
            y = y + 1
        finally:
            log.append("finally")
            y = y * 3
        return y

    check(f, T(3, grad=True), [], graphs=2)
    assert explain_counts(f, T(3), []) == (2, 1, [1, 2])


def test_try_finally_when_code_after_break_raises():
    def f(x, log):
        try:
            y = x * 2
            print("before")
            y.view(7)
        finally:
            log.append(len(log))
        return y

    check(f, T(3, grad=True), [1])


def test_item_break_inside_try_in_loop():
    def f(x):
        total = x * 0
        for i in range(3):
            try:
                s = (x * i).sum()
                v = s.item()
                total = total + v
            except ZeroDivisionError:
                total = total - 1
        return total

    check(f, T(3, grad=True))
    assert eager_rests(f, T(3)) == []


def test_break_inside_no_grad():
    def f(x):
        with torch.no_grad():
            y = x * 2
            print("no grad")
            z = y + 1
            inside = torch.is_grad_enabled()
        return z, x * 2, inside, torch.is_grad_enabled()

    check(f, T(3, grad=True), graphs=2)
    assert explain_counts(f, T(3, grad=True)) == (2, 1, [2, 3])


def test_break_inside_enable_grad_under_no_grad():
    def f(x):
        with torch.enable_grad():
            y = x * 2
            bytegraph.graph_break()
            z = y.sin()
        return z, torch.is_grad_enabled()

    with torch.no_grad():
        check(f, T(3, grad=True), graphs=2)


def test_break_inside_set_grad_enabled():
    def f(x, flag):
        with torch.set_grad_enabled(flag):
            y = x * 2
            print("flag", flag)
            z = y * y.sum()
        return z, z.requires_grad, torch.is_grad_enabled()

    check(f, T(3, grad=True), False, graphs=2)
    check(f, T(3, grad=True), True, graphs=2)


def test_no_grad_exit_after_exception_in_resumed_block():
    def f(x):
        try:
            with torch.no_grad():
                y = x * 2
                print("inside")
                y.view(7)
        except RuntimeError:
            pass
        return torch.is_grad_enabled(), x * 3

    check(f, T(3, grad=True))


def test_nested_with_and_try():
    def f(x, log):
        with torch.no_grad():
            try:
                y = x * 2
                print("nested")
                y = y + 1
            finally:
                log.append(torch.is_grad_enabled())
        w = x * y
        return w, w.requires_grad, torch.is_grad_enabled()

    check(f, T(3, grad=True), [], graphs=2)
    assert eager_rests(f, T(3, grad=True), []) == []


def test_break_in_except_block_falls_back_but_matches_eager():
    def f(x):
        try:
            raise ValueError("v")
        except ValueError:
            y = x * 2
            print("in except")
            y = y + 1
        return y

    check(f, T(3, grad=True))


def test_break_at_a_tensor_condition_in_except_block_takes_eagers_branch():
    # 3.13's jump takes a bool (COMPARE_OP's bool flag, TO_BOOL): the body copy gets one
    def f(x, y, n):
        try:
            n // (n - 1)
        except ZeroDivisionError:
            if x.sum() > 100:
                y = y + 1
            if not x.sum() < 100:
                y = y + 2
        return y

    check(f, torch.ones(3), torch.zeros(3), 1)


class UserCtx:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_break_inside_user_context_manager_falls_back():
    def f(x):
        with UserCtx():
            y = x * 2
            print("user ctx")
            y = y + 1
        return y

    check(f, T(3, grad=True))


def test_try_with_cells_breaks_still_correct():
    def f(x):
        k = x * 2
        g = lambda: k  # noqa: E731
        try:
            print("cells in try")
            k = k + 1
        except RuntimeError:
            pass
        return g()

    check(f, T(3, grad=True))


class _BlockBreakNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        h = self.lin(x)
        with torch.no_grad():
            stats = h.mean()
            print("stats", round(float(stats), 4))
        try:
            out = torch.relu(h) * 2
        finally:
            print("done")
        return out, stats


def test_break_in_with_and_try_blocks_of_a_compiled_modules_forward_is_captured():
    # the module's forward is inlined into the wrapper's root frame; a break inside its
    # with block is taken at the module call, which then runs forward compiled on its own
    torch.manual_seed(0)
    net = _BlockBreakNet()
    check(lambda m, x: m(x), net, torch.randn(2, 4, requires_grad=True))
    torch.manual_seed(0)
    out = bytegraph.explain(_BlockBreakNet())(torch.randn(2, 4))
    assert out.graph_count >= 2, out  # linear + mean before the break, relu/mul after it
    ops = [str(op) for graph_ops in out.ops_per_graph for op in graph_ops]
    assert any("linear" in op for op in ops) and any("relu" in op for op in ops), out
