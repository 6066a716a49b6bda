"""Forward (pre-)hooks torch marks as not for compilers (FSDP2's marker,
`_fsdp_common._dynamo_disable`, which its `fully_shard` hooks carry) run eagerly around the
module's forward, compiled as a graph of its own (Note [Hooks run eagerly around a compiled
forward] in vars/hooks/module.py): the hooks' changed arguments and outputs, the
`always_call` hooks of a call that raised, and a module with backward hooks too (its whole
call eager) are eager's. The real FSDP2 on 2 ranks is tests/distributed/test_fsdp2.py."""
from __future__ import annotations

import pytest
import torch

from hook_helpers import FAST_BACKENDS, differential

if not torch.distributed.is_available():
    pytest.skip("torch.distributed (FSDP2) is not available", allow_module_level=True)

from torch.distributed.fsdp._fully_shard._fsdp_common import _dynamo_disable  # noqa: E402


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(4, 8), torch.nn.Linear(8, 4)

    def forward(self, x, scale=1.0):
        return self.fc2(torch.relu(self.fc1(x))) * scale


class Outer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, x):
        return torch.sigmoid(self.block(x * 2, scale=0.5)) + 1


class Recorder:
    """Hooks as FSDP2 writes them: methods of a state object, under torch's marker."""

    def __init__(self, log):
        self.log = log

    @_dynamo_disable
    def pre(self, module, args, kwargs):
        self.log.append(("pre", type(module).__name__, sorted(kwargs)))
        if "scale" in kwargs:
            kwargs = {**kwargs, "scale": kwargs["scale"] * 3}
        return (args[0] + 1,), kwargs

    @_dynamo_disable
    def post(self, module, args, output):
        self.log.append(("post", args[0].sum().item()))
        return output * 2

    @_dynamo_disable
    def failing_pre(self, module, args):
        self.log.append("failing pre")
        raise ValueError("unshard failed")

    def always(self, module, args, output):
        self.log.append(("always", output is None))


def _world(where: str, register):
    def build():
        torch.manual_seed(0)
        model = Outer()
        log = []
        register(model if where == "root" else model.block, Recorder(log))
        return model, lambda i: (torch.randn(3, 4, generator=torch.Generator().manual_seed(i)),), log
    return build


def _pre_and_post(module, rec):
    module.register_forward_pre_hook(rec.pre, with_kwargs=True)
    module.register_forward_hook(rec.post)


@pytest.mark.parametrize("backend", FAST_BACKENDS)
def test_marked_hooks_of_a_submodule_run_around_its_compiled_forward(backend):
    # the code before the block's call, its forward, the code after: three graphs (the whole
    # call of the block ran eagerly before: two)
    differential(_world("block", _pre_and_post), backend=backend, graphs=3)


def test_marked_hooks_of_the_compiled_module_itself():
    differential(_world("root", _pre_and_post), graphs=1)  # its forward's graph; the hooks eager


def test_always_called_hook_after_a_marked_pre_hook_raised():
    def register(module, rec):
        module.register_forward_pre_hook(rec.failing_pre)
        module.register_forward_hook(rec.always, always_call=True)
    differential(_world("block", register), graphs=1, backward=False)  # only the code before the call


def test_backward_hooks_beside_marked_hooks_keep_the_whole_call_eager():
    log = []

    def register(module, rec):
        _pre_and_post(module, rec)
        module.register_full_backward_hook(lambda m, gi, go: log.append("backward"))
    differential(_world("block", register), graphs=2)
    assert log.count("backward") == 6  # 3 calls eagerly, 3 compiled
