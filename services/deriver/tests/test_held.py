"""The messages a deriver holds: each until all its representations are done, and the room
left under the limit."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

from mnemo_deriver.held import HeldMessages
from mnemo_runtime.work import Delivery
from mnemo_schema.events import MessagePosted


async def _ack() -> None:
    return None


async def _nak(delay: float) -> None:
    del delay


def _delivery(seq: int) -> Delivery:
    event = MessagePosted(
        workspace="w",
        session_id="s",
        message_id=f"m{seq}",
        peer_id="a",
        content="hi",
        metadata={},
        created_at=datetime.now(UTC),
        token_count=1,
    )
    return Delivery(seq, event, _ack, _nak)


async def test_a_message_is_held_until_each_representation_is_done_and_room_follows() -> None:
    held = HeldMessages(limit=2)
    one = held.hold(_delivery(1), representations=2, partition=0)
    held.hold(_delivery(2), representations=1, partition=1)
    room = asyncio.ensure_future(held.room())
    await asyncio.sleep(0)
    assert not room.done() and len(held) == 2
    assert not held.done_once(1, one)  # one representation of two
    assert held.done_once(1, one)
    await asyncio.wait_for(room, 1)
    assert len(held) == 1 and held.get(1) is None


async def test_a_handed_over_partition_frees_its_messages() -> None:
    held = HeldMessages(limit=1)
    held.hold(_delivery(1), representations=1, partition=3)
    room = asyncio.ensure_future(held.room())
    await asyncio.sleep(0)
    assert not room.done()
    held.forget(3)
    await asyncio.wait_for(room, 1)
    assert len(held) == 0
