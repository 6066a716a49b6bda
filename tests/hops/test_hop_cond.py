"""`torch.cond` and `bytegraph.cond` captured as one `torch.ops.higher_order.cond` node:
differential tests (outputs, gradients, guards) with `fullgraph=True` and one graph, for
tensor, bool and size predicates, closures over locals/params/buffers/globals, nested
conds, pytree outputs, module branches, loops and modules; mismatched branches (a clear
error); aliasing outputs; the cond node and its subgraphs."""
from __future__ import annotations

import pytest
import torch

import bytegraph
from helpers import check, compile_counted

COND = pytest.mark.parametrize("cond", [torch.cond, bytegraph.cond], ids=["torch", "bytegraph"])

SCALE = 3.0
G_TENSOR = torch.linspace(-1, 1, 4)


def T(*shape, grad=True):
    return torch.randn(*shape, requires_grad=grad)


def POS(*shape):
    return (torch.rand(*shape) + 0.5).requires_grad_()


def NEG(*shape):
    return (-torch.rand(*shape) - 0.5).requires_grad_()


def _true(x):
    return x.sin() * 2


def _false(x):
    return x.cos() - 1


def cond_nodes(counter, index=-1) -> list:
    gm = counter.graphs[index]
    return [n for n in gm.graph.nodes if n.target is torch.ops.higher_order.cond]


# ---- tensor predicates ------------------------------------------------------------------
@COND
@pytest.mark.parametrize("make", [POS, NEG], ids=["true", "false"])
def test_tensor_pred_both_branches(cond, make):
    def fn(x):
        return cond(x.sum() > 0, _true, _false, (x,))

    r = check(fn, make(4), graphs=1, fullgraph=True)
    assert len(cond_nodes(r.counter)) == 1


@COND
def test_pred_is_a_bool_tensor_argument(cond):
    def fn(p, x):
        return cond(p, _true, _false, (x,)) + 1

    check(fn, torch.tensor(True), T(3), graphs=1, fullgraph=True)
    check(fn, torch.tensor(False), T(3), graphs=1, fullgraph=True)


@COND
def test_pred_one_element_int_tensor(cond):
    def fn(x):
        return cond((x > 0).sum() > 2, _true, _false, (x,))

    check(fn, T(5), graphs=1, fullgraph=True)


@COND
def test_pred_computed_from_a_parameter(cond):
    lin = torch.nn.Linear(4, 1)

    def fn(x):
        return cond(lin(x).sum() > 0, _true, _false, (x,))

    check(fn, T(2, 4), graphs=1, fullgraph=True)


@COND
def test_one_compiled_graph_serves_both_predicate_values(cond):
    def fn(x):
        return cond(x.sum() > 0, _true, _false, (x,))

    cfn, counter = compile_counted(fn)
    for x in (POS(3), NEG(3), POS(3)):
        torch.testing.assert_close(cfn(x), fn(x))
    assert counter.frame_count == 1


# ---- constant predicates inline the chosen branch ------------------------------------------
@COND
@pytest.mark.parametrize("pred", [True, False, 1, 0, 2.5])
def test_constant_pred_inlines_the_branch(cond, pred):
    def fn(x):
        return cond(pred, _true, _false, (x,))

    r = check(fn, T(3), graphs=1, fullgraph=True)
    assert not cond_nodes(r.counter)


@COND
def test_size_pred_inlines_the_branch(cond):
    def fn(x):
        return cond(x.shape[0] > 2, _true, _false, (x,))

    r = check(fn, T(4), graphs=1, fullgraph=True)
    assert not cond_nodes(r.counter)
    check(fn, T(2), graphs=1, fullgraph=True)


@COND
def test_size_pred_recompiles_for_the_other_size(cond):
    def fn(x):
        return cond(x.size(0) > 2, _true, _false, (x,))

    cfn, counter = compile_counted(fn)
    for x in (T(4), T(1)):
        torch.testing.assert_close(cfn(x), fn(x))
    assert counter.frame_count == 2


