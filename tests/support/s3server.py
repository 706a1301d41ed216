"""A real S3 HTTP endpoint for tests: moto in server mode, in its own process.

In a child process (``_serve``) it starts ``moto.server.ThreadedMotoServer`` on 127.0.0.1 with
an OS-chosen port, prints ``PORT <n>`` and serves until its stdin closes (so it dies with the test
process). Running it in a separate process keeps its state away from any in-process
``moto.mock_aws`` used by other tests, and makes it a genuine network peer: the store talks to
it only through boto3 over HTTP, exactly as to an S3-compatible store.

As a pytest plugin (``pytest_plugins = ["support.s3server"]``) it provides:

* ``moto_s3`` (session): a running server with one bucket, as :class:`MotoS3`.
* ``aws_env`` (function): fake credentials and region in the environment, with every other
  AWS_* variable and the user's ~/.aws files masked, so nothing can reach real AWS.
* ``make_s3_store`` (function): builds an :class:`S3Store` on a fresh unique prefix, with small
  multipart sizes and tiny retry delays.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from support.s3common import (
    AWS_VARS_TO_MASK,
    BUCKET,
    FAKE_ACCESS_KEY,
    FAKE_SECRET_KEY,
    FAST_TEST_OPTIONS,
    REGION,
    unique_prefix,
)

if TYPE_CHECKING:
    import boto3
    from kafka_archive.store.s3 import S3Store
    from mypy_boto3_s3 import S3Client


_TESTS_DIR = Path(__file__).resolve().parent.parent


def _serve() -> None:
    from moto.server import ThreadedMotoServer

    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    _, port = server.get_host_and_port()
    print(f"PORT {port}", flush=True)
    sys.stdin.read()  # returns when the parent closes stdin or exits
    server.stop()


@dataclass(frozen=True)
class MotoS3:
    """A running moto S3 server."""

    host: str
    port: int
    bucket: str

    @property
    def endpoint_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def client(self, endpoint_url: str | None = None) -> S3Client:
        """A plain boto3 client with fake credentials, for test set-up and inspection."""
        import boto3
        import botocore.config

        client: S3Client = boto3.session.Session().client(
            "s3",
            endpoint_url=endpoint_url or self.endpoint_url,
            region_name=REGION,
            aws_access_key_id=FAKE_ACCESS_KEY,
            aws_secret_access_key=FAKE_SECRET_KEY,
            config=botocore.config.Config(
                s3={"addressing_style": "path"}, retries={"total_max_attempts": 1}
            ),
        )
        return client


@pytest.fixture(scope="session")
def moto_s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MotoS3]:
    log_path = tmp_path_factory.mktemp("moto") / "moto.log"
    env = {k: v for k, v in os.environ.items() if k not in AWS_VARS_TO_MASK}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                f"import sys; sys.path.insert(0, {str(_TESTS_DIR)!r}); "
                "from support.s3server import _serve; _serve()",
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=env,
        )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode()
        if not line.startswith("PORT "):
            proc.kill()
            pytest.fail(f"moto server did not start: {line!r}\n{log_path.read_text()[-4000:]}")
        server = MotoS3(host="127.0.0.1", port=int(line.split()[1]), bucket=BUCKET)
        server.client().create_bucket(Bucket=BUCKET)
        yield server
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in AWS_VARS_TO_MASK:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", FAKE_ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET_KEY)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "no-aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "no-aws-credentials"))
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@functools.cache
def _session() -> boto3.session.Session:
    """One boto3 session for the plain store fixtures: building an S3 client from a session
    that already loaded the service model is much faster. (Tests of environment handling build
    their stores without it.)"""
    import boto3

    return boto3.session.Session(
        aws_access_key_id=FAKE_ACCESS_KEY,
        aws_secret_access_key=FAKE_SECRET_KEY,
        region_name=REGION,
    )


@pytest.fixture
def make_s3_store(moto_s3: MotoS3, aws_env: None) -> Iterator[Callable[..., S3Store]]:
    """Factory: ``make_s3_store(endpoint_url=None, prefix=None, **options) -> S3Store``."""
    from kafka_archive.store.s3 import S3Options, S3Store

    made: list[S3Store] = []

    def make(endpoint_url: str | None = None, prefix: str | None = None, **options: Any) -> S3Store:
        opts = {**FAST_TEST_OPTIONS, "endpoint_url": endpoint_url or moto_s3.endpoint_url}
        opts.update(options)
        store = S3Store(
            moto_s3.bucket, prefix or unique_prefix(), S3Options(**opts), session=_session()
        )
        made.append(store)
        return store

    yield make
    for store in made:
        store.close()
