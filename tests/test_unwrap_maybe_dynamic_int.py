"""torch's compiled autograd passes a size it wants dynamic as an empty tensor `torch.empty(0, n)`
and its backward graphs read it back with `torch._dynamo.external_utils.unwrap_maybe_dynamic_int`
(an int passes through). bytegraph traces that helper (a size read) instead of breaking on it as on
the rest of torch._dynamo; the tests import it as torch's graphs do."""
import torch

from torch._dynamo.external_utils import unwrap_maybe_dynamic_int

import bytegraph
from bytegraph.vars import trace_rules
from helpers import check, check_sequence


def reshape_by(x, size):
    n = unwrap_maybe_dynamic_int(size)
    return x.reshape(n, -1) * 2, n


def test_rule_inlines_it_by_name():
    rule = trace_rules.lookup(unwrap_maybe_dynamic_int)
    assert rule.kind is trace_rules.Kind.INLINE and "compiled autograd" in rule.reason


def test_tensor_carried_size_in_one_graph():
    check(reshape_by, torch.randn(6), torch.empty(0, 3), fullgraph=True, graphs=1)


def test_plain_int_passes_through():
    check(reshape_by, torch.randn(6), 2, fullgraph=True, graphs=1)


def test_other_size_recompiles_then_stays_dynamic():
    result = check_sequence(reshape_by, [(torch.randn(6), torch.empty(0, 3)), (torch.randn(8), torch.empty(0, 4)),
                                         (torch.randn(10), torch.empty(0, 5))])
    assert result.counter.frame_count == 2


def test_other_torch_dynamo_helpers_still_break():
    from torch._dynamo.external_utils import is_compiling

    def f(x):
        return x + 1 if is_compiling() else x - 1

    explained = bytegraph.explain(f)(torch.randn(2))
    assert explained.graph_break_count == 1
    assert "is_compiling" in str(explained.break_reasons[0])
