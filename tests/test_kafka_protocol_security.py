"""Issue 22 point 4, the settings: librdkafka's security settings mapped to the kafka-python
protocol client (SSL, SASL PLAIN/SCRAM, OAUTHBEARER over OIDC, Amazon MSK IAM).

Checked without a broker: each mechanism's mapping; settings refused by name, never with their
value; the OIDC token provider against a local HTTP token endpoint (what it sends, that it
caches, that a refusal names the endpoint and not the secret); the MSK IAM token made by AWS's
signer from fake credentials in the environment (no network), its SigV4 signature recomputed
by kafka-python's own MSK signer (an implementation not ours). The secured broker itself:
tests/real_kafka/test_secured_real.py.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest
from kafka_archive.kafka_protocol.config import (
    UnsupportedRawSetting,
    kafka_python_config,
    librdkafka_config,
)
from kafka_archive.kafka_protocol.oauth import (
    MskIamTokenProvider,
    OAuthTokenError,
    OidcTokenProvider,
)

SECRET = "s3cret-Value-42"


def test_ssl_and_each_sasl_password_mechanism_map() -> None:
    ssl = {
        "bootstrap.servers": "b:9093",
        "security.protocol": "SSL",
        "ssl.ca.location": "/ca.pem",
        "ssl.certificate.location": "/c.pem",
        "ssl.key.location": "/k.pem",
        "ssl.key.password": SECRET,
        "ssl.endpoint.identification.algorithm": "https",
    }
    assert kafka_python_config(ssl) == {
        "bootstrap_servers": "b:9093",
        "security_protocol": "SSL",
        "ssl_cafile": "/ca.pem",
        "ssl_certfile": "/c.pem",
        "ssl_keyfile": "/k.pem",
        "ssl_password": SECRET,
        "ssl_check_hostname": True,
    }
    off = kafka_python_config({**ssl, "ssl.endpoint.identification.algorithm": "none"})
    assert off["ssl_check_hostname"] is False
    for mech in ("PLAIN", "SCRAM-SHA-256", "scram-sha-512"):
        got = kafka_python_config(
            {
                "security.protocol": "sasl_ssl",
                "sasl.mechanism": mech,
                "sasl.username": "u",
                "sasl.password": SECRET,
            }
        )
        assert got == {
            "security_protocol": "SASL_SSL",
            "sasl_mechanism": mech.upper(),
            "sasl_plain_username": "u",
            "sasl_plain_password": SECRET,
        }


@pytest.mark.parametrize(
    ("conf", "named"),
    [
        ({"ssl.keystore.password": SECRET}, "ssl.keystore.password"),
        ({"sasl.kerberos.keytab": SECRET}, "sasl.kerberos.keytab"),
        ({"sasl.mechanism": "SCRAM-SHA-512", "sasl.oauthbearer.client.secret": SECRET},
         "sasl.oauthbearer.client.secret"),
        ({"ssl.endpoint.identification.algorithm": "sometimes"},
         "ssl.endpoint.identification.algorithm"),
        ({"sasl.mechanism": "GSSAPI"}, "sasl.mechanism"),
        ({"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.config": SECRET},
         "sasl.oauthbearer.config"),
        ({"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.client.secret": SECRET},
         "sasl.oauthbearer.method=oidc"),
        ({"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
          "sasl.oauthbearer.client.secret": SECRET},
         "sasl.oauthbearer.token.endpoint.url, sasl.oauthbearer.client.id"),
        ({"sasl.mechanism": "OAUTHBEARER", "sasl.oauthbearer.method": "oidc",
          "sasl.oauthbearer.token.endpoint.url": "http://x/t", "sasl.oauthbearer.client.id": "c",
          "sasl.oauthbearer.client.secret": SECRET, "sasl.oauthbearer.extensions": SECRET},
         "sasl.oauthbearer.extensions"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "AWS_MSK_IAM",
          "sasl.aws.region": "eu-west-1"}, "security.protocol=SASL_SSL"),
    ],
)  # fmt: skip
def test_a_refused_setting_is_named_and_its_value_never_shown(
    conf: dict[str, str], named: str
) -> None:
    with pytest.raises(UnsupportedRawSetting) as err:
        kafka_python_config(conf)
    assert named in str(err.value)
    assert SECRET not in str(err.value)


def test_msk_iam_needs_a_region(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_REGION", raising=False)
    monkeypatch.delenv("AWS_DEFAULT_REGION", raising=False)
    conf = {"security.protocol": "SASL_SSL", "sasl.mechanism": "AWS_MSK_IAM"}
    with pytest.raises(UnsupportedRawSetting, match=r"sasl\.aws\.region"):
        kafka_python_config(conf)
    monkeypatch.setenv("AWS_REGION", "ap-south-1")
    got = kafka_python_config(conf)
    assert got["sasl_mechanism"] == "OAUTHBEARER"  # MSK takes the signed token over OAUTHBEARER
    assert isinstance(got["sasl_oauth_token_provider"], MskIamTokenProvider)
    assert got["sasl_oauth_token_provider"].region == "ap-south-1"
    got = kafka_python_config({**conf, "sasl.aws.region": "eu-west-1"})
    assert got["sasl_oauth_token_provider"].region == "eu-west-1"


# -- OIDC ------------------------------------------------------------------------------------


class _TokenEndpoint:
    """A local OAuth token endpoint: answers the client-credentials grant of client ``app`` /
    :data:`SECRET` with a new token each time, records the requests."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"])).decode()
                form = dict(urllib.parse.parse_qsl(body))
                auth = self.headers.get("Authorization", "")
                outer.requests.append({"form": form, "auth": auth, "path": self.path})
                want = "Basic " + base64.b64encode(f"app:{SECRET}".encode()).decode()
                if auth != want or form.get("grant_type") != "client_credentials":
                    self.send_response(401)
                    self.end_headers()
                    return
                answer = {"access_token": f"tok-{len(outer.requests)}", "expires_in": 3600}
                data = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/oauth2/token"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()


