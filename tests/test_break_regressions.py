"""Regressions found in graph-break code generation, each a differential check."""
from typing import cast

import torch

from helpers import check


class _Opt:
    hooks = {}


def _step_wrapper(*args, **kwargs):
    # The shape of torch.optim's profile_hook_step: breaks (cast, __class__, a C context manager)
    # inside resume functions whose own stack parameters must survive the next break.
    self, *_ = args
    self = cast(_Opt, self)
    name = f"step#{self.__class__.__name__}"
    with torch.autograd.profiler.record_function(name):
        for hook in self.hooks.values():
            hook()
        return self, name, args[1] * 2


def test_break_inside_resume_function_keeps_its_stack_parameters():
    check(_step_wrapper, _Opt(), torch.randn(3))
