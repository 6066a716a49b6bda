"""A small model with a graph break and a recompile, to see bytegraph's compile report.

    BYTEGRAPH_REPORT=out .venv/bin/python examples/report_demo.py   # writes out/index.html
    .venv/bin/python -m bytegraph.report out                        # renders it again and opens it

(or `with bytegraph.report("out"): ...` around the calls). The model's forward prints the
sequence length (a graph break: `print` runs eagerly between two graphs) and counts its calls
(an attribute write the compiled code replays); a batch with a new sequence length recompiles
once, with that size symbolic. The loss compiles as one graph.
"""
import torch

import bytegraph


class Block(torch.nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.norm = torch.nn.LayerNorm(width)
        self.up = torch.nn.Linear(width, 4 * width)
        self.down = torch.nn.Linear(4 * width, width)

    def forward(self, x):
        return x + self.down(torch.nn.functional.gelu(self.up(self.norm(x))))


class TinyModel(torch.nn.Module):
    def __init__(self, vocab: int = 100, width: int = 32, layers: int = 2):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab, width)
        self.blocks = torch.nn.ModuleList(Block(width) for _ in range(layers))
        self.head = torch.nn.Linear(width, vocab)
        self.calls = 0

    def forward(self, tokens):
        self.calls += 1
        x = self.embed(tokens)
        for block in self.blocks:
            x = block(x)
        print(f"call {self.calls}: {tokens.shape[1]} tokens")  # a graph break
        return self.head(x)


@bytegraph.compile(fullgraph=True)
def loss_fn(logits, targets):
    return torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())


def main() -> None:
    torch.manual_seed(0)
    model = bytegraph.compile(TinyModel())
    with torch.no_grad():
        for length in (8, 8, 12, 16):  # 12: a new size recompiles (symbolic from then on)
            tokens = torch.randint(0, 100, (2, length))
            loss = loss_fn(model(tokens), tokens)
    print(f"last loss {loss.item():.3f}")


if __name__ == "__main__":
    main()
