"""Small modules several tests compile (one definition, so their guards are the same program)."""
import torch


class Scaled(torch.nn.Module):
    """A seeded Linear, ReLU and a plain-int attribute: guards on a submodule, a parameter and
    a constant."""

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.lin = torch.nn.Linear(4, 4)
        self.scale = 2

    def forward(self, x):
        return self.lin(x).relu() * self.scale
