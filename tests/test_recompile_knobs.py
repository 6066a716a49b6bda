"""torch.compile's recompile knobs in `bytegraph.config`, with torch's names and meanings:
`recompile_limit` (alias `cache_size_limit`) counted per code object across every compiled
wrapper of it, with torch's fallback past it (the frame runs eagerly, the entries compiled so
far keep serving their calls, one warning; `FailOnRecompileLimitHit` under `fullgraph=True` or
`fail_on_recompile_limit_hit`), `automatic_dynamic_shapes`, `assume_static_by_default` and
`force_parameter_static_shapes` (Note [Recompile limit] in runtime/code_state.py, Note [Symbolic
sizes] in graph/shapes.py). Every call is compared with eager; frame counts are the point."""
import os
import subprocess
import sys
import warnings

import pytest
import torch

import bytegraph
from helpers import CompileCounter, assert_same

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def knobs(monkeypatch):
    """Set `bytegraph.config` knobs for one test (put back afterwards)."""
    def set_(**values):
        for name, value in values.items():
            monkeypatch.setattr(bytegraph.config, name, value)
    return set_


def run_calls(fn, calls, counter=None, **compile_kwargs):
    """Call one compiled `fn` with each argument tuple of `calls` in turn, comparing every call
    with eager on fresh copies; returns (counter, RecompileLimitWarnings, compiled)."""
    counter = counter if counter is not None else CompileCounter()
    compiled = bytegraph.compile(fn, backend=counter, **compile_kwargs)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i, args in enumerate(calls):
            assert_same(fn(*_copies(args)), compiled(*_copies(args)), f"call #{i + 1}")
    return counter, [w for w in caught if issubclass(w.category, bytegraph.RecompileLimitWarning)], compiled


def _copies(args):
    return tuple(a.detach().clone() if isinstance(a, torch.Tensor) and type(a) is torch.Tensor else a for a in args)


def mul(x, y):
    return x * y


def six_sizes():
    """torch's test_automatic_dynamic_reduce_recompiles: sizes 2, 3, 4, 4, 5, 5, 6."""
    return [(torch.randn(n), torch.randn(n)) for n in (2, 3, 4, 4, 5, 5, 6)]


# ---------------------------------------------------------------- recompile_limit


def test_recompile_limit_is_cache_size_limit(knobs):
    config = bytegraph.config
    assert config.recompile_limit == config.cache_size_limit == 8
    assert config.accumulated_recompile_limit == config.accumulated_cache_size_limit == 256
    knobs(cache_size_limit=3)
    assert config.recompile_limit == 3
    knobs(recompile_limit=5)
    assert config.cache_size_limit == 5
    assert "cache_size_limit" not in vars(config)  # one value, two names


def test_recompile_limit_falls_back_to_eager_keeping_the_old_entries(knobs):
    knobs(recompile_limit=2)

    def scaled(x, k):
        return x * k + k

    x = torch.randn(3)
    counter, limit, compiled = run_calls(scaled, [(x, k) for k in (1, 2, 3, 4, 1, 2, 5)], dynamic=False)
    assert counter.frame_count == 2
    assert len(limit) == 1 and "kept failing is on k" in str(limit[0].message)
    assert len(compiled.__bg_compiled__.entries) == 2  # k == 1 and k == 2 still run compiled


def is_compiling_marks(x, n):
    x = x + n
    if torch.compiler.is_compiling():
        x = x + 1
    return x


def test_recompile_limit_runs_compiled_entries_after_the_limit(knobs):
    """torch's test_run_mode_after_cache_limit_hit: past the limit a miss runs eagerly (no
    `is_compiling()` step) and a hit still runs its compiled entry (with it)."""
    knobs(recompile_limit=2)
    counter = CompileCounter()
    compiled = bytegraph.compile(is_compiling_marks, backend=counter, dynamic=False)
    ones = torch.ones(3)
    with pytest.warns(bytegraph.RecompileLimitWarning):
        results = [compiled(ones, n) for n in (0, 1, 2, 3, 0, 1)]
    for result, expected in zip(results, (1, 2, 2, 3, 1, 2)):
        assert_same(ones + expected, result)
    assert counter.frame_count == 2


def test_recompile_limit_is_per_code_object_across_wrappers(knobs):
    """torch's test_dynamic_input: a new compiled wrapper per call, each with a new batch size
    (automatic dynamic off): the limit counts the code's entries, and warns once."""
    knobs(automatic_dynamic_shapes=False, recompile_limit=2)

    def double(x):
        return x + x

    counter = CompileCounter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for bsz in (3, 5, 7, 9, 11, 13):
            x = torch.randn(bsz, 3, 4)
            assert_same(double(x), bytegraph.compile(double, backend=counter)(x), f"batch {bsz}")
    assert counter.frame_count == 2
    assert len([w for w in caught if issubclass(w.category, bytegraph.RecompileLimitWarning)]) == 1


