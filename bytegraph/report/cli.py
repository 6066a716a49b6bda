"""`python -m bytegraph.report DIR` (or `bytegraph-report DIR`): render the report saved in
DIR again from its records (after an upgrade, or to rebuild deleted pages) and open its
index in the browser.
"""
from __future__ import annotations

import argparse
import pathlib
import sys
import webbrowser

from .render import load_report, write_report


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bytegraph.report",
                                     description="Render a bytegraph compile report (BYTEGRAPH_REPORT=DIR) "
                                                 "again and open it.")
    parser.add_argument("directory", help="the report's directory (the one BYTEGRAPH_REPORT named)")
    parser.add_argument("--no-open", action="store_true", help="only render; do not open a browser")
    args = parser.parse_args(argv)
    directory = pathlib.Path(args.directory)
    if not (directory / "data" / "run.json").is_file():
        print(f"{directory} holds no bytegraph report (no data/run.json); write one with "
              f"BYTEGRAPH_REPORT={directory} python your_program.py", file=sys.stderr)
        return 2
    run, frames = load_report(directory)
    index = write_report(directory, run, frames)
    print(index.resolve())
    if not args.no_open:
        webbrowser.open(index.resolve().as_uri())
    return 0