@pytest.fixture
def token_endpoint() -> Iterator[_TokenEndpoint]:
    ep = _TokenEndpoint()
    yield ep
    ep.server.shutdown()
    ep.server.server_close()


def _oidc(url: str, secret: str = SECRET) -> dict[str, str]:
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.token.endpoint.url": url,
        "sasl.oauthbearer.client.id": "app",
        "sasl.oauthbearer.client.secret": secret,
        "sasl.oauthbearer.scope": "kafka.read kafka.write",
        "sasl.oauthbearer.extensions": "logicalCluster=lkc-1, identityPoolId=pool-2",
    }


def test_oidc_provider_fetches_the_client_credentials_token_and_keeps_it(
    token_endpoint: _TokenEndpoint,
) -> None:
    got = kafka_python_config(_oidc(token_endpoint.url))
    assert got["sasl_mechanism"] == "OAUTHBEARER"
    provider = got["sasl_oauth_token_provider"]
    assert isinstance(provider, OidcTokenProvider)
    assert token_endpoint.requests == []  # mapping fetches nothing
    assert provider.token() == "tok-1"
    assert provider.token() == "tok-1"  # cached: one request for both
    assert len(token_endpoint.requests) == 1
    req = token_endpoint.requests[0]
    assert req["form"] == {"grant_type": "client_credentials", "scope": "kafka.read kafka.write"}
    assert req["path"] == "/oauth2/token"
    assert provider.extensions() == {"logicalCluster": "lkc-1", "identityPoolId": "pool-2"}
    # kafka-python's own OAUTHBEARER mechanism takes it and writes the initial response
    from kafka.net.sasl.oauth import SaslMechanismOAuth

    first = SaslMechanismOAuth(sasl_oauth_token_provider=provider).auth_bytes()
    assert first == (
        b"n,,\x01auth=Bearer tok-1\x01logicalCluster=lkc-1\x01identityPoolId=pool-2\x01\x01"
    )


def test_oidc_provider_refused_names_the_endpoint_not_the_secret(
    token_endpoint: _TokenEndpoint,
) -> None:
    wrong = "Wr0ng-" + SECRET
    provider = kafka_python_config(_oidc(token_endpoint.url + "?tenant=t1", wrong))[
        "sasl_oauth_token_provider"
    ]
    with pytest.raises(OAuthTokenError) as err:
        provider.token()
    text = str(err.value)
    assert "HTTP 401" in text and token_endpoint.url in text
    assert wrong not in text and "tenant" not in text
    # an endpoint nobody listens on: one clear error too
    token_endpoint.server.shutdown()
    token_endpoint.server.server_close()
    with pytest.raises(OAuthTokenError, match="no token from the OAuth token endpoint"):
        OidcTokenProvider(token_endpoint.url, "app", SECRET).token()


# -- MSK IAM ---------------------------------------------------------------------------------

FAKE_KEY_ID = "AKIAFAKEFAKEFAKE1234"
FAKE_SECRET = "fakeSecretAccessKey/ForTestsOnly0123456789"


