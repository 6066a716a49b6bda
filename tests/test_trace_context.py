"""`vars/context.py` is the whole interface from trackers to the capture: every member of
`tx` and of `tx.output` used in `bytegraph/vars/` is declared by `TraceContext` or
`CaptureRecord`, and the translator and the output graph provide every declared member."""
import ast
import pathlib
import typing

from bytegraph.graph.output_graph import OutputGraph
from bytegraph.guards.sources import GlobalsDictSource
from bytegraph.translate.translator import Translator
from bytegraph.vars.context import CaptureRecord, TraceContext

VARS = pathlib.Path(__file__).resolve().parent.parent / "bytegraph" / "vars"


def _members(protocol) -> set:
    return set(typing.get_type_hints(protocol, include_extras=False, localns={"CaptureRecord": CaptureRecord})) | {
        name for name, value in vars(protocol).items() if callable(value) and not name.startswith("_")}


def _is_output(expr) -> bool:
    """`tx.output`, or a local named `output` (`output = tx.output`)."""
    if isinstance(expr, ast.Name):
        return expr.id == "output"
    return isinstance(expr, ast.Attribute) and expr.attr == "output" and isinstance(expr.value, ast.Name) \
        and expr.value.id == "tx"


def _used():
    """(attribute, file:line) of every `tx.<attr>` and `tx.output.<attr>` in vars/."""
    on_tx, on_output = {}, {}
    for path in sorted(VARS.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Attribute):
                continue
            where = f"{path.relative_to(VARS)}:{node.lineno}"
            if isinstance(node.value, ast.Name) and node.value.id == "tx":
                on_tx.setdefault(node.attr, where)
            elif _is_output(node.value):
                on_output.setdefault(node.attr, where)
    return on_tx, on_output


def test_trackers_use_only_the_declared_interface():
    on_tx, on_output = _used()
    undeclared = [f"tx.{name} ({where})" for name, where in on_tx.items() if name not in _members(TraceContext)]
    undeclared += [f"tx.output.{name} ({where})" for name, where in on_output.items()
                   if name not in _members(CaptureRecord)]
    assert not undeclared, "members used by trackers but not declared in vars/context.py:\n" + "\n".join(undeclared)


def test_the_translator_and_the_output_graph_provide_the_interface():
    output = OutputGraph()
    tx = Translator(test_the_translator_and_the_output_graph_provide_the_interface.__code__, globals(),
                    GlobalsDictSource(), {}, {}, output)
    missing = [f"Translator.{name}" for name in _members(TraceContext) if not hasattr(tx, name)]
    missing += [f"OutputGraph.{name}" for name in _members(CaptureRecord) if not hasattr(output, name)]
    assert not missing, f"declared in vars/context.py but not provided: {missing}"
