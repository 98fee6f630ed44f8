"""zoo/'s modules import one another as a tree (issue 42): no circle, read from the source's
imports the way Python runs them. Imports under `if TYPE_CHECKING:` run no code (a type
checker's) and are left out; a function's own imports count like the module's."""
import ast
from pathlib import Path

ZOO = Path(__file__).resolve().parent.parent / "zoo"


def _module(path: Path) -> str:
    parts = path.with_suffix("").relative_to(ZOO.parent).parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_blocks(tree) -> set:
    return {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and
            getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING"
            for n in ast.walk(node)}


def import_graph() -> dict[str, set[str]]:
    modules = {_module(p): p for p in ZOO.rglob("*.py")}
    graph = {m: set() for m in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        tree = ast.parse(path.read_text())
        skip = _type_checking_blocks(tree)
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            if isinstance(node, ast.ImportFrom) and node.level:
                base = package.split(".")[:len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:  # a submodule, or a name the target module defines
                    sub = f"{target}.{alias.name}"
                    graph[name].add(sub if sub in modules else target)
            elif isinstance(node, ast.Import):
                graph[name].update(a.name for a in node.names if a.name in modules)
    return {m: {t for t in targets if t in modules and t != m} for m, targets in graph.items()}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_zoo_imports_form_a_tree():
    assert circles(import_graph()) == []


def test_the_checker_sees_a_circle():
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    graph = import_graph()
    assert "zoo.gemm" in graph["zoo.ops"] and "zoo.specs.base" in graph["zoo.registry"] or \
        "zoo.specs" in graph["zoo.registry"]


def test_the_cli_sits_on_top():
    """Nothing in the library imports the command line (zoo/cli/); `python -m zoo`
    (zoo/__main__.py) is the one entry point above it."""
    graph = import_graph()
    library = {m for m in graph if m not in ("zoo.cli", "zoo.__main__") and not m.startswith("zoo.cli.")}
    assert {m for m in library if any(t == "zoo.cli" or t.startswith("zoo.cli.") for t in graph[m])} == set()
    assert {"zoo.cli.kernels", "zoo.cli.build", "zoo.cli.run", "zoo.cli.tune"} <= graph["zoo.cli"]


MAX_LINES = 900  # issue 42: a module past this is doing several things; split it by what it does


def test_no_module_is_over_900_lines():
    sizes = {str(p.relative_to(ZOO.parent)): len(p.read_text().splitlines()) for p in ZOO.rglob("*.py")}
    assert {p: n for p, n in sizes.items() if n > MAX_LINES} == {}