@pytest.fixture
def fake_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """Credentials only from the environment: no profile files, no instance metadata."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", FAKE_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", FAKE_SECRET)
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def test_msk_iam_token_is_aws_signers_presigned_url_checked_by_kafka_pythons_signer(
    fake_aws: None,
) -> None:
    conf = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "AWS_MSK_IAM",
        "sasl.aws.region": "eu-west-1",
    }
    provider = kafka_python_config(conf)["sasl_oauth_token_provider"]
    token = provider.token()
    assert provider.token() == token  # cached
    url = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode()
    parts = urllib.parse.urlsplit(url)
    q = dict(urllib.parse.parse_qsl(parts.query))
    assert parts.netloc == "kafka.eu-west-1.amazonaws.com"
    assert q["Action"] == "kafka-cluster:Connect"
    assert q["X-Amz-Credential"].startswith(f"{FAKE_KEY_ID}/")
    assert q["X-Amz-Credential"].endswith("/eu-west-1/kafka-cluster/aws4_request")
    assert q["X-Amz-Expires"] == "900"
    assert FAKE_SECRET not in url
    # the same SigV4 signature, computed by kafka-python's AWS_MSK_IAM signer
    from kafka.net.sasl.msk import AwsMskIamClient

    other = AwsMskIamClient(
        host=parts.netloc, access_key=FAKE_KEY_ID, secret_key=FAKE_SECRET, region="eu-west-1"
    )
    other.timestamp = q["X-Amz-Date"]
    other.datestamp = q["X-Amz-Date"][:8]
    assert json.loads(other.first_message())["x-amz-signature"] == q["X-Amz-Signature"]


def test_msk_iam_without_credentials_is_one_clear_error(
    fake_aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("AWS_ACCESS_KEY_ID")
    monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
    with pytest.raises(OAuthTokenError, match="no MSK IAM token for region eu-west-1"):
        MskIamTokenProvider("eu-west-1").token()


def test_the_protocol_client_takes_an_oauthbearer_provider(
    token_endpoint: _TokenEndpoint,
) -> None:
    """kafka-python's client accepts the mapped arguments (it checks the provider's type)."""
    from kafka_archive.kafka_protocol.client import ProtocolClient

    conf = {"bootstrap.servers": "127.0.0.1:1", **_oidc(token_endpoint.url)}
    ProtocolClient(conf, client_id="t").close()


# -- the librdkafka clients ------------------------------------------------------------------


def test_librdkafka_settings_pass_unchanged_but_msk_iam() -> None:
    conf = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "x.y": "z"}
    assert librdkafka_config(conf) == conf
    with pytest.raises(UnsupportedRawSetting, match=r"security\.protocol=SASL_SSL"):
        librdkafka_config({"sasl.mechanisms": "aws_msk_iam", "sasl.aws.region": "eu-west-1"})


def test_librdkafka_clients_take_the_msk_iam_token_through_oauth_cb(
    fake_aws: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """librdkafka has no IAM mechanism: AWS_MSK_IAM becomes OAUTHBEARER with an ``oauth_cb``,
    which librdkafka itself calls when a client is made (each of the three kinds)."""
    import logging

    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient  # type: ignore[attr-defined]

    fetched: list[float] = []
    original = MskIamTokenProvider._fetch

    def spy(self: MskIamTokenProvider) -> tuple[str, float]:
        got = original(self)
        fetched.append(got[1])
        return got

    monkeypatch.setattr(MskIamTokenProvider, "_fetch", spy)
    conf = {
        "bootstrap.servers": "127.0.0.1:1",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "AWS_MSK_IAM",
        "sasl.aws.region": "eu-west-1",
        "sasl.aws.profile": "",
    }
    got = librdkafka_config(conf)
    assert got["sasl.mechanism"] == "OAUTHBEARER"
    assert not any(k.startswith("sasl.aws.") for k in got)
    token, expires = got["oauth_cb"]("")
    assert expires - time.time() > 600  # the signer's 900 s
    assert base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).startswith(
        b"https://kafka.eu-west-1.amazonaws.com/"
    )
    quiet = {"logger": logging.getLogger("quiet-librdkafka")}
    for make, extra in ((AdminClient, {}), (Producer, {}), (Consumer, {"group.id": "g"})):
        before = len(fetched)
        client = make({**librdkafka_config(conf), **quiet, **extra})
        assert len(fetched) == before + 1, make.__name__  # librdkafka asked for the token
        if isinstance(client, Consumer):
            client.close()
