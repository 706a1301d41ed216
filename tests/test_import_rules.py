"""The import rules of docs/architecture.md ("Who may import whom") hold, and the checks bite.

Two checkers:

* import-linter (``lint-imports``) with the contracts in pyproject.toml's ``[tool.importlinter]``:
  ``segment_lib`` imports nothing of the platform (nor Airflow, Spark, SQL, S3, Kafka clients,
  CLI libraries); neither it nor ``kafka_archive`` imports the development harness
  (``kafka_archive_dev``: the demo, the local Kafka clusters, the segment writer), whose writer
  knows bytes only; ``kafka_archive``'s floors (cli | airflow > services > ... > store > redact |
  client_log | timeparse) are only imported downwards, every module directly under
  ``kafka_archive`` is on a floor (exhaustive), and the known exceptions are listed as
  ``ignore_imports`` with a TODO (a listed exception that no longer happens is an error, so the
  list shrinks as the code is fixed).
* a DAG-file rule checked here with :mod:`ast` (DAG files are not a package, so import-linter
  does not see them): a DAG file imports from ``kafka_archive`` only its Airflow-facing modules
  (``kafka_archive.airflow``), apart from the listed exceptions.

Each checker is also run against a broken example, so a rule that silently stopped checking
would fail here.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = REPO_ROOT / "pyproject.toml"
PLATFORM_ROOT = REPO_ROOT / "plugins"  # where the kafka_archive package lives
DAGS_DIR = REPO_ROOT / "dags"
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"

#: The Airflow-facing part of the platform: what a DAG file may import.
DAG_FACING_PACKAGES = ("kafka_archive.airflow",)

#: Imports DAG files make today that break the rule, each with the reason it still exists.
#: A listed exception that no DAG file makes any more fails the test: remove it from here.
DAG_IMPORT_EXCEPTIONS: dict[str, str] = {}


def _lint_imports(cwd: Path, config: Path = PYPROJECT) -> subprocess.CompletedProcess[str]:
    """Run ``lint-imports`` with this repository's contracts (or ``config``'s), importing
    packages from ``cwd`` (import-linter puts the working directory first on ``sys.path``)."""
    assert LINT_IMPORTS.exists(), (
        f"{LINT_IMPORTS} not found: install the dev extra (pip install -e '.[dev]')"
    )
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(config), "--no-cache", "--no-logo"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _contracts() -> dict[str, dict[str, Any]]:
    config = tomllib.loads(PYPROJECT.read_text())["tool"]["importlinter"]
    return {c["id"]: c for c in config["contracts"]}


# --- import-linter over the real code ------------------------------------------------------


def test_the_code_keeps_the_import_rules() -> None:
    result = _lint_imports(REPO_ROOT)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    assert "0 broken" in out, out


def _floors_in_the_docs() -> list[set[str]]:
    """The floors table of docs/architecture.md, top to bottom: the backticked module names of
    each row's second column."""
    text = (REPO_ROOT / "docs" / "architecture.md").read_text()
    table = text.split("| floor (top to bottom) |", 1)[1].split("\n\n", 1)[0]
    rows = [line for line in table.splitlines()[2:] if line.startswith("|")]
    return [set(re.findall(r"`([a-z_]+)`", row.split(" | ")[1])) for row in rows]


def test_the_docs_map_matches_the_contract() -> None:
    layers = [
        {name.strip() for name in layer.replace(":", "|").split("|")}
        for layer in _contracts()["floors"]["layers"]
    ]
    assert _floors_in_the_docs() == layers, (
        "docs/architecture.md's floors table and [tool.importlinter]'s layers differ"
    )


# --- import-linter over a miniature of the layout, to show the contracts bite ---------------


def _write(path: Path, text: str = "") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _miniature(root: Path) -> None:
    """A tree shaped like the real one: ``segment_lib`` and one package per floor, plus the
    modules named by the floors contract's ``ignore_imports`` importing what it lists."""
    _write(root / "segment_lib" / "__init__.py")
    for contract_id, package in (
        ("floors", "kafka_archive"),
        ("harness-floors", "kafka_archive_dev"),
    ):
        _write(root / package / "__init__.py")
        for layer in _contracts()[contract_id]["layers"]:
            for name in layer.replace(":", "|").split("|"):
                _write(root / package / name.strip() / "__init__.py")
    floors = _contracts()["floors"]
    for rule in floors.get("ignore_imports", []):
        importer, imported = (m.strip() for m in rule.split("->"))
        for module in (importer, imported):
            _module(root, module)
        path = root.joinpath(*importer.split(".")).with_suffix(".py")
        path.write_text(path.read_text() + f"import {imported}\n")
    # the platform modules other contracts name (e.g. the catalog's read side and write side)
    for contract in _contracts().values():
        for key in ("source_modules", "forbidden_modules"):
            for module in contract.get(key, []):
                if module.startswith("kafka_archive."):
                    _module(root, module)


def _module(root: Path, module: str) -> None:
    """An empty ``module`` in the miniature (with its packages), unless it exists."""
    parts = module.split(".")
    for i in range(2, len(parts)):
        init = root.joinpath(*parts[:i], "__init__.py")
        if not init.exists():
            _write(init)
    path = root.joinpath(*parts).with_suffix(".py")
    if not path.exists() and not root.joinpath(*parts, "__init__.py").exists():
        _write(path)


