"""Shared pytest fixtures.

``real_broker_data`` points at ``../shared/fixtures/real-broker-data`` (log dirs written by real
Kafka brokers). Tests that need it skip with a visible reason when the folder is absent; with
``KAFKA_ARCHIVE_REQUIRE_FIXTURES=1`` (set by ``.ci/run``) its absence is a failure instead.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# the real Kafka cluster (session fixtures kafka_cluster, kafka_cluster_39)
pytest_plugins = ["support.real_kafka"]

REPO_ROOT = Path(__file__).resolve().parent.parent
REAL_BROKER_DATA = Path(
    os.environ.get(
        "KAFKA_ARCHIVE_FIXTURES", REPO_ROOT.parent / "shared" / "fixtures" / "real-broker-data"
    )
)


@pytest.fixture(scope="session")
def real_broker_data() -> Path:
    """The root of the real-broker fixtures (one folder per source repository)."""
    if not REAL_BROKER_DATA.is_dir():
        reason = f"real broker fixtures not found at {REAL_BROKER_DATA}"
        if os.environ.get("KAFKA_ARCHIVE_REQUIRE_FIXTURES") == "1":
            pytest.fail(reason + " (required by KAFKA_ARCHIVE_REQUIRE_FIXTURES=1)")
        pytest.skip(reason)
    return REAL_BROKER_DATA


@pytest.fixture(autouse=True, scope="session")
def _internal_error_logs_stay_in_the_test_run(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The CLI's last-resort handler writes a log per internal error; in tests those go to the
    run's temp folder, not the user's state directory (tests that check the log set their own)."""
    os.environ.setdefault(
        "KAFKA_ARCHIVE_ERROR_LOG_DIR", str(tmp_path_factory.mktemp("internal-errors"))
    )
