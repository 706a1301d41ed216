"""The committed bundle of the on-call page (plugins/kafka_archive/ui/static/oncall-app.js) is
what its sources (frontend/) build: rebuilt here from the lockfile's npm packages with the
repository's vite config, byte for byte; and the sources' own unit tests (the chart's
arithmetic, where errors go) pass under Node's test runner. Both need Node.js and npm (the
install step does not: the bundle is committed, docs/ui.md says why)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
FRONTEND = REPO / "frontend"
BUNDLE = REPO / "plugins" / "kafka_archive" / "ui" / "static" / "oncall-app.js"
HINT = "install Node.js 20 and npm (Debian: apt-get install -y nodejs npm), then ./dev page"


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is missing: {HINT}")
    return found


def _run(args: list[str], cwd: Path) -> str:
    done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
    return done.stdout


@pytest.mark.timeout(900)
def test_the_committed_bundle_is_the_sources_build(tmp_path: Path) -> None:
    npm = _tool("npm")
    work = tmp_path / "frontend"
    shutil.copytree(FRONTEND, work, ignore=shutil.ignore_patterns("node_modules"))
    _run([npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"], work)
    out = tmp_path / "out"
    _run([npm, "run", "build", "--", "--outDir", str(out)], work)
    built = out / BUNDLE.name
    assert built.read_bytes() == BUNDLE.read_bytes(), (
        "the committed bundle is not the build of frontend/: run ./dev page and commit "
        "plugins/kafka_archive/ui/static/oncall-app.js"
    )


def test_the_pages_unit_tests_pass() -> None:
    node = _tool("node")
    out = _run([node, "--test", "test/"], FRONTEND)
    assert "# fail 0" in out and "# pass " in out, out
