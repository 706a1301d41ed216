"""SASL/OAUTHBEARER token providers for the kafka-python protocol client: OIDC client
credentials (what librdkafka's ``sasl.oauthbearer.method=oidc`` does) and Amazon MSK IAM.

kafka-python speaks OAUTHBEARER but ships no provider: it asks an
:class:`kafka.net.sasl.oauth.AbstractTokenProvider` for a token at every authentication. The
two here cache the token and fetch a new one once 80 % of its lifetime has passed (librdkafka's
refresh point), so the many connections of one client do not each ask for a token.

* :class:`OidcTokenProvider`: the OAuth 2 client-credentials grant (RFC 6749 4.4) against the
  token endpoint, client id and secret in HTTP Basic authentication, as librdkafka does. A few
  lines on :mod:`urllib.request` rather than a dependency: the grant is one POST, and the OAuth
  libraries (``requests-oauthlib``, ``authlib``) would bring a session layer we do not use.
* :class:`MskIamTokenProvider`: AWS's own signer (``aws-msk-iam-sasl-signer-python``), whose
  token MSK accepts over OAUTHBEARER from non-Java clients (AWS's documented way for Python and
  librdkafka clients); credentials from the default AWS chain, a profile, or a role to assume.

Errors are :class:`OAuthTokenError` naming the endpoint (without its query) or the region and
what failed - never the client secret, the token or AWS credentials.
"""

from __future__ import annotations

import base64
import json
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from typing import Final

from kafka.net.sasl.oauth import AbstractTokenProvider

from kafka_archive.errors import KafkaArchiveError

__all__ = ["MskIamTokenProvider", "OAuthTokenError", "OidcTokenProvider"]

#: a token is fetched again once this share of its lifetime has passed (librdkafka's 80 %)
REFRESH_AT: Final = 0.8
#: how long the token endpoint may take to answer
HTTP_TIMEOUT_S: Final = 10.0


class OAuthTokenError(KafkaArchiveError, RuntimeError):
    """No token could be had (the message says from where and why, never a secret)."""


class _CachingProvider(AbstractTokenProvider):  # type: ignore[misc]
    """A token kept until :data:`REFRESH_AT` of its lifetime; ``_fetch`` returns the token and
    its lifetime in seconds. Thread safe: one fetch at a time."""

    def __init__(self, extensions: Mapping[str, str] | None = None) -> None:
        super().__init__()
        self._extensions = dict(extensions or {})
        self._lock = threading.Lock()
        self._token: str | None = None
        self._refresh_at = 0.0
        self._expires_at = 0.0  # epoch seconds

    def _fetch(self) -> tuple[str, float]:
        raise NotImplementedError

    def token(self) -> str:
        with self._lock:
            now = time.monotonic()
            if self._token is None or now >= self._refresh_at:
                token, lifetime_s = self._fetch()
                self._token = token
                self._refresh_at = now + max(1.0, lifetime_s) * REFRESH_AT
                self._expires_at = time.time() + max(1.0, lifetime_s)
            return self._token

    def oauth_cb(self, _oauthbearer_config: str) -> tuple[str, float]:
        """librdkafka's ``oauth_cb`` (confluent-kafka): the token and when it expires (epoch
        seconds); librdkafka calls it again before then."""
        token = self.token()
        return token, self._expires_at

    def extensions(self) -> dict[str, str]:
        return dict(self._extensions)


class OidcTokenProvider(_CachingProvider):
    """Tokens of the OAuth 2 client-credentials grant from ``endpoint`` (librdkafka's
    ``sasl.oauthbearer.token.endpoint.url``, ``.client.id``, ``.client.secret``, ``.scope``,
    ``.extensions``)."""

    def __init__(
        self,
        endpoint: str,
        client_id: str,
        client_secret: str,
        *,
        scope: str | None = None,
        extensions: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(extensions)
        self.endpoint = endpoint
        self._client_id = client_id
        self._client_secret = client_secret
        self._scope = scope

    def _where(self) -> str:
        """The endpoint without query or user info (what an error may show)."""
        u = urllib.parse.urlsplit(self.endpoint)
        return f"{u.scheme}://{u.hostname}{f':{u.port}' if u.port else ''}{u.path}"

    def _fetch(self) -> tuple[str, float]:
        form = {"grant_type": "client_credentials"}
        if self._scope:
            form["scope"] = self._scope
        basic = base64.b64encode(
            f"{urllib.parse.quote(self._client_id)}:{urllib.parse.quote(self._client_secret)}".encode()
        ).decode()
        req = urllib.request.Request(
            self.endpoint,
            data=urllib.parse.urlencode(form).encode(),
            headers={
                "Authorization": f"Basic {basic}",
                "Content-Type": "application/x-www-form-urlencoded",
                "Accept": "application/json",
            },
            method="POST",
        )
        try:
            with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S) as resp:
                body = json.loads(resp.read())
        except urllib.error.HTTPError as exc:
            raise OAuthTokenError(
                f"the OAuth token endpoint {self._where()} answered HTTP {exc.code} "
                "(check sasl.oauthbearer.client.id/.client.secret/.scope)"
            ) from None
        except (OSError, ValueError) as exc:
            reason = getattr(exc, "reason", None) or type(exc).__name__
            raise OAuthTokenError(
                f"no token from the OAuth token endpoint {self._where()}: {reason}"
            ) from None
        token = body.get("access_token") if isinstance(body, dict) else None
        if not isinstance(token, str) or not token:
            raise OAuthTokenError(
                f"the OAuth token endpoint {self._where()} answered without an access_token"
            )
        try:
            lifetime = float(body.get("expires_in", 3600))
        except (TypeError, ValueError):
            lifetime = 3600.0
        return token, lifetime


class MskIamTokenProvider(_CachingProvider):
    """Amazon MSK IAM tokens for ``region`` signed by ``aws-msk-iam-sasl-signer-python``, with
    the default AWS credential chain, or ``profile``, or the role ``role_arn`` assumed."""

    def __init__(
        self, region: str, *, profile: str | None = None, role_arn: str | None = None
    ) -> None:
        super().__init__()
        self.region = region
        self._profile = profile
        self._role_arn = role_arn

    def _fetch(self) -> tuple[str, float]:
        from aws_msk_iam_sasl_signer import MSKAuthTokenProvider as signer

        try:
            if self._role_arn:
                token, expiry_ms = signer.generate_auth_token_from_role_arn(
                    self.region, self._role_arn
                )
            elif self._profile:
                token, expiry_ms = signer.generate_auth_token_from_profile(
                    self.region, self._profile
                )
            else:
                token, expiry_ms = signer.generate_auth_token(self.region)
        except Exception as exc:  # botocore's credential errors, the signer's ValueError
            raise OAuthTokenError(
                f"no MSK IAM token for region {self.region}: {type(exc).__name__} "
                "(are AWS credentials available to this process?)"
            ) from None
        return str(token), max(1.0, int(expiry_ms) / 1000 - time.time())