# ---- closures and lifted values --------------------------------------------------------------
@COND
def test_closure_over_a_local_tensor(cond):
    def fn(x, y):
        z = y * 2

        def t(a):
            return a + z

        def f(a):
            return a - z

        return cond(x.sum() > 0, t, f, (x,))

    r = check(fn, T(3), T(3), graphs=1, fullgraph=True)
    node = cond_nodes(r.counter)[0]
    assert len(node.args[3]) == 2  # the operand, then the lifted `z`


@COND
def test_closure_over_global_tensor(cond):
    def fn(x):
        return cond(x.sum() > 0, lambda a: a * G_TENSOR, lambda a: a + G_TENSOR, (x,))

    check(fn, T(4), graphs=1, fullgraph=True)


# eager torch.cond fails after the change (torch's own recompile bug)
@pytest.mark.parametrize("cond", [bytegraph.cond])
def test_closure_over_global_constant_is_guarded(cond):
    def fn(x):
        return cond(x.sum() > 0, lambda a: a * SCALE, lambda a: a / SCALE, (x,))

    global SCALE
    cfn, counter = compile_counted(fn)
    x = POS(3)
    torch.testing.assert_close(cfn(x), fn(x))
    SCALE = 5.0
    try:
        torch.testing.assert_close(cfn(x), fn(x))
    finally:
        SCALE = 3.0
    assert counter.frame_count == 2


# eager torch.cond fails after the change (torch's own recompile bug)
@pytest.mark.parametrize("cond", [bytegraph.cond])
def test_guards_of_the_branch_not_taken_are_kept(cond):
    def fn(x):
        return cond(x.sum() > 0, lambda a: a * 2, lambda a: a * SCALE, (x,))

    global SCALE
    cfn, counter = compile_counted(fn)
    x = POS(3)  # the true branch runs; the false branch read SCALE
    torch.testing.assert_close(cfn(x), fn(x))
    SCALE = 7.0
    try:
        neg = NEG(3)
        torch.testing.assert_close(cfn(neg), fn(neg))
    finally:
        SCALE = 3.0
    assert counter.frame_count == 2


@COND
def test_closure_over_parameters_and_buffers(cond):
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 3)
            self.register_buffer("offset", torch.arange(3.0))

        def forward(self, x):
            return cond(x.sum() > 0, lambda a: self.lin(a), lambda a: a + self.offset, (x,))

    m = M()
    r = check(m, POS(2, 3), graphs=1, fullgraph=True)
    node = cond_nodes(r.counter)[0]
    assert len(node.args[3]) == 4  # x, weight, bias, offset
    check(m, NEG(2, 3), graphs=1, fullgraph=True)


@COND
def test_parameter_gradients_through_cond(cond):
    lin = torch.nn.Linear(3, 2)

    def fn(x):
        return cond(x.sum() > 0, lambda a: lin(a).relu(), lambda a: lin(a * 2), (x,)).sum()

    for make in (POS, NEG):
        lin.zero_grad()
        x = make(4, 3)
        fn(x).backward()
        expected = [p.grad.clone() for p in lin.parameters()]
        lin.zero_grad()
        bytegraph.reset()
        bytegraph.compile(fn, fullgraph=True)(x.detach().requires_grad_()).backward()
        for p, e in zip(lin.parameters(), expected):
            torch.testing.assert_close(p.grad, e)


@COND
def test_nested_closures(cond):
    def fn(x, y):
        def outer(k):
            def t(a):
                return a * k + y

            def f(a):
                return a - k * y

            return t, f

        t, f = outer(y.sum())
        return cond(x.sum() > 0, t, f, (x,))

    check(fn, POS(3), T(3), graphs=1, fullgraph=True)
    check(fn, NEG(3), T(3), graphs=1, fullgraph=True)


@COND
def test_branches_without_operands_use_closures(cond):
    def fn(x):
        return cond(x.sum() > 0, lambda: x.sin(), lambda: x.cos())

    check(fn, POS(3), graphs=1, fullgraph=True)
    check(fn, NEG(3), graphs=1, fullgraph=True)


