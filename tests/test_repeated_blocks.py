"""Repeated blocks traced once (`config.reuse_repeated_blocks`, Note [Repeated blocks] in
vars/repeated_blocks.py): a later call of a module class calls the first call's recorded ops
(a body graph) only where a fresh trace would have recorded the same ones. Differential (eager
vs compiled, outputs and gradients), plus the graph with the switch on, every call of a body
inlined, equals the plain trace's op for op, and `counters["blocks"]["reused"]` says whether a
block's bytecode was traced again."""
import collections
import operator

import pytest
import torch
from torch import nn

import bytegraph
from bytegraph import config
from bytegraph.graph.output_graph import OutputGraph
from bytegraph.guards.guard import GuardKind
from tests.helpers import CompileCounter, check


@pytest.fixture(autouse=True)
def _reuse(monkeypatch):
    monkeypatch.setattr(config, "reuse_repeated_blocks", True)
    bytegraph.counters.clear()
    yield
    bytegraph.counters.clear()


def _reused() -> int:
    return bytegraph.counters["blocks"]["reused"]


class Block(nn.Module):
    """No submodules: every count is one of these."""

    def __init__(self, width=8, scale=1.0, layer_idx=0):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(width, width) / width)
        self.bias = nn.Parameter(torch.randn(width))
        self.scale = scale
        self.layer_idx = layer_idx  # never read by forward

    def forward(self, x, gate=None):
        y = torch.tanh(x @ self.weight + self.bias) * self.scale
        if gate is not None:
            y = y * gate
        return x + y


class Stack(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x):
        x = torch.tanh(x)  # a tensor read from outside is no argument a block replays with
        for block in self.blocks:
            x = block(x)
        return x


def _stack(n=4, **kw):
    torch.manual_seed(0)
    return Stack([Block(layer_idx=i, **kw) for i in range(n)])


def _run(model, x):
    return model(x)


def _graph_text(monkeypatch, fn, *args, reuse: bool) -> tuple:
    """The one graph `fn` compiles to, as `_inlined`, the number of calls of block bodies
    in it, and its guards (what each checks; the no-aliasing ones as sets of sources)."""
    config.reuse_repeated_blocks = reuse
    bytegraph.reset()
    counter = CompileCounter()
    finished = []
    finish_guards = OutputGraph.finish_guards

    def keep(output, *a, **k):
        finished.append(finish_guards(output, *a, **k))
        return finished[-1]

    monkeypatch.setattr(OutputGraph, "finish_guards", keep)
    bytegraph.compile(fn, backend=counter, fullgraph=True)(*args)
    monkeypatch.setattr(OutputGraph, "finish_guards", finish_guards)
    assert counter.frame_count == 1
    gm = counter.graphs[0]
    calls = sum(1 for n in gm.graph.nodes if n.op == "call_module")
    guards = collections.Counter(
        (g.kind, frozenset(s.describe() for s in g.expected)) if g.kind is GuardKind.NO_ALIASING
        else (g.kind, g.describe()) for g in finished[-1])
    return _inlined(gm), calls, guards


def _inlined(gm) -> tuple:
    """(inputs, ops, outputs) of a graph module with every call of a body inlined: the inputs'
    names and shapes in order, each op as (op, target, args, kwargs, shape) with a node
    argument spelled as the input's name or the number of the op that made it."""
    inputs, ops = [], []

    def shape(node):
        value = node.meta.get("example_value")
        return tuple(value.shape) if isinstance(value, torch.Tensor) else None

    def walk(module, spelled: dict):
        for node in module.graph.nodes:
            if node.op == "placeholder":
                if node not in spelled:  # the root graph's inputs
                    inputs.append((node.name, shape(node)))
                    spelled[node] = ("input", node.name)
            elif node.op == "output":
                return torch.fx.map_arg(node.args[0], spelled.__getitem__)
            elif node.op == "call_module":
                body = getattr(module, node.target)
                params = [n for n in body.graph.nodes if n.op == "placeholder"]
                assert len(params) == len(node.args)
                spelled[node] = walk(body, {p: spelled[a] if isinstance(a, torch.fx.Node) else a
                                            for p, a in zip(params, node.args)})
            elif node.op == "call_function" and node.target is operator.getitem \
                    and node.args[0].op == "call_module":
                spelled[node] = spelled[node.args[0]][node.args[1]]
            else:
                ops.append((node.op, str(node.target), str(torch.fx.map_arg(node.args, spelled.__getitem__)),
                            str(torch.fx.map_arg(node.kwargs, spelled.__getitem__)), shape(node)))
                spelled[node] = ("op", len(ops) - 1)
        raise AssertionError("a graph without output")

    outputs = walk(gm, {})
    return inputs, ops, str(outputs)


