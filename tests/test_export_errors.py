"""A bad export output is one clear line before Spark starts (issue 20.7): an ``--output`` that
is an existing file, under a file, or unwritable, and an output folder whose
``_kafka_archive_export.json`` is not an export manifest (local and S3, on moto's server).
None of these tests starts Spark: each refusal comes first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from kafka_archive.export.manifest import MANIFEST_KEY
from kafka_archive.services.export import ExportRequest, ExportService
from kafka_archive.settings import load_settings
from kafka_archive.store.errors import StoreError
from support.catalog_data import History, archived_catalog
from support.cli_json import cli
from support.s3common import unique_prefix

pytest_plugins = ["support.s3server"]
pytestmark = pytest.mark.timeout(300)

C = "east"


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> tuple[History, str, str]:
    return archived_catalog(tmp_path_factory.mktemp("export-errors"), cluster=C)


def _export(archive: tuple[History, str, str], output: str) -> tuple[int, str]:
    _hist, store_uri, db = archive
    code, _lines, text = cli(
        "export", "--cluster", C, "--topic", "orders", "--from", "earliest",
        "--store", store_uri, "--db", db, "--output", output, "--spark-master", "no-such://x",
    )  # fmt: skip
    return code, text


def _one_error(code: int, text: str) -> str:
    assert code == 1, text
    assert "Traceback" not in text and "internal error" not in text, text
    errors = [line for line in text.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, text
    assert "hint:" in text, text
    return errors[0]


def test_an_output_that_is_a_file_is_refused_before_spark(
    archive: tuple[History, str, str], tmp_path: Path
) -> None:
    existing = tmp_path / "report.csv"
    existing.write_text("keep me\n")
    line = _one_error(*_export(archive, str(existing)))
    assert str(existing) in line and "existing file" in line
    assert existing.read_text() == "keep me\n"
    under = _one_error(*_export(archive, str(existing / "sub")))
    assert str(existing / "sub") in under


def test_an_unwritable_output_is_refused_before_spark(
    archive: tuple[History, str, str],
) -> None:
    # /sys refuses mkdir even to root (the test must not depend on the user's rights)
    line = _one_error(*_export(archive, "/sys/kafka-archive-export-test"))
    assert "cannot be written" in line


@pytest.mark.parametrize(
    "content,says",
    [
        (b"not json at all", "not JSON"),
        (b'{"format": 1}', "not one kafka-archive wrote"),
        (b"[1, 2]", "not one kafka-archive wrote"),
        (b'{"format": 99, "export_id": "e-x"}', "format 99"),
        (b"\xff\xfe\x00", "not JSON"),
    ],
)
def test_a_foreign_manifest_is_a_typed_error_naming_the_file(
    archive: tuple[History, str, str], tmp_path: Path, content: bytes, says: str
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / MANIFEST_KEY).write_bytes(content)
    line = _one_error(*_export(archive, str(out)))
    assert MANIFEST_KEY in line and says in line, line
    assert (out / MANIFEST_KEY).read_bytes() == content  # someone else's folder: untouched


@pytest.mark.parametrize("content", [b"{not json", b'{"format": 1}'])
def test_a_foreign_manifest_on_s3_is_a_typed_error(
    archive: tuple[History, str, str], moto_s3: Any, aws_env: None, content: bytes
) -> None:
    prefix = unique_prefix("export-bad-manifest")
    moto_s3.client().put_object(Bucket=moto_s3.bucket, Key=f"{prefix}/{MANIFEST_KEY}", Body=content)
    _hist, store_uri, db = archive
    options = {"endpoint_url": moto_s3.endpoint_url, "region": "us-east-1"}
    with ExportService(load_settings({"store": store_uri, "db": db}, env={})) as svc:
        plan = svc.plan(
            ExportRequest.model_validate(
                {"cluster": C, "topic": "orders", "from": "earliest",
                 "output": f"s3://{moto_s3.bucket}/{prefix}"}
            )
        )  # fmt: skip
        with pytest.raises(StoreError) as refused:
            svc.run(plan, spark_master="no-such://x", output_options=options)
    assert refused.value.key == MANIFEST_KEY and prefix in str(refused.value.uri)
    assert refused.value.hint and "another" in refused.value.hint


@pytest.mark.parametrize("command", ["export", "replay"])
@pytest.mark.parametrize(
    "partitions,code,says",
    [
        ("0-99999999999", 2, "a partition id is 0..2147483647"),
        ("0-2147483647", 2, "more than 100000 partitions"),
        ("5-1", 2, "inverted"),
        ("0-99999", 1, "partitions 3-99999 of east/orders are not in the archive"),
    ],
)
def test_a_huge_partition_range_is_a_bounded_error(
    archive: tuple[History, str, str], tmp_path: Path, command: str, partitions: str, code: int,
    says: str,
) -> None:  # fmt: skip
    """Issue 20.7: ``--partitions 0-99999999999`` ended in MemoryError (exit 70); a range is
    bounded before any list is built, and one beyond the topic is named compactly."""
    _hist, store_uri, db = archive
    common = ["--cluster", C, "--topic", "orders", "--from", "earliest", "--store", store_uri,
              "--db", db, "--partitions", partitions]  # fmt: skip
    if command == "export":
        argv = ["export", *common, "--output", str(tmp_path / "out"), "--dry-run"]
    else:
        argv = ["replay", "run", *common, "--target", "127.0.0.1:1", "--dry-run", "--offline"]
    got, _lines, text = cli(*argv)
    assert got == code, text
    assert "Traceback" not in text and "internal error" not in text, text
    assert says in text, text
    assert len(text) < 2000, text
