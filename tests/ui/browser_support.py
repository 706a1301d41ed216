"""What the browser test needs around it: the browser, a running Airflow, the expected records.

* :func:`require_browser` fails (never skips) with how to install when Debian's ``chromium`` or
  the ``playwright`` package is missing: ``./dev setup`` installs both.
* :func:`launch_chromium` starts that Chromium through Playwright (``executable_path``: no
  browser download) with the flags this kind of machine needs and a fresh profile.
* :class:`AirflowServer` runs ``airflow standalone`` (API server, scheduler, DAG processor,
  triggerer) in a process group of its own over a fresh ``AIRFLOW_HOME``, with the
  repository's DAGs and plugins, one admin user with a known password, and the DAGs the page
  triggers (replay, group offsets, restore) unpaused; it is ready when Airflow's health endpoint
  reports every component healthy.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from support.airflow import airflow_env

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
INSTALL_HINT = (
    "run `./dev setup` (it installs Debian's chromium with apt-get and the playwright package "
    "of the dev extra), or by hand: `apt-get install -y chromium` and "
    "`.venv/bin/pip install playwright`"
)
UI_USER, UI_PASSWORD = "oncall", "oncall-browser-test"


def require_browser() -> None:
    """Fail the test (not skip) naming what is missing and how to install it."""
    if not CHROMIUM.is_file():
        pytest.fail(f"no browser: {CHROMIUM} is missing; {INSTALL_HINT}")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.fail(f"the playwright package is missing; {INSTALL_HINT}")


def launch_chromium(playwright: Any, profile: Path) -> Any:
    """A persistent browser context in a fresh ``profile`` directory (Chromium's
    ``--user-data-dir``), viewport wide enough for the on-call page inside Airflow."""
    return playwright.chromium.launch_persistent_context(
        str(profile),
        executable_path=str(CHROMIUM),
        args=CHROMIUM_ARGS,
        headless=True,
        viewport={"width": 1600, "height": 1000},
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class AirflowServer:
    """``airflow standalone`` over ``home`` (see the module docstring); ``extra_env`` is
    added to its environment (the catalog's settings)."""

    def __init__(self, home: Path, extra_env: Mapping[str, str]) -> None:
        self.home = home
        self.port = free_port()
        self.url = f"http://localhost:{self.port}"
        passwords = home / "passwords.json"
        home.mkdir(parents=True, exist_ok=True)
        passwords.write_text(json.dumps({UI_USER: UI_PASSWORD}))
        bin_dir = Path(sys.executable).parent
        self.env = airflow_env(home) | {
            "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__API__BASE_URL": self.url,
            "AIRFLOW__API_AUTH__JWT_SECRET": "browser-test-jwt-secret",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{UI_USER}:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
            **extra_env,
        }
        self.log = home / "standalone.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def _airflow(self, *args: str) -> None:
        proc = subprocess.run(
            [str(Path(sys.executable).with_name("airflow")), *args],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        if proc.returncode != 0:
            pytest.fail(
                f"airflow {' '.join(args)} failed:\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
            )

    def start(self, timeout_s: float = 600) -> None:
        """Migrate, parse the DAGs, unpause the DAGs the page triggers, start, wait until
        healthy."""
        self._airflow("db", "migrate")
        self._airflow("dags", "reserialize")
        for dag_id in (
            "kafka_archive_replay",
            "kafka_archive_group_offsets",
            "kafka_archive_restore",
        ):
            self._airflow("dags", "unpause", dag_id)
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(
                [str(Path(sys.executable).with_name("airflow")), "standalone"],
                env=self.env,
                cwd=self.home,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own process group: stop() ends all it started
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                pytest.fail(f"airflow standalone exited:\n{self.log_tail()}")
            if self._healthy():
                return
            time.sleep(2)
        pytest.fail(f"Airflow not healthy after {timeout_s}s:\n{self.log_tail()}")

    def _healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/api/v2/monitor/health", timeout=5) as r:
                health = json.load(r)
        except OSError:
            return False
        parts = ("metadatabase", "scheduler", "dag_processor")
        return all(health.get(p, {}).get("status") == "healthy" for p in parts)

    def log_tail(self, lines: int = 60) -> str:
        text = self.log.read_text(errors="replace") if self.log.exists() else ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """End the process group this server started (SIGTERM, then SIGKILL)."""
        if self.proc is None:
            return
        pgid = self.proc.pid  # start_new_session: the group's id is the leader's pid
        for sig, wait in ((signal.SIGTERM, 30.0), (signal.SIGKILL, 10.0)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                try:
                    os.killpg(pgid, 0)
                except ProcessLookupError:
                    return
                time.sleep(0.5)
        self.proc.wait(10)


# -- the page inside Airflow's UI -----------------------------------------------------------

#: screenshots of each step (git-ignored); docs/images/oncall/ holds the user guide's copies
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts" / "ui"
#: the page's route in Airflow's UI (the plugin's react_apps entry)
PAGE = "/plugin/kafka-archive/"


def open_page(page: Any, url: str, query: str = "") -> None:
    """Open the page at ``url + PAGE + query`` as the browser test's user: Airflow's login
    form first when the browser has no session (Airflow then returns to the link, query
    kept), until the page has said who is logged in."""
    from playwright.sync_api import expect

    page.goto(url + PAGE + query)
    login, who = page.locator("input[name=username]"), page.locator("#who")
    # Airflow's UI sends a browser without a session to its login form (after loading)
    expect(login.or_(who).first).to_be_visible()
    if login.is_visible():
        login.fill(UI_USER)
        page.locator("input[name=password]").fill(UI_PASSWORD)
        page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#who")).to_contain_text(UI_USER)


def set_mode(page: Any, mode: str) -> None:
    """Light or dark mode, as the operating system's preference Airflow's UI follows."""
    page.emulate_media(color_scheme=mode)
    page.wait_for_function(
        "m => document.documentElement.classList.contains(m)"
        " || document.documentElement.dataset.theme === m",
        arg=mode,
    )


def shot(page: Any, name: str, show: Any = None) -> Path:
    """A PNG of Airflow's window under :data:`ARTIFACTS`, ``show`` (a locator) scrolled into
    view first."""
    if show is not None:
        show.scroll_into_view_if_needed()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    out = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(out))
    return out


def set_check(page: Any, box_id: str, value: bool) -> None:
    """Tick or untick the page's checkbox ``box_id`` (a click on its label, as a person does)."""
    box = page.locator(f"[data-testid={box_id}]")
    if box.locator("input").is_checked() != value:
        box.click()
    assert box.locator("input").is_checked() == value


def no_error_shown(page: Any) -> None:
    """No error anywhere on the page."""
    from playwright.sync_api import expect

    expect(page.locator("#kafka-archive-oncall [role=alert]")).to_have_count(0)


def table_rows(table: Any, key: int, value: int) -> dict[int, str]:
    """``{int(cell key): cell value}`` over a table's body rows."""
    rows = table.locator("tbody tr")
    out: dict[int, str] = {}
    for i in range(rows.count()):
        cells = rows.nth(i).locator("td")
        out[int(cells.nth(key).inner_text())] = cells.nth(value).inner_text().strip()
    return out