def _assert_same_graph(monkeypatch, fn, *args) -> None:
    plain, plain_calls, plain_guards = _graph_text(monkeypatch, fn, *args, reuse=False)
    bytegraph.counters.clear()
    graph, calls, guards = _graph_text(monkeypatch, fn, *args, reuse=True)
    assert _reused() > 0 and calls > 0 and plain_calls == 0
    assert graph == plain
    assert guards == plain_guards  # a replay guards exactly what a fresh trace of the block does


def test_identical_blocks_are_traced_once_and_replayed():
    model = _stack(4)
    check(_run, model, torch.randn(3, 8, requires_grad=True), graphs=1)
    assert _reused() == 3  # blocks 1-3: their bytecode was not traced
    assert bytegraph.counters["blocks"]["recorded"] == 1


def test_replayed_graph_and_guards_equal_the_plain_trace(monkeypatch):
    _assert_same_graph(monkeypatch, _run, _stack(5), torch.randn(3, 8, requires_grad=True))


def test_per_layer_attribute_not_read_still_reuses():
    model = _stack(3)
    assert [b.layer_idx for b in model.blocks] == [0, 1, 2]
    check(_run, model, torch.randn(2, 8, requires_grad=True), graphs=1)
    assert _reused() == 2


def test_different_attribute_read_is_traced_again():
    torch.manual_seed(0)
    model = Stack([Block(scale=1.0), Block(scale=1.0), Block(scale=2.0), Block(scale=2.0)])
    check(_run, model, torch.randn(2, 8, requires_grad=True), graphs=1)
    assert _reused() == 2  # block 1 replays block 0; block 2 differs and is recorded; block 3 replays it


class ReadsLayerIdx(Block):
    def forward(self, x):
        if self.layer_idx % 2:
            return x - torch.relu(x @ self.weight)
        return x + torch.relu(x @ self.weight)


def test_per_layer_attribute_that_is_read_is_traced_again():
    torch.manual_seed(0)
    model = Stack([ReadsLayerIdx(layer_idx=i) for i in range(3)])
    check(_run, model, torch.randn(2, 8, requires_grad=True), graphs=1)
    assert _reused() == 0  # the trace pinned layer_idx: each value is another trace


class ReadsFlag(Block):
    def __init__(self, flip):
        super().__init__()
        self.flip = flip

    def forward(self, x):
        if self.flip:
            return x - torch.relu(x @ self.weight)
        return x + torch.relu(x @ self.weight)


def test_alternating_blocks_replay_the_record_they_match():
    torch.manual_seed(0)
    model = Stack([ReadsFlag(flip=bool(i % 2)) for i in range(6)])
    check(_run, model, torch.randn(2, 8, requires_grad=True), graphs=1)
    assert _reused() == 4  # blocks 2 and 4 replay block 0, blocks 3 and 5 replay block 1


class Config:
    def __init__(self, scale):
        self.scale = scale


class UsesConfig(Block):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg

    def forward(self, x):
        return x * self.cfg.scale + x @ self.weight


class SharedConfigStack(Stack):
    def __init__(self, blocks, cfg):
        super().__init__(blocks)
        self.cfg = cfg

    def forward(self, x):
        x = torch.tanh(x) * self.cfg.scale  # the shared object is known before the blocks
        for block in self.blocks:
            x = block(x)
        return x


