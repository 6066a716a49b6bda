"""The opcode handlers of the running interpreter's version, stacked: 3.12's over the 3.11
families, 3.13's over 3.12's (docs/python-versions.md). `VERSION_HANDLERS` is empty on 3.11.
"""
from __future__ import annotations

from .._bytecode.versions import PY
from . import ops_py312, ops_py313

VERSION_HANDLERS: dict = {**(ops_py312.HANDLERS if PY >= (3, 12) else {}),
                          **(ops_py313.HANDLERS if PY >= (3, 13) else {})}
