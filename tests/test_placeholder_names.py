"""Graph input names: a captured graph's placeholders are named as torch.compile names them
for the same source (Note [Graph input names] in bytegraph/graph/output_graph.py): the
target is the source's torch.compile spelling made an identifier (`L['x']` -> `L_x_`), the
node FX's snake case of it (`l_x_`). torch.compile is the reference: both capture the same
function with a backend that records the placeholders, and both graphs compute the same."""
from __future__ import annotations

import torch
import torch._dynamo
import torch.nn as nn

import bytegraph

W = torch.randn(3)


class _Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(3, 3)
        self.layers = nn.ModuleList([nn.Linear(3, 3)])
        self.register_buffer("buf", torch.ones(3))
        self.scale = torch.full((3,), 2.0)  # a plain tensor attribute: neither parameter nor buffer

    def forward(self, x):
        return self.layers[0](self.linear(x)) * self.scale + self.buf


class _Varargs(nn.Module):
    def __init__(me):  # torch.compile names the module after forward's own first parameter
        super().__init__()
        me.linear = nn.Linear(3, 3)

    def forward(me, x, *rest, scale, **extra):
        return me.linear(x) * scale + rest[0] + extra["bias"]


class _Holder:
    def __init__(self):
        self.w = torch.randn(3)


def _closure():
    y = torch.randn(3)

    def add_captured(x):
        return x + y

    return add_captured


def local_tensor(x):
    return x.sin()


def global_tensor(x):
    return x + W


def list_items(xs):
    return xs[0] * xs[1]


def dict_item(x, d):
    return x + d["a"]


def object_attribute(x, o):
    return x + o.w


def module_parameters(x, m):
    return m(x)


def _default(x, w=torch.ones(3)):
    return x * w


def default_argument(x):
    return _default(x)


def inlined_closure(x, g):
    return g(x)


def same_spelling(a_b, a):  # `L['a_b']` and `L['a']['b']` are both `L_a_b_`
    return a_b + a["b"]


def _placeholders(compile_fn, fn, args, kwargs) -> tuple[set, object]:
    """The (target, node name) pairs of the placeholders of the one graph `compile_fn`
    captures of `fn(*args, **kwargs)`, and the compiled call's result."""
    seen = []

    def backend(gm, example_inputs):
        seen.append({(n.target, n.name) for n in gm.graph.nodes if n.op == "placeholder"})
        return gm.forward

    result = compile_fn(fn, backend=backend, fullgraph=True)(*args, **kwargs)
    assert len(seen) == 1, seen
    return seen[0], result


def _same_as_torch_compile(fn, *args, **kwargs):
    torch._dynamo.reset()
    expected, reference = _placeholders(torch.compile, fn, args, kwargs)
    got, result = _placeholders(bytegraph.compile, fn, args, kwargs)
    assert got == expected
    torch.testing.assert_close(result, reference)
    return got


def test_a_local_tensor():
    assert _same_as_torch_compile(local_tensor, torch.randn(3)) == {("L_x_", "l_x_")}


def test_a_global_tensor():
    assert ("G_W_", "g_w_") in _same_as_torch_compile(global_tensor, torch.randn(3))


def test_list_items():
    names = _same_as_torch_compile(list_items, [torch.randn(3), torch.randn(3)])
    assert names == {("L_xs_0_", "l_xs_0_"), ("L_xs_1_", "l_xs_1_")}


def test_a_dict_item():
    _same_as_torch_compile(dict_item, torch.randn(3), {"a": torch.randn(3)})


def test_an_object_attribute():
    assert ("L_o_w", "l_o_w") in _same_as_torch_compile(object_attribute, torch.randn(3), _Holder())


def test_a_closure_cell_of_the_compiled_function():
    assert ("L_y_", "l_y_") in _same_as_torch_compile(_closure(), torch.randn(3))


def test_a_closure_cell_of_an_inlined_function():
    names = _same_as_torch_compile(inlined_closure, torch.randn(3), _closure())
    assert ("L_g_closure_0_cell_contents", "l_g_closure_0_cell_contents") in names


def test_a_default_argument_of_an_inlined_function():
    assert ("G_default_defaults_0_", "g_default_defaults_0_") in _same_as_torch_compile(default_argument,
                                                                                         torch.randn(3))


def test_parameters_buffers_and_attributes_of_a_module():
    torch.manual_seed(0)
    names = _same_as_torch_compile(module_parameters, torch.randn(2, 3), _Net())
    assert ("L_m_modules_layers_modules_0_parameters_weight_", "l_m_modules_layers_modules_0_parameters_weight_") \
        in names
    assert ("L_m_buffers_buf_", "l_m_buffers_buf_") in names and ("L_m_scale", "l_m_scale") in names


def test_inputs_spelled_alike_get_distinct_targets():
    names = _same_as_torch_compile(same_spelling, torch.randn(3), {"b": torch.randn(3)})
    assert {target for target, _ in names} == {"L_a_b_", "L_a_b__0"}


def test_a_compiled_module_names_its_arguments_as_its_forward_does():
    torch.manual_seed(0)
    names = _same_as_torch_compile(_Net(), torch.randn(2, 3))
    assert ("L_x_", "l_x_") in names
    assert ("L_self_modules_linear_parameters_weight_", "l_self_modules_linear_parameters_weight_") in names
    names = _same_as_torch_compile(_Varargs(), torch.randn(2, 3), torch.randn(3), scale=torch.randn(3),
                                   bias=torch.randn(3))
    assert {target for target, _ in names} == {"L_x_", "L_rest_0_", "L_scale_", "L_extra_bias_",
                                              "L_me_modules_linear_parameters_weight_",
                                              "L_me_modules_linear_parameters_bias_"}


def test_a_compiled_torch_module_is_named_as_torch_compile_names_it():
    # torch.compile starts no frame in torch's files: it traces its wrapper `fn(*args, **kwargs)`
    torch.manual_seed(0)
    names = _same_as_torch_compile(nn.Sequential(nn.Linear(3, 3), nn.ReLU()), torch.randn(2, 3))
    assert ("L_args_0_", "l_args_0_") in names and ("L_fn_modules_0_parameters_bias_",
                                                     "l_fn_modules_0_parameters_bias_") in names
    names = _same_as_torch_compile(nn.Sequential(nn.Linear(3, 3)), input=torch.randn(2, 3))
    assert ("L_kwargs_input_", "l_kwargs_input_") in names
