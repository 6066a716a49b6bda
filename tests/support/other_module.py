"""Globals and helpers that compiled test functions reach through another module."""
import torch

SCALE = 3
OFFSET = 0.5
NAMES = ("a", "b", "c")
TABLE = {"a": 1, "b": 2}
WEIGHT = torch.arange(4.0)
COUNTER = [0]


def affine(x, scale=2, *, bias=1.0):
    return x * scale + bias


def uses_own_globals(x):
    # SCALE and WEIGHT are resolved in *this* module's globals, not the caller's
    return x * SCALE + WEIGHT


def bump_counter(n=1):
    COUNTER[0] += n
    return COUNTER[0]


def pair(x):
    return x + 1, x - 1


def variadic(*args, **kwargs):
    total = sum(args)
    for k in sorted(kwargs):
        total = total + kwargs[k]
    return total


class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y

    def norm2(self):
        return self.x * self.x + self.y * self.y

    def scaled(self, k):
        return Point(self.x * k, self.y * k)


def make_adder(n):
    def add(x):
        return x + n

    return add


def recursive_sum(x, depth):
    if depth == 0:
        return x
    return recursive_sum(x * 0.5, depth - 1) + x


# ---- used by tests/test_side_effects.py (writes to this module's globals)
LEVEL = 1
HISTORY = []
REGISTRY = {"n": 0}


def raise_level(by):
    global LEVEL
    LEVEL = LEVEL + by
    return LEVEL


def record(x):
    HISTORY.append(x)
    REGISTRY["n"] += 1
    return len(HISTORY)


def drop_level():
    global LEVEL
    del LEVEL


def noisy(x):
    y = x * 2
    print("noisy", y.shape)  # MARK_NOISY
    return y