def test_wrappers_of_one_function_and_backend_share_entries():
    counter = CompileCounter()
    x = torch.randn(4)
    wrappers = []  # entries live as long as a wrapper does (Note [Recompile limit]); kept, not left to gc
    for _ in range(10):  # as torch.compile's cache on the code object: one capture, not ten
        wrappers.append(bytegraph.compile(mul, backend=counter))
        assert_same(mul(x, x), wrappers[-1](x, x))
    assert counter.frame_count == 1


def test_wrappers_with_other_backends_fullgraph_or_dynamic_do_not_share():
    x = torch.randn(4)
    first = CompileCounter()
    bytegraph.compile(mul, backend=first)(x, x)
    for kwargs in ({"fullgraph": True}, {"dynamic": True}, {"dynamic": False}):
        bytegraph.compile(mul, backend=first, **kwargs)(x, x)
    other = CompileCounter()
    bytegraph.compile(mul, backend=other)(x, x)
    assert (first.frame_count, other.frame_count) == (4, 1)


def make_adder(k):
    def add(x):
        return x + k
    return add


def test_wrappers_of_closures_over_other_cells_do_not_share():
    """Two functions of one code object, closing over different cells: each entry reads its own."""
    counter = CompileCounter()
    x = torch.randn(3)
    for k in (1.0, 2.0, 3.0):
        add = make_adder(k)
        assert_same(add(x), bytegraph.compile(add, backend=counter)(x), f"k={k}")
    assert counter.frame_count == 3


def test_fullgraph_past_the_limit_raises(knobs):
    """torch's test_recompile_limit_fullgraph_raises."""
    knobs(recompile_limit=1)

    def sine(x):
        return x.sin()

    compiled = bytegraph.compile(sine, backend=CompileCounter(), fullgraph=True)
    compiled(torch.randn(3))
    with pytest.raises(bytegraph.FailOnRecompileLimitHit, match="fullgraph=True"):
        compiled(torch.randn(3, dtype=torch.float64))


def test_fail_on_recompile_limit_hit(knobs):
    """torch's test_fail_on_recompile_limit_hit."""
    knobs(recompile_limit=1, fail_on_recompile_limit_hit=True)

    def branch(b, a):
        if a:
            return b * 2
        return b + 1

    compiled = bytegraph.compile(branch, backend=CompileCounter())
    compiled(torch.randn(5), True)
    with pytest.raises(bytegraph.FailOnRecompileLimitHit, match="fail_on_recompile_limit_hit"):
        compiled(torch.randn(5), False)
    assert isinstance(bytegraph.FailOnRecompileLimitHit(), Exception)


def test_accumulated_recompile_limit_caps_the_entries(knobs):
    knobs(recompile_limit=100, accumulated_recompile_limit=3)
    counter, limit, _ = run_calls(mul, [(torch.randn(3), k) for k in range(6)], dynamic=False)
    assert counter.frame_count == 3 and len(limit) == 1


def test_reset_forgets_the_code_objects(knobs):
    knobs(recompile_limit=1)
    x = torch.randn(3)
    counter, limit, compiled = run_calls(mul, [(x, 1), (x, 2)], dynamic=False)
    assert counter.frame_count == 1 and len(limit) == 1
    bytegraph.reset()
    assert_same(mul(x, 3), compiled(x, 3))
    assert counter.frame_count == 2


# ---------------------------------------------------------------- automatic_dynamic_shapes


@pytest.mark.parametrize("automatic, dynamic, frames", [
    (False, None, 5),   # each new size recompiles static
    (True, False, 5),   # dynamic=False turns automatic dynamic off
    (True, None, 2),    # static, then one dynamic entry for every later size
    (True, True, 1),    # dynamic from the start
])
def test_automatic_dynamic_shapes(knobs, automatic, dynamic, frames):
    """torch's test_automatic_dynamic_reduce_recompiles."""
    knobs(automatic_dynamic_shapes=automatic, assume_static_by_default=True)
    counter, _, _ = run_calls(mul, six_sizes(), dynamic=dynamic)
    assert (counter.frame_count, counter.op_count) == (frames, frames)


def flop(x, y):
    if x:
        return y * 2
    return y * y


@pytest.mark.parametrize("automatic, frames", [(False, 5), (True, 3)])
def test_automatic_dynamic_with_a_bool_that_flops(knobs, automatic, frames):
    """torch's test_recompiles_true_false_flop."""
    knobs(automatic_dynamic_shapes=automatic)
    calls = [(flag, torch.randn(n)) for flag, n in ((True, 2), (False, 2), (True, 3), (True, 4), (True, 5))]
    counter, _, _ = run_calls(flop, calls, fullgraph=True)
    assert counter.frame_count == frames


