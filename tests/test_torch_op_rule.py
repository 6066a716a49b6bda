"""The torch-op rule (vars/torch_op_rule.py): every C function of torch's operator
namespaces, every dispatcher op and custom op is a graph op by a rule derived from the
runtime, not by a list of names; `NOT_GRAPH_OPS` (each entry with its reason) and
`SPECIAL` are the only torch callables named; a call whose fake propagation fails for
want of a kernel is a graph break naming the op."""
import types

import pytest
import torch
import torch.nn.functional as F

import bytegraph
from bytegraph.vars import torch_functions, torch_op_rule, trace_rules
from bytegraph.vars.torch_functions import GRAPH_OPS, SPECIAL
from bytegraph.vars.trace_rules import RULES, Kind, derived_rule, lookup
from helpers import check

_NAMESPACES = {"torch._C._VariableFunctions": torch._C._VariableFunctions, "torch._C._nn": torch._C._nn,
               "torch._C._linalg": torch._C._linalg, "torch._C._fft": torch._C._fft,
               "torch._C._special": torch._C._special}


def _members(namespace) -> list:
    return [getattr(namespace, n) for n in dir(namespace)
            if not n.startswith("__") and type(getattr(namespace, n)) is types.BuiltinFunctionType]


def _overridable() -> set:
    return set().union(*torch.overrides.get_overridable_functions().values())


@pytest.mark.parametrize("name", list(_NAMESPACES))
def test_every_namespace_member_is_a_graph_op_by_the_rule(name):
    """All of them, not a sample: the ones torch.overrides does not list (most of `torch._C._nn`,
    `torch._weight_norm`, the `_foreach_*` ops, the factories) get the derived rule itself."""
    members = _members(_NAMESPACES[name])
    assert members
    overridable = _overridable()
    for fn in members:
        rule = lookup(fn)
        if fn in SPECIAL:
            assert rule.kind is Kind.BUILTIN
        elif fn in torch_op_rule.NOT_GRAPH_OPS:
            assert rule.kind is Kind.BREAK and torch_op_rule.NOT_GRAPH_OPS[fn] in rule.reason, fn
        else:
            assert rule.kind is Kind.GRAPH_OP, (fn, rule)
            assert derived_rule(fn).kind is Kind.GRAPH_OP, fn
            if fn not in overridable:
                assert fn not in RULES and rule is derived_rule(fn), fn  # no table named it


def test_functional_c_functions_and_named_cases():
    public = [f for n, f in vars(F).items() if type(f) is types.BuiltinFunctionType and not n.startswith("_")]
    assert len(public) > 30
    for fn in public:  # (F._add_docstr, torch._C's docstring setter, is no op)
        assert lookup(fn).kind in (Kind.GRAPH_OP, Kind.BUILTIN), fn  # BUILTIN: has_torch_function*
    for fn in (torch._weight_norm, torch._C._nn._parse_to, torch._has_compatible_shallow_copy_type,
               torch._foreach_add_, torch.arange, torch._transformer_encoder_layer_fwd,
               torch.ops.aten.add, torch.ops.aten.add.Tensor, torch.ops.aten._weight_norm_interface.default):
        assert lookup(fn).kind is Kind.GRAPH_OP, fn


def test_global_state_outside_the_namespaces_is_not_a_graph_op():
    """torch._C's own functions (grad-mode and autocast switches, RNG state, threads) are no
    operator namespace: a break, or a SPECIAL handler that models them as state."""
    for fn in (torch.set_autocast_enabled, torch.set_num_threads,
               torch._C.default_generator.get_state, torch._C._set_deterministic_algorithms):
        assert lookup(fn).kind is Kind.BREAK, fn
    for fn in (torch.set_grad_enabled, torch._C._set_grad_enabled, torch.no_grad, torch.is_grad_enabled,
               torch.get_rng_state):
        assert lookup(fn).kind is Kind.BUILTIN, fn


def test_every_not_graph_op_entry_has_a_reason_and_is_a_torch_callable():
    overridable = _overridable()
    assert torch_op_rule.NOT_GRAPH_OPS
    for fn, reason in torch_op_rule.NOT_GRAPH_OPS.items():
        assert isinstance(reason, str) and len(reason) > 10, fn
        assert torch_op_rule.is_namespace_op(fn) or fn in overridable, f"stale NOT_GRAPH_OPS entry {fn}"
        rule = lookup(fn)
        assert rule.kind is not Kind.GRAPH_OP, fn
        if fn not in SPECIAL:
            assert rule.kind is Kind.BREAK and reason in rule.reason, fn


def test_no_torch_callable_is_routed_by_an_allow_list():
    """The only GRAPH_OP table is torch.overrides' own list minus NOT_GRAPH_OPS: a hand-added
    op (a factory list, a name set) fails here; it must come from the rule instead."""
    assert GRAPH_OPS == frozenset(_overridable() - set(torch_op_rule.NOT_GRAPH_OPS))
    for fn, rule in RULES.items():
        if rule.kind is Kind.GRAPH_OP:
            assert fn in GRAPH_OPS, f"{fn} is a table GRAPH_OP not listed by torch.overrides"
    # ... and the modules that decide keep no other collection of torch callables.
    allowed = {"NOT_GRAPH_OPS", "SPECIAL", "GRAPH_OPS", "RULES", "_DERIVED", "AUTOCAST_SPECIAL",
               "MODULE_HOOK_SPECIAL", "OP_TYPES", "OP_CLASSES", "DISPATCHER_OP_TYPES", "CUSTOM_OP_TYPES", "RULE_TYPES"}
    overridable = _overridable()
    for module in (torch_functions, torch_op_rule, trace_rules):
        for name, value in vars(module).items():
            if name in allowed or not isinstance(value, (tuple, list, set, frozenset, dict)):
                continue
            items = list(value) + (list(value.values()) if isinstance(value, dict) else [])
            named = [v for v in items if _hashable(v) and (v in overridable or torch_op_rule.is_torch_op(v))]
            assert not named, f"{module.__name__}.{name} names torch ops {named[:5]}: route them by the rule"


