"""A keep-alive HTTP/1.1 connection that does only what the benchmarks' load needs.

The load runs on the machine it measures: a full client (httpx) spent about 3 ms of CPU per
request here, as much as a third of what the server spends, and took it from the server.
"""

from __future__ import annotations

import asyncio
import json
import ssl
import time
from typing import Any
from urllib.parse import urlencode, urlsplit

from mnemo_runtime.settings import InfraSettings
from mnemo_runtime.stack import local_api_key

# The server closes a keep-alive connection idle for 5 s (uvicorn's default): one idle longer
# than this is opened anew before it is used, rather than written to as the server closes it.
IDLE_S = 4.0


class Conn:
    """One connection, one request at a time; JSON in, the response body out."""

    def __init__(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        key: str | None,
        target: Target,
        idle_s: float = IDLE_S,
    ) -> None:
        self._r, self._w = reader, writer
        self._auth = b"Authorization: Bearer %s\r\n" % key.encode() if key else b""
        self._target, self._idle_s = target, idle_s
        self._host = target.host_header.encode()
        self._used = time.monotonic()

    @classmethod
    async def open(cls, url: str, idle_s: float = IDLE_S) -> Conn:
        """A connection to ``url`` (``http://`` or ``https://``, with a path the gateway is
        served under, if any) with ``HONCHO_API_KEY``, else the local stack's key (if any)."""
        target = Target.of(url)
        key = local_api_key(InfraSettings().state_dir)
        return cls(*await target.connect(), key, target, idle_s)

    async def request(self, method: str, path: str, body: object = None) -> bytes:
        """Send one request; the response body, or RuntimeError on a status >= 300."""
        if time.monotonic() - self._used > self._idle_s:
            self._w.close()
            self._r, self._w = await self._target.connect()
        data = b"" if body is None else json.dumps(body).encode()
        kind = b"Content-Type: application/json\r\n" if body is not None else b""
        self._w.write(
            b"%s %s%s HTTP/1.1\r\nHost: %s\r\n%s%sContent-Length: %d\r\n\r\n%s"
            % (
                method.encode(),
                self._target.base.encode(),
                path.encode(),
                self._host,
                kind,
                self._auth,
                len(data),
                data,
            )
        )
        head = await self._r.readuntil(b"\r\n\r\n")
        length = 0
        chunked = False
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            name = name.strip().lower()
            if name == b"content-length":
                length = int(value)
            elif name == b"transfer-encoding":
                chunked = b"chunked" in value.lower()
        # A proxy in front of the gateway may send the body in chunks.
        reply = await self._chunks() if chunked else await self._r.readexactly(length)
        self._used = time.monotonic()
        status = int(head.split(b" ", 2)[1])
        if status >= 300:
            raise RuntimeError(f"{method} {path}: {status} {reply[:300]!r}")
        return reply

    async def _chunks(self) -> bytes:
        body = bytearray()
        while size := int((await self._r.readuntil(b"\r\n")).split(b";")[0], 16):
            body += await self._r.readexactly(size)
            await self._r.readexactly(2)
        while await self._r.readuntil(b"\r\n") != b"\r\n":  # trailers, then the blank line
            pass
        return bytes(body)

    async def post(self, path: str, body: object) -> bytes:
        """POST JSON; the response body."""
        return await self.request("POST", path, body)

    async def json(self, method: str, path: str, body: object = None, **query: object) -> Any:
        """A request whose answer is JSON, decoded; ``query`` becomes the query string."""
        given = {k: v for k, v in query.items() if v is not None}
        target = f"{path}?{urlencode(given)}" if given else path
        return json.loads(await self.request(method, target, body))

    def close(self) -> None:
        self._w.close()


class Target:
    """Where a gateway is: its host, port, whether over TLS, and the path it is served under."""

    def __init__(self, host: str, port: int, tls: bool, base: str) -> None:
        self.host, self.port, self.tls, self.base = host, port, tls, base

    @classmethod
    def of(cls, url: str) -> Target:
        """``url``'s parts; ValueError for a URL that is not ``http(s)://host[:port][/path]``."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http:// or https:// URL with a host: {url!r}")
        if parts.username or parts.password or parts.query or parts.fragment:
            raise ValueError("the gateway's URL has no credentials, query or fragment")
        tls = parts.scheme == "https"
        return cls(parts.hostname, parts.port or (443 if tls else 80), tls, parts.path.rstrip("/"))

    @property
    def host_header(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.tls else 80
        return host if self.port == default else f"{host}:{self.port}"

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        context = ssl.create_default_context() if self.tls else None
        return await asyncio.open_connection(self.host, self.port, ssl=context)
