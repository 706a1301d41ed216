"""Keeping secret Spark settings off ``spark-submit``'s command line.

A process's argument list is readable by every user of the machine (``ps``, ``/proc``) and ends
up in Airflow task logs. Spark settings whose name says they hold a secret
(:func:`kafka_archive.redact.is_secret_key`: ``spark.executorEnv.AWS_SECRET_ACCESS_KEY``,
``spark.hadoop.fs.s3a.secret.key``, ``spark.ssl.keyPassword`` ...) are therefore never given
as ``--conf``: :func:`write_properties_file` puts them in a new file readable by the owner only
(mode 0600), which ``spark-submit --properties-file`` reads. Because that option replaces the
loading of ``spark-defaults.conf``, the file starts with the defaults file's own lines (from
``$SPARK_CONF_DIR`` or ``$SPARK_HOME/conf``), so nothing configured there is lost.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from kafka_archive.redact import is_secret_key

__all__ = ["spark_defaults_file", "split_secret_conf", "write_properties_file"]


def split_secret_conf(conf: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """``(public, secret)``: the settings that may go on a command line, and the others."""
    public: dict[str, str] = {}
    secret: dict[str, str] = {}
    for k, v in conf.items():
        (secret if is_secret_key(k) else public)[k] = v
    return public, secret


def spark_defaults_file(env: Mapping[str, str] | None = None) -> Path | None:
    """The ``spark-defaults.conf`` spark-submit would load by itself, if there is one."""
    env = os.environ if env is None else env
    dirs = [env.get("SPARK_CONF_DIR")]
    if env.get("SPARK_HOME"):
        dirs.append(str(Path(env["SPARK_HOME"]) / "conf"))
    for d in dirs:
        if d and (Path(d) / "spark-defaults.conf").is_file():
            return Path(d) / "spark-defaults.conf"
    return None


def _escape(text: str, *, key: bool) -> str:
    """java.util.Properties escaping (what Spark's loader undoes)."""
    out = text.replace("\\", "\\\\").replace("\n", "\\n").replace("\r", "\\r")
    out = out.replace("\t", "\\t")
    if key:
        for ch in ("=", ":", " ", "#", "!"):
            out = out.replace(ch, "\\" + ch)
    elif out.startswith(" "):
        out = "\\" + out
    return out


def write_properties_file(
    secret: Mapping[str, str], path: Path, env: Mapping[str, str] | None = None
) -> Path:
    """Write ``secret`` (after the lines of :func:`spark_defaults_file`) to ``path``, created
    new with mode 0600; returns ``path``. The caller deletes it when spark-submit is done."""
    lines: list[str] = []
    defaults = spark_defaults_file(env)
    if defaults is not None:
        lines.append(defaults.read_text(encoding="utf-8").rstrip("\n"))
    lines += [f"{_escape(k, key=True)}={_escape(v, key=False)}" for k, v in secret.items()]
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n")
    return path