# ---- nested conds ----------------------------------------------------------------------------
@COND
@pytest.mark.parametrize("make", [POS, NEG], ids=["outer-true", "outer-false"])
def test_nested_cond(cond, make):
    def fn(x, y):
        def inner_true(a):
            return cond(a.mean() > 0.9, lambda b: b * 10 - y, lambda b: b + y, (a,))

        return cond(x.sum() > 0, inner_true, lambda a: a - y, (x,))

    r = check(fn, make(3), T(3), graphs=1, fullgraph=True)
    gm = r.counter.graphs[0]
    assert len(cond_nodes(r.counter)) == 1
    names = dict(gm.named_children())
    inner = [n for name, sub in names.items() for n in sub.graph.nodes if n.target is torch.ops.higher_order.cond]
    assert len(inner) == 1


@COND
def test_cond_in_both_branches(cond):
    def fn(x):
        t = lambda a: cond(a.sum() > 1, lambda b: b * 2, lambda b: b * 3, (a,))  # noqa: E731
        f = lambda a: cond(a.sum() < -1, lambda b: b - 2, lambda b: b - 3, (a,))  # noqa: E731
        return cond(x.sum() > 0, t, f, (x,))

    for make in (POS, NEG):
        check(fn, make(4), graphs=1, fullgraph=True)


# ---- outputs ------------------------------------------------------------------------------------
@COND
def test_branches_return_tuples(cond):
    def fn(x, y):
        return cond(x.sum() > 0, lambda a, b: (a + b, a * b), lambda a, b: (a - b, a / (b.abs() + 1)), (x, y))

    check(fn, POS(3), T(3), graphs=1, fullgraph=True)
    check(fn, NEG(3), T(3), graphs=1, fullgraph=True)


@COND
def test_branches_return_dicts(cond):
    def fn(x):
        out = cond(x.sum() > 0, lambda a: {"s": a.sin(), "c": a.cos()}, lambda a: {"s": a * 0, "c": a + 1}, (x,))
        return out["s"] + out["c"], sorted(out)

    check(fn, POS(3), graphs=1, fullgraph=True)
    check(fn, NEG(3), graphs=1, fullgraph=True)


@COND
def test_branches_return_nested_structures(cond):
    def fn(x):
        return cond(x.sum() > 0, lambda a: [a * 1, (a * 2, {"k": a + 1})], lambda a: [a - 1, (a * 3, {"k": a + 0})],
                    (x * 1,))

    check(fn, POS(2), graphs=1, fullgraph=True)


@COND
def test_result_used_after_the_cond(cond):
    def fn(x):
        y = cond(x.sum() > 0, _true, _false, (x,))
        return (y * y).sum() + x.mean()

    check(fn, POS(3), graphs=1, fullgraph=True)


@COND
def test_many_operands_in_a_list(cond):
    def fn(a, b, c):
        return cond(a.sum() > b.sum(), lambda p, q, r: p + q + r, lambda p, q, r: p * q - r, [a, b, c])

    check(fn, T(3), T(3), T(3), graphs=1, fullgraph=True)


@COND
def test_nested_operand_structure(cond):
    def fn(x, y):
        return cond(x.sum() > 0, lambda d, t: d["a"] + t[0], lambda d, t: d["a"] * t[0], ({"a": x}, (y,)))

    check(fn, POS(3), T(3), graphs=1, fullgraph=True)


@COND
def test_keyword_arguments(cond):
    def fn(x):
        return cond(pred=x.sum() > 0, true_fn=_true, false_fn=_false, operands=(x,))

    check(fn, T(3), graphs=1, fullgraph=True)


@COND
def test_integer_and_bool_outputs(cond):
    def fn(x):
        return cond(x.sum() > 0, lambda a: (a > 0, a.long()), lambda a: (a < 0, (a * 2).long()), (x,))

    check(fn, T(5, grad=False), graphs=1, fullgraph=True)


