"""The load of a fault run: a long conversation, posted through the HTTP API as a careful client
would.

The text is LoCoMo's (its five conversations, over and over, under new session ids) when the
data is there (MNEMO_DATASETS), otherwise generated. Every message carries a unique marker in
its metadata. Messages are posted one per request, a few sessions at a time, each session's in
order, at a steady rate overall. A client retries what failed for a reason of the server's (a
5xx, 429, a connection refused or cut, a timeout) with the same ``Idempotency-Key``, so a retry
of a request that was in fact stored stores nothing twice; a message is *acknowledged* only
when the API answered 2xx for it.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from mnemo_cli.locomo import datasets_dir, load, turn_times

MARKER = "chaos_marker"


@dataclass(frozen=True)
class Turn:
    peer: str
    content: str
    marker: str
    created_at: datetime


@dataclass(frozen=True)
class Conversation:
    """What a run posts: sessions (in order) of turns, between ``peers``."""

    workspace: str
    peers: list[str]
    sessions: dict[str, list[Turn]]
    source: str

    @property
    def count(self) -> int:
        return sum(map(len, self.sessions.values()))


def _peer_id(name: str) -> str:
    return "".join(c if c.isalnum() else "-" for c in name).lower()


def _locomo_turns() -> Iterator[tuple[str, list[tuple[str, str, datetime]]]]:
    """LoCoMo's sessions, as (name, [(speaker, text, when)]), over and over."""
    convs = load(datasets_dir() / "locomo" / "locomo-dev5.json")
    for round_ in range(1_000_000):
        for conv in convs:
            for s in conv.sessions:
                turns = [
                    (_peer_id(t.speaker), t.text, when + timedelta(days=365 * round_))
                    for t, when in zip(s.turns, turn_times(s), strict=True)
                ]
                yield f"{conv.sample_id}-r{round_}-s{s.number}", turns


_PEOPLE = ("ana", "bruno", "chen", "dara", "emeka", "farah")
_THINGS = (
    ("I started learning to play the {x} last month", ("cello", "piano", "banjo", "drums")),
    ("My sister moved to {x} for a new job", ("Lisbon", "Osaka", "Nairobi", "Toronto")),
    ("We adopted a {x} from the shelter", ("beagle", "grey cat", "parrot", "rabbit")),
    ("I work as a {x} at the city hospital", ("nurse", "radiologist", "porter", "surgeon")),
    ("On weekends I go {x} with my kids", ("hiking", "fishing", "cycling", "swimming")),
    ("My favourite dish is {x}, my grandmother's recipe", ("paella", "pho", "jollof", "borscht")),
)


def _generated_turns(seed: int = 17) -> Iterator[tuple[str, list[tuple[str, str, datetime]]]]:
    """Generated small talk between pairs of people, session after session."""
    rng = random.Random(seed)
    start = datetime(2024, 1, 1, tzinfo=UTC)
    for n in range(1_000_000):
        a, b = rng.sample(_PEOPLE, 2)
        when = start + timedelta(days=n)
        turns = []
        for i in range(rng.randint(12, 30)):
            text, choices = rng.choice(_THINGS)
            turns.append(((a, b)[i % 2], text.format(x=rng.choice(choices)) + ".", when))
            when += timedelta(minutes=1)
        yield f"talk-{n}", turns


def conversation(workspace: str, count: int) -> Conversation:
    """``count`` messages of LoCoMo text (or generated text without the data)."""
    path = datasets_dir() / "locomo" / "locomo-dev5.json"
    source = f"LoCoMo ({path})" if path.exists() else "generated"
    sessions: dict[str, list[Turn]] = {}
    peers: set[str] = set()
    made = 0
    for name, turns in _locomo_turns() if path.exists() else _generated_turns():
        take = turns[: count - made]
        sessions[name] = [
            Turn(peer, text, f"m{made + i:06d}", when) for i, (peer, text, when) in enumerate(take)
        ]
        peers.update(t.peer for t in sessions[name])
        made += len(take)
        if made >= count:
            break
    return Conversation(workspace, sorted(peers), sessions, source)


class GaveUp(RuntimeError):
    """A request still failing when the run's posting deadline passed."""


class Pace:
    """At most ``rate`` requests a second overall, without bursts to catch up after a stall."""

    def __init__(self, rate: float) -> None:
        self._interval = 1.0 / rate
        self._next = time.monotonic()

    async def slot(self) -> None:
        now = time.monotonic()
        at = max(self._next, now)
        self._next = at + self._interval
        await asyncio.sleep(at - now)


