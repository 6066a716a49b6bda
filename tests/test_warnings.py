"""`warnings.warn` in traced code (nn.InstanceNorm3d warns, for one): a graph break (trace_rules.KNOWN_BREAKS),
as under torch.compile, so the warning is issued eagerly at the call, under the filters of that moment.

A replay after the graph (as logging calls are, vars/logging_calls.py) is not made: an "error"
filter turns the warning into an exception raised at the call, before anything after it runs,
and no guard watches `warnings.filters`. The tests compare what eager and the compiled function
warn (category and message, and how often under the "once per location" default filter) with
`warnings.catch_warnings(record=True)`.
"""
from __future__ import annotations

import warnings

import pytest
import torch

import bytegraph

from helpers import check


def _warn_small(x):
    if x.shape[0] < 4:
        warnings.warn(f"only {x.shape[0]} rows", UserWarning)
    return x * 2


def _warn_twice(x):
    y = _warn_small(x)
    return _warn_small(y) + 1  # "default": the same location warns once per run


def _deprecated(x):
    warnings.warn("old API", DeprecationWarning, stacklevel=2)
    return x.sin()


def _calls_deprecated(x):
    return _deprecated(x).cos()


def _warning_instance(x):
    warnings.warn(RuntimeWarning("an instance"))
    return x - 1


_InstanceNorm = torch.nn.InstanceNorm3d(4)  # num_features 4 on a 5-d input of 2 channels: it warns


def _instance_norm(x):
    return _InstanceNorm(x)


_NESTED_BREAK_LOCATION = pytest.mark.xfail(strict=True, reason=(
    "a warn call inlined from another function runs at its break in the caller's frame (the caller's "
    "line) or in a continuation ('<bytegraph continuation>', line 1), not at the warn's own location: "
    "the 'once per location' default filter warns twice where eager warns once"))


@pytest.mark.parametrize("action,fn,x", [
    (action, fn, x) for action in ("always", "default") for fn, x in (
        (_warn_small, torch.randn(3)), (_calls_deprecated, torch.randn(3)), (_warning_instance, torch.randn(3)),
        (_instance_norm, torch.randn(1, 2, 3, 3, 3)))
] + [("always", _warn_twice, torch.randn(3)),
     pytest.param("default", _warn_twice, torch.randn(3), marks=_NESTED_BREAK_LOCATION)])
def test_warnings_are_issued_as_eagerly(action, fn, x):
    with warnings.catch_warnings(record=True) as log:
        def setup():
            log.clear()
            warnings.simplefilter(action)  # a new filter forgets every location's "already warned"

        check(fn, x, setup=setup, state=lambda: [(w.category, str(w.message)) for w in log], rerun=False)


def test_warn_is_a_break_saying_why():
    out = bytegraph.explain(_warn_small, torch.randn(3))
    assert out.graph_break_count == 1, out.break_reasons
    brk = out.break_reasons[0]
    assert brk.category == "unsupported call" and "warnings.warn()" in brk.reason, brk
    with pytest.raises(bytegraph.Unsupported, match="warnings.warn"):
        bytegraph.compile(_warn_small, fullgraph=True)(torch.randn(3))


def test_an_error_filter_raises_at_the_call_before_later_effects():
    def fn(x, out):
        out.add_(1)
        warnings.warn("stop", UserWarning)
        out.add_(10)  # eager never runs this
        return x

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        check(fn, torch.randn(3), torch.zeros(3), rerun=False)


@pytest.mark.xfail(strict=True, reason="bytegraph's call wrapper is a frame of its own: a warning "
                   "attributed to the compiled function's caller (stacklevel past the compiled frame, "
                   "nn.Module's forward warning with stacklevel=2) names the wrapper's location")
def test_stacklevel_past_the_compiled_frame_names_the_callers_location():
    with warnings.catch_warnings(record=True) as log:
        def setup():
            log.clear()
            warnings.simplefilter("always")

        check(_deprecated, torch.randn(3), setup=setup, rerun=False,
              state=lambda: [(w.category, str(w.message), w.filename, w.lineno) for w in log])
