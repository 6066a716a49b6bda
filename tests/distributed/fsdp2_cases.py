"""FSDP2 training run on every rank of a real process group by `rank_runner.run_on_ranks`
(the children import this module): a 4-block transformer-ish model (embedding, attention and
MLP blocks with LayerNorm, head) with `fully_shard` on each block and on the root, trained
5 AdamW steps eagerly, with the whole model compiled (backends eager and aot_eager; and with
bfloat16 parameters, against eager with the same policy) and with each block compiled; what each
run gave (losses, full weights, graphs, breaks) reported back to `test_fsdp2.py`."""
from __future__ import annotations

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

import bytegraph

VOCAB, DIM, HEADS, STEPS = 32, 16, 2, 5


class Attention(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln, self.qkv, self.out = nn.LayerNorm(DIM), nn.Linear(DIM, 3 * DIM), nn.Linear(DIM, DIM)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = (z.view(b, t, HEADS, d // HEADS).transpose(1, 2) for z in self.qkv(self.ln(x)).chunk(3, dim=-1))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return x + self.out(y.transpose(1, 2).reshape(b, t, d))


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln, self.up, self.down = nn.LayerNorm(DIM), nn.Linear(DIM, 4 * DIM), nn.Linear(4 * DIM, DIM)

    def forward(self, x):
        return x + self.down(F.gelu(self.up(self.ln(x))))


class Transformer(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList([Attention(), MLP(), Attention(), MLP()])
        self.ln, self.head = nn.LayerNorm(DIM), nn.Linear(DIM, VOCAB)

    def forward(self, tokens):
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


def _sharded_model(compile_blocks_first: bool = False, **options) -> Transformer:
    torch.manual_seed(0)
    model = Transformer()
    if compile_blocks_first:  # as torchtitan orders it: compiled blocks, then fully_shard
        for i, block in enumerate(model.blocks):
            model.blocks[i] = bytegraph.compile(block)
    for block in model.blocks:
        fully_shard(block, **options)
    fully_shard(model, **options)
    return model


def _bf16_params() -> dict:
    """Mixed precision: the pre-forward hook casts the parameters and the float inputs to bfloat16."""
    return dict(mp_policy=MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32))


def _train(model: Transformer, call, rank: int) -> dict:
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    data = torch.Generator().manual_seed(1 + rank)  # each rank its own batch, as data parallelism has
    losses = []
    for _ in range(STEPS):
        tokens = torch.randint(0, VOCAB, (2, 8), generator=data)
        loss = F.cross_entropy(call(tokens).flatten(0, 1), tokens.roll(-1, 1).flatten())
        loss.backward()
        opt.step()
        opt.zero_grad()
        losses.append(loss.item())
    # plain lists: a tensor sent back through the result queue outlives its rank's process badly
    return dict(losses=losses, weights=[p.full_tensor().detach().flatten().tolist() for p in model.parameters()])


def _compiled_run(build_call, rank: int) -> dict:
    bytegraph.reset()
    bytegraph.counters.clear()
    model, call = build_call()
    report = _train(model, call, rank)
    report.update(graphs=bytegraph.counters["stats"]["unique_graphs"],
                  breaks=dict(bytegraph.counters["graph_break"]))
    return report


def _whole_model(backend="eager"):
    model = _sharded_model()
    return model, bytegraph.compile(model, backend=backend)


def _whole_model_aot_eager():  # the graphs under AOT autograd: FSDP2 frees and refills the saved parameters
    return _whole_model("aot_eager")


def _whole_model_bf16_params():
    model = _sharded_model(**_bf16_params())
    return model, bytegraph.compile(model)


def _each_block():
    model = _sharded_model()
    for i, block in enumerate(model.blocks):
        model.blocks[i] = bytegraph.compile(block)
    return model, model


def _each_block_before_fully_shard():
    model = _sharded_model(compile_blocks_first=True)
    return model, model


def run_fsdp2(rank: int, world: int) -> dict:
    """Eager FSDP2, then the compiled runs (each from the same initial weights); a run that
    raises is reported as its traceback."""
    import traceback

    model = _sharded_model()
    report = {"eager": _train(model, model, rank)}
    model = _sharded_model(**_bf16_params())
    report["eager_bf16_params"] = _train(model, model, rank)
    for name, build in (("whole_model", _whole_model), ("whole_model_aot_eager", _whole_model_aot_eager),
                        ("whole_model_bf16_params", _whole_model_bf16_params), ("each_block", _each_block),
                        ("each_block_before_fully_shard", _each_block_before_fully_shard)):
        try:
            report[name] = _compiled_run(build, rank)
        except Exception:  # the test fails with it (or xfails, for a known gap)
            report[name] = traceback.format_exc()
    return report


def torch_compile_graphs(rank: int, world: int) -> dict:
    """The reference's graph counts (run by hand, not in CI): torch.compile's frames with a graph."""
    from torch._dynamo.testing import CompileCounter
    import torch._dynamo

    counts = {}
    for name in ("whole_model", "each_block"):
        torch._dynamo.reset()
        counter = CompileCounter()
        model = _sharded_model()
        if name == "whole_model":
            call = torch.compile(model, backend=counter)
        else:
            for block in model.blocks:
                block.compile(backend=counter)
            call = model
        _train(model, call, rank)
        counts[name] = counter.frame_count
    return counts
