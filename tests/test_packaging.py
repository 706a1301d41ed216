"""What ``pip install kafka-archive`` installs is the product only, and the product finds no file
by walking up out of its own package.

* The wheel's packages are what setuptools discovers with pyproject.toml's
  ``[tool.setuptools.packages.find]``: ``segment_lib`` and ``kafka_archive`` and their
  sub-packages, never the development harness (``kafka_archive_dev``, under ``tests/dev``: the
  demo, the local Kafka clusters, the segment writer) nor any test module. (That the product
  does not *import* the harness is the import-linter contract ``no-harness``,
  tests/test_import_rules.py.)
* No module of ``segment_lib``, ``kafka_archive`` or ``spark_jobs`` turns its own ``__file__``
  into a path above its top-level package (``Path(__file__).parents[2]``, ``.parent.parent``
  past the package, ``os.path.dirname`` likewise): that only finds ``dags/`` or ``scripts/`` in
  a source checkout. What lies outside the package is configuration (``KAFKA_ARCHIVE_HOME``) or
  the harness's business (``kafka_archive_dev.repo_path``).
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest
from setuptools import find_namespace_packages

REPO = Path(__file__).resolve().parents[1]
#: the product's top-level packages and where their sources live
PRODUCT = {"segment_lib": REPO / "segment_lib", "kafka_archive": REPO / "plugins" / "kafka_archive"}
#: entry points shipped beside the product (spark-submit runs them as files)
JOBS = REPO / "spark_jobs"
#: the development harness, which the wheel must not contain
HARNESS = "kafka_archive_dev"


def wheel_packages() -> list[str]:
    """The packages the wheel gets, discovered as setuptools does from pyproject.toml."""
    find = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"][
        "find"
    ]
    found: list[str] = []
    for where in find["where"]:
        found += find_namespace_packages(where=str(REPO / where), include=find["include"])
    return sorted(found)


def test_the_wheel_holds_the_product_and_no_harness() -> None:
    packages = wheel_packages()
    tops = {p.split(".")[0] for p in packages}
    assert tops == set(PRODUCT), packages
    assert not [p for p in packages if p.startswith(HARNESS) or ".tests" in p], packages
    # every product package on disk is in the wheel (the discovery did not miss one)
    for name, root in PRODUCT.items():
        on_disk = {
            ".".join((name, *d.relative_to(root).parts)).rstrip(".")
            for d in [root, *root.rglob("*")]
            if d.is_dir() and (d / "__init__.py").is_file()
        }
        assert on_disk <= set(packages), sorted(on_disk - set(packages))


def test_the_harness_lives_outside_the_product_trees() -> None:
    """The modules that moved to the harness are not back in the product (an old checkout's
    leftovers or a copy would be shipped again)."""
    for gone in (
        REPO / "segment_lib" / "writer",
        *(
            PRODUCT["kafka_archive"] / f"{m}.py"
            for m in ("demo", "demo_live", "local_kafka", "embedded_kafka")
        ),
        PRODUCT["kafka_archive"] / "cli" / "demo.py",
    ):
        assert not gone.exists(), gone
    assert (REPO / "tests" / "dev" / HARNESS / "__init__.py").is_file()


# --- no walking up from __file__ ----------------------------------------------------------


def _levels_up(node: ast.expr) -> int | None:
    """How many directories above its file's own directory ``node`` points, when ``node`` is
    a path built from ``__file__`` (``Path(__file__)[.resolve()].parent...``,
    ``.parents[k]``, ``os.path.dirname(...)``); ``None`` when it is not such a path."""
    if isinstance(node, ast.Name):
        return -1 if node.id == "__file__" else None  # the file itself: below its directory
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in {"resolve", "absolute"}:
            return _levels_up(func.value)
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
        if name in {"Path", "PurePath", "abspath", "realpath"} and node.args:
            return _levels_up(node.args[0])
        if name == "dirname" and node.args:
            inner = _levels_up(node.args[0])
            return None if inner is None else inner + 1
        return None
    if isinstance(node, ast.Attribute) and node.attr == "parent":
        inner = _levels_up(node.value)
        return None if inner is None else inner + 1
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "parents"
    ):
        inner = _levels_up(node.value.value)
        if inner is None:
            return None
        index = node.slice
        if isinstance(index, ast.Constant) and isinstance(index.value, int):
            return inner + 1 + index.value
        return 10**6  # a computed index: assume the worst
    return None


def walks_out(source: str, depth: int) -> list[int]:
    """Lines of ``source`` (a module ``depth`` directories below its top-level package's
    folder; 0 for a module directly in it) that make a path above that folder from
    ``__file__``. Only outermost path expressions are judged (``Path(__file__).parent`` inside
    ``Path(__file__).parent.parent`` is part of it)."""
    tree = ast.parse(source)
    inner: set[int] = set()
    lines: list[int] = []
    for node in ast.walk(tree):
        if id(node) in inner or not isinstance(node, ast.expr):
            continue
        up = _levels_up(node)
        if up is None or up < 0:
            continue
        for child in ast.walk(node):
            if child is not node:
                inner.add(id(child))
        if up > depth:
            lines.append(node.lineno)
    return lines


def _product_modules() -> list[tuple[Path, int]]:
    modules = [
        (path, len(path.relative_to(root).parts) - 1)
        for root in PRODUCT.values()
        for path in sorted(root.rglob("*.py"))
    ]
    # a job file is its own package root: nothing of the checkout is above it in a deployment
    return modules + [(path, 0) for path in sorted(JOBS.glob("*.py"))]


def test_no_product_module_walks_up_from_its_file() -> None:
    offenders = {
        str(path.relative_to(REPO)): lines
        for path, depth in _product_modules()
        if (lines := walks_out(path.read_text(), depth))
    }
    assert not offenders, (
        f"product modules find files above their package from __file__: {offenders}; take the "
        "location from a setting (kafka_archive.settings) or package data, or move the code to "
        "the development harness (kafka_archive_dev.repo_path)"
    )


@pytest.mark.parametrize(
    ("source", "depth", "bad"),
    [
        # what catalog_tasks.py did (kafka_archive/airflow/: depth 1): the checkout's root
        ("from pathlib import Path\nX = Path(__file__).resolve().parents[3]\n", 1, True),
        ("import os\nX = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))\n", 0, True),
        ("from pathlib import Path\nX = Path(__file__).parent.parent.parent\n", 1, True),
        # package data beside the module, or the package's own folder: fine
        (
            "from pathlib import Path\nX = Path(__file__).resolve().parent / 'migrations'\n",
            1,
            False,
        ),
        ("from pathlib import Path\nX = Path(__file__).resolve().parent.parent\n", 1, False),
        ("from pathlib import Path\nX = Path(__file__).with_name('x.properties')\n", 0, False),
    ],
)
def test_the_walk_up_rule_bites(source: str, depth: int, bad: bool) -> None:
    assert bool(walks_out(source, depth)) is bad
