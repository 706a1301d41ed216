"""A fault-injecting HTTP proxy for S3 tests.

It listens on 127.0.0.1, reads each HTTP/1.1 request from the client (boto3), classifies it as
an S3 operation (``PutObject``, ``UploadPart``, ``GetObject``, ...) and then, following a
programmable plan, either forwards it to the real endpoint (moto) or misbehaves:

* ``error``: answer with an S3-style XML error (e.g. 500 InternalError, 503 SlowDown, 429)
  without forwarding;
* ``reset``: forward the head and about half of the request body, then reset both
  connections (TCP RST via SO_LINGER 0) - a connection dying mid-upload;
* ``corrupt_request``: forward the request with one body byte flipped (bit rot in transit);
* ``corrupt_response``: forward, then flip one byte of the response body;
* ``reset_response``: forward, relay the response head and half of its body, then reset.

Each :class:`Fault` matches requests of one operation (or all); it lets ``skip`` matching
requests through and then fires on the next ``times`` of them (``None``: forever). The proxy
records every request it saw in :attr:`FaultProxy.log`, so tests can assert that a fault
really fired and how many attempts a client made.

The proxy answers ``Expect: 100-continue`` itself and serves one request per connection
(responses carry ``Connection: close``), which keeps the relay logic simple and exact.
"""

from __future__ import annotations

import socket
import socketserver
import struct
import threading
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import parse_qs, urlsplit

Action = Literal["error", "reset", "corrupt_request", "corrupt_response", "reset_response"]

_RECV = 64 * 1024


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body_length: int

    @property
    def operation(self) -> str:
        """The S3 operation this request performs (enough of S3's REST API for the tests)."""
        q, m = self.query, self.method
        has_key = self.path.strip("/").count("/") >= 1
        if m == "PUT" and "partNumber" in q and "uploadId" in q:
            return "UploadPart"
        if m == "POST" and "uploads" in q:
            return "CreateMultipartUpload"
        if m == "POST" and "uploadId" in q:
            return "CompleteMultipartUpload"
        if m == "DELETE" and "uploadId" in q:
            return "AbortMultipartUpload"
        if m == "GET" and "uploads" in q:
            return "ListMultipartUploads"
        if m == "GET" and "uploadId" in q:
            return "ListParts"
        if m == "GET" and not has_key:
            return "ListObjectsV2" if q.get("list-type") == ["2"] else "ListObjects"
        if m == "PUT" and has_key:
            return "CopyObject" if "x-amz-copy-source" in self.headers else "PutObject"
        if m == "GET":
            return "GetObject"
        if m == "HEAD":
            return "HeadObject" if has_key else "HeadBucket"
        if m == "DELETE":
            return "DeleteObject" if has_key else "DeleteBucket"
        return f"{m} {self.path}"


@dataclass
class Fault:
    """One rule of the plan."""

    action: Action
    operation: str | None = None  # None: every operation
    status: int = 500
    code: str = "InternalError"
    message: str = "We encountered an internal error. Please try again."
    skip: int = 0
    times: int | None = 1
    matched: int = 0
    fired: int = 0

    def _claims(self, req: Request) -> bool:
        """Count a matching request; return True if this fault fires on it."""
        if self.operation is not None and req.operation != self.operation:
            return False
        self.matched += 1
        position = self.matched - self.skip
        if position < 1 or (self.times is not None and position > self.times):
            return False
        self.fired += 1
        return True


@dataclass
class LogEntry:
    operation: str
    method: str
    path: str
    action: str  # "forward" or the fault's action


