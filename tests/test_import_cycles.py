"""The import graph of `bytegraph/` and `bench/` has no cycle, and imports are at the top.

Every import counts, the ones inside functions too (a function-local import that reaches
back closes a circle as surely as a module-level one; it only hides it). The graph is
built from the sources with `ast`: one node per module, an edge per import of another
module of the same package (`from . import x` is an edge to `x` when `x` is a module).
A failure names the modules of the cycle and the lines of its imports.

Function-local imports are allowed only with a reason on the same line (`# local: ...`:
an optional dependency, start-up cost), at most `MAX_LOCAL_IMPORTS` in the package.
"""
import ast
import pathlib
import re

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAX_LOCAL_IMPORTS = 15
_REASON = re.compile(r"#\s*local:\s*\S")


def _modules(package: str) -> dict:
    out = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def _imports(name: str, path: pathlib.Path, modules: dict):
    """(imported module of `modules`, line, whether inside a function or class) per import."""
    tree = ast.parse(path.read_text(), str(path))
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    top = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = ".".join(package[:len(package) - node.level + 1] + ([node.module] if node.module else [])) \
                if node.level else node.module
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name:
                yield target, node.lineno, id(node) not in top


def _cycles(modules: dict) -> list:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    graph = {name: sorted({t for t, _, _ in _imports(name, path, modules)}) for name, path in modules.items()}
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in graph:
        if v not in index:
            visit(v)
    return found


@pytest.mark.parametrize("package", ["bytegraph", "bench"])
def test_no_import_cycle(package):
    modules = _modules(package)
    messages = []
    for component in _cycles(modules):
        members = set(component)
        arrows = [f"  {name} -> {target} ({modules[name].name}:{line}{', in a function' if local else ''})"
                  for name in component for target, line, local in _imports(name, modules[name], modules)
                  if target in members]
        messages.append(f"import cycle of {len(component)} modules:\n" + "\n".join(sorted(set(arrows))))
    assert not messages, "\n".join(messages)


def test_function_local_imports_are_few_and_give_a_reason():
    local = []
    for path in sorted((ROOT / "bytegraph").rglob("*.py")):
        lines = path.read_text().splitlines()
        tree = ast.parse("\n".join(lines), str(path))
        functions = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        nodes = {id(node): node for fn in functions for node in ast.walk(fn)
                 if isinstance(node, (ast.Import, ast.ImportFrom))}
        for node in nodes.values():
            local.append((path.relative_to(ROOT), node.lineno, lines[node.end_lineno - 1]))
    unexplained = [f"{path}:{line}: {text.strip()}" for path, line, text in local if not _REASON.search(text)]
    assert not unexplained, "function-local imports without a `# local: <reason>` comment:\n" + "\n".join(unexplained)
    assert len(local) <= MAX_LOCAL_IMPORTS, f"{len(local)} function-local imports (at most {MAX_LOCAL_IMPORTS}):\n" + \
        "\n".join(f"{p}:{n}" for p, n, _ in local)


def test_the_checker_finds_a_cycle(tmp_path, monkeypatch):
    """The check itself: two modules importing each other, one from inside a function."""
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from . import b\n")
    (package / "b.py").write_text("def f():\n    from .a import thing\n")
    monkeypatch.setattr(__import__(__name__), "ROOT", tmp_path)
    assert _cycles(_modules("pkg")) == [["pkg.a", "pkg.b"]]


def test_the_vars_manifest_imports_every_module():
    """`bytegraph/vars/__init__.py` names every module of the package in its imports, so each
    kind's builder, handler and factory is registered before the first capture, whichever
    module a caller imports first."""
    modules = _modules("bytegraph")
    manifest = "bytegraph.vars"
    named = {target for target, _, _ in _imports(manifest, modules[manifest], modules)}
    missing = sorted(m for m in modules if m.startswith(manifest + ".") and m not in named
                     and not any(m.startswith(p + ".") and modules[p].name == "__init__.py" and p in named
                                 for p in modules))
    assert not missing, f"modules bytegraph/vars/__init__.py does not import: {missing}"
