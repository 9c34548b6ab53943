"""What the dialectic reads: one representation's observations and the messages that fed it."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from mnemo_dialectic.domain import Msg, Obs, View
from mnemo_runtime.vectors import Level


class ScopeReader(Protocol):
    """Reads keyed by the (workspace, observer, observed) scope; nothing outside it is visible.

    Messages are visible only when their ``representations`` include the scope's pair, and only
    from ``session_id`` when one is given.
    """

    async def search(
        self,
        scope: View,
        text: str,
        *,
        limit: int,
        levels: Sequence[Level] | None = None,
        session_id: str | None = None,
        max_distance: float | None = None,
    ) -> list[Obs]:
        """Live observations nearest in meaning to ``text``, best first."""
        ...

    async def search_messages(
        self, scope: View, text: str, *, limit: int, session_id: str | None = None
    ) -> list[Msg]:
        """Visible messages best matching ``text`` by words and meaning, best first."""
        ...

    async def observations(self, scope: View, ids: Sequence[str]) -> list[Obs]:
        """Live observations by id (aliases resolved); unknown or foreign ids are skipped."""
        ...

    async def messages(
        self, scope: View, ids: Sequence[str], *, session_id: str | None = None
    ) -> list[Msg]:
        """Visible messages by id, in conversation order."""
        ...

    async def grep(
        self, scope: View, text: str, *, limit: int, session_id: str | None = None
    ) -> list[Msg]:
        """Visible messages containing ``text`` (case-insensitive), oldest first."""
        ...

    async def in_range(
        self,
        scope: View,
        start: datetime,
        end: datetime,
        *,
        limit: int,
        session_id: str | None = None,
    ) -> list[Msg]:
        """Visible messages created in [start, end), oldest first."""
        ...

    async def around(
        self, scope: View, message: Msg, window: int, *, session_id: str | None = None
    ) -> list[Msg]:
        """Visible messages of ``message``'s session within ``window`` positions of it."""
        ...