def test_bytegraph_cond_copies_an_operand_it_returns():
    def fn(x):
        return bytegraph.cond(x.sum() > 0, lambda a: a, lambda a: a * 2, (x,))

    r = check(fn, POS(3), graphs=1, fullgraph=True)
    assert r.eager.out is not r.eager.args[0][0]


def test_bytegraph_cond_copies_a_view_it_returns():
    def fn(x):
        return bytegraph.cond(x.sum() > 0, lambda a: a.view(-1), lambda a: a.reshape(-1) * 2, (x,))

    check(fn, POS(2, 2), graphs=1, fullgraph=True)


def test_torch_cond_returning_an_operand_breaks_and_raises_as_eager():
    def fn(x):
        return torch.cond(x.sum() > 0, lambda a: a, lambda a: a * 2, (x,))

    check(fn, POS(3))
    with pytest.raises(bytegraph.Unsupported,
                       match="true branch of torch.cond .* returns output 0, which aliases an input"):
        bytegraph.compile(fn, fullgraph=True)(POS(3))


# ---- branches of every kind ----------------------------------------------------------------------
class Scale(torch.nn.Module):
    def __init__(self, k):
        super().__init__()
        self.k = torch.nn.Parameter(torch.tensor(float(k)))

    def forward(self, x):
        return x * self.k


@COND
def test_branches_are_modules(cond):
    t, f = Scale(2), Scale(-3)

    def fn(x):
        return cond(x.sum() > 0, t, f, (x,))

    check(fn, POS(3), graphs=1, fullgraph=True)
    check(fn, NEG(3), graphs=1, fullgraph=True)


@COND
def test_branches_are_methods(cond):
    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.nn.Parameter(torch.randn(3))

        def up(self, x):
            return x + self.w

        def down(self, x):
            return x - self.w * 2

        def forward(self, x):
            return cond(x.sum() > 0, self.up, self.down, (x,))

    m = M()
    check(m, POS(3), graphs=1, fullgraph=True)
    check(m, NEG(3), graphs=1, fullgraph=True)


@COND
def test_branches_are_module_level_functions_of_another_kind(cond):
    def fn(x):
        return cond(x.sum() > 0, torch.sin, torch.cos, (x,))

    check(fn, T(3), graphs=1, fullgraph=True)


@COND
def test_branches_are_a_submodule_and_a_lambda(cond):
    lin = torch.nn.Linear(3, 3)

    def fn(x):
        return cond(x.sum() > 0, lin, lambda a: a * 0.5, (x,))

    check(fn, POS(2, 3), graphs=1, fullgraph=True)


@COND
def test_branch_with_inlined_helpers_and_python_control_flow(cond):
    def helper(a, n):
        for i in range(n):
            a = a + i
        return a

    def fn(x):
        return cond(x.sum() > 0, lambda a: helper(a, 3), lambda a: helper(a * 2, 2), (x,))

    check(fn, T(3), graphs=1, fullgraph=True)


@COND
def test_branch_builds_and_mutates_its_own_containers(cond):
    def t(a):
        parts = []
        for i in range(3):
            parts.append(a * i)
        d = {}
        d["x"] = sum(parts)
        return d["x"]

    def fn(x):
        return cond(x.sum() > 0, t, _false, (x,))

    check(fn, POS(3), graphs=1, fullgraph=True)


# ---- where the cond sits ---------------------------------------------------------------------------
@COND
def test_cond_inside_a_loop(cond):
    def fn(x):
        for i in range(3):
            x = cond(x.sum() > i, lambda a: a - 1, lambda a: a + 2, (x,))
        return x

    r = check(fn, T(4), graphs=1, fullgraph=True)
    assert len(cond_nodes(r.counter)) == 3
    names = [n for n, _ in r.counter.graphs[0].named_children()]
    assert sorted(names) == ["cond_false_0", "cond_false_1", "cond_false_2", "cond_true_0", "cond_true_1",
                             "cond_true_2"]