def _hashable(v) -> bool:
    try:
        hash(v)
    except TypeError:
        return False
    return True


def test_the_memo_holds_only_namespace_members_and_not_graph_ops():
    x = torch.randn(2)
    lookup(x.add)  # a transient bound method: never memoized
    lookup([].append)
    for fn in trace_rules._DERIVED:
        assert torch_op_rule.is_namespace_op(fn) or fn in torch_op_rule.NOT_GRAPH_OPS, fn


# ---- calls of ops no table names -------------------------------------------------------------

_RULE_ONLY_CALLS = {
    "nn_elu": lambda x: torch._C._nn.elu(x, 0.5),
    "nn_hardtanh": lambda x: torch._C._nn.hardtanh(x, -0.5, 0.5),
    "nn_silu": lambda x: torch._C._nn.silu(x),
    "nn_glu": lambda x: torch._C._nn.glu(x, -1),
    "nn_mse_loss": lambda x: torch._C._nn.mse_loss(x, x.flip(0)),
    "softmax_private": lambda x: torch._softmax(x, -1, False) + torch._log_softmax(x, 0, False),
    "cdist": lambda x: torch.cdist(x, x),
    "atleast_3d": lambda x: torch.atleast_3d(x).sum(-1),
    "block_diag": lambda x: torch.block_diag(x, x[:1]),
    "fftfreq": lambda x: x.sum() * torch._C._fft.fft_fftfreq(4),
    "aten_overload": lambda x: torch.ops.aten.gelu.default(x) + torch.ops.aten.gelu(x, approximate="tanh"),
}


@pytest.mark.parametrize("name", list(_RULE_ONLY_CALLS))
def test_ops_only_the_rule_knows_are_traced(name):
    fn = _RULE_ONLY_CALLS[name]
    check(fn, torch.randn(4, 6, requires_grad=True), graphs=1, fullgraph=True)


def test_not_graph_op_breaks_with_its_reason():
    def fn(x):
        y = x + 1
        torch._C._VariableFunctions._print("hello")
        return y * 2

    check(fn, torch.randn(3), graphs=2)
    reasons = [b.reason for b in bytegraph.explain(fn)(torch.randn(3)).break_reasons]
    assert any("torch._print" in r and "I/O" in r for r in reasons), reasons


def test_constant_call_is_folded_not_recorded():
    """A torch op of constants with no tensor in its result adds no node."""
    from helpers import compile_counted

    def fn(x):
        device, dtype, non_blocking, fmt = torch._C._nn._parse_to(torch.float64)
        return x.to(dtype), torch.result_type(1, 2.0), non_blocking

    check(fn, torch.randn(3), graphs=1, fullgraph=True)
    compiled, counter = compile_counted(fn)
    compiled(torch.randn(3))
    assert torch._C._nn._parse_to not in counter.ops() and torch.result_type not in counter.ops()


def test_op_without_meta_kernel_is_a_break_naming_it():
    lib = torch.library.Library("bg_rule_test", "DEF")
    lib.define("eager_only(Tensor x) -> Tensor")
    lib.impl("eager_only", lambda x: x * 3, "CPU")

    def fn(x):
        return torch.ops.bg_rule_test.eager_only.default(x + 1) - 1

    check(fn, torch.randn(3), graphs=2)
    reasons = [b.reason for b in bytegraph.explain(fn)(torch.randn(3)).break_reasons]
    assert any("bg_rule_test.eager_only" in r and "fake" in r for r in reasons), reasons


# A Python function of torch (torch.overrides lists it: one graph op when its arguments are
# tensors and constants) given an argument no node can take is traced as Python: its body calls it.
def _triplet_with_module(a, p, n):
    return F.triplet_margin_with_distance_loss(a, p, n, distance_function=torch.nn.PairwiseDistance())


def _triplet_with_function(a, p, n):
    return F.triplet_margin_with_distance_loss(a, p, n, distance_function=lambda x, y: (x - y).abs().sum(-1),
                                               margin=0.5, swap=True)


_TRIPLET = torch.nn.TripletMarginWithDistanceLoss(distance_function=torch.nn.PairwiseDistance())


def _triplet_module(a, p, n):
    return _TRIPLET(a, p, n)  # the module's forward passes its self.distance_function


@pytest.mark.parametrize("fn", [_triplet_with_module, _triplet_with_function, _triplet_module],
                         ids=["module", "lambda", "nn-module"])
def test_python_torch_function_given_a_callable_is_inlined(fn):
    args = (torch.randn(3, 5), torch.randn(3, 5), torch.randn(3, 5))
    result = check(fn, *args, fullgraph=True, graphs=1)
    targets = [getattr(t, "__name__", str(t)) for t in result.counter.ops()]
    assert "triplet_margin_with_distance_loss" not in targets, targets


def test_python_torch_function_of_tensors_and_constants_stays_one_op():
    result = check(lambda a, p, n: F.triplet_margin_with_distance_loss(a, p, n, margin=0.5),
                   torch.randn(3, 5), torch.randn(3, 5), torch.randn(3, 5), fullgraph=True, graphs=1)
    assert F.triplet_margin_with_distance_loss in result.counter.ops(), result.counter.ops()
