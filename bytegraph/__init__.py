"""bytegraph: a pure-Python graph-capture JIT for PyTorch (CPython 3.11 to 3.13).

`bytegraph.compile(fn)` symbolically executes `fn`'s bytecode, records tensor work into
torch.fx graphs, compiles them with a backend, guards them, and runs them on later calls.
"""
import sys

_SUPPORTED = ((3, 11), (3, 12), (3, 13))  # `_bytecode.versions.SUPPORTED`, checked before anything is imported
if sys.version_info[:2] not in _SUPPORTED:
    raise ImportError(f"bytegraph supports CPython {', '.join('%d.%d' % v for v in _SUPPORTED)} (it translates "
                      f"their bytecode); this is Python {'%d.%d' % sys.version_info[:2]}")

from . import config  # noqa: E402
from .api import compile, reset  # noqa: E402
from .errors import FailOnRecompileLimitHit, Unsupported  # noqa: E402
from .hints import graph_break  # noqa: E402
from .explain import explain  # noqa: E402
from .report import report  # noqa: E402  (the package bytegraph.report; the name is its context manager)
from .runtime import compiled_autograd  # noqa: E402
from .hints import mark_dynamic, mark_static, maybe_mark_dynamic  # noqa: E402
from .control_flow import cond, map  # noqa: E402
from .runtime.counters import counters  # noqa: E402
from .runtime.compiled_function import RecompileLimitWarning  # noqa: E402
from .runtime.capture_cache import CaptureCacheWarning  # noqa: E402
from .runtime.global_hooks import GlobalModuleHooksWarning  # noqa: E402
from .runtime.logs import set_logs  # noqa: E402
from .runtime.verify import VerifyError  # noqa: E402
from .graph.output_graph import warm_up as _warm_up  # noqa: E402

_warm_up()

__all__ = ["compile", "reset", "config", "Unsupported", "RecompileLimitWarning", "CaptureCacheWarning",
           "FailOnRecompileLimitHit", "GlobalModuleHooksWarning", "set_logs", "graph_break", "explain",
           "compiled_autograd", "mark_dynamic",
           "maybe_mark_dynamic", "mark_static", "cond", "map", "counters", "VerifyError", "report"]
