"""Logging topics (`BYTEGRAPH_LOGS=graph,guards,...` or `bytegraph.set_logs(...)`).

Each topic is the stdlib logger `bytegraph.<topic>`; quiet (WARNING) by default.
"""
from __future__ import annotations

import logging
import os
import sys

TOPICS = ("graph", "graph_breaks", "guards", "recompiles", "bytecode", "perf", "verify", "capture_cache", "ddp")

_handler = logging.StreamHandler(sys.stderr)
_handler.setFormatter(logging.Formatter("[bytegraph.%(topic)s] %(message)s"))


class _TopicFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.topic = record.name.rsplit(".", 1)[-1]
        return True


_handler.addFilter(_TopicFilter())
_root = logging.getLogger("bytegraph")
_root.addHandler(_handler)
_root.setLevel(logging.WARNING)
_root.propagate = False


def logger(topic: str) -> logging.Logger:
    return logging.getLogger(f"bytegraph.{topic}")


def set_logs(*topics: str) -> None:
    """Turn on the given topics (and turn off all others); `set_logs()` silences all."""
    unknown = set(topics) - set(TOPICS)
    if unknown:
        raise ValueError(f"unknown log topics {sorted(unknown)}; valid topics: {', '.join(TOPICS)}")
    for topic in TOPICS:
        logger(topic).setLevel(logging.DEBUG if topic in topics else logging.WARNING)


def _from_env() -> None:
    value = os.environ.get("BYTEGRAPH_LOGS", "")
    topics = [t.strip() for t in value.split(",") if t.strip()]
    if topics:
        set_logs(*topics)


_from_env()
