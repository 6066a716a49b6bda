"""The fuzzer's own parts: the generator is deterministic and covers every feature, the
runner tells each verdict apart (a deliberately wrong backend), the shrinker reduces a
failing program and keeps it failing the same way."""
import ast
import re
import sys
import time

import pytest
import torch

from .generator import FULL_PROFILE, PREAMBLE, generate
from .profiles import CI_EXCLUDED, PROFILES
from .runner import Mismatch, call, compare_call, load, run_source
from .shrink import save, seed_of_file, shrink

# text each feature's code contains: the full profile must produce all of them
MARKERS = {
    "dict_views": ".keys()", "live_iterators": "reversed(", "dict_iter_raise": "LOG.append(next(di",
    "classes": "@property", "state_arg": "st.", "closures": "nonlocal", "globals": "global ", "defaults": "seen=[]",
    "varargs": "**kw", "generators": "yield ", "yield_from": "yield from", "exceptions": "except ",
    "raises": "boom", "try_finally": "finally:", "ctx_manager": "__enter__", "no_grad": "torch.no_grad()",
    "hooks": "register_hook", "modules": "torch.nn.Linear", "itertools": "itertools.",
    "collections": "collections.", "brk_print": "print(", "brk_item": ".item()", "brk_graph_break":
    "bytegraph.graph_break()", "brk_unsupported": "time.perf_counter()", "brk_tensor_while": ".abs().sum() > 1 and",
    "globals_dict": "globals().", "dynamic_raise": "except (ZeroDivisionError, IndexError)", "effects_raise": " * 1.5",
    "custom_exc": "class FuzzError(Exception)",
}


# globals_dict, dynamic_raise, effects_raise, custom_exc (regular expressions): each must occur in the programs
NEW_FEATURE_PATTERNS = {
    "globals_dict": [r"(GD\d+) = globals\(\)\.get\('\1', 0\) \+ 1", r"if 'GD\d+' in globals\(\):",
                     r"globals\(\)\[nm\d+\]", r"vars\(sys\.modules\[__name__\]\)",
                     r"sys\.modules\[__name__\]\.__dict__", r"\n +del GD\d+\n", r"global .*GD\d+"],
    "dynamic_raise": [r"except ZeroDivisionError as", r"except IndexError as",
                      r"except \(ZeroDivisionError, IndexError\)",
                      r"CN\d+ \+= 1", r"st\.count", r"len\(st\.items\)", r"\w+ // \(", r"% \(\w+ - \d\)",
                      r"\]\[\w+ \* 2 - \d\]", r"LOG\.append\(\(type\(e\d+\)\.__name__, str\(e\d+\)"],
    "effects_raise": [r"global .*S\d+", r"(S\d+) = \1 \* 1\.5", r"st\.last = ", r"S\d+T\.add_\(",
                      r"SL\d+\.append\(", r"SD\d+\[", r"raise \w+\(f'after effects"],
    "custom_exc": [r"class FuzzError\(Exception\):\n    def __init__\(self, msg, code\):\n"
                   r"        super\(\)\.__init__\(msg\)\n        self\.code = code", r"raise FuzzError\(",
                   r"e\d+\.code \+= 1", r"\n +raise\n", r"raise e\d+\n", r"from e\d+\n", r"\* e\d+\.code"],
}
BREAK_LINE = re.compile(r"bytegraph\.graph_break\(\)|print\(|\.item\(\)|time\.perf_counter\(\)|\.sum\(\) >")


def _break_in_handler(src: str) -> bool:
    """A graph break in the first lines of an except handler."""
    lines = src.splitlines()
    return any(line.lstrip().startswith("except ") and any(BREAK_LINE.search(b) for b in lines[i + 1:i + 3])
               for i, line in enumerate(lines))


def test_new_features_appear_in_generated_programs_which_parse():
    programs = [generate(seed) for seed in range(200)]
    for src in programs:
        ast.parse(src)
        compile(src, "<fuzz>", "exec")
    text = "\n".join(programs)
    missing = {f: [p for p in pats if not re.search(p, text)] for f, pats in NEW_FEATURE_PATTERNS.items()}
    assert not any(missing.values()), missing
    # each feature is in many programs, not in one lucky seed
    per_program = {"globals_dict": r"globals\(\)",
                   "dynamic_raise": r"except (ZeroDivisionError|IndexError|ArithmeticError|LookupError|"
                                    r"\(ZeroDivisionError, IndexError\)) as e\d+:",
                   "effects_raise": r"(S\d+) = \1 \* 1\.5", "custom_exc": r"raise FuzzError\("}
    counts = {f: sum(bool(re.search(p, src)) for src in programs) for f, p in per_program.items()}
    assert min(counts.values()) >= 10, counts
    assert sum(_break_in_handler(src) for src in programs) >= 20


def test_each_new_feature_can_be_left_out():
    only_marker = {"globals_dict": "globals()", "custom_exc": "FuzzError", "effects_raise": " * 1.5",
                   "dynamic_raise": "except (ZeroDivisionError, IndexError)"}
    for feature, marker in only_marker.items():
        assert marker not in "".join(generate(seed, FULL_PROFILE - {feature}) for seed in range(100)), feature
        alone = FULL_PROFILE - (set(only_marker) - {feature})
        assert marker in "".join(generate(seed, alone) for seed in range(100)), feature
    assert not any(_break_in_handler(generate(seed, FULL_PROFILE - {"in_except"})) for seed in range(100))


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


CODED = PREAMBLE.format(seed=0, n0=1) + '''
class FuzzError(Exception):
    def __init__(self, msg, code):
        super().__init__(msg)
        self.code = code


def fuzzed(x, y, n, st):
    sys.modules[__name__].__dict__["G"] = vars(sys.modules[__name__]).get("G", 0) + st.count
    raise FuzzError("m", globals()["G"])
'''


def test_runner_programs_are_modules_and_exception_attributes_are_compared():
    a, b = load(CODED, "<a>", 0), load(CODED, "<b>", 0)
    results = [call(ns["fuzzed"], ns["make_inputs"](2), 0, 5.0, ns) for ns in (a, b)]
    assert [r.exc.code for r in results] == [2, 2] and a["G"] == b["G"] == 2
    assert "fuzz_program" not in sys.modules  # installed only while a side loads or runs
    compare_call(*results, a, b)
    results[1].exc.code = 3  # same type and message, another `e.code`
    with pytest.raises(Mismatch, match=r"exception\['attrs'\]\['code'\]"):
        compare_call(*results, a, b)
