"""Helpers for tests/test_graph_breaks.py and tests/test_explain_and_logs.py: user code in
*another* module whose calls graph-break (print, graph_break(), .item()), three levels deep,
plus small modules and objects whose methods break. Lines that break end in a marker comment
so tests find their line numbers with ``helpers.line_of``.
"""
import torch

import bytegraph

FILE = __file__
TRACE = []  # appended to by helpers so tests can count how often code ran


def level3_print(x):
    y = x * 3
    print("level3", tuple(y.shape))  # BH-L3-PRINT
    return y - 1


def level2_print(x):
    y = level3_print(x + 1)
    return y * 2


def level1_print(x):
    return level2_print(x.sin()) + 0.5


def level3_item(x):
    s = x.sum().item()  # BH-L3-ITEM
    return x * s


def level2_item(x, k=2):
    return level3_item(x * k) + 1


def level1_item(x):
    return level2_item(x, k=3).cos()


def level3_explicit(x, out):
    out.append("l3")
    bytegraph.graph_break()  # BH-L3-EXPLICIT
    out.append("l3-after")
    return x + len(out)


def level2_explicit(x, out):
    out.append("l2")
    return level3_explicit(x * 2, out) * 2


def level1_explicit(x, out):
    out.append("l1")
    return level2_explicit(x, out) - 1


def returns_arg_after_print(x):
    print("returning the argument")  # BH-RET-ARG
    return x


class Scaler:
    def __init__(self, k):
        self.k = k
        self.calls = 0

    def apply(self, x):
        self.calls += 1
        print("Scaler.apply", self.k)  # BH-SCALER
        return x * self.k


class PrintingBlock(torch.nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.lin = torch.nn.Linear(n, n)

    def forward(self, x):
        h = self.lin(x).relu()
        print("PrintingBlock", tuple(h.shape))  # BH-BLOCK-PRINT
        return h + x


class BreakingNet(torch.nn.Module):
    def __init__(self, n=4):
        super().__init__()
        self.pre = torch.nn.Linear(n, n)
        self.block = PrintingBlock(n)
        self.post = torch.nn.Linear(n, 2)

    def forward(self, x):
        return self.post(self.block(self.pre(x).tanh()))