@pytest.mark.parametrize("automatic, frames", [(False, 5), (True, 3)])
def test_automatic_dynamic_when_an_argument_switches_between_tensor_and_int(knobs, automatic, frames):
    """torch's test_automatic_dynamic_tensor_scalar_change: a source that held a tensor and
    then an int is dynamic both ways (torch's FrameStateSizeEntry)."""
    knobs(automatic_dynamic_shapes=automatic)
    calls = []
    for n, y, repeat in ((2, None, 1), (3, 3, 1), (4, None, 2), (5, 4, 2), (6, None, 1)):
        calls += [(torch.randn(n), torch.randn(n) if y is None else y)] * repeat
    counter, _, _ = run_calls(mul, calls)
    assert counter.frame_count == frames


def test_automatic_dynamic_memory_is_per_code_object():
    """A new wrapper of the same code knows the sizes the earlier ones saw: its first capture of
    a changed size is dynamic, and a third wrapper reuses that entry."""
    counter = CompileCounter()
    for n in (2, 3, 4):
        x = torch.randn(n)
        assert_same(mul(x, x), bytegraph.compile(mul, backend=counter)(x, x), f"size {n}")
    assert counter.frame_count == 2


def test_automatic_dynamic_shapes_from_the_environment():
    code = ("import bytegraph, torch\n"
            "assert bytegraph.config.automatic_dynamic_shapes is False\n"
            "n = []\n"
            "f = bytegraph.compile(lambda x: x * 2, backend=lambda gm, ex: n.append(1) or gm.forward)\n"
            "for k in (2, 3, 4): f(torch.randn(k))\n"
            "print(len(n))\n")
    env = dict(os.environ, BYTEGRAPH_AUTOMATIC_DYNAMIC_SHAPES="0", PYTHONPATH=ROOT)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "3"


# ---------------------------------------------------------------- assume_static_by_default


def count_steps(x, n):
    return x * n + 1


def test_assume_static_by_default_false_is_dynamic_from_the_first_capture(knobs):
    knobs(assume_static_by_default=False)
    counter, _, _ = run_calls(mul, six_sizes())
    assert counter.frame_count == 1
    counter, _, _ = run_calls(count_steps, [(torch.randn(3), n) for n in (2, 3, 4)])
    assert counter.frame_count == 1  # ints read from outside too


def test_assume_static_by_default_false_keeps_mark_static(knobs):
    knobs(assume_static_by_default=False)
    counter = CompileCounter()
    compiled = bytegraph.compile(lambda x: x.sum(0), backend=counter)
    for n in (2, 3, 4):
        x = torch.randn(n, 3)
        bytegraph.mark_static(x, 0)
        assert_same(x.sum(0), compiled(x), f"size {n}")
    assert counter.frame_count == 3


# ---------------------------------------------------------------- force_parameter_static_shapes


W = torch.nn.Parameter(torch.randn(3, 2))


def param_matmul(x):
    return x @ W


@pytest.mark.parametrize("force, automatic, frames", [
    (True, False, 4), (True, True, 4), (False, False, 4), (False, True, 2)])
def test_force_parameter_static_shapes(knobs, force, automatic, frames):
    """torch's test_dynamic_shape_parameter_recompile: Parameters (here the argument) keep
    static sizes unless `force_parameter_static_shapes` is off."""
    knobs(force_parameter_static_shapes=force, automatic_dynamic_shapes=automatic)
    calls = [(torch.nn.Parameter(torch.randn(n, 3)),) for n in (1, 10, 11, 15, 15)]
    counter, _, _ = run_calls(param_matmul, calls, fullgraph=True)
    assert counter.frame_count == frames


class Window(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("window", torch.ones(2))

    def forward(self, x):
        return x * self.window.sum()


@pytest.mark.parametrize("force, frames", [(True, 3), (False, 2)])
def test_force_parameter_static_shapes_covers_module_buffers(knobs, force, frames):
    knobs(force_parameter_static_shapes=force)
    model = Window()
    counter = CompileCounter()
    compiled = bytegraph.compile(model, backend=counter)
    x = torch.randn(3)
    for n in (2, 3, 4):
        model.window = torch.ones(n)
        assert_same(model(x), compiled(x), f"window of {n}")
    assert counter.frame_count == frames


def test_dynamic_true_still_keeps_parameters_static_unless_told(knobs):
    lin = torch.nn.Linear(3, 2)

    def f(x, w):
        return lin(x) + w.sum()

    calls = [(torch.randn(5, 3), torch.nn.Parameter(torch.randn(n))) for n in (6, 7, 8)]
    counter, _, _ = run_calls(f, calls, dynamic=True)
    assert counter.frame_count == 3
    bytegraph.reset()
    knobs(force_parameter_static_shapes=False)
    counter, _, _ = run_calls(f, calls, dynamic=True)
    assert counter.frame_count == 1
