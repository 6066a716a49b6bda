"""The fuzzer's own parts: the generator is deterministic and covers every feature, the
runner tells each verdict apart (a deliberately wrong backend), the shrinker reduces a
failing program and keeps it failing the same way."""
import ast
import time

import torch

from .generator import FULL_PROFILE, PREAMBLE, generate
from .profiles import CI_EXCLUDED, PROFILES
from .runner import run_source
from .shrink import save, seed_of_file, shrink

# text each feature's code contains: the full profile must produce all of them
MARKERS = {
    "dict_views": ".keys()", "live_iterators": "reversed(", "dict_iter_raise": "LOG.append(next(di", "classes": "@property",
    "state_arg": "st.", "closures": "nonlocal", "globals": "global ", "defaults": "seen=[]",
    "varargs": "**kw", "generators": "yield ", "yield_from": "yield from", "exceptions": "except ",
    "raises": "boom", "try_finally": "finally:", "ctx_manager": "__enter__", "no_grad": "torch.no_grad()",
    "hooks": "register_hook", "modules": "torch.nn.Linear", "itertools": "itertools.",
    "collections": "collections.", "brk_print": "print(", "brk_item": ".item()", "brk_graph_break":
    "bytegraph.graph_break()", "brk_unsupported": "time.perf_counter()", "brk_tensor_while": ".abs().sum() > 1 and",
}


def test_generator_is_deterministic_and_valid():
    for seed in range(20):
        src = generate(seed)
        assert src == generate(seed)
        ast.parse(src)
    assert generate(1) != generate(2)


def test_full_profile_produces_every_feature():
    text = "".join(generate(seed, FULL_PROFILE) for seed in range(150))
    missing = [f for f, marker in MARKERS.items() if marker not in text]
    assert not missing


def test_ci_profile_leaves_out_the_excluded_features():
    assert set(CI_EXCLUDED) <= FULL_PROFILE and PROFILES["ci"] == FULL_PROFILE - set(CI_EXCLUDED)
    without = FULL_PROFILE - {"collections", "dict_views", "live_iterators"}  # how an exclusion acts
    text = "".join(generate(seed, without) for seed in range(150))
    assert "collections." not in text and ".keys()" not in text and "reversed(" not in text


def _off_by_one(gm, example_inputs):
    """A wrong backend: every floating graph output is shifted."""
    def run(*args):
        outs = gm.forward(*args)
        return type(outs)(o + 1 if isinstance(o, torch.Tensor) and o.is_floating_point() else o for o in outs)
    return run


def _raising(gm, example_inputs):
    def run(*args):
        raise RuntimeError("backend broke")
    return run


def _hanging(gm, example_inputs):
    def run(*args):
        while True:
            time.sleep(0.01)
    return run


PROGRAM = PREAMBLE.format(seed=0, n0=1) + '''
def fuzzed(x, y, n, st):
    a = x * 2
    st.log.append(n)
    b = y + 1
    print('b', n)
    c = a.sin() + b
    LOG.append(n)
    return c, n
'''


def test_runner_verdicts():
    assert run_source(PROGRAM, 0).kind == "ok"
    v = run_source(PROGRAM, 0, backend=_off_by_one)
    assert (v.kind, v.signature) == ("mismatch", "mismatch:output:values")
    assert run_source(PROGRAM, 0, backend=_raising).signature == "raises_compiled:RuntimeError"
    assert run_source(PROGRAM, 0, backend=_hanging, timeout=0.3).kind == "timeout"
    hang = PREAMBLE.format(seed=0, n0=1) + "\ndef fuzzed(x, y, n, st):\n    while True:\n        pass\n"
    assert run_source(hang, 0, timeout=0.3).kind == "invalid"
    assert run_source("def fuzzed(:", 0).kind == "invalid"


def test_shrinker_keeps_the_failure_and_saves_a_replayable_file(tmp_path):
    target = run_source(PROGRAM, 0, backend=_off_by_one)
    small = shrink(PROGRAM, 0, target, make_backend=lambda: _off_by_one)
    assert len(small.splitlines()) < len(PROGRAM.splitlines())
    assert "print(" not in small and "LOG.append" not in small
    assert run_source(small, 0, backend=_off_by_one).signature == target.signature
    path = save(small, 7, target, "test", str(tmp_path))
    text = open(path).read()
    assert seed_of_file(text) == 7 and "--replay" in text
    assert run_source(text, 7).kind == "ok"  # with the real backend the program is fine
