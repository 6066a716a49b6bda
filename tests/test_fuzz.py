"""Differential fuzzing: small random programs mixing tensor ops, Python
int arithmetic, branches and loops on ints, containers and in-place ops on intermediates.
Each seed is one deterministic program; it is run eagerly and compiled and compared in full.
Every construct used is one bytegraph supports, so each program must be exactly one graph."""
import linecache
import random

import pytest
import torch

from helpers import check

N_PROGRAMS = 60


class _Gen:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.tensors = ["t0", "t1"]
        self.ints = ["n0", "n1"]
        self.lines = []
        self.k = 0

    def fresh(self, prefix):
        self.k += 1
        return f"{prefix}{self.k}"

    def t(self):
        return self.r.choice(self.tensors)

    def n(self):
        return self.r.choice(self.ints)

    def emit(self, line, indent=1):
        self.lines.append("    " * indent + line)

    def stmt(self, indent=1, depth=0):
        r = self.r
        kind = r.choice(
            ["binop", "binop", "unary", "scalar", "intop", "intop", "if", "for", "list", "dict", "inplace",
             "reduce", "index", "compare", "mutate_input"]
        )
        if kind in ("if", "for") and depth >= 2:
            kind = "binop"
        if kind == "binop":
            v = self.fresh("t")
            self.emit(f"{v} = {self.t()} {r.choice(['+', '-', '*'])} {self.t()}", indent)
            self.tensors.append(v)
        elif kind == "unary":
            v = self.fresh("t")
            fn = r.choice(["torch.sin", "torch.tanh", "torch.relu", "torch.sigmoid", "torch.cos", "torch.abs"])
            self.emit(f"{v} = {fn}({self.t()})", indent)
            self.tensors.append(v)
        elif kind == "scalar":
            v = self.fresh("t")
            self.emit(f"{v} = {self.t()} * {self.n()} {r.choice(['+', '-'])} {r.randint(-3, 3)}", indent)
            self.tensors.append(v)
        elif kind == "intop":
            v = self.fresh("n")
            op = r.choice(["+", "-", "*", "//", "%"])
            rhs = f"({self.n()} % 5 + 1)" if op in ("//", "%") else self.n()
            self.emit(f"{v} = ({self.n()} {op} {rhs}) % 11 - 5", indent)
            self.ints.append(v)
        elif kind == "if":
            cond = r.choice([f"{self.n()} > {self.n()}", f"{self.n()} % 2 == 0", f"{self.n()} in (1, 2, 3)",
                             f"len([{self.t()}, {self.t()}]) == 2 and {self.n()} != 0"])
            target = self.t()
            self.emit(f"if {cond}:", indent)
            self.emit(f"{target} = {target} * {r.randint(2, 3)} + {self.t()}", indent + 1)
            self.emit("else:", indent)
            self.emit(f"{target} = {target} - {self.n()}", indent + 1)
        elif kind == "for":
            i = self.fresh("i")
            target = self.t()
            self.emit(f"for {i} in range({self.n()} % 3 + 1):", indent)
            self.emit(f"{target} = {target} + {i} * {self.t()}.tanh()", indent + 1)
            if r.random() < 0.5:
                self.emit(f"if {i} == 1:", indent + 1)
                self.emit("break", indent + 2)
        elif kind == "list":
            v = self.fresh("t")
            a, b, c = self.t(), self.t(), self.t()
            self.emit(f"{v} = torch.stack([{a}, {b}, {c}]).mean(0) + sum([{a}, {b}]) / 2", indent)
            self.tensors.append(v)
        elif kind == "dict":
            v = self.fresh("t")
            self.emit(f"d = {{'a': {self.t()}, 'k': {self.n()}}}", indent)
            self.emit("d['b'] = d['a'] * d['k']", indent)
            self.emit(f"{v} = sum(val for key, val in d.items() if key != 'k')", indent)
            self.tensors.append(v)
        elif kind == "inplace":
            v = self.fresh("t")
            self.emit(f"{v} = {self.t()}.clone()", indent)
            self.emit(f"{v}.{r.choice(['add_', 'mul_', 'sub_'])}({self.n()})", indent)
            self.emit(f"{v}[0] = {self.t()}[1]", indent)
            self.tensors.append(v)
        elif kind == "reduce":
            v = self.fresh("t")
            red = r.choice(["sum(0, keepdim=True)", "mean(1, keepdim=True)", "amax(0, keepdim=True)"])
            self.emit(f"{v} = ({self.t()}.{red} + {self.t()}).softmax(-1)", indent)
            self.tensors.append(v)
        elif kind == "index":
            v = self.fresh("t")
            self.emit(f"{v} = {self.t()}[{self.n()} % 3].unsqueeze(0).expand(3, 4) + {self.t()}[:, ::2].repeat(1, 2)",
                      indent)
            self.tensors.append(v)
        elif kind == "mutate_input":
            # `buf` is an input that is never rebound: eager mutates the caller's tensor
            op = r.choice(["add_", "mul_", "sub_"])
            self.emit(f"buf.{op}({r.choice([self.n(), self.t() + '.detach()'])})", indent)
            if r.random() < 0.5:
                v = self.fresh("t")
                self.emit(f"{v} = buf * {self.t()}", indent)
                self.tensors.append(v)
        elif kind == "compare":
            v = self.fresh("t")
            self.emit(f"{v} = torch.where({self.t()} > {self.t()}, {self.t()}, {self.n()} * 1.0)", indent)
            self.tensors.append(v)

    def program(self, n_stmts):
        for _ in range(n_stmts):
            self.stmt()
        outs = self.r.sample(self.tensors, min(3, len(self.tensors)))
        extra = ", buf" if self.r.random() < 0.3 else ""
        self.emit(f"return ({', '.join(outs)}, {self.n()}, [{self.t()}, {self.n()}]{extra})")
        return "def fuzzed(t0, t1, buf, n0, n1):\n" + "\n".join(self.lines) + "\n"


def _make(seed):
    src = _Gen(seed).program(n_stmts=14)
    filename = f"<bytegraph-fuzz-{seed}>"
    linecache.cache[filename] = (len(src), None, src.splitlines(True), filename)  # for tracebacks
    ns = {"torch": torch}
    exec(compile(src, filename, "exec"), ns)
    return ns["fuzzed"], src


@pytest.mark.parametrize("seed", range(N_PROGRAMS))
def test_fuzzed_program(seed):
    fn, src = _make(seed)
    g = torch.Generator().manual_seed(seed)
    t0 = torch.randn(3, 4, generator=g, requires_grad=True)
    t1 = torch.randn(3, 4, generator=g)
    buf = torch.randn(3, 4, generator=g)
    n0, n1 = seed % 5 - 2, seed % 3 + 1
    try:
        check(fn, t0, t1, buf, n0, n1, graphs=1)
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- program (seed {seed}):\n{src}") from None
