"""`bytegraph.explain`: run a function once under a fresh compile and report what was
captured — graphs, ops per graph, graph breaks with reasons and user lines, guards.

Every capture triggered by the call (the function itself, callees compiled at graph
breaks, resume functions) is recorded through `compiled_function.LISTENERS`.

`break_reasons` lists every graph break, as torch.compile's explain does (a break that
makes its frame run eagerly included: its reason says so); `eager_frames` lists every
frame whose entry runs it eagerly, whatever the cause (that break, an exception escaping
the traced code, an internal error), so a frame that ran uncompiled is never only implied
by a break's text. A frame run eagerly because of a break is in both lists.

A graph split at DDP's bucket boundaries (Note [DDP bucket splits] in graph/ddp_split.py) is
one graph per piece in `graphs` (each piece goes to the backend, as under torch.compile), and
`ddp_splits` says where and why each piece starts.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .runtime.compiled_function import CompiledFunction
from .runtime.root_frames import LISTENERS
from .api import compile as bg_compile


@dataclass
class BreakReason:
    category: str
    reason: str
    location: str
    user_stack: tuple
    hint: str = ""

    def __str__(self) -> str:
        text = f"{self.location}: [{self.category}] {self.reason}"
        if len(self.user_stack) > 1:
            text += "\n      inlined from: " + " <- ".join(self.user_stack[1:])
        if self.hint:
            text += f"\n      hint: {self.hint}"
        return text


@dataclass
class ExplainOutput:
    graphs: list = field(default_factory=list)
    break_reasons: list = field(default_factory=list)
    guards: list = field(default_factory=list)
    ops_per_graph: list = field(default_factory=list)
    eager_frames: list = field(default_factory=list)
    ddp_splits: list = field(default_factory=list)
    result: object = None

    @property
    def graph_count(self) -> int:
        return len(self.graphs)

    @property
    def graph_break_count(self) -> int:
        return len(self.break_reasons)

    def __str__(self) -> str:
        lines = [f"Graph count: {self.graph_count}", f"Graph break count: {self.graph_break_count}",
                 f"Op count: {sum(len(ops) for ops in self.ops_per_graph)}"]
        if self.break_reasons:
            lines.append("Break reasons:")
            lines.extend(f"  {i + 1}. {reason}" for i, reason in enumerate(self.break_reasons))
        if self.eager_frames:
            lines.append("Frames run eagerly:")
            lines.extend(f"  - {frame}" for frame in self.eager_frames)
        if self.ddp_splits:
            lines.append("DDP bucket splits:")
            lines.extend(f"  - {split}" for split in self.ddp_splits)
        for i, (gm, ops) in enumerate(zip(self.graphs, self.ops_per_graph)):
            lines.append(f"Graph {i + 1} ({len(ops)} ops): {', '.join(ops)}")
            lines.extend("    " + line for line in gm.code.strip().splitlines())
            for name, sub in subgraphs(gm):  # the bodies of higher-order ops (vars/hops)
                lines.append(f"  Subgraph {name}:")
                lines.extend("      " + line for line in sub.code.strip().splitlines())
        if self.guards:
            lines.append("Guards:")
            lines.extend(f"  - {g}" for g in self.guards)
        return "\n".join(lines)


def explain(fn, *args, **kwargs):
    """`explain(fn)(*args, **kwargs)` or `explain(fn, *args, **kwargs)` -> ExplainOutput."""
    if args or kwargs:
        return _explain_call(fn, args, kwargs)
    return lambda *a, **k: _explain_call(fn, a, k)


def _explain_call(fn, args, kwargs) -> ExplainOutput:
    out = ExplainOutput()

    def backend(gm, example_inputs):
        out.graphs.append(gm)
        out.ops_per_graph.append([op_name(n) for n in gm.graph.nodes
                                  if n.op in ("call_function", "call_method", "call_module")])
        return gm.forward

    def listener(compiled: CompiledFunction, entry, brk) -> None:
        if compiled.backend is not backend:
            return
        if brk is not None:
            out.break_reasons.append(BreakReason(brk.category, brk.reason, brk.location,
                                                 brk.user_stack, brk.hint))
        if entry.kind == "eager":  # whatever the cause: a break that cannot resume, a raise, an error
            out.eager_frames.append(f"{compiled.code.co_qualname}: {entry.reason}")
        if entry.graph_module is not None:
            out.ddp_splits.extend(entry.graph_module.meta.get("bg_ddp_splits", ()))
        out.guards.extend(f"{g.describe()}" + (f"  # {g.user_location}" if g.user_location else "")
                          for g in entry.guards.guards)

    LISTENERS.append(listener)
    try:
        out.result = bg_compile(fn, backend=backend)(*args, **kwargs)
    finally:
        LISTENERS.remove(listener)
    return out


def subgraphs(gm) -> list:
    """(qualified name, GraphModule) of every body nested in `gm`, outermost first."""
    return [(name, sub) for name, sub in gm.named_modules() if name and hasattr(sub, "graph")]


def op_name(node) -> str:
    if node.op == "call_method":
        return f"Tensor.{node.target}"
    return getattr(node.target, "__name__", str(node.target))
