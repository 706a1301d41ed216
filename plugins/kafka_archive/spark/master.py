"""Checking a Spark master URL before a JVM is started for it.

Spark reports a malformed master only from inside the JVM it starts (a Py4J error with a Java
stack trace, seconds later). The forms Spark accepts are few and fixed, so they are checked
here first and a typo gets a one-line message naming the accepted forms.
"""

from __future__ import annotations

import re
from typing import Final

from kafka_archive.errors import KafkaArchiveError

__all__ = ["InvalidSparkMaster", "check_spark_master"]

_HOST_PORT: Final = r"[A-Za-z0-9.\-\[\]:]+:[0-9]{1,5}"
_FORMS: Final = (
    re.compile(r"local"),
    re.compile(r"local\[(\*|[1-9][0-9]*)(,[0-9]+)?\]"),
    re.compile(r"local-cluster\[[1-9][0-9]*,[1-9][0-9]*,[1-9][0-9]*\]"),
    re.compile(rf"spark://{_HOST_PORT}(,{_HOST_PORT})*"),
    re.compile(r"yarn"),
    re.compile(r"k8s://(https?://)?[^\s/]+(:[0-9]{1,5})?/?"),
    re.compile(r"mesos://\S+"),
)
ACCEPTED: Final = (
    "local, local[*], local[N], local[N,F], spark://host:port, yarn, k8s://https://host:port"
)


class InvalidSparkMaster(KafkaArchiveError, ValueError):
    """A ``--spark-master`` that is none of the forms Spark accepts."""

    default_hint = f"use one of: {ACCEPTED}"


def check_spark_master(master: str) -> str:
    """``master`` if Spark accepts its form, else :class:`InvalidSparkMaster`."""
    text = master.strip()
    if not any(form.fullmatch(text) for form in _FORMS):
        raise InvalidSparkMaster(f"{master!r} is not a Spark master URL")
    return text