@COND
def test_cond_in_a_module_forward(cond):
    class Gate(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.a = torch.nn.Linear(4, 4)
            self.b = torch.nn.Linear(4, 4)

        def forward(self, x):
            h = torch.relu(x)
            return cond(h.mean() > 0.3, self.a, self.b, (h,)).tanh()

    m = Gate()
    check(m, T(2, 4), graphs=1, fullgraph=True)


@COND
def test_cond_in_an_inlined_helper(cond):
    def helper(x):
        return cond(x.sum() > 0, _true, _false, (x,))

    def fn(x):
        return helper(x) + helper(-x)

    r = check(fn, T(3), graphs=1, fullgraph=True)
    assert len(cond_nodes(r.counter)) == 2


@COND
def test_cond_across_a_graph_break(cond):
    def fn(x):
        y = cond(x.sum() > 0, _true, _false, (x,))
        bytegraph.graph_break()
        return cond(y.sum() > 0, _false, _true, (y,))

    check(fn, T(3), graphs=2)


@COND
def test_cond_under_no_grad(cond):
    def fn(x):
        with torch.no_grad():
            y = cond(x.sum() > 0, _true, _false, (x,))
        return y, y.requires_grad

    check(fn, T(3), graphs=1, fullgraph=True)


@COND
def test_grad_mode_switched_inside_a_branch_and_restored(cond):
    def t(a):
        with torch.no_grad():
            b = a * 2
        return a + b

    def fn(x):
        return cond(x.sum() > 0, t, _false, (x,))

    check(fn, POS(3), graphs=1, fullgraph=True)


@COND
def test_two_conds_share_an_operand(cond):
    def fn(x):
        a = cond(x.sum() > 0, _true, _false, (x,))
        b = cond(x.mean() < 0, _false, _true, (x,))
        return a * b

    check(fn, T(4), graphs=1, fullgraph=True)


def test_torch_ops_higher_order_cond_directly():
    def fn(x):  # the operator itself, with Python callables, is captured like torch.cond
        return torch.ops.higher_order.cond(x.sum() > 0, lambda a: (a * 2,), lambda a: (a - 2,), (x,))

    r = check(fn, T(3), graphs=1, fullgraph=True, grads=False)
    assert len(cond_nodes(r.counter)) == 1


# ---- mismatched branches: a clear error ----------------------------------------------------------------
MISMATCHES = {
    "shape": (lambda a: a * 2, lambda a: a.sum(), "shape"),
    "dtype": (lambda a: a * 2, lambda a: (a * 2).double(), "dtype"),
    "structure": (lambda a: (a, a * 2), lambda a: a * 3, "returns a tensor where the true branch returns"),
    "count": (lambda a: (a * 1, a * 2), lambda a: (a * 3,), "returns \\(a tensor,\\) where"),
    "requires_grad": (lambda a: a * 2, lambda a: torch.zeros(3), "requires_grad"),
}


@pytest.mark.parametrize("kind", sorted(MISMATCHES))
def test_mismatched_branches_raise_a_clear_error(kind):
    t, f, what = MISMATCHES[kind]

    def fn(x):
        return torch.cond(x.sum() > 0, t, f, (x,))

    check(fn, POS(3))  # eager torch.cond raises; so does the compiled function, at the break
    with pytest.raises(bytegraph.Unsupported, match=what) as info:
        bytegraph.compile(fn, fullgraph=True)(POS(3))
    message = str(info.value)
    assert "torch.cond" in message and "false branch" in message
    assert f"test_hop_cond.py:{fn.__code__.co_firstlineno + 1}" in message


@pytest.mark.parametrize("kind", sorted(MISMATCHES))
def test_mismatched_bytegraph_cond_runs_the_branch_eagerly(kind):
    t, f, _ = MISMATCHES[kind]

    def fn(x):
        return bytegraph.cond(x.sum() > 0, t, f, (x,))

    check(fn, POS(3), graphs=1)  # the predicate's graph, then the cond runs eagerly


def test_tensor_read_only_by_the_branch_not_taken_gets_a_zero_gradient():
    """As torch.cond's operator (CondAutogradOp): every input of the node gets a gradient;
    eager bytegraph.cond, plain Python, leaves it None."""
    def fn(x, y):
        return bytegraph.cond(x.sum() > 0, lambda a: a * 2, lambda a: a * y, (x,))

    x, y = POS(3), T(3)
    bytegraph.compile(fn, fullgraph=True)(x, y).sum().backward()
    torch.testing.assert_close(x.grad, torch.full((3,), 2.0))
    torch.testing.assert_close(y.grad, torch.zeros(3))
    x2, y2 = x.detach().requires_grad_(), y.detach().requires_grad_()
    fn(x2, y2).sum().backward()
    assert y2.grad is None


def test_tensor_predicate_with_several_elements_breaks():
    def fn(x):
        return bytegraph.cond(x > 0, _true, _false, (x,))

    check(fn, T(3))
    with pytest.raises(bytegraph.Unsupported, match="predicate of 3 elements"):
        bytegraph.compile(fn, fullgraph=True)(T(3))


def test_non_tensor_operand_breaks_naming_it():
    def fn(x):
        return bytegraph.cond(x.sum() > 0, lambda a, n: a * n, lambda a, n: a + n, (x, 3))

    check(fn, T(3))
    with pytest.raises(bytegraph.Unsupported, match="operands of bytegraph.cond holds 3"):
        bytegraph.compile(fn, fullgraph=True)(T(3))


def test_branch_that_breaks_runs_the_cond_eagerly():
    def t(a):
        print("true branch")
        return a * 2

    def fn(x):
        return bytegraph.cond(x.sum() > 0, t, _false, (x * 1,)) + 1

    check(fn, POS(3), graphs=2)
    with pytest.raises(bytegraph.Unsupported, match="bytegraph.cond is not captured: .*print"):
        bytegraph.compile(fn, fullgraph=True)(POS(3))


def test_branch_that_raises_runs_the_cond_eagerly_and_raises():
    def t(a):
        raise ValueError("no")

    def fn(x):
        return bytegraph.cond(x.sum() > 0, t, _false, (x,))

    check(fn, POS(3))
    check(fn, NEG(3))


@pytest.mark.parametrize("dynamic", [True, None])
def test_symbolic_size_predicate_is_one_cond_node_over_sizes(dynamic):
    """`x.size(0) > 2` of a dynamic size stays symbolic: one cond node takes either branch
    at run time, so sizes on both sides of 2 share one graph (automatic dynamic: after the
    first recompile)."""
    def f(x):
        return torch.cond(x.size(0) > 2, lambda a: a * 2, lambda a: a - 1, (x,))

    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm

    compiled = bytegraph.compile(f, backend=backend, fullgraph=True, dynamic=dynamic)
    for n in (3, 5, 2, 4, 2, 6):
        x = torch.randn(n, 4)
        torch.testing.assert_close(compiled(x), f(x))
    assert len(graphs) == (1 if dynamic else 2)
    conds = [n for n in graphs[-1].graph.nodes if n.target is torch.ops.higher_order.cond]
    assert len(conds) == 1 and type(conds[0].args[0]) is torch.fx.Node  # the predicate is computed in the graph


def test_a_changing_float_global_read_in_a_branch_is_specialized_not_lifted():
    """Automatic dynamic makes a changing float global a symbolic input, but torch's cond
    takes only tensors and ints as body inputs: a branch reads the float specialized, so
    each value compiles (before: an internal error, the frame run eagerly)."""
    def fn(x):
        return bytegraph.cond(x.sum() > 0, lambda a: a * SCALE, lambda a: a / SCALE, (x,))

    global SCALE
    cfn, counter = compile_counted(fn)
    x = POS(3)
    try:
        for value in (3.0, 5.0, 7.0):
            SCALE = value
            torch.testing.assert_close(cfn(x), fn(x))
    finally:
        SCALE = 3.0
    assert counter.frame_count == 3