@dataclass
class Poster:
    """Posts a conversation through the API and counts what was acknowledged."""

    client: httpx.AsyncClient
    conversation: Conversation
    rate: float
    workers: int = 4
    deadline: float = float("inf")  # monotonic time after which failing requests give up
    acknowledged: dict[str, str] = field(default_factory=dict)  # marker -> session
    refused: list[str] = field(default_factory=list)
    retries: Counter[str] = field(default_factory=Counter)
    slowest_s: float = 0.0
    # Messages may be posted up to this count, for now (see ``hold``).
    limit: int = 1 << 62
    finished: bool = False
    _progress: asyncio.Condition = field(default_factory=asyncio.Condition)

    async def _request(self, method: str, path: str, body: Any, key: str | None = None) -> int:
        """Send until the server answers for itself (2xx or 4xx); that status."""
        headers = {"Idempotency-Key": key} if key else {}
        delay = 0.1
        while True:
            started = time.monotonic()
            try:
                r = await self.client.request(method, path, json=body, headers=headers)
                if r.status_code < 500 and r.status_code != 429:
                    self.slowest_s = max(self.slowest_s, time.monotonic() - started)
                    return r.status_code
                cause = str(r.status_code)
            except httpx.TransportError as err:
                cause = type(err).__name__
            self.retries[cause] += 1
            if time.monotonic() > self.deadline:
                raise GaveUp(f"{method} {path}: still failing ({cause})")
            await asyncio.sleep(delay)  # a client's back-off before it tries again
            delay = min(delay * 2, 2.0)

    async def setup(self) -> None:
        """The workspace, its peers, and the sessions with both speakers as members."""
        ws = self.conversation.workspace
        await self._expect(await self._request("POST", "/v3/workspaces", {"id": ws}), "workspace")
        base = f"/v3/workspaces/{ws}"
        for peer in self.conversation.peers:
            await self._expect(await self._request("POST", f"{base}/peers", {"id": peer}), peer)
        for sid, turns in self.conversation.sessions.items():
            members: dict[str, dict[str, bool]] = {t.peer: {} for t in turns}
            status = await self._request("POST", f"{base}/sessions", {"id": sid, "peers": members})
            await self._expect(status, sid)

    @staticmethod
    async def _expect(status: int, what: str) -> None:
        if not 200 <= status < 300:
            raise RuntimeError(f"creating {what}: HTTP {status}")

    async def run(self) -> None:
        """Post every message; return once each is acknowledged, refused or given up on."""
        pace = Pace(self.rate)
        queue: asyncio.Queue[tuple[str, list[Turn]]] = asyncio.Queue()
        for item in self.conversation.sessions.items():
            queue.put_nowait(item)
        ws = self.conversation.workspace

        async def worker() -> None:
            while not queue.empty():
                sid, turns = queue.get_nowait()
                path = f"/v3/workspaces/{ws}/sessions/{sid}/messages"
                for t in turns:
                    async with self._progress:
                        await self._progress.wait_for(lambda: self.settled < self.limit)
                    await pace.slot()
                    body = {
                        "messages": [
                            {
                                "peer_id": t.peer,
                                "content": t.content,
                                "created_at": t.created_at.isoformat(),
                                "metadata": {MARKER: t.marker},
                            }
                        ]
                    }
                    try:
                        status = await self._request("POST", path, body, key=t.marker)
                    except GaveUp:
                        return
                    if 200 <= status < 300:
                        self.acknowledged[t.marker] = sid
                    else:
                        self.refused.append(f"{t.marker}: HTTP {status}")
                    async with self._progress:
                        self._progress.notify_all()

        try:
            await asyncio.gather(*(worker() for _ in range(self.workers)))
        finally:
            async with self._progress:
                self.finished = True
                self._progress.notify_all()

    @property
    def settled(self) -> int:
        """Messages acknowledged or refused so far."""
        return len(self.acknowledged) + len(self.refused)

    async def hold(self, limit: int) -> None:
        """Post no more than ``limit`` messages until told a new limit."""
        async with self._progress:
            self.limit = limit
            self._progress.notify_all()

    async def reached(self, count: int) -> None:
        """Return once ``count`` messages are settled, or posting is over."""
        async with self._progress:
            await self._progress.wait_for(lambda: self.settled >= count or self.finished)
