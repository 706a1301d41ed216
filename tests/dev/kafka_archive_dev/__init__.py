"""kafka-archive's development harness: what the tests, the benchmarks and ``./dev demo`` need
and the product does not.

* :mod:`kafka_archive_dev.writer`: a broker-faithful writer of Kafka log directories (segments,
  indexes, snapshots, checkpoints, ``__consumer_offsets``), the tests' and the demo's data;
* :mod:`kafka_archive_dev.local_kafka`: a real Apache Kafka cluster on loopback (Kafka's jars
  through ``scripts/ensure-kafka.sh``);
* :mod:`kafka_archive_dev.embedded_kafka`: librdkafka's mock cluster in this process;
* :mod:`kafka_archive_dev.demo`, :mod:`kafka_archive_dev.demo_live`: the stages of the demo;
* :mod:`kafka_archive_dev.cli`: the ``kafka-archive-dev`` command (``kafka-archive-dev demo``
  is what ``./dev demo`` runs).

This package lives in the repository (``tests/dev/``) and is installed, editable, by
``./dev setup`` only: it is not part of the ``kafka-archive`` distribution, and the product
(``kafka_archive``, ``segment_lib``) never imports it (an import-linter contract in
pyproject.toml, checked by tests/test_import_rules.py). Unlike the product it knows the source
checkout's layout: :data:`REPO_ROOT` is the clone it was installed from.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["REPO_ROOT", "repo_path"]

#: the source checkout this package lives in (tests/dev/kafka_archive_dev/ -> the clone's root)
REPO_ROOT = Path(__file__).resolve().parents[3]


def repo_path(*parts: str) -> Path:
    """A path inside the checkout (``repo_path("dags")``, ``repo_path("scripts", "x.sh")``).

    Raises:
        FileNotFoundError: the checkout has no such path (the package was copied out of its
            clone, which it does not support).
    """
    path = REPO_ROOT.joinpath(*parts)
    if not path.exists():
        raise FileNotFoundError(
            f"{path} not found: kafka_archive_dev runs from a clone of kafka-archive "
            "(install it with ./dev setup)"
        )
    return path
