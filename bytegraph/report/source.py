"""The user's source, as the compile report shows it: a function's lines, the line at a
`file:line` location and the lines around it, and the function a line belongs to.

Read through `linecache` (what tracebacks use); a file that cannot be read gives no lines,
never an error: the report then shows the location alone.
"""
from __future__ import annotations

import ast
import functools
import inspect
import linecache
import tokenize
import types


def split_location(location: str) -> tuple[str, int]:
    """`("path", line)` of a `path:line` location; `("", 0)` when it is not one."""
    path, _, line = location.rpartition(":")
    return (path, int(line)) if path and line.isdigit() else ("", 0)


def line_text(location: str) -> str:
    """The source of the line at `location`, stripped ("" when unknown)."""
    path, line = split_location(location)
    return linecache.getline(path, line).strip() if path else ""


def function_lines(code: types.CodeType | None) -> tuple[int, list[str]]:
    """(first line number, lines) of the function whose code is `code`, decorators included."""
    if code is None:
        return 0, []
    lines = linecache.getlines(code.co_filename)
    first = code.co_firstlineno
    if not 1 <= first <= len(lines):
        return 0, []
    try:
        block = inspect.getblock(lines[first - 1:])
    except (tokenize.TokenError, SyntaxError):  # not a whole block: up to the code's last line
        last = max((line for _, _, line in code.co_lines() if line), default=first)
        block = lines[first - 1:last]
    return first, [line.rstrip("\n") for line in block]


def around(location: str, radius: int = 3) -> tuple[int, list[str]]:
    """(first line number, lines) of the `radius` lines either side of `location`."""
    path, line = split_location(location)
    lines = linecache.getlines(path) if path else []
    if not 1 <= line <= len(lines):
        return 0, []
    first = max(1, line - radius)
    return first, [text.rstrip("\n") for text in lines[first - 1:line + radius]]


def enclosing_function(location: str) -> str:
    """The qualified name of the innermost function (or class body) whose lines hold
    `location` (`GPT2Attention.forward`), "" at module level or when the file is unknown."""
    path, line = split_location(location)
    best = ""
    for start, end, name in _spans(path) if path else ():
        if start <= line <= end:
            best = name  # spans are outermost first, so the last hit is the innermost
    return best


@functools.lru_cache(maxsize=64)
def _spans(path: str) -> tuple:
    """(first line, last line, qualified name) of every function and class in the file, outermost first."""
    text = "".join(linecache.getlines(path))
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return ()
    spans = []

    def visit(node, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                spans.append((start, child.end_lineno, name))
                inner = f"{name}.<locals>." if not isinstance(child, ast.ClassDef) else f"{name}."
                visit(child, inner)
            else:
                visit(child, prefix)

    visit(tree, "")
    return tuple(spans)