@dataclass
class FaultProxy:
    upstream_host: str
    upstream_port: int
    faults: list[Fault] = field(default_factory=list)
    log: list[LogEntry] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: socketserver.ThreadingTCPServer | None = None
    _thread: threading.Thread | None = None

    # ---- plan

    def add(self, fault: Fault) -> Fault:
        with self._lock:
            self.faults.append(fault)
        return fault

    def fail(
        self,
        operation: str | None,
        status: int = 500,
        code: str = "InternalError",
        *,
        times: int | None = 1,
        skip: int = 0,
        message: str | None = None,
    ) -> Fault:
        fault = Fault("error", operation, status, code, skip=skip, times=times)
        if message is not None:
            fault.message = message
        return self.add(fault)

    def slow_down(self, operation: str | None, *, times: int | None = 1, skip: int = 0) -> Fault:
        return self.fail(
            operation,
            503,
            "SlowDown",
            times=times,
            skip=skip,
            message="Please reduce your request rate.",
        )

    def throttle(self, operation: str | None, *, times: int | None = 1, skip: int = 0) -> Fault:
        return self.fail(
            operation,
            429,
            "TooManyRequests",
            times=times,
            skip=skip,
            message="Too many requests, slow down.",
        )

    def reset(self, operation: str | None, *, times: int | None = 1, skip: int = 0) -> Fault:
        return self.add(Fault("reset", operation, skip=skip, times=times))

    def corrupt_request(
        self, operation: str | None, *, times: int | None = 1, skip: int = 0
    ) -> Fault:
        return self.add(Fault("corrupt_request", operation, skip=skip, times=times))

    def corrupt_response(
        self, operation: str | None, *, times: int | None = 1, skip: int = 0
    ) -> Fault:
        return self.add(Fault("corrupt_response", operation, skip=skip, times=times))

    def reset_response(
        self, operation: str | None, *, times: int | None = 1, skip: int = 0
    ) -> Fault:
        return self.add(Fault("reset_response", operation, skip=skip, times=times))

    def clear(self) -> None:
        with self._lock:
            self.faults.clear()

    def count(self, operation: str, action: str | None = None) -> int:
        with self._lock:
            return sum(
                1
                for e in self.log
                if e.operation == operation and (action is None or e.action == action)
            )

    def _decide(self, req: Request) -> Fault | None:
        with self._lock:
            chosen = None
            for fault in self.faults:
                if fault._claims(req) and chosen is None:
                    chosen = fault
            self.log.append(
                LogEntry(
                    req.operation, req.method, req.path, chosen.action if chosen else "forward"
                )
            )
            return chosen

    # ---- lifecycle

    @property
    def port(self) -> int:
        assert self._server is not None
        return int(self._server.server_address[1])

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> FaultProxy:
        proxy = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                proxy._handle(self.request)

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True
            block_on_close = False

        self._server = Server(("127.0.0.1", 0), Handler)
        # A short poll interval keeps stop() (which waits for the next poll) fast.
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- one connection, one request

    def _handle(self, client: socket.socket) -> None:
        reader = _Reader(client)
        try:
            head = reader.read_head()
        except (ConnectionError, OSError):
            return
        if head is None:
            return
        request_line, headers, raw_header_lines = head
        method, target, _version = request_line.split(" ", 2)
        parts = urlsplit(target)
        length = int(headers.get("content-length", "0") or 0)
        chunked = "chunked" in headers.get("transfer-encoding", "").lower()
        req = Request(
            method, parts.path, parse_qs(parts.query, keep_blank_values=True), headers, length
        )
        fault = self._decide(req)

        if headers.get("expect", "").lower() == "100-continue":
            client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        forwarded_lines = [
            line
            for line in raw_header_lines
            if line.split(b":", 1)[0].strip().lower() not in (b"connection", b"expect")
        ]
        forwarded_head = (
            request_line.encode("latin-1")
            + b"\r\n"
            + b"".join(line + b"\r\n" for line in forwarded_lines)
            + b"Connection: close\r\n\r\n"
        )

        if fault is not None and fault.action == "error":
            # Drain the body so the client is not blocked sending it, then answer.
            if chunked:
                reader.read_chunked()
            else:
                reader.read_exact(length)
            _send_error(client, fault, method)
            client.close()
            return

        if fault is not None and fault.action == "reset":
            partial = reader.read_exact(max(1, length // 2)) if length else b""
            try:
                upstream = socket.create_connection((self.upstream_host, self.upstream_port))
                upstream.sendall(forwarded_head + partial)
                _rst(upstream)
            except OSError:
                pass
            _rst(client)
            return

        body = reader.read_chunked() if chunked else reader.read_exact(length)
        if fault is not None and fault.action == "corrupt_request" and body:
            body = _flip(body, len(body) // 2)
        try:
            upstream = socket.create_connection((self.upstream_host, self.upstream_port))
        except OSError:
            _rst(client)
            return
        try:
            upstream.sendall(forwarded_head + body)
            self._relay_response(upstream, client, fault, method)
        except OSError:
            _rst(client)
        finally:
            upstream.close()
        try:
            client.close()
        except OSError:
            pass

    def _relay_response(
        self, upstream: socket.socket, client: socket.socket, fault: Fault | None, method: str
    ) -> None:
        reader = _Reader(upstream)
        head = reader.read_head()
        if head is None:
            _rst(client)
            return
        status_line, headers, raw_lines = head
        lines = [
            line for line in raw_lines if line.split(b":", 1)[0].strip().lower() != b"connection"
        ]
        client.sendall(
            status_line.encode("latin-1")
            + b"\r\n"
            + b"".join(line + b"\r\n" for line in lines)
            + b"Connection: close\r\n\r\n"
        )
        action = fault.action if fault is not None else None
        length = int(headers.get("content-length", "-1") or -1)
        sent = 0
        flipped = False
        for chunk in reader.rest():
            if action == "corrupt_response" and not flipped and method != "HEAD":
                chunk = _flip(chunk, 0)
                flipped = True
            if action == "reset_response" and length > 0 and sent + len(chunk) >= length // 2:
                client.sendall(chunk[: max(0, length // 2 - sent)])
                _rst(client)
                return
            client.sendall(chunk)
            sent += len(chunk)


class _Reader:
    """Buffered reads from a socket: HTTP heads, exact lengths, chunked bodies."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buf = b""

    def _fill(self) -> bool:
        data = self._sock.recv(_RECV)
        if not data:
            return False
        self._buf += data
        return True

    def read_head(self) -> tuple[str, dict[str, str], list[bytes]] | None:
        while b"\r\n\r\n" not in self._buf:
            if not self._fill():
                return None
        raw, self._buf = self._buf.split(b"\r\n\r\n", 1)
        first, *lines = raw.split(b"\r\n")
        headers: dict[str, str] = {}
        for line in lines:
            name, _, value = line.partition(b":")
            headers[name.strip().lower().decode("latin-1")] = value.strip().decode("latin-1")
        return first.decode("latin-1"), headers, lines

    def read_exact(self, n: int) -> bytes:
        while len(self._buf) < n:
            if not self._fill():
                break
        data, self._buf = self._buf[:n], self._buf[n:]
        return data

    def _read_line(self) -> bytes:
        while b"\r\n" not in self._buf:
            if not self._fill():
                line, self._buf = self._buf, b""
                return line
        line, self._buf = self._buf.split(b"\r\n", 1)
        return line

    def read_chunked(self) -> bytes:
        """Read a chunked body and return it re-encoded (so it can be forwarded verbatim)."""
        out = []
        while True:
            size_line = self._read_line()
            out.append(size_line + b"\r\n")
            size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                while True:  # trailers, up to the blank line
                    trailer = self._read_line()
                    out.append(trailer + b"\r\n")
                    if not trailer:
                        return b"".join(out)
            out.append(self.read_exact(size + 2))

    def rest(self) -> Iterator[bytes]:
        if self._buf:
            data, self._buf = self._buf, b""
            yield data
        while True:
            data = self._sock.recv(_RECV)
            if not data:
                return
            yield data


def _flip(data: bytes, index: int) -> bytes:
    return data[:index] + bytes([data[index] ^ 0x01]) + data[index + 1 :]


def _rst(sock: socket.socket) -> None:
    """Close with an RST instead of a FIN: the peer sees 'connection reset by peer'."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    try:
        sock.close()
    except OSError:
        pass


def _send_error(client: socket.socket, fault: Fault, method: str) -> None:
    reasons = {429: "Too Many Requests", 500: "Internal Server Error", 503: "Slow Down"}
    body = (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f"<Error><Code>{fault.code}</Code><Message>{fault.message}</Message>"
        f"<RequestId>{uuid.uuid4().hex[:16]}</RequestId></Error>"
    ).encode()
    head = (
        f"HTTP/1.1 {fault.status} {reasons.get(fault.status, 'Error')}\r\n"
        "Content-Type: application/xml\r\n"
        f"Content-Length: {len(body)}\r\n"
        "Connection: close\r\n\r\n"
    ).encode()
    try:
        client.sendall(head if method == "HEAD" else head + body)
    except OSError:
        pass
