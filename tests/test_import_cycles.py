"""No import circle anywhere in the product, and no module reaching into another's privates.

The product's module graph (``kafka_archive``, ``segment_lib``, ``spark_jobs``, ``dags``) is read
from the source with :mod:`ast`, so that every import counts as an edge: top-level, inside a
function (the lazy imports that keep the CLI fast) and under ``TYPE_CHECKING``. A lazy import
hides a circle from Python at start-up, not from the reader: two modules that need each other
are one module, or share a third (``cli/catalog_options.py``, ``replay/planning/plan_topics.py``,
``segment_lib/batch_search.py`` are such thirds). The layer contracts of import-linter
(:mod:`tests.test_import_rules`) allow circles inside a floor; this test does not.

A private name (``_name``) is its module's business: no other module imports it
(``from m import _name``) or reads it (``m._name``). A package's private submodule imported by a
module of the same package (``from kafka_archive_dev.writer import _files`` in
``kafka_archive_dev.writer.broker_writer``) is that package's business and allowed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: source directory -> the module name it holds (plugins/kafka_archive is the package
#: kafka_archive; the DAG files and Spark entry points are top-level scripts, named here by
#: their directory so that they cannot clash with a package)
SOURCES = {
    "plugins/kafka_archive": "kafka_archive",
    "segment_lib": "segment_lib",
    "spark_jobs": "spark_jobs",
    "dags": "dags",
}


def _modules(root: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for rel, name in SOURCES.items():
        base = root / rel
        for path in sorted(base.rglob("*.py")):
            parts = [name, *path.relative_to(base).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _from_target(node: ast.ImportFrom, package: str) -> str:
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    base = parts[: len(parts) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def _imports(module: str, path: Path, modules: dict[str, Path]) -> Iterator[tuple[str, str]]:
    """``(imported module, name or "")`` for every import in ``module`` (any depth)."""
    package = _package_of(module, path)
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ""
        elif isinstance(node, ast.ImportFrom):
            target = _from_target(node, package)
            for alias in node.names:
                yield target, alias.name


def _graph(root: Path) -> dict[str, set[str]]:
    """Module -> the product modules it imports (a ``from pkg import sub`` is an edge to
    ``pkg.sub`` when that is a module, else to ``pkg``)."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for module, path in modules.items():
        for target, name in _imports(module, path, modules):
            full = f"{target}.{name}" if name else target
            edge = full if full in modules else target if target in modules else None
            if edge is not None and edge != module:
                graph[module].add(edge)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _private_uses(root: Path) -> list[str]:
    """``importer: module._name`` for each private name one product module takes from
    another (imported, or read as an attribute of an imported module)."""
    modules = _modules(root)
    out: list[str] = []
    for module, path in modules.items():
        package = _package_of(module, path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        module_aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                target = _from_target(node, package)
                if target not in modules:
                    continue
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    if full in modules:
                        module_aliases[alias.asname or alias.name] = full
                        # a private submodule: the business of its own package only
                        if _private(alias.name) and not module.startswith(target + "."):
                            out.append(f"{module}: {full}")
                    elif _private(alias.name) and target != module:
                        out.append(f"{module}: {target}.{alias.name}")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.asname and alias.name in modules:
                        module_aliases[alias.asname] = alias.name
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in module_aliases
                and _private(node.attr)
                and module_aliases[node.value.id] != module
            ):
                out.append(f"{module}: {module_aliases[node.value.id]}.{node.attr}")
    return sorted(set(out))


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def test_the_product_has_no_import_circle() -> None:
    graph = _graph(ROOT)
    assert len(graph) > 250 and graph["kafka_archive.cli.catalog"]  # the walk found the tree
    cycles = _cycles(graph)
    assert cycles == [], "import circles (each a group of modules importing each other): " + (
        "; ".join(" <-> ".join(c) for c in cycles)
    )


def test_no_module_takes_another_modules_private_names() -> None:
    assert _private_uses(ROOT) == []


# --- the checks bite: a miniature tree with a circle and a private import ------------------


def _write(path: Path, text: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


@pytest.fixture
def miniature(tmp_path: Path) -> Path:
    pkg = tmp_path / "plugins" / "kafka_archive"
    _write(pkg / "__init__.py")
    _write(pkg / "a.py", "from kafka_archive.b import thing\n")
    # a lazy import inside a function closes the circle: still a circle
    _write(pkg / "b.py", "def thing():\n    from kafka_archive import a\n    return a\n")
    _write(pkg / "c.py", "from kafka_archive.d import _helper\n")
    _write(pkg / "d.py", "def _helper():\n    pass\n")
    _write(pkg / "e.py", "from kafka_archive import d as dd\n\nx = dd._helper\n")
    _write(pkg / "w" / "__init__.py")
    _write(pkg / "w" / "_files.py")
    _write(pkg / "w" / "user.py", "from kafka_archive.w import _files\n")  # own package: fine
    _write(pkg / "outside.py", "from kafka_archive.w import _files\n")  # not its package
    for rel in ("segment_lib", "spark_jobs", "dags"):
        _write(tmp_path / rel / "__init__.py")
    return tmp_path


def test_a_lazy_import_closing_a_circle_is_found(miniature: Path) -> None:
    assert _cycles(_graph(miniature)) == [["kafka_archive.a", "kafka_archive.b"]]


def test_private_imports_and_reads_are_found(miniature: Path) -> None:
    assert _private_uses(miniature) == [
        "kafka_archive.c: kafka_archive.d._helper",
        "kafka_archive.e: kafka_archive.d._helper",
        "kafka_archive.outside: kafka_archive.w._files",
    ]
