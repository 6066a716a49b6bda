"""A captured FX graph as plain data and back, for the capture cache (Note [Capture cache]).

`dump(gm, recipes)` lists the graph's nodes (op, name, target, args, kwargs, stack trace) with
node references by name, constants by value (tensors as tensors) and callables as recipes;
`load(data)` rebuilds the very graph, node by node, as a `GraphModule` of an empty module,
as `OutputGraph.graph_module` makes it, and `with_examples` gives its nodes example values
again (fake tensors) for the backends that read them. Rebuilding instead of re-tracing its code keeps the
generated code and the module's state exactly the capture's, which is what torch's AOT
autograd and FX graph caches key on (`inductor`: a warm start then finds their entries).
Graphs holding submodules (higher-order ops' bodies) or attributes are not stored.
"""
from __future__ import annotations

import torch
import torch.fx
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.fx.experimental.symbolic_shapes import ShapeEnv
from torch.fx.passes.fake_tensor_prop import FakeTensorProp

from ..graph.backends import LIVES_ACROSS_CALLS
from .recipes import NotCacheable, Recipes, RecipeMismatch, resolve

_VALUES = (type(None), bool, int, float, complex, str, torch.dtype, torch.device, torch.layout,
           torch.memory_format, type(Ellipsis))


def dump(gm: torch.fx.GraphModule, recipes: Recipes) -> list:
    if dict(gm.named_children()) or dict(gm.named_parameters()) or dict(gm.named_buffers()):
        raise NotCacheable("the graph holds submodules or attributes (a higher-order op's body)")
    nodes = []
    for node in gm.graph.nodes:
        if node.type is not None:
            raise NotCacheable(f"graph node {node.name} has a type annotation")
        target = node.target if isinstance(node.target, str) else recipes.of(node.target)
        nodes.append((node.op, node.name, target, _dump_arg(node.args, recipes), _dump_arg(node.kwargs, recipes),
                      node.meta.get("stack_trace"), "example_value" in node.meta,
                      bool(node.meta.get(LIVES_ACROSS_CALLS))))
    return nodes


def _dump_arg(arg, recipes: Recipes):
    t = type(arg)
    if t is torch.fx.Node:
        return ("n", arg.name)
    if t in _VALUES:
        return ("v", arg)
    if t in (tuple, list, torch.Size):
        return ("t" if t is tuple else "l" if t is list else "S", [_dump_arg(a, recipes) for a in arg])
    if t is dict or t is torch.fx.immutable_collections.immutable_dict:
        if not all(type(k) is str for k in arg):
            raise NotCacheable("a graph argument is a dict with keys other than strings")
        return ("d", [(k, _dump_arg(v, recipes)) for k, v in arg.items()])
    if t is torch.fx.immutable_collections.immutable_list:
        return ("l", [_dump_arg(a, recipes) for a in arg])
    if t is slice:
        return ("s", [_dump_arg(a, recipes) for a in (arg.start, arg.stop, arg.step)])
    if t is torch.Tensor or t is torch.nn.Parameter:
        return ("T", arg.detach().clone() if t is torch.Tensor else torch.nn.Parameter(arg.detach().clone()))
    recipe, kind = recipes.of(arg)
    return ("r", recipe, kind)


def load(nodes: list) -> torch.fx.GraphModule:
    graph = torch.fx.Graph()
    env: dict = {}
    for op, name, target, args, kwargs, stack_trace, example, lasting in nodes:
        if not isinstance(target, str):
            target = resolve(*target)
        node = graph.create_node(op, target, _load_arg(args, env), _load_arg(kwargs, env), name=name)
        if node.name != name:
            raise RecipeMismatch(f"graph node {name} was renamed {node.name}")
        if stack_trace is not None:
            node.meta["stack_trace"] = stack_trace
        if example:
            node.meta["example_value"] = None  # `with_examples` computes it
        if lasting:
            node.meta[LIVES_ACROSS_CALLS] = True
        env[name] = node
    return torch.fx.GraphModule(torch.nn.Module(), graph)


def with_examples(gm: torch.fx.GraphModule, inputs: list) -> list:
    """Give the nodes of a loaded graph that had an example value (a fake tensor) one again,
    from `inputs` (the real inputs of its first call, as fakes of static sizes in a new fake
    mode with a ShapeEnv, which are returned): what torch's AOT autograd cache checks the
    graph's method calls by."""
    fake_mode = FakeTensorMode(shape_env=ShapeEnv())
    fakes = [fake_mode.from_tensor(x, static_shapes=True) if isinstance(x, torch.Tensor) else x for x in inputs]
    FakeTensorProp(gm, fake_mode).propagate_dont_convert_inputs(*fakes)
    for node in gm.graph.nodes:
        if "example_value" in node.meta:
            node.meta["example_value"] = node.meta.get("val")
    return fakes


def _load_arg(arg, env: dict):
    tag = arg[0]
    if tag == "n":
        return env[arg[1]]
    if tag in ("v", "T"):
        return arg[1]
    if tag == "t":
        return tuple(_load_arg(a, env) for a in arg[1])
    if tag == "l":
        return [_load_arg(a, env) for a in arg[1]]
    if tag == "S":
        return torch.Size(_load_arg(a, env) for a in arg[1])
    if tag == "d":
        return {k: _load_arg(v, env) for k, v in arg[1]}
    if tag == "s":
        return slice(*(_load_arg(a, env) for a in arg[1]))
    if tag == "r":
        return resolve(arg[1], arg[2])
    raise RecipeMismatch(f"unknown graph argument {tag!r}")
