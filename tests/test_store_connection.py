"""Object-store credentials from an Airflow connection: the mapping, and the archive DAG reaching
S3 (a moto server) with credentials and endpoint known only to an Airflow connection, never
showing the secret in its task logs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from kafka_archive.store.credentials import aws_env_from_connection
from kafka_archive_dev.writer import write_demo_cluster
from support.s3common import FAKE_ACCESS_KEY, FAKE_SECRET_KEY

if TYPE_CHECKING:
    from support.airflow import AirflowHome
    from support.s3server import MotoS3

pytest_plugins = ["support.airflow", "support.s3server"]


def test_connection_fields_map_to_the_standard_aws_environment() -> None:
    env = aws_env_from_connection(
        "AKIA1",
        "s3cr3t",
        {
            "aws_session_token": "tok",
            "region_name": "eu-west-1",
            "service_config": {"s3": {"endpoint_url": "http://minio:9000"}},
        },
    )
    assert env == {
        "AWS_ACCESS_KEY_ID": "AKIA1",
        "AWS_SECRET_ACCESS_KEY": "s3cr3t",
        "AWS_SESSION_TOKEN": "tok",
        "AWS_REGION": "eu-west-1",
        "AWS_DEFAULT_REGION": "eu-west-1",
        "AWS_ENDPOINT_URL_S3": "http://minio:9000",
    }
    assert aws_env_from_connection(None, None, None) == {}
    assert aws_env_from_connection(None, None, {"endpoint_url": "http://e"}) == {
        "AWS_ENDPOINT_URL_S3": "http://e"
    }


SNIPPET = """
import json
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder={dags!r})
assert not bag.import_errors, bag.import_errors
dr = bag.get_dag("kafka_archive_segments").test()
print("RESULT " + json.dumps(str(getattr(dr.state, "value", dr.state))))
"""


def test_archive_dag_uses_credentials_from_an_airflow_connection(
    airflow_home: AirflowHome, moto_s3: MotoS3, tmp_path: Path
) -> None:
    from support.airflow import DAGS_FOLDER

    cluster = write_demo_cluster(tmp_path / "cluster", brokers=2, steps=120)
    config = {
        "store_uri": f"s3://{moto_s3.bucket}/via-connection",
        "state_dir": str(tmp_path / "state"),
        "store_options": {"max_attempts": 2, "op_attempts": 1},
        "clusters": [
            {
                "name": "conn",
                "brokers": [
                    {"id": b, "log_dirs": [str(d) for d in dirs]}
                    for b, dirs in sorted(cluster.broker_dirs.items())
                ],
            }
        ],
    }
    (tmp_path / "archive.json").write_text(json.dumps(config))
    conn = {
        "conn_type": "aws",
        "login": FAKE_ACCESS_KEY,
        "password": FAKE_SECRET_KEY,
        "extra": {"endpoint_url": moto_s3.endpoint_url, "region_name": "us-east-1"},
    }
    for name in [k for k in os.environ if k.startswith("AWS_")]:
        assert name not in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"), "test needs a clean env"
    extra_env = {
        "KAFKA_ARCHIVE_CONFIG": str(tmp_path / "archive.json"),
        "KAFKA_ARCHIVE_AWS_CONN_ID": "archive_s3",
        "AIRFLOW_CONN_ARCHIVE_S3": json.dumps(conn),
        # nothing else could supply credentials: no shared files, no instance metadata
        "AWS_CONFIG_FILE": str(tmp_path / "none"),
        "AWS_SHARED_CREDENTIALS_FILE": str(tmp_path / "none"),
        "AWS_EC2_METADATA_DISABLED": "true",
    }
    proc = subprocess.run(
        [sys.executable, "-c", SNIPPET.format(dags=str(DAGS_FOLDER))],
        env={**airflow_home.env, **extra_env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert 'RESULT "success"' in proc.stdout, output[-4000:]
    keys = [
        o["Key"]
        for o in moto_s3.client().list_objects_v2(Bucket=moto_s3.bucket, Prefix="via-connection/")[
            "Contents"
        ]
    ]
    assert any("/manifests/" in k for k in keys)
    # the task logs (dag.test() prints them) show which connection, never the secret
    assert "credentials from Airflow connection 'archive_s3'" in output
    assert FAKE_SECRET_KEY not in output
    assert FAKE_SECRET_KEY not in "".join(
        p.read_text(errors="replace") for p in Path(airflow_home.path).rglob("*.log")
    )
