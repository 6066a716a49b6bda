"""The compile report: what bytegraph compiled, as static HTML a person can browse, link to
or attach to a bug report (the role of torch's `TORCH_TRACE` + `tlparse`).

`BYTEGRAPH_REPORT=DIR python prog.py`, or `with bytegraph.report(DIR): ...`, writes
`DIR/index.html` while the program runs: every compiled function or module with its entries,
recompiles, graphs, breaks, ops and capture time (trace / guards / backend), a timeline and
a graph-break map; and a page per compiled frame with its source (break lines highlighted,
with `explain`'s reason and hint), each graph's FX code and op counts, its guards pointing at
the user's lines, its resume functions and callees, each recompile's failing guard and value,
and the side effects replayed. `python -m bytegraph.report DIR` renders it again and opens it.

The package sits above the runtime and only listens to it (`runtime/root_frames.py`:
`LISTENERS`, `RECOMPILE_LISTENERS`): `recorder.py` turns events into records (`records.py`),
`views.py` and `timeline.py` compute what the pages show, `render.py` writes them with the
templates in `templates/`, `session.py` decides when, `cli.py` renders saved records again.
With no report open nothing of this runs: no listener is attached.
"""
from .session import Session, report, start_from_env

__all__ = ["Session", "report"]

start_from_env()
