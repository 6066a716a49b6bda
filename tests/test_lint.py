"""The repository passes `ruff check` with the project's configuration (`[tool.ruff]` in
pyproject.toml: E, F and W at 120 columns), so a lint error fails the suite, not only a
separate lint step. Ruff comes with the `dev` extra; without it the test is skipped."""
import importlib.util
import pathlib
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _ruff() -> list[str] | None:
    """The command that runs the ruff of this environment: the `ruff` executable installed
    next to the interpreter (not resolved: a virtualenv's python is often a symlink), else
    `python -m ruff`; None when ruff is not installed."""
    exe = pathlib.Path(sys.executable).with_name("ruff.exe" if sys.platform == "win32" else "ruff")
    if exe.is_file():
        return [str(exe)]
    if importlib.util.find_spec("ruff") is not None:
        return [sys.executable, "-m", "ruff"]
    return None


def test_ruff_check_passes():
    ruff = _ruff()
    if ruff is None:
        pytest.skip("ruff is not installed in this environment (pip install -e '.[dev]')")
    # run from the root so ruff reads the project's pyproject.toml; no cache, so nothing is
    # written into the tree and no stale result is reused
    result = subprocess.run([*ruff, "check", "--no-cache", "."], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, (
        f"`{' '.join(ruff)} check --no-cache .` failed (exit {result.returncode}):\n{result.stdout}{result.stderr}"
    )
