"""`t.requires_grad_(flag)` and `t.requires_grad = flag` in the trace.

# Note [requires_grad_ in the trace]
The flag is autograd metadata of the real tensor, not an op: no graph node computes it.
- The flag already has that value: nothing changes (eager returns the tensor itself).
- A tensor with a source (an argument, a parameter, a global): the graph was traced with
  its flag, which decides whether the ops over it record a gradient to the real tensor; a
  graph break with the reason (the call runs eagerly on the real tensor).
- A tensor made in the trace: its fake takes the flag (so `.requires_grad`, `is_leaf`
  and the ops' fakes read it; eager's errors, a non-leaf's `requires_grad_(False)` or an
  integer tensor's `requires_grad_()`, are raised as the program's) and is registered in
  `OutputGraph.grad_flags`: the fakes whose flag the graph's real tensors do not have.
  So are, with grad mode off, the results over such a tensor that its flag reaches (a
  view made under no_grad requires grad eagerly too; `OutputGraph.call_op` asks
  `after_op`). Right after the graph call, every graph output whose fake is registered
  gets its fake's flag (`replay_flags`: `out.requires_grad_(flag)`), so a tensor that
  outlives the graph (returned, stored, live at a break) is eager's. With grad mode on, an
  op over a registered tensor is a graph break at that op: its result's autograd history
  would lead to a leaf made inside the graph, which the graph's autograd does not have.
  Its other uses (grad mode off) compute what they compute eagerly. This is the case
  torch.compile keeps in one graph (transformers' MRA without its CUDA kernel:
  `torch.zeros_like(q).requires_grad_()` under no_grad, sliced and reshaped); it breaks
  where a tensor derived from such a leaf with grad on is returned.
A factory given `requires_grad=True` (`torch.zeros(3, requires_grad=True)`, `x.new_ones(2,
requires_grad=True)`) makes such a leaf too (`made_leaf`): a backend that traces the graph
again (AOT autograd) returns it without the flag, so it is registered the same way.
"""
from __future__ import annotations

import torch

from .base import VariableTracker
from .constant import ConstantVariable

_HINT = "call requires_grad_() outside the compiled function, or use the tensor under torch.no_grad()"


def set_requires_grad(tx, tensor, args: list, kwargs: dict, what: str = "requires_grad_()") -> VariableTracker:
    """`tensor.requires_grad_(*args, **kwargs)` (`what` names the construct): the tensor."""
    if len(args) + len(kwargs) > 1 or (kwargs and "requires_grad" not in kwargs):
        tx.unsupported(f"{what} with arguments other than one flag", category="unsupported tensor method")
    flag_vt = args[0] if args else kwargs.get("requires_grad", ConstantVariable(True))
    if not flag_vt.is_python_constant():
        tx.unsupported(f"{what} with flag {flag_vt.describe()}, which is not a constant",
                       category="unsupported tensor method", hint=_HINT)
    flag = bool(flag_vt.as_python_constant())
    example = tensor.example
    if example.requires_grad == flag:
        return tensor
    if tensor.source is not None:
        tx.unsupported(f"{what} changes requires_grad of {tensor.describe()}, a tensor from outside the "
                       "compiled function: the graph was traced with its flag, which decides whether its "
                       "ops record a gradient to it", category="unsupported tensor method", hint=_HINT)
    tx.output.side_effects.mutate(tensor, replay=False)  # the fake's flag is saved for a restore
    try:
        example.requires_grad_(flag)
    except RuntimeError as e:  # eager's error for this tensor (a non-leaf, an integer dtype)
        tx.raise_user_error(RuntimeError(str(e)))
    _register(tx.output, example)
    return tensor


def made_leaf(output, example) -> None:
    """An op given `requires_grad=True` made `example`: a leaf whose flag the graph's real
    output may lack (Note [requires_grad_ in the trace])."""
    if isinstance(example, torch.Tensor) and example.requires_grad:
        _register(output, example)


def _register(output, fake) -> None:
    flags = output.grad_flags
    if id(fake) not in flags:
        flags[id(fake)] = fake
        output.side_effects.record_undo(flags.pop, id(fake))


def after_op(tx, op_name: str, fakes, result) -> None:
    """Op `op_name` over fake arguments `fakes` gave `result`: a break with grad mode on if an
    argument is registered, else the results that require grad are registered too."""
    output = tx.output
    flags = output.grad_flags
    if not any(id(f) in flags for f in _tensors(fakes)):
        return
    if output.grad_enabled:
        tx.unsupported(f"{op_name} with grad mode on over a tensor whose requires_grad_() the compiled "
                       "function set: its gradient would flow to a leaf made inside the graph",
                       category="unsupported tensor method", hint=_HINT)
    for r in _tensors(result):
        if r.requires_grad:
            _register(output, r)


def _tensors(tree) -> list:
    return [t for t in torch.utils._pytree.tree_leaves(tree) if isinstance(t, torch.Tensor)]


def replay_flags(cg, output, outputs: list) -> None:
    """After the graph call: `out.requires_grad_(flag)` for each graph output (`outputs`, in
    slot order) whose fake's flag the trace set."""
    flags = output.grad_flags
    for i, vt in enumerate(outputs):
        if vt.is_tensor and id(vt.example) in flags:
            cg.push_callable_const(torch.Tensor.requires_grad_)
            cg.load_graph_output(i)
            cg.load_const(vt.example.requires_grad)
            cg.call_and_pop(2)
