"""A local Spark session listens on loopback only, with its web UI off unless asked."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

from kafka_archive.spark.session import SPARK_UI_ENV, local_session_conf

REPO = Path(__file__).resolve().parent.parent


def test_local_conf_loopback_and_ui_off_by_default() -> None:
    conf = local_session_conf("local[2]", env={})
    assert conf["spark.driver.host"] == conf["spark.driver.bindAddress"] == "127.0.0.1"
    assert conf["spark.ui.enabled"] == "false"


def test_ui_only_when_asked_and_then_on_loopback() -> None:
    conf = local_session_conf("local[*]", env={SPARK_UI_ENV: "1"})
    assert conf["spark.ui.enabled"] == "true"
    assert conf["spark.ui.bindAddress"] == "127.0.0.1"
    assert local_session_conf("local[*]", env={SPARK_UI_ENV: "0"})["spark.ui.enabled"] == "false"


def test_cluster_masters_are_left_alone() -> None:
    assert local_session_conf("spark://10.0.0.5:7077", env={}) == {}
    assert local_session_conf(None, env={}) == {}


def test_a_real_local_session_has_that_conf() -> None:
    """One real session, in a child process so that no session of another test is reused."""
    code = textwrap.dedent(
        """
        import json
        from kafka_archive.spark.session import make_spark_session
        s = make_spark_session("local[1]")
        c = s.sparkContext.getConf()
        print("CONF " + json.dumps({k: c.get(k) for k in (
            "spark.driver.host", "spark.driver.bindAddress", "spark.ui.enabled")}
            | {"uiWebUrl": s.sparkContext.uiWebUrl}))
        s.stop()
        """
    )
    env = {k: v for k, v in os.environ.items() if k != SPARK_UI_ENV}
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=REPO,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("CONF "))
    conf = json.loads(line[5:])
    assert conf == {
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.ui.enabled": "false",
        "uiWebUrl": None,
    }
