"""The persistent capture cache (Note [Capture cache]), across real processes.

Each case writes a small module to a temporary directory and runs `python runner.py` (this
file's `_RUNNER`) with `BYTEGRAPH_CACHE_DIR` set to a temporary cache: the child compiles a
function of the module, calls it on fresh inputs, runs the original on copies, and prints
whether outputs and the module's side effects agree, how many captures ran (the runtime's
`capture` is counted) and the `capture_cache` counters. The suite's own processes never use
a cache (tests/conftest.py sets `BYTEGRAPH_CACHE_DIR=""`).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import bytegraph

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_RUNNER = '''
import importlib, json, sys, warnings
sys.path.insert(0, sys.argv[1])
import torch
import bytegraph
from bytegraph.runtime import compiled_function

spec = json.loads(sys.argv[2])
traced = []
capture = compiled_function.capture
def counted(*args, **kwargs):
    traced.append(1)
    return capture(*args, **kwargs)
compiled_function.capture = counted
if "cap" in spec:
    bytegraph.config.cache_size_bytes = spec["cap"]
module = importlib.import_module(spec["module"])
fn = getattr(module, spec.get("fn", "f"))
dtype = getattr(torch, spec.get("dtype", "float32"))
torch.manual_seed(0)
x, y = torch.randn(*spec["shape"]).to(dtype), torch.randn(*spec["shape"]).to(dtype)
compiled = bytegraph.compile(fn, backend=spec.get("backend", "eager"))
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    got = compiled(x.clone(), y.clone())
    effects = list(module.LOG)
    del module.LOG[:]
expected = fn(x.clone(), y.clone())
close = torch.allclose(got, expected, atol=1e-6) if spec.get("backend") == "inductor" else torch.equal(got, expected)
same = close and effects == module.LOG
lines = []
if "then_shape" in spec:  # a second call that misses: the recompile log names the entries tried
    import logging
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    logging.getLogger("bytegraph.recompiles").addHandler(handler)
    bytegraph.set_logs("recompiles")
    z = torch.randn(*spec["then_shape"])
    del module.LOG[:]
    got = compiled(z.clone(), z.clone())
    effects = list(module.LOG)
    del module.LOG[:]
    same = same and torch.equal(got, fn(z.clone(), z.clone())) and effects == module.LOG
print(json.dumps({"same": same, "traced": len(traced),
                  "cache": dict(bytegraph.counters["capture_cache"]), "recompiles": lines,
                  "warnings": [str(w.message) for w in caught if w.category is bytegraph.CaptureCacheWarning]}))
'''

_HELPERS = '''
def helper(x):
    return x.sin() * 2
'''

_MODULE = '''
import torch
import bytegraph
from helpers_mod import helper

LOG = []
SCALE = 3


def f(x, y):
    LOG.append(x.shape[0])
    return helper(x) + y.cos() * SCALE


def g(x, y):
    return x - y


def broken(x, y):
    x = x + 1
    bytegraph.graph_break()
    return x * y
'''


@pytest.fixture
def workdir(tmp_path):
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "helpers_mod.py").write_text(_HELPERS)
    (tmp_path / "code" / "user_mod.py").write_text(_MODULE)
    (tmp_path / "runner.py").write_text(_RUNNER)
    return tmp_path


def _env(cache) -> dict:
    env = dict(os.environ, BYTEGRAPH_CACHE_DIR=str(cache), PYTHONPATH=_ROOT, PYTHONDONTWRITEBYTECODE="1")
    env.pop("BYTEGRAPH_VERIFY", None)
    return env


def _args(workdir, **spec) -> list:
    spec.setdefault("module", "user_mod")
    spec.setdefault("shape", [3, 4])
    return [sys.executable, str(workdir / "runner.py"), str(workdir / "code"), json.dumps(spec)]


def _run(workdir, cache=None, extra_env=None, **spec) -> dict:
    cache = workdir / "cache" if cache is None else cache
    out = subprocess.run(_args(workdir, **spec), env={**_env(cache), **(extra_env or {})}, capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["same"], result
    return result


def _entry_files(cache) -> list:
    return sorted(str(p) for p in (cache / "captures").rglob("*.bin")) if (cache / "captures").exists() else []


def test_second_process_runs_without_tracing(workdir):
    first = _run(workdir)
    assert first["traced"] == 1 and first["cache"] == {"misses": 1, "writes": 1}
    assert len(_entry_files(workdir / "cache")) == 1
    second = _run(workdir)
    assert second["traced"] == 0 and second["cache"] == {"hits": 1}
    assert second["warnings"] == []


def test_changed_function_source_is_not_reused(workdir):
    _run(workdir)
    path = workdir / "code" / "user_mod.py"
    path.write_text(path.read_text().replace("y.cos() * SCALE", "y.cos() * SCALE + 1"))
    second = _run(workdir)
    assert second["traced"] == 1 and second["cache"].get("hits", 0) == 0


def test_changed_inlined_helper_is_not_reused(workdir):
    """The helper's file changes but not the compiled function's (the same key): the guards
    would pass (they name the helper's code, found again by name); the file's hash does not."""
    _run(workdir)
    path = workdir / "code" / "helpers_mod.py"
    path.write_text(path.read_text().replace("x.sin() * 2", "x.sin() * 5"))
    second = _run(workdir)
    assert second["traced"] == 1 and second["cache"] == {"ignored": 1, "misses": 1, "writes": 1}
    assert second["warnings"] == []  # a stale entry is not a broken one


@pytest.mark.parametrize("damage", ["garbage", "truncated"])
def test_corrupt_files_warn_once_and_capture(workdir, damage):
    _run(workdir)
    _run(workdir, fn="g")
    files = _entry_files(workdir / "cache")
    assert len(files) == 2
    for name in files:
        data = open(name, "rb").read()
        with open(name, "wb") as f:
            f.write(b"\x00garbage" * 10 if damage == "garbage" else data[:len(data) // 2])
    second = _run(workdir)
    assert second["traced"] == 1 and second["cache"]["ignored"] == 1
    assert len(second["warnings"]) == 1 and "ignored" in second["warnings"][0]


def test_foreign_file_is_ignored(workdir):
    _run(workdir)
    _run(workdir, fn="g")
    f_file, g_file = sorted(_entry_files(workdir / "cache"), key=os.path.getmtime)
    os.replace(f_file, g_file)  # f's entry in g's place: under g's key
    second = _run(workdir, fn="g")
    assert second["cache"]["ignored"] == 1 and len(second["warnings"]) == 1 and "foreign" in second["warnings"][0]


@pytest.mark.parametrize("change", [{"shape": [5, 4]}, {"dtype": "float64"}])
def test_failing_guard_captures(workdir, change):
    _run(workdir)
    second = _run(workdir, **change)
    assert second["traced"] == 1 and second["cache"] == {"misses": 1, "writes": 1}
    assert len(_entry_files(workdir / "cache")) == 2
    third = _run(workdir, **change)
    assert third["traced"] == 0 and third["cache"] == {"hits": 1}


def test_disabled_with_empty_dir(workdir):
    result = _run(workdir, cache="")
    assert result["traced"] == 1 and result["cache"] == {}
    assert not (workdir / "cache").exists()


def test_concurrent_writers(workdir):
    procs = [subprocess.Popen(_args(workdir), env=_env(workdir / "cache"), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        result = json.loads(out.strip().splitlines()[-1])
        assert result["same"] and result["warnings"] == []
    assert len(_entry_files(workdir / "cache")) == 1  # the same entry, written under the same name
    assert not [p for p in (workdir / "cache").rglob(".tmp-*")]
    assert _run(workdir)["cache"] == {"hits": 1}


def test_eviction_under_a_tiny_cap(workdir):
    _run(workdir)
    size = os.path.getsize(_entry_files(workdir / "cache")[0])
    _run(workdir, fn="g", cap=size + 1)  # g's entry is written, then f's (older) is evicted
    files = _entry_files(workdir / "cache")
    assert len(files) == 1
    assert _run(workdir, fn="g")["cache"] == {"hits": 1}
    assert _run(workdir)["traced"] == 1


def test_graph_break_is_not_written(workdir):
    result = _run(workdir, fn="broken")
    assert result["traced"] >= 1 and "writes" not in result["cache"]
    assert _entry_files(workdir / "cache") == []


def test_recompile_after_a_hit_says_the_entry_came_from_the_cache(workdir):
    """And it is dynamic, as after a capture of the first shape (automatic dynamic's memory is
    kept with the entry): an entry with symbolic sizes is not written."""
    _run(workdir)
    second = _run(workdir, then_shape=[6, 4])
    assert second["traced"] == 1 and second["cache"] == {"hits": 1}
    assert "from the capture cache" in "\n".join(second["recompiles"]), second["recompiles"]


@pytest.mark.slow
def test_inductor_warm_start(workdir):
    """The stored graph goes to inductor at its first call, in a process that traced nothing."""
    env = {"TORCHINDUCTOR_CACHE_DIR": str(workdir / "inductor")}
    first = _run(workdir, backend="inductor", extra_env=env)
    assert first["cache"] == {"misses": 1, "writes": 1}
    second = _run(workdir, backend="inductor", extra_env=env)
    assert second["traced"] == 0 and second["cache"] == {"hits": 1}


def _recipe_target():
    return 1


class _Holder:
    def method(self):
        return [lambda: i for i in range(2)]


def test_recipes_find_objects_again():
    """In one process: every recipe resolves to the very object it was made for."""
    import torch

    from bytegraph.runtime.recipes import Recipes, resolve

    recipes = Recipes()
    nested = _Holder.method.__code__.co_consts
    objects = [_recipe_target, _recipe_target.__code__, _Holder, _Holder.method.__code__, list.append, dict.get,
               torch.Tensor, torch.float32, torch.device("cpu"), os, vars(os), torch.nn.functional.linear,
               torch.ops.aten.add.Tensor, (1, "a", None), type(_recipe_target), torch._C._set_grad_enabled,
               *[c for c in nested if hasattr(c, "co_code")]]
    for obj in objects:
        recipe, kind = recipes.of(obj)
        found = resolve(recipe, kind)
        assert found is obj or (recipe[0] == "v" and found == obj), (obj, recipe)
    assert _Holder.method.__code__.co_filename in recipes.files


def test_recipes_refuse_what_they_cannot_find():
    from bytegraph.runtime.recipes import NotCacheable, RecipeMismatch, Recipes, resolve

    recipes = Recipes()
    for obj in (object(), [1, 2], {"a": 1}, lambda: 0, _Holder()):
        with pytest.raises(NotCacheable):
            recipes.of(obj)
    assert recipes.of([1, 2], copies=True) == (("v", [1, 2]), "builtins.list")  # a guard's expected value
    with pytest.raises(RecipeMismatch):
        resolve(("a", __name__, "_recipe_target"), "builtins.type")
    with pytest.raises(RecipeMismatch):
        resolve(("a", __name__, "no_such_name"), "builtins.function")


def test_suite_runs_without_a_cache():
    assert bytegraph.config.cache_dir == ""
