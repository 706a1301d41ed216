"""Constants and helpers shared by the S3 test plugin and the S3 tests (no fixtures here, so
test modules can import it directly)."""

from __future__ import annotations

import uuid
from typing import Any

MiB = 1024 * 1024
#: Multipart settings used by the tests: S3's minimum part size, so that a 12 MiB file is
#: really uploaded in three parts (5 + 5 + 2 MiB).
TEST_PART_SIZE = 5 * MiB

FAKE_ACCESS_KEY = "AKIAKAFKAARCHIVETEST"
#: A distinctive secret, so tests can prove it never shows up in reprs, errors or logs.
FAKE_SECRET_KEY = "kafkaArchiveSecret/DoNotLeak+8f3c1e2d9b7a"
REGION = "us-east-1"
BUCKET = "kafka-archive-test"

AWS_VARS_TO_MASK = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_ENDPOINT_URL",
    "AWS_ENDPOINT_URL_S3",
    "AWS_CA_BUNDLE",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "http_proxy",
    "https_proxy",
)


#: Store options used by the tests: real multipart at 5 MiB, small pages, tiny backoff.
FAST_TEST_OPTIONS: dict[str, Any] = {
    "multipart_threshold": TEST_PART_SIZE,
    "multipart_chunksize": TEST_PART_SIZE,
    "list_page_size": 2,
    "max_attempts": 3,
    "op_attempts": 2,
    "retry_initial_delay": 0.01,
    "retry_max_delay": 0.05,
    "connect_timeout": 5.0,
    "read_timeout": 20.0,
}


def unique_prefix(label: str = "t") -> str:
    return f"{label}-{uuid.uuid4().hex[:12]}"
