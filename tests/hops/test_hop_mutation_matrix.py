"""Bodies of higher-order ops must be functional: the mutation matrix
{global, nonlocal, outer list, outer dict, object attribute (set and delete), module
attribute, outer tensor in place} x {cond, map, wrap, checkpoint}.

Each case: the compiled function gives eager's result (outputs, outer state, gradients)
with a graph break at the op, which runs eagerly; `bytegraph.counters["graph_break"]`
counts that break under a reason naming the op and the variable; with `fullgraph=True`
the user gets `Unsupported` naming the variable, the op and the line of the write. The
same matrix with `torch.cond`, whose eager implementation refuses such bodies itself: the
compiled function raises torch's own error, as eager does. Writes to values the body
creates itself are captured (one graph).
"""
from __future__ import annotations

import os
import re

import pytest
import torch
import torch._higher_order_ops.wrap as hop_wrap
from torch.utils.checkpoint import checkpoint

import bytegraph
from helpers import check, line_of

COUNTER = 0
_HERE = os.path.abspath(__file__)


class Obj:
    def __init__(self):
        self.n = 0


class Mod(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.calls = 0


def _reset():
    global COUNTER
    COUNTER = 0


def _state():
    return COUNTER


def _cos(y):
    return y.cos()


OPS = {
    "cond": ("bytegraph.cond", lambda body, x: bytegraph.cond(x.sum() > 0, body, _cos, (x,))),
    "map": ("bytegraph.map", lambda body, x: bytegraph.map(body, torch.stack([x, x * 2]))),
    "wrap": ("torch._higher_order_ops.wrap.wrap", lambda body, x: hop_wrap.wrap(body, x)),
    "checkpoint": ("torch.utils.checkpoint.checkpoint", lambda body, x: checkpoint(body, x, use_reentrant=False)),
    "torch.cond": ("torch.cond", lambda body, x: torch.cond(x.sum() > 0, body, _cos, (x,))),
}

# kind -> how the refusal names the written variable
NAMES = {"global": "global 'COUNTER'", "nonlocal": "nonlocal 'count'", "list": "'log'", "dict": "'d'",
         "attr": "obj", "delattr": "obj", "module": "m", "tensor": "buf"}


def make(kind: str, op: str):
    apply = OPS[op][1]

    def fn(x, obj, m, buf):
        x = x * 1  # the graph before the op
        log = []
        d = {}
        count = 0

        def body(y):
            nonlocal count
            global COUNTER
            if kind == "global":
                COUNTER += 1  # write:global
            elif kind == "nonlocal":
                count += 1  # write:nonlocal
            elif kind == "list":
                log.append(1)  # write:list
            elif kind == "dict":
                d["k"] = 1  # write:dict
            elif kind == "attr":
                obj.n = 5  # write:attr
            elif kind == "delattr":
                del obj.n  # write:delattr
            elif kind == "module":
                m.calls = m.calls + 1  # write:module
            elif kind == "tensor":
                buf.add_(1)  # write:tensor
            return y.sin()

        out = apply(body, x)
        return out, log, d, count

    return fn


def _args():
    return (torch.rand(3) + 0.5).requires_grad_(), Obj(), Mod(), torch.zeros(3)


def _writes(name: str, line: int) -> str:
    """The refusal's words for a write of `name` at `line` of this file (a variable made during
    tracing is also described: `'log' (a list value)`)."""
    return f"writes {re.escape(name)}( \\([^)]*\\))? at {re.escape(_HERE)}:{line},"


def _break_count(op_name: str, kind: str) -> int:
    pattern = re.compile(f"{re.escape(op_name)} is not captured: "
                         f".*{_writes(NAMES[kind], line_of(f'# write:{kind}', _HERE))}")
    return sum(n for reason, n in bytegraph.counters["graph_break"].items() if pattern.search(reason))


@pytest.mark.parametrize("op", ["cond", "map", "wrap", "checkpoint"])
@pytest.mark.parametrize("kind", sorted(NAMES))
def test_outer_write_breaks_and_runs_eagerly(kind, op):
    fn = make(kind, op)
    bytegraph.counters.clear()
    check(fn, *_args(), graphs=1, setup=_reset, state=_state)
    assert _break_count(OPS[op][0], kind) == 1, dict(bytegraph.counters["graph_break"])


@pytest.mark.parametrize("op", ["cond", "map", "wrap", "checkpoint", "torch.cond"])
@pytest.mark.parametrize("kind", sorted(NAMES))
def test_outer_write_under_fullgraph_is_unsupported_naming_it(kind, op):
    fn = make(kind, op)
    _reset()
    with pytest.raises(bytegraph.Unsupported) as info:
        bytegraph.compile(fn, fullgraph=True)(*_args())
    message = str(info.value)
    assert re.search(_writes(NAMES[kind], line_of(f"# write:{kind}", _HERE)), message), message
    assert f"{OPS[op][0]} is not captured" in message
    assert COUNTER == 0  # nothing ran


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_torch_cond_with_an_outer_write_raises_torchs_own_error(kind):
    fn = make(kind, "torch.cond")
    bytegraph.counters.clear()
    result = check(fn, *_args(), setup=_reset, state=_state)
    assert result.eager.exc is not None  # eager torch.cond refuses the body itself
    assert _break_count("torch.cond", kind) == 1


def _own_writes(x):
    log = [x]
    d = {"a": x}
    log.append(x * 2)
    d["b"] = log[-1] + 1
    box = Obj()
    box.n = d["b"].sum()
    t = x * 1
    t.add_(3)
    return d["a"] + d["b"] + box.n + t


@pytest.mark.parametrize("op", ["cond", "map", "wrap", "checkpoint"])
def test_writes_to_values_made_inside_the_body_are_captured(op):
    apply = OPS[op][1]

    def fn(x):
        return apply(_own_writes, x)

    bytegraph.counters.clear()
    check(fn, (torch.rand(3) + 0.5).requires_grad_(), graphs=1, fullgraph=True)
    assert not bytegraph.counters["graph_break"]


@pytest.mark.parametrize("op", ["cond", "map", "wrap", "checkpoint"])
def test_in_place_on_the_bodys_own_input_is_refused(op):
    apply = OPS[op][1]

    def body(y):
        y.mul_(2)  # write:input
        return y + 1

    def fn(x):
        return apply(body, x * 1)

    with pytest.raises(bytegraph.Unsupported, match=f"{OPS[op][0]} is not captured: .* writes 'y' "):
        bytegraph.compile(fn, fullgraph=True)((torch.rand(3) + 0.5))
