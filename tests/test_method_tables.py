"""What a tracker kind does for a method or an attribute name is data (vars/method_table.py):
a table of name -> row, not an if/elif ladder on the name. The scan counts, per function of
bytegraph/vars, the comparisons of a name variable (`name`, `method`, `attr`, `fn_name`)
against string constants (`name == "x"`, `name in ("x", "y")`); three or more is a ladder.
The tables are checked against what they stand for: the mutators of the builtin types."""
from __future__ import annotations

import ast
import collections
import pathlib

import pytest
import torch

from bytegraph.vars import builtin_methods
from bytegraph.vars.containers import DICT_MUTATORS, DictVariable, ListVariable, SetVariable
from bytegraph.vars.deque import DequeVariable
from bytegraph.vars.method_table import Row
from bytegraph.vars.tensor import TENSOR_METHODS

VARS = pathlib.Path(__file__).resolve().parent.parent / "bytegraph" / "vars"
NAME_VARIABLES = frozenset({"name", "method", "attr", "fn_name"})
LADDER = 3  # comparisons of one name in one function
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _is_string_constant(node: ast.expr) -> bool:
    """`"x"`, or a tuple, set or list of string constants."""
    if isinstance(node, (ast.Tuple, ast.Set, ast.List)):
        return bool(node.elts) and all(_is_string_constant(e) for e in node.elts)
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def _is_name(node: ast.expr) -> bool:
    return isinstance(node, ast.Name) and node.id in NAME_VARIABLES


def _name_tests(func) -> list:
    """The lines of the comparisons of a name variable against string constants in `func`'s
    own body (a nested function or class counts on its own)."""
    lines, todo = [], list(ast.iter_child_nodes(func))
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for op, left, right in zip(node.ops, operands, operands[1:]):
                if isinstance(op, (ast.Eq, ast.NotEq)) and (_is_name(left) and _is_string_constant(right)
                                                            or _is_name(right) and _is_string_constant(left)):
                    lines.append(node.lineno)
                elif isinstance(op, (ast.In, ast.NotIn)) and _is_name(left) and _is_string_constant(right):
                    lines.append(node.lineno)
        todo.extend(ast.iter_child_nodes(node))
    return lines


def _ladders(tree: ast.AST):
    """(function name, line, number of name tests) of every function with a ladder."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            tests = _name_tests(node)
            if len(tests) >= LADDER:
                yield node.name, node.lineno, len(tests)


@pytest.mark.parametrize("path", sorted(VARS.rglob("*.py")), ids=lambda p: str(p.relative_to(VARS)))
def test_no_name_ladders(path):
    found = list(_ladders(ast.parse(path.read_text(), str(path))))
    assert not found, "\n".join(
        f"{path.relative_to(VARS.parent)}:{func}:{line} tests the name against {n} string constants; "
        "make it a table (vars/method_table.py)" for func, line, n in found)


def test_the_scan_sees_ladders():
    tree = ast.parse('''
def ladder(self, name):
    if name == "a":
        return 1
    if "b" == name or name in ("c", "d"):
        return 2
    def nested(attr):
        return attr == "e"
    return name in {"f"}

def fine(self, name, other):
    if name == "__init__":
        return 0
    return other == "a" or other == "b" or other == "c" or name in TABLE
''')
    assert list(_ladders(tree)) == [("ladder", 2, 4)]


# ---- the tables stand for the builtin types' methods ------------------------------------------

@pytest.mark.parametrize("kind,cls", [(ListVariable, list), (DictVariable, collections.OrderedDict), (SetVariable, set),
                                      (DequeVariable, collections.deque)])
def test_every_row_is_a_method_of_the_type(kind, cls):
    assert all(isinstance(entry, Row) for entry in kind.METHODS.values())
    assert [name for name in kind.METHODS if not callable(getattr(cls, name, None))] == []


def test_every_mutator_of_a_builtin_type_has_a_row():
    assert builtin_methods.mutators(list) <= {n for n, entry in ListVariable.METHODS.items() if entry.mutates}
    assert DICT_MUTATORS <= DictVariable.METHODS.keys()
    assert builtin_methods.mutators(set) <= SetVariable.METHODS.keys()


def test_every_tensor_rule_names_a_tensor_method():
    assert [name for name in TENSOR_METHODS if not callable(getattr(torch.Tensor, name, None))] == []
