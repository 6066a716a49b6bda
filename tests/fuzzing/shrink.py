"""Shrinking a failing fuzz program to a small one that fails the same way, and saving it.

Delta debugging over the program's `ast` (the harness, `make_inputs` and `State`, is left
alone): drop elements of tuple/list displays and replace a binary operation by one of its
operands (so a returned value no longer needs the statements computing it); for every list
of statements (module, function and class bodies, loop/if/with/try blocks) remove chunks of
halving size; replace each compound statement by one of its blocks (an `if` by a branch, a
loop or `with` by its body, a `try` by its body plus its `finally`). A change is kept when
the program still gives a verdict with the same signature (`Verdict.signature`: the class
and what differs). Repeats until nothing more can go.
"""
from __future__ import annotations

import ast
import os
import time

from .runner import Verdict, run_source

FAILURES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "failures")

_BLOCK_FIELDS = ("body", "orelse", "finalbody")


_FIXED = ("make_inputs", "State")  # the harness part of every program: never shrunk


def _statement_lists(tree):
    """Every list of statements in the tree (pre-order), with the handlers' bodies."""
    out, todo = [], [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in _FIXED:
            continue
        for name in _BLOCK_FIELDS:
            value = getattr(node, name, None)
            if isinstance(value, list) and value and isinstance(value[0], ast.stmt):
                out.append(value)
        todo.extend(reversed(list(ast.iter_child_nodes(node))))
    return out


def _expression_parents(tree):
    """Nodes outside the harness whose fields may hold an expression to simplify."""
    out, todo = [], [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name in _FIXED:
            continue
        out.append(node)
        todo.extend(ast.iter_child_nodes(node))
    return out


def _only_pass(lst: list) -> bool:
    return len(lst) == 1 and isinstance(lst[0], ast.Pass)


def _blocks_of(node) -> list[list]:
    """The statement lists that can stand in for a compound statement."""
    if isinstance(node, ast.If):
        return [node.body, node.orelse]
    if isinstance(node, (ast.For, ast.While, ast.With)):
        return [node.body]
    if isinstance(node, ast.Try):
        return [node.body + node.finalbody] + [h.body for h in node.handlers]
    return []


class Shrinker:
    def __init__(self, src: str, seed: int, target: Verdict, calls: int = 3, budget_s: float = 120.0,
                 make_backend=None):
        self.tree = ast.parse(src)
        self.seed = seed
        self.signature = target.signature
        self.calls = calls
        self.cache: dict[str, bool] = {}
        self.deadline = time.monotonic() + budget_s
        self.tests = 0
        self.make_backend = make_backend

    def fails(self) -> bool:
        src = ast.unparse(self.tree)
        if src not in self.cache:
            self.tests += 1
            backend = self.make_backend() if self.make_backend else None
            verdict = run_source(src, self.seed, self.calls, backend=backend, timeout=5.0)
            self.cache[src] = verdict.signature == self.signature
        return self.cache[src]

    def out_of_time(self) -> bool:
        return time.monotonic() > self.deadline

    def remove_chunks(self, lst: list) -> bool:
        changed = False
        size = max(1, len(lst) // 2)
        while size >= 1 and not self.out_of_time() and not _only_pass(lst):
            start = 0
            while start < len(lst) and not _only_pass(lst):
                saved = lst[start:start + size]
                del lst[start:start + size]
                if not lst:
                    lst.append(ast.Pass())
                if self.fails():
                    changed = True
                else:
                    if _only_pass(lst):
                        lst.pop()
                    lst[start:start] = saved
                    start += size
            size //= 2
        return changed

    def unwrap(self, lst: list) -> bool:
        changed = False
        for i in range(len(lst) - 1, -1, -1):
            if i >= len(lst):
                continue
            node = lst[i]
            for block in _blocks_of(node):
                if not block or self.out_of_time():
                    continue
                lst[i:i + 1] = block
                if self.fails():
                    changed = True
                    break
                lst[i:i + len(block)] = [node]
        return changed

    def simplify_expressions(self) -> bool:
        """Drop elements of tuple/list displays, replace a binary operation by an operand."""
        changed = False
        for node in _expression_parents(self.tree):
            for name, value in ast.iter_fields(node):
                if isinstance(value, ast.BinOp):
                    for operand in (value.left, value.right):
                        if self.out_of_time():
                            return changed
                        setattr(node, name, operand)
                        if self.fails():
                            changed = True
                            break
                        setattr(node, name, value)
                elif isinstance(value, (ast.Tuple, ast.List)) and isinstance(value.ctx, ast.Load):
                    for i in range(len(value.elts) - 1, -1, -1):
                        if self.out_of_time():
                            return changed
                        elt = value.elts.pop(i)
                        if self.fails():
                            changed = True
                        else:
                            value.elts.insert(i, elt)
        return changed

    def run(self) -> str:
        changed = True
        while changed and not self.out_of_time():
            changed = self.simplify_expressions()
            for lst in _statement_lists(self.tree):
                if lst in _statement_lists(self.tree):  # still part of the program
                    changed |= self.remove_chunks(lst)
            for lst in _statement_lists(self.tree):
                if lst in _statement_lists(self.tree):
                    changed |= self.unwrap(lst)
        return ast.unparse(self.tree) + "\n"


def shrink(src: str, seed: int, verdict: Verdict, calls: int = 3, budget_s: float = 120.0,
           make_backend=None) -> str:
    """The smallest program found (within `budget_s`) that gives a verdict with `verdict`'s
    signature; `make_backend()` gives the backend of each run (default: a counting one)."""
    return Shrinker(src, seed, verdict, calls, budget_s, make_backend).run()


def save(src: str, seed: int, verdict: Verdict, profile: str, directory: str = FAILURES_DIR) -> str:
    """Write `failures/<seed>.py`: a header (verdict, replay command) and the program."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, f"{seed}.py")
    rel = os.path.relpath(path)
    header = [
        f"# bytegraph fuzz failure: seed {seed}, profile {profile}",
        f"# verdict: {verdict.kind} at call #{verdict.call + 1}",
        *(f"#   {line}" for line in verdict.detail.splitlines()[:6]),
        f"# replay: python -m tests.fuzzing --replay {rel}",
        f"# seed: {seed}",
    ]
    with open(path, "w") as f:
        f.write("\n".join(header) + "\n" + src)
    return path


def seed_of_file(src: str) -> int:
    for line in src.splitlines():
        if line.startswith("# seed: "):
            return int(line.split(":", 1)[1])
    return 0
