"""Differential runs for hooks: eager vs bytegraph on fresh copies of the arguments, each
followed by `backward()`, comparing outputs, gradients and the hook log (which hooks ran,
in which order, with which gradient), over several calls of one compiled function."""
from __future__ import annotations

import torch

import bytegraph
from bytegraph.graph.backends import lookup_backend
from helpers import assert_same, clone_inputs

LOG: list = []          # (tag, gradient) appended by the hooks of the tests
BACKENDS = ("eager", "aot_eager", "inductor")


class Counting:
    """A named backend that counts the graphs it compiles and keeps them."""

    def __init__(self, name: str):
        self.backend = lookup_backend(name)
        self.graphs: list = []

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return self.backend(gm, example_inputs)

    def hook_nodes(self) -> int:
        return sum(1 for gm in self.graphs for n in gm.graph.nodes if n.target is _hook_op())


def _hook_op():
    from bytegraph.ops.hooks import hook_op

    return hook_op


def _loss(out):
    ts = [t for t in _flat(out) if isinstance(t, torch.Tensor) and t.requires_grad]
    return sum(t.sum() for t in ts) if ts else None


def _flat(out):
    if isinstance(out, (list, tuple)):
        for o in out:
            yield from _flat(o)
    elif isinstance(out, dict):
        for o in out.values():
            yield from _flat(o)
    else:
        yield out


def _run(fn, args, after):
    LOG.clear()
    out = fn(*args)
    if after is not None:
        after(out)
    loss = _loss(out)
    if loss is not None:
        loss.backward()
    return out, list(LOG)


def diff(fn, *args, backend="eager", graphs=None, fullgraph=False, calls=2, after=None, hook_nodes=None):
    """Compare `fn(*args)` eager and compiled for `calls` calls (no recompile after the first);
    `after(out)` runs on each output before backward (e.g. removing a returned handle)."""
    bytegraph.reset()
    counter = Counting(backend)
    cfn = bytegraph.compile(fn, backend=counter, fullgraph=fullgraph)
    for call in range(calls):
        eager_args = clone_inputs(args)
        comp_args = clone_inputs(args)
        eager_out, eager_log = _run(fn, eager_args, after)
        comp_out, comp_log = _run(cfn, comp_args, after)
        label = f"call #{call + 1}"
        assert [t for t, _ in comp_log] == [t for t, _ in eager_log], \
            f"{label}: hooks ran {[t for t, _ in comp_log]}, eager {[t for t, _ in eager_log]}"
        for (tag, ge), (_, gc) in zip(eager_log, comp_log):
            assert_same(ge, gc, f"{label} gradient seen by hook {tag}")
        assert_same(_plain(eager_out), _plain(comp_out), f"{label} output")
        for i, (te, tc) in enumerate(zip(_flat(eager_args), _flat(comp_args))):
            if isinstance(te, torch.Tensor) and te.requires_grad:
                assert_same(te.grad, tc.grad, f"{label} grad of argument #{i}")
        if call == 0 and graphs is not None:
            assert len(counter.graphs) == graphs, f"expected {graphs} graph(s), got {len(counter.graphs)}" + \
                "".join(f"\n--- graph {i}:\n{g.code}" for i, g in enumerate(counter.graphs))
    compiled = len(counter.graphs)
    if graphs is not None:
        assert compiled == graphs, f"recompiled: {compiled} graphs after {calls} calls, expected {graphs}"
    if hook_nodes is not None:
        assert counter.hook_nodes() == hook_nodes
    return counter


def _plain(out):
    """Outputs without hook handles (compared by behaviour, not by value)."""
    if isinstance(out, (list, tuple)):
        return type(out)(_plain(o) for o in out if not isinstance(o, torch.utils.hooks.RemovableHandle))
    return out
