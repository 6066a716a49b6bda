"""`Module.to()` / `.float()` / `._apply()` called inside the compiled code: `Module.to`
parses its arguments with `torch._C._nn._parse_to` and `_apply` asks
`torch._has_compatible_shallow_copy_type` (graph ops by the torch-op rule,
vars/torch_op_rule.py, folded when their arguments are constants), then sets
`param.data = fn(param)`. A conversion that returns the parameter itself (its own dtype and
device) sets `param.data = param`, a no-op: one graph, as torch.compile. A conversion to
another dtype rewrites the parameter's data in place: the result is eager's, the graph
breaks there (an xfail says why)."""
import pytest
import torch
import torch._dynamo

import bytegraph
from helpers import check


class _Inner(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(3, 4)
        self.register_buffer("scale", torch.ones(4))

    def forward(self, x):
        return self.lin(x) * self.scale


class _Converts(torch.nn.Module):
    def __init__(self, convert):
        super().__init__()
        self.inner = _Inner()
        self.convert = convert

    def forward(self, x):
        self.convert(self.inner, x)
        return self.inner(x.to(self.inner.lin.weight.dtype)).relu()


_SAME = {
    "to_own_dtype": lambda m, x: m.to(x.dtype),
    "to_dtype_keyword": lambda m, x: m.to(dtype=torch.float32),
    "to_device_string": lambda m, x: m.to("cpu"),
    "to_device_and_dtype": lambda m, x: m.to(torch.device("cpu"), torch.float32),
    "to_tensor": lambda m, x: m.to(x),
    "float": lambda m, x: m.float(),
    "cpu": lambda m, x: m.cpu(),
    "apply_identity": lambda m, x: m._apply(lambda t: t),
}


def _torch_compile_graphs(model, x) -> int:
    torch._dynamo.reset()
    report = torch._dynamo.explain(model)(x)
    return report.graph_count + report.graph_break_count


@pytest.mark.parametrize("name", list(_SAME))
def test_conversion_to_own_dtype_and_device_in_one_graph(name):
    torch.manual_seed(0)
    model = _Converts(_SAME[name])
    x = torch.randn(2, 3, requires_grad=True)
    assert _torch_compile_graphs(model, x) == 1  # the reference keeps one graph
    check(lambda m, x: m(x), model, x, graphs=1, fullgraph=True)


def test_conversion_to_another_dtype_is_correct():
    torch.manual_seed(0)
    model = _Converts(lambda m, x: m.to(torch.float64))
    check(lambda m, x: (m(x), m.inner.lin.weight.dtype, m.inner.scale.dtype), model, torch.randn(2, 3))


def test_half_then_float_back_is_correct():
    torch.manual_seed(0)
    model = _Converts(lambda m, x: m.double().float())
    check(lambda m, x: m(x), model, torch.randn(2, 3))


@pytest.mark.xfail(strict=True, reason="`param.data = converted` to another dtype rewrites a graph input's "
                                       "metadata in place (the Parameter object must stay the same, as in eager); "
                                       "bytegraph breaks there. torch.compile keeps one graph only because its "
                                       "`_has_compatible_shallow_copy_type` polyfill answers False for a Parameter "
                                       "and a Tensor and replaces the Parameter object, unlike eager")
def test_conversion_to_another_dtype_in_one_graph():
    torch.manual_seed(0)
    model = _Converts(lambda m, x: m.to(torch.float64))
    check(lambda m, x: m(x), model, torch.randn(2, 3), graphs=1, fullgraph=True)


def test_slot_dict_writes_are_seen_by_attribute_reads():
    """`_apply` writes `self._buffers[key] = fn(buf)`: a later `self.scale` reads that value
    (the slot dict's tracker), also after a graph break inside the loop."""
    def fn(m, x):
        for key, buf in m._buffers.items():
            m._buffers[key] = buf * x
        return m.scale, m.scale.dtype

    def with_break(m, x):
        for key, buf in m._buffers.items():
            bytegraph.graph_break()
            m._buffers[key] = buf.double() + x
        return m.scale * 2, m.scale.dtype

    check(fn, _Inner(), torch.randn(4), graphs=1, fullgraph=True)
    check(with_break, _Inner(), torch.randn(4))
