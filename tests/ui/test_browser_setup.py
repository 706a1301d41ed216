"""The browser test's tooling: a missing browser or Playwright fails the test with how to
install it (never a skip), and ``./dev setup`` is what installs both."""

from __future__ import annotations

import builtins
import subprocess
from pathlib import Path
from typing import Any

import browser_support
import pytest

REPO = Path(__file__).resolve().parents[2]


def test_a_missing_chromium_fails_with_how_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(browser_support, "CHROMIUM", tmp_path / "no-chromium")
    with pytest.raises(pytest.fail.Exception) as failed:
        browser_support.require_browser()
    assert "apt-get install -y chromium" in str(failed.value)
    assert "./dev setup" in str(failed.value)


def test_a_missing_playwright_fails_with_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    real_import = builtins.__import__

    def no_playwright(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("playwright"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(browser_support, "CHROMIUM", Path("/bin/sh"))  # any existing file
    monkeypatch.setattr(builtins, "__import__", no_playwright)
    with pytest.raises(pytest.fail.Exception) as failed:
        browser_support.require_browser()
    assert "playwright" in str(failed.value) and "./dev setup" in str(failed.value)


def test_dev_setup_installs_the_browser_and_playwright() -> None:
    dev = (REPO / "dev").read_text()
    assert "apt-get install -y -q chromium" in dev
    assert "setup) setup; browser ;;" in dev
    # the dev extra brings Playwright; the shell function is valid bash
    assert '"playwright>=' in (REPO / "pyproject.toml").read_text()
    subprocess.run(["bash", "-n", str(REPO / "dev")], check=True)
