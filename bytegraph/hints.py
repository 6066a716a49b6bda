"""Functions users put in their code to steer the tracer (imports nothing from bytegraph):
`graph_break()`, and the dynamic-shape markers `mark_dynamic`, `maybe_mark_dynamic` and
`mark_static` (Note [Symbolic sizes] in graph/shapes.py) with the readers of their marks
(bytegraph's own attributes, `_bg_*`, and those `torch._dynamo`'s markers set)."""
import torch


def graph_break() -> None:
    """Force a graph break here: the graph so far is compiled, capturing resumes after this call.

    Eagerly (or outside a compiled function) it does nothing.
    """


def mark_dynamic(t: torch.Tensor, dim) -> None:
    """Make dimension `dim` (an int or a list of ints) of `t` symbolic when `t` is a graph
    input, from its first capture on (as `torch._dynamo.mark_dynamic`): a trace that
    specializes it raises `ConstraintViolationError` (unless `config.allow_ignore_mark_dynamic`)."""
    _mark(t, "_bg_dynamic_dims", dim)


def maybe_mark_dynamic(t: torch.Tensor, dim) -> None:
    """Like `mark_dynamic`, but a trace may specialize the dimension (as
    `torch._dynamo.maybe_mark_dynamic`): it is symbolic unless the code needs its value."""
    _mark(t, "_bg_weak_dynamic_dims", dim)


def mark_static(t, dim=None):
    """Keep dimension `dim` (all dimensions if None) of tensor `t` static, even under automatic
    dynamic shapes or `dynamic=True` (as `torch._dynamo.mark_static`; `mark_dynamic` wins).
    On an `nn.Module` class (usable as a class decorator; returns the class) or instance: the
    int attributes of its instances (of it) stay Python constants, never symbolic, and its
    tensors' sizes stay static (torch's static nn.Module classes)."""
    if (isinstance(t, type) and issubclass(t, torch.nn.Module)) or isinstance(t, torch.nn.Module):
        if dim is not None:
            raise TypeError("bytegraph.mark_static: a module takes no dimension")
        setattr(t, "_bg_marked_static", True)
        return t
    if not isinstance(t, torch.Tensor):
        raise TypeError(f"bytegraph.mark_static expects a tensor or an nn.Module (class), not {type(t).__name__}")
    _mark(t, "_bg_static_dims", range(t.dim()) if dim is None else dim)
    return None


def _mark(t: torch.Tensor, attr: str, dim) -> None:
    dims = getattr(t, attr, None) or set()
    dims.update(_dims(t, dim))
    setattr(t, attr, dims)


def _dims(t: torch.Tensor, dim) -> list:
    dims = list(dim) if isinstance(dim, (list, tuple, set, range)) else [dim]
    for d in dims:
        if not isinstance(d, int) or not -t.dim() <= d < t.dim():
            raise IndexError(f"bytegraph.mark_dynamic/mark_static: dimension {d!r} out of range for a "
                             f"{t.dim()}-d tensor")
    return [d % t.dim() for d in dims]


def marked_dims(t: torch.Tensor, ours: str, torchs: str) -> set:
    """The dimensions of `t` marked by bytegraph's marker (`ours`) or torch.compile's (`torchs`,
    the attribute `torch._dynamo.mark_dynamic` & co. set), negative ones counted from the end."""
    n = t.dim()
    out = set(getattr(t, ours, None) or ())
    out.update(d % n for d in getattr(t, torchs, None) or () if type(d) is int and -n <= d < n)
    return out


def strictly_dynamic_dims(t: torch.Tensor) -> set:
    """The dimensions `mark_dynamic` (bytegraph's or torch's) marked on `t`."""
    return marked_dims(t, "_bg_dynamic_dims", "_dynamo_dynamic_indices")


def is_static_module(module) -> bool:
    """Whether `mark_static` marked the module or its class (bytegraph's or torch's marker)."""
    return bool(module.__dict__.get("_bg_marked_static") or getattr(type(module), "_bg_marked_static", False)
                or getattr(type(module), "_dynamo_marked_static", False))