def test_shared_object_reached_by_every_block_reuses():
    torch.manual_seed(0)
    cfg = Config(0.5)
    model = SharedConfigStack([UsesConfig(cfg) for _ in range(3)], cfg)
    check(_run, model, torch.randn(2, 8, requires_grad=True), graphs=1)
    assert _reused() == 2


def test_shared_object_that_differs_is_traced_again():
    torch.manual_seed(0)
    cfg = Config(0.5)
    other = Config(0.5)  # equal values, another object: not what the recorded block read
    model = SharedConfigStack([UsesConfig(cfg), UsesConfig(other), UsesConfig(cfg)], cfg)
    check(_run, model, torch.randn(2, 8, requires_grad=True), graphs=1)
    assert _reused() == 1  # block 2 reaches the same object as block 0; block 1 does not


SCALE = 1.0


class ReadsGlobal(Block):
    def forward(self, x):
        return x * SCALE + x @ self.weight


class WritesGlobalBetween(Stack):
    def forward(self, x):
        global SCALE
        x = torch.tanh(x)
        for block in self.blocks:
            x = block(x)
            SCALE = SCALE + 1.0
        return x


def test_global_written_between_blocks_is_traced_again():
    torch.manual_seed(0)
    model = WritesGlobalBetween([ReadsGlobal() for _ in range(3)])

    def reset_scale():
        global SCALE
        SCALE = 1.0

    check(_run, model, torch.randn(2, 8, requires_grad=True), graphs=1, setup=reset_scale, state=lambda: SCALE)
    assert _reused() == 0


class WritesConfigBetween(SharedConfigStack):
    def forward(self, x):
        x = torch.tanh(x)
        for i, block in enumerate(self.blocks):
            self.cfg.scale = float(i + 1)
            x = block(x)
        return x


def test_object_written_between_blocks_is_traced_again():
    torch.manual_seed(0)
    cfg = Config(0.5)
    model = WritesConfigBetween([UsesConfig(cfg) for _ in range(3)], cfg)
    check(_run, model, torch.randn(2, 8, requires_grad=True), graphs=1, state=lambda: cfg.scale)
    assert _reused() == 0


class ReturnsView(Block):
    def forward(self, x):
        self.weight  # read, so the call has a graph input of its own
        return x.view(-1)[: x.numel()].view(x.shape)


def test_output_aliasing_the_input_is_traced_again():
    torch.manual_seed(0)
    model = Stack([ReturnsView() for _ in range(3)])
    check(_run, model, torch.randn(2, 8, requires_grad=True), graphs=1)
    assert _reused() == 0


class TwoInputs(nn.Module):
    def __init__(self, blocks):
        super().__init__()
        self.blocks = nn.ModuleList(blocks)

    def forward(self, x):
        x = torch.tanh(x)
        a = self.blocks[0](x)
        b = self.blocks[1](x.double())   # another dtype
        c = self.blocks[2](x[:1])        # another shape
        d = self.blocks[3](x, gate=x)    # another structure of inputs
        return a, b, c, d


def test_different_input_metadata_or_structure_is_traced_again():
    torch.manual_seed(0)
    blocks = [Block() for _ in range(4)]
    blocks[1].double()
    check(_run, TwoInputs(blocks), torch.randn(2, 8, requires_grad=True), graphs=1)
    assert _reused() == 0


def test_a_hook_on_one_block_is_traced_again():
    model = _stack(4)
    model.blocks[2].register_forward_hook(lambda m, args, out: out * 2)
    check(_run, model, torch.randn(2, 8, requires_grad=True), graphs=1)
    assert _reused() == 2  # block 1 and block 3 replay block 0; block 2 runs its hook


class Breaks(Block):
    def forward(self, x):
        y = x @ self.weight
        bytegraph.graph_break()
        return y + 1


def test_a_graph_break_inside_is_never_reused():
    torch.manual_seed(0)
    model = Stack([Breaks() for _ in range(3)])  # the resumed frames trace the later blocks
    check(_run, model, torch.randn(2, 8, requires_grad=True))
    assert _reused() == 0


