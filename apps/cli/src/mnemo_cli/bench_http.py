"""A keep-alive HTTP/1.1 connection that does only what the benchmarks' load needs.

The load runs on the machine it measures: a full client (httpx) spent about 3 ms of CPU per
request here, as much as a third of what the server spends, and took it from the server.
"""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any
from urllib.parse import urlencode

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
        address: tuple[str, int],
        idle_s: float = IDLE_S,
    ) -> None:
        self._r, self._w = reader, writer
        self._auth = b"Authorization: Bearer %s\r\n" % key.encode() if key else b""
        self._address, self._idle_s = address, idle_s
        self._used = time.monotonic()

    @classmethod
    async def open(cls, url: str, idle_s: float = IDLE_S) -> Conn:
        """A connection to ``url`` with the local stack's key (if any)."""
        host, _, port = url.removeprefix("http://").partition(":")
        key = local_api_key(InfraSettings().state_dir)
        address = (host, int(port or 80))
        return cls(*await asyncio.open_connection(*address), key, address, idle_s)

    async def request(self, method: str, path: str, body: object = None) -> bytes:
        """Send one request; the response body, or RuntimeError on a status >= 300."""
        if time.monotonic() - self._used > self._idle_s:
            self._w.close()
            self._r, self._w = await asyncio.open_connection(*self._address)
        data = b"" if body is None else json.dumps(body).encode()
        kind = b"Content-Type: application/json\r\n" if body is not None else b""
        self._w.write(
            b"%s %s HTTP/1.1\r\nHost: bench\r\n%s%sContent-Length: %d\r\n\r\n%s"
            % (method.encode(), path.encode(), kind, self._auth, len(data), data)
        )
        head = await self._r.readuntil(b"\r\n\r\n")
        length = 0
        for line in head.split(b"\r\n"):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        reply = await self._r.readexactly(length)
        self._used = time.monotonic()
        status = int(head.split(b" ", 2)[1])
        if status >= 300:
            raise RuntimeError(f"{method} {path}: {status} {reply[:300]!r}")
        return reply

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
