"""A live compile report: attaches a `Recorder` to the runtime and writes the report into
its directory while the program runs, and once more when it ends.

Writing is throttled: after a write, the next one waits for `interval` seconds and for 20
times as long as that write took, so the report costs at most a few percent of the run
however large it grows (`interval=None`: a write after every event, for tests); the last
events are written by `close` (the end of the `with` block, or, under `BYTEGRAPH_REPORT`,
the interpreter's exit, also after an uncaught exception, which the report then names).
Only the pages of frames that changed (and of the frames that called them) are written again.
"""
from __future__ import annotations

import atexit
import datetime
import os
import pathlib
import shlex
import sys
import time

from .recorder import Recorder
from .records import RunRecord
from .render import write_report


class Session:
    """`bytegraph.report(directory)`: a context manager (or `start()`/`close()`) that reports
    every capture made while it is open into `directory`."""

    def __init__(self, directory, title: str | None = None, interval: float | None = 1.0):
        self.directory = pathlib.Path(directory)
        argv = [os.path.basename(sys.argv[0]), *sys.argv[1:]] if sys.argv and sys.argv[0] else ["python"]
        started = datetime.datetime.now().isoformat(sep=" ", timespec="seconds")
        self.run = RunRecord(title if title is not None else shlex.join(argv), started, os.getcwd())
        self.recorder = Recorder(self._changed)
        self.interval = interval
        self.index = self.directory / "index.html"
        self.open = False
        self._next_write = 0.0

    def start(self) -> "Session":
        self.recorder.attach()
        self.open = True
        self.write()
        return self

    def close(self, error: BaseException | None = None) -> None:
        """Stop recording and write the whole report (naming `error` if the run raised it)."""
        if not self.open:
            return
        self.open = False
        self.recorder.detach()
        if error is not None:
            self.note_error(error)
        self.run.finished = True
        self.write()

    def note_error(self, error: BaseException) -> None:
        self.run.error = f"{type(error).__name__}: {error}".splitlines()[0][:300]

    def write(self) -> None:
        began = time.monotonic()
        write_report(self.directory, self.run, list(self.recorder.frames.values()), self.recorder.take_dirty())
        took = time.monotonic() - began
        if self.interval is not None:
            self._next_write = time.monotonic() + max(self.interval, 20 * took)

    def _changed(self) -> None:
        if time.monotonic() >= self._next_write:
            self.write()

    def __enter__(self) -> "Session":
        return self.start() if not self.open else self

    def __exit__(self, exc_type, exc, tb) -> bool:
        self.close(exc)
        return False


def report(directory, *, title: str | None = None) -> Session:
    """Write a compile report of what is compiled inside `with bytegraph.report(directory):`
    (see `bytegraph/report/__init__.py`)."""
    return Session(directory, title)


def start_from_env(environ=os.environ) -> Session | None:
    """`BYTEGRAPH_REPORT=DIR`: report the whole run into DIR, written at exit (an uncaught
    exception is named in it)."""
    directory = environ.get("BYTEGRAPH_REPORT", "").strip()
    if not directory:
        return None
    session = Session(directory).start()
    previous = sys.excepthook

    def excepthook(exc_type, exc, tb):
        session.note_error(exc)
        previous(exc_type, exc, tb)

    sys.excepthook = excepthook
    atexit.register(_close_and_tell, session)
    return session


def _close_and_tell(session: Session) -> None:
    """The end of a `BYTEGRAPH_REPORT` run: the last write, and one line saying where it went."""
    session.close()
    print(f"bytegraph: compile report written to {session.index} "
          f"(open it in a browser, or run: python -m bytegraph.report {shlex.quote(str(session.directory))})",
          file=sys.stderr)