class ReturnsItsScale(Block):
    def forward(self, x):
        return x @ self.weight, self.scale


class UsesScales(Stack):
    def forward(self, x):
        x = torch.tanh(x)
        for block in self.blocks:
            x, scale = block(x)
            x = x * scale
        return x


def test_a_constant_read_from_the_module_is_the_new_modules():
    torch.manual_seed(0)
    model = UsesScales([ReturnsItsScale(scale=0.5) for _ in range(3)])
    check(_run, model, torch.randn(2, 8, requires_grad=True), graphs=1)
    assert _reused() == 2


class NoParameters(nn.Module):
    def forward(self, x):
        return torch.relu(x) * 2


def test_blocks_without_parameters_reuse():
    check(_run, Stack([NoParameters() for _ in range(3)]), torch.randn(2, 8, requires_grad=True), graphs=1)
    assert _reused() == 2


def test_tied_parameters_are_traced_again():
    torch.manual_seed(0)
    model = _stack(3)
    model.blocks[1].weight = model.blocks[0].weight  # a replay would make it a second placeholder
    check(_run, model, torch.randn(2, 8, requires_grad=True), graphs=1)
    assert _reused() == 1  # block 1 is traced (and recorded); block 2 replays block 0, not block 1


def test_symbolic_sizes_are_traced_normally():
    model = _stack(3)
    x = torch.randn(4, 8, requires_grad=True)
    bytegraph.mark_dynamic(x, 0)
    check(_run, model, x, graphs=1)
    assert _reused() == 0


def test_switch_off_never_reuses():
    config.reuse_repeated_blocks = False
    check(_run, _stack(3), torch.randn(2, 8, requires_grad=True), graphs=1)
    assert _reused() == 0


class TwoLinears(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x):
        return torch.relu(self.b(torch.relu(self.a(x)))) + x


def test_each_replayed_block_is_one_call_of_one_body():
    """Blocks 1-3 call the body recorded from block 0; the `Linear`s inside block 0 (the second
    a replay of the first) are inlined into that body, so it calls no other body."""
    torch.manual_seed(0)
    counter = CompileCounter()
    check(_run, Stack([TwoLinears() for _ in range(4)]), torch.randn(2, 8, requires_grad=True), backend=counter,
          graphs=1)
    gm = counter.graphs[0]
    calls = [n for n in gm.graph.nodes if n.op == "call_module"]
    assert len(calls) == 4  # block 0's second Linear, blocks 1, 2 and 3
    assert len({n.target for n in calls[1:]}) == 1 and calls[0].target != calls[1].target
    body = getattr(gm, calls[1].target)
    assert not [n for n in body.graph.nodes if n.op == "call_module"]
    assert sum(1 for n in body.graph.nodes if n.op == "placeholder") == 5  # 4 parameters and x


@pytest.mark.parametrize("backend", ["aot_eager", pytest.param("inductor", marks=pytest.mark.slow)])
def test_bodies_under_aot_autograd(backend):
    torch.manual_seed(0)
    check(_run, Stack([TwoLinears() for _ in range(3)]), torch.randn(2, 8, requires_grad=True), backend=backend,
          rtol=1e-5, atol=1e-5)
    assert _reused() >= 2


# ---- the tiny Llama of the issue -------------------------------------------------------------

transformers = pytest.importorskip("transformers")


def _llama(layers: int):
    torch.manual_seed(0)
    cfg = transformers.LlamaConfig(hidden_size=64, intermediate_size=128, num_attention_heads=4,
                                   num_key_value_heads=4, vocab_size=99, num_hidden_layers=layers, use_cache=False)
    return transformers.LlamaModel(cfg).eval()


def _llama_run(model, ids):
    return model(ids).last_hidden_state


def test_tiny_llama_24_layers_graph_and_guards_equal_the_plain_trace(monkeypatch):
    _assert_same_graph(monkeypatch, _llama_run, _llama(24), torch.randint(0, 99, (2, 8)))
    assert _reused() >= 23  # every decoder layer after the first


