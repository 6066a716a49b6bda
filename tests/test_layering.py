"""Static checks of bytegraph's own sources: the layer order of docs/architecture.md ("Packages"), no use
of torch._dynamo or torch.compile anywhere in bytegraph, and no torch in `_bytecode`.

(torch's own code imports torch._dynamo internally, e.g. when a FakeTensorMode is created;
the rule is about bytegraph's code, so it is checked on bytegraph's sources.)
"""
import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "bytegraph"
# Lower index = further left; a module may import only from its own layer or to its left.
LAYERS = [("errors", "config", "hints", "control_flow", "ops"), ("_bytecode",), ("guards",), ("vars",), ("graph",),
          ("translate",), ("runtime",), ("api", "explain", "report", "__init__")]


def _layer_of(parts: tuple[str, ...]) -> int:
    head = parts[0] if parts else "__init__"
    for i, names in enumerate(LAYERS):
        if head in names:
            return i
    raise AssertionError(f"module bytegraph.{'.'.join(parts)} is in no layer; add it to LAYERS")


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        parts = tuple(p for p in rel.parts if p != "__init__") or ("__init__",)
        yield path, parts


def _imports(path: pathlib.Path, parts: tuple[str, ...]):
    """(imported absolute module name, line) for every import in the file, nested ones too."""
    tree = ast.parse(path.read_text(), str(path))
    package = ["bytegraph", *parts[:-1]] if path.name != "__init__.py" else ["bytegraph", *parts]
    if parts == ("__init__",):
        package = ["bytegraph"]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module
            yield name, node.lineno
            for alias in node.names:
                yield f"{name}.{alias.name}", node.lineno


@pytest.mark.parametrize("path,parts", list(_modules()), ids=lambda v: str(v))
def test_imports_point_left(path, parts):
    own = _layer_of(parts)
    for name, line in _imports(path, parts):
        if not name.startswith("bytegraph."):
            continue
        target = tuple(name.split(".")[1:2])
        if target and target[0] in {n for layer in LAYERS for n in layer}:
            assert _layer_of(target) <= own, f"{path.name}:{line} imports {name} (a layer to the right)"


@pytest.mark.parametrize("path,parts", list(_modules()), ids=lambda v: str(v))
def test_no_dynamo_and_no_torch_compile(path, parts):
    tree = ast.parse(path.read_text(), str(path))
    for name, line in _imports(path, parts):
        assert not name.startswith("torch._dynamo"), f"{path.name}:{line} imports {name}"
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "torch":
            assert node.attr not in ("compile", "_dynamo"), f"{path.name}:{node.lineno} uses torch.{node.attr}"


@pytest.mark.parametrize("path,parts", [m for m in _modules() if m[1][0] == "_bytecode"], ids=lambda v: str(v))
def test_bytecode_layer_has_no_torch(path, parts):
    for name, line in _imports(path, parts):
        assert name.split(".")[0] != "torch", f"{path.name}:{line} imports {name}"


def _is_output_graph(expr) -> bool:
    """Whether `expr` spells the capture's OutputGraph: `output`, `_output`, `x.output`, `x._output`."""
    if isinstance(expr, ast.Name):
        return expr.id in ("output", "_output")
    return isinstance(expr, ast.Attribute) and expr.attr in ("output", "_output")


@pytest.mark.parametrize("path,parts", [m for m in _modules() if m[1][0] != "graph"], ids=lambda v: str(v))
def test_only_graph_writes_output_graph_fields(path, parts):
    """OutputGraph owns its fields: code outside `graph/` changes them through its methods
    (`set_current_tx`, `next_guard_alias`, `set_autocast`, ...), never by assignment."""
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        targets = node.targets if isinstance(node, ast.Assign) else \
            [node.target] if isinstance(node, (ast.AugAssign, ast.AnnAssign)) else []
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in ("setattr", "delattr") \
                and node.args and _is_output_graph(node.args[0]):
            raise AssertionError(f"{path.name}:{node.lineno} {node.func.id}() on the OutputGraph")
        for target in targets:
            if isinstance(target, ast.Attribute) and _is_output_graph(target.value):
                raise AssertionError(f"{path.name}:{node.lineno} assigns OutputGraph.{target.attr} outside graph/")