def test_a_miniature_of_the_layout_keeps_the_rules(tmp_path: Path) -> None:
    _miniature(tmp_path)
    result = _lint_imports(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("path", "source", "broken"),
    [
        # the formats library reaching into the platform
        ("segment_lib/reader.py", "import kafka_archive.store\n", "segment_lib knows bytes"),
        # ... or into orchestration
        ("segment_lib/reader.py", "import airflow\n", "segment_lib knows bytes"),
        # a lower floor importing a higher one, even lazily inside a function
        (
            "kafka_archive/store/s3.py",
            "def f():\n    from kafka_archive.catalog import x\n",
            "kafka_archive floors",
        ),
        # two modules on one floor that must stay independent
        (
            "kafka_archive/offsets_follower/f.py",
            "import kafka_archive.replay\n",
            "kafka_archive floors",
        ),
        # a new module directly under kafka_archive that no floor names
        ("kafka_archive/newcomer.py", "", "kafka_archive floors"),
        # the product importing the development harness, directly or lazily ...
        (
            "kafka_archive/store/s3.py",
            "def f():\n    from kafka_archive_dev.local_kafka import x\n",
            "the product never imports the development harness",
        ),
        # ... also from the formats library
        (
            "segment_lib/reader.py",
            "import kafka_archive_dev.writer\n",
            "the product never imports the development harness",
        ),
        # the harness's writer reaching into the platform
        (
            "kafka_archive_dev/writer/encode.py",
            "import kafka_archive.store\n",
            "the harness's segment writer knows bytes",
        ),
        # the catalog's read side reaching into its write side
        (
            "kafka_archive/catalog/gaps.py",
            "import kafka_archive.catalog.build\n",
            "the catalog's queries (reads) never import",
        ),
    ],
)
def test_the_contracts_catch_a_broken_rule(
    tmp_path: Path, path: str, source: str, broken: str
) -> None:
    _miniature(tmp_path)
    _write(tmp_path / path, source)
    result = _lint_imports(tmp_path)
    out = result.stdout + result.stderr
    assert result.returncode != 0, out
    assert broken in out and "BROKEN" in out, out


def test_a_stale_exception_is_an_error(tmp_path: Path) -> None:
    """When a listed exception is fixed, the ``ignore_imports`` line must go too (the list is
    empty today: an exception that no import needs is added here to show it is refused)."""
    _miniature(tmp_path)
    text = PYPROJECT.read_text()
    assert "ignore_imports = [\n]" in text
    stale = '"kafka_archive.store.old_helper -> kafka_archive.cli"'
    config = tmp_path / "pyproject.toml"
    config.write_text(text.replace("ignore_imports = [\n]", f"ignore_imports = [\n  {stale},\n]"))
    (tmp_path / "kafka_archive" / "store" / "old_helper.py").write_text("")
    assert _lint_imports(tmp_path).returncode == 0
    result = _lint_imports(tmp_path, config)
    assert result.returncode != 0, result.stdout + result.stderr


# --- the DAG-file rule --------------------------------------------------------------------


def _is_module(name: str) -> bool:
    path = PLATFORM_ROOT.joinpath(*name.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def platform_imports(source: str) -> set[str]:
    """The ``kafka_archive`` modules a Python source imports (``from pkg import mod`` counts
    as ``pkg.mod`` when ``mod`` is a module, as ``pkg`` when it is a name in ``pkg``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                sub = f"{node.module}.{alias.name}"
                found.add(sub if _is_module(sub) else node.module)
    return {m for m in found if m == "kafka_archive" or m.startswith("kafka_archive.")}


def is_dag_facing(module: str) -> bool:
    """May a DAG file import ``module``? (only the Airflow package)"""
    return any(module == p or module.startswith(p + ".") for p in DAG_FACING_PACKAGES)


def test_dag_files_import_only_the_airflow_facing_modules() -> None:
    by_module: dict[str, set[str]] = {}
    for dag_file in sorted(DAGS_DIR.glob("*.py")):
        for module in platform_imports(dag_file.read_text()):
            by_module.setdefault(module, set()).add(dag_file.name)
    outside = {m: sorted(f) for m, f in by_module.items() if not is_dag_facing(m)}
    unlisted = {m: f for m, f in outside.items() if m not in DAG_IMPORT_EXCEPTIONS}
    assert not unlisted, (
        f"DAG files import platform modules that are not Airflow-facing: {unlisted}; "
        "import them through kafka_archive.airflow"
    )
    stale = set(DAG_IMPORT_EXCEPTIONS) - set(outside)
    assert not stale, f"no DAG file imports {sorted(stale)} any more: drop the exception"


def test_the_dag_rule_catches_a_bad_import() -> None:
    source = (
        "from kafka_archive.airflow import protect_task_logs\n"
        "from kafka_archive.airflow.replay_tasks import plan_task\n"
        "from kafka_archive.catalog import queries\n"
        "def task():\n"
        "    from kafka_archive.store import open_store\n"
    )
    imported = platform_imports(source)
    assert imported == {
        "kafka_archive.airflow",
        "kafka_archive.airflow.replay_tasks",
        "kafka_archive.catalog.queries",
        "kafka_archive.store",
    }
    assert {m for m in imported if not is_dag_facing(m)} == {
        "kafka_archive.catalog.queries",
        "kafka_archive.store",
    }