def test_tiny_llama_24_layers_outputs_and_gradients_equal_eager():
    check(_llama_run, _llama(24), torch.randint(0, 99, (2, 8)), graphs=1)
    assert _reused() >= 23


def test_tiny_llama_under_aot_autograd_outputs_and_gradients_equal_eager():
    check(_llama_run, _llama(4), torch.randint(0, 99, (2, 8)), backend="aot_eager", rtol=1e-5, atol=1e-5)
    assert _reused() >= 3


class InPlace(Block):
    def forward(self, x):
        y = x @ self.weight
        y.mul_(2)  # on its own tensor: a fresh trace would record it the same, but no replay copies writes
        return y + x


def test_an_in_place_op_inside_is_traced_again():
    torch.manual_seed(0)
    check(_run, Stack([InPlace() for _ in range(3)]), torch.randn(2, 8, requires_grad=True), graphs=1)
    assert _reused() == 0


class CountsCalls(Block):
    def forward(self, x):
        self.calls = getattr(self, "calls", 0) + 1  # a write to the caller's world
        return x @ self.weight


def test_a_side_effect_inside_is_traced_again():
    torch.manual_seed(0)
    model = Stack([CountsCalls() for _ in range(3)])
    check(_run, model, torch.randn(2, 8, requires_grad=True), graphs=1,
          state=lambda: [getattr(b, "calls", None) for b in model.blocks])
    assert _reused() == 0


LOG = []


class AppendsToGlobalList(Block):
    def forward(self, x):
        LOG.append(len(LOG))
        return x @ self.weight


def test_a_mutated_global_list_is_traced_again():
    torch.manual_seed(0)
    model = Stack([AppendsToGlobalList() for _ in range(3)])
    check(_run, model, torch.randn(2, 8, requires_grad=True), graphs=1, setup=LOG.clear, state=lambda: list(LOG))
    assert _reused() == 0


class Checkpointed(Stack):
    def forward(self, x):
        x = torch.tanh(x)
        for block in self.blocks:
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=False)
        return x


def test_blocks_inside_a_higher_order_op_body_are_traced_normally():
    torch.manual_seed(0)
    check(_run, Checkpointed([Block() for _ in range(3)]), torch.randn(2, 8, requires_grad=True))
    assert _reused() == 0


def test_a_second_call_of_the_same_module_is_traced_again():
    torch.manual_seed(0)
    block = Block()
    model = Stack([block, block, block])  # one module three times: it was read by its first call
    check(_run, model, torch.randn(2, 8, requires_grad=True), graphs=1)
    assert _reused() == 0


def test_an_object_first_reached_through_the_block_with_other_values_is_traced_again():
    torch.manual_seed(0)
    model = Stack([UsesConfig(Config(0.5)), UsesConfig(Config(0.5)), UsesConfig(Config(2.0))])
    check(_run, model, torch.randn(2, 8, requires_grad=True), graphs=1)
    assert _reused() == 1  # block 1's config equals block 0's (guarded by value); block 2's does not


class Dropout(Block):
    def __init__(self):
        super().__init__()
        self.drop = nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(x @ self.weight) + x


def test_random_ops_are_replayed_in_order():
    torch.manual_seed(0)
    model = Stack([Dropout() for _ in range(3)]).train()
    check(_run, model, torch.randn(2, 8, requires_grad=True), graphs=1)
    assert _reused() >= 2


class NoGradMiddle(Stack):
    def forward(self, x):
        x = torch.tanh(x)
        x = self.blocks[0](x)
        with torch.no_grad():
            y = self.blocks[1](x)
        return self.blocks[2](x) + y


def test_another_grad_mode_is_traced_again():
    torch.manual_seed(0)
    check(_run, NoGradMiddle([Block() for _ in range(3)]), torch.randn(2, 8, requires_grad=True), graphs=1)
    assert _reused() == 1  # block 2 replays block 0; block 1 runs without grad
