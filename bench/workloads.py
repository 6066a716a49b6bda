"""The benchmark workloads: a registry of named programs that both systems compile.

A workload is a `build()` that returns a fresh `Case`: the callable to compile (a function or
an `nn.Module`) and the arguments to call it with. `build()` is called once per fresh capture,
so a workload that mutates its inputs or module state starts from the same state every time,
and every build with the same name gives the same inputs (seeded).

To add a workload, write a function that returns a `Case` and decorate it with
`@workload("name", "one line saying what it stresses")` (both from bench/case.py); `bench.run`
picks it up. Helpers the workloads call live at module level here, as user code would. This
module is the aggregator: importing it registers its own workloads and then, at the bottom,
those of the workload modules, so `WORKLOADS` here holds them all, in that order.
"""

import torch

from bench.case import WORKLOADS  # noqa: F401  (the registry, every workload registered once this module is loaded)
from bench.case import Case, seeded_inputs, seeded_module, workload


# --- (a) the smallest program -------------------------------------------------------------


def add_one(x):
    return x + 1


@workload("add_one", "x + 1: fixed cost of a capture and of a guarded call")
def _build_add_one() -> Case:
    return Case(add_one, seeded_inputs((16, 16)))


# --- (b) a Python loop over tensor ops ----------------------------------------------------


def loop_of_ops(x):
    for _ in range(20):
        x = torch.sin(x)
        x = x * 0.5
        x = x + 0.1
        x = torch.relu(x)
        x = x - 0.2
        x = torch.cos(x)
        x = x / 2
        x = torch.exp(x)
        x = torch.clamp(x, -1.0, 1.0)
        x = x * 0.9
    return x


@workload("loop_200_ops", "20 loop iterations x 10 tensor ops: per-instruction and per-op cost")
def _build_loop_of_ops() -> Case:
    return Case(loop_of_ops, seeded_inputs((16, 16)))


# --- (c) user helper functions with default and keyword arguments -------------------------


def scale(x, factor=2.0):
    return x * factor


def shift(x, *, offset=1.0):
    return x + offset


def mix(a, b, weight=0.5):
    return a * weight + b * (1 - weight)


def squash(x, lo=-1.0, hi=1.0):
    return torch.clamp(x, min=lo, max=hi)


def normalize(x, eps=1e-5, *, center=True):
    if center:
        x = x - x.mean()
    return x / (x.std() + eps)


def call_helpers(x, y):
    a = scale(x)
    b = shift(y, offset=0.5)
    c = mix(a, b, weight=0.25)
    d = squash(c, hi=0.75)
    return normalize(d, center=True)


@workload("helpers_5", "5 inlined user helpers with defaults and keywords: call binding cost")
def _build_call_helpers() -> Case:
    return Case(call_helpers, seeded_inputs((16, 16), (16, 16)))


# --- (d) nn.Module compilation: parameters as inputs, submodule inlining ------------------


@workload("mlp_40", "nn.Sequential of 20 x (Linear(64, 64) + ReLU): 40 inlined modules, 40 parameters")
def _build_mlp_40() -> Case:
    def make():
        layers = []
        for _ in range(20):
            layers += [torch.nn.Linear(64, 64), torch.nn.ReLU()]
        return torch.nn.Sequential(*layers)

    return Case(seeded_module(make), seeded_inputs((8, 64)))


class EncoderLayer(torch.nn.Module):
    """A pre-norm transformer encoder layer in plain PyTorch (no nn.MultiheadAttention)."""

    def __init__(self, dim: int, heads: int, hidden: int):
        super().__init__()
        self.heads = heads
        self.norm1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.norm2 = torch.nn.LayerNorm(dim)
        self.fc1 = torch.nn.Linear(dim, hidden)
        self.fc2 = torch.nn.Linear(hidden, dim)

    def attention(self, x):
        batch, seq, dim = x.shape
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q = q.view(batch, seq, self.heads, dim // self.heads).transpose(1, 2)
        k = k.view(batch, seq, self.heads, dim // self.heads).transpose(1, 2)
        v = v.view(batch, seq, self.heads, dim // self.heads).transpose(1, 2)
        scores = (q @ k.transpose(-2, -1)) / (dim // self.heads) ** 0.5
        out = torch.softmax(scores, dim=-1) @ v
        return self.proj(out.transpose(1, 2).reshape(batch, seq, dim))

    def forward(self, x):
        x = x + self.attention(self.norm1(x))
        return x + self.fc2(torch.nn.functional.gelu(self.fc1(self.norm2(x))))


class Encoder(torch.nn.Module):
    def __init__(self, layers: int = 4, dim: int = 32, heads: int = 4, hidden: int = 64):
        super().__init__()
        self.layers = torch.nn.ModuleList([EncoderLayer(dim, heads, hidden) for _ in range(layers)])
        self.norm = torch.nn.LayerNorm(dim)

    def forward(self, x):
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


@workload("transformer_4", "4-layer transformer encoder in plain PyTorch: user modules, ModuleList, methods")
def _build_transformer_4() -> Case:
    return Case(seeded_module(Encoder), seeded_inputs((2, 16, 32)))


class SmallCNN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.features = torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.MaxPool2d(2),
            torch.nn.Conv2d(8, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1),
        )
        self.head = torch.nn.Linear(16, 10)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


@workload("cnn_small", "small CNN (Conv2d, BatchNorm2d in eval, pooling, Linear): layers with more Python")
def _build_cnn_small() -> Case:
    return Case(seeded_module(lambda: SmallCNN().eval()), seeded_inputs((2, 3, 16, 16)))


# --- a frame that runs eagerly: the cost of its cached eager entry -------------------------


def eager_frame(x):
    match x:  # MATCH_CLASS is not captured and cannot be resumed: the frame runs eagerly
        case torch.Tensor():
            return x + 1
    return x


@workload("eager_frame", "a frame cached as eager: per-call cost of its guards (target ≤ 2 µs over eager)")
def _build_eager_frame() -> Case:
    return Case(eager_frame, seeded_inputs((16, 16)))


# --- side effects: N writes to pre-existing Python state (bench/mutation_cost.py) ----------


def _mutation_workload(n: int) -> None:
    from bench.mutation_cost import make_args, make_mutating_fn

    fn = make_mutating_fn(n)

    @workload(f"mutate_{n}", f"{n} writes to a list, a dict and object attributes: side-effect log cost")
    def _build() -> Case:
        return Case(fn, make_args())


for _n in (500, 1000, 2000):
    _mutation_workload(_n)


# --- the workload modules: each registers its workloads on import, so here, after the ones above,
# the registry keeps this order; they import bench.case, not this module -----------------------

import bench.break_workloads  # noqa: E402,F401  (graph breaks deep in a call chain)
import bench.compiled_autograd_workloads  # noqa: E402,F401  (training steps with hooks)
import bench.dynamic_workloads  # noqa: E402,F401  (static vs dynamic shapes)
import bench.hop_workloads  # noqa: E402,F401  (higher-order ops)

# transformers models, last (skipped without transformers): `make bench` times and tabulates the
# micro workloads first; bench.run and the tests import the module from here, after the rest
from bench import model_workloads  # noqa: E402,F401
