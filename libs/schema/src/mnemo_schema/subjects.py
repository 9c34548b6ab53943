"""Every stream, subject and durable name on the bus, in one place.

Publishers send events on (ids match ``ID_PATTERN`` so they are safe subject tokens):

- ``mnemo.evt.<workspace>.ent.<kind>``      entity events (workspace, peer, session, membership)
- ``mnemo.evt.<workspace>.msg.<session>``   message events, so a consumer can filter one session
- ``mnemo.evt.<workspace>.obs.<observer>.<observed>``  memory events of one representation
- ``mnemo.evt.<workspace>.sum.<session>``   session summaries
- ``mnemo.evt.<workspace>.dream.<observer>.<observed>``  dreams of one representation
- ``mnemo.evt.<workspace>.work.deriver.<observer>.<observed>``  how far the deriver has come
  in one representation's line
- ``mnemo.evt.<workspace>.work.summarizer.<session>``  how far the summarizer has counted one
  session

The stream stores each of them with the workspace's **partition** after the workspace
(``mnemo.evt.<workspace>.<partition>.<kind>...``): a subject transform of the stream computes it,
``partition(N, workspace)`` (FNV-1a of the workspace id, modulo N), so every event of a workspace
lands in one partition, in log order. Stages that scale out consume by partition (one
replica at a time per partition); consumers filter on the stored form. N is fixed when the
stream is created (``MNEMO_PARTITIONS``, default ``DEFAULT_PARTITIONS``).

- ``mnemo.cmd.<workspace>``                 commands to ingest, request-reply (core NATS)
- ``mnemo.qry.<workspace>.<kind>``          read queries (context, chat), request-reply (core NATS)
- ``mnemo.projector.applied``               projector watermark notifications (core NATS)
- ``mnemo.progress.<workspace>``            a stage's work of a workspace started or finished
                                            (core NATS)
- ``mnemo.hook.evt|dlv.<workspace>``        webhook work: events, then one delivery per
                                            endpoint (stream ``MNEMO_WEBHOOKS``)
"""

from __future__ import annotations

import re
from typing import Final

STREAM: Final = "MNEMO_EVENTS"
EVENT_SUBJECTS: Final = "mnemo.evt.>"
COMMAND_SUBJECTS: Final = "mnemo.cmd.*"
INGEST_QUEUE: Final = "ingest"
PROJECTOR_DURABLE: Final = "projector-pg"
PROJECTOR_APPLIED: Final = "mnemo.projector.applied"

# Duplicate window for Nats-Msg-Id de-duplication of retried publishes.
DUPLICATE_WINDOW_SECONDS: Final = 3600


def command_subject(workspace: str) -> str:
    """Subject a command for ``workspace`` is sent on."""
    return f"mnemo.cmd.{workspace}"


def entity_subject(workspace: str, kind: str) -> str:
    """Subject of an entity event (kind: workspace, peer, session, membership)."""
    return f"mnemo.evt.{workspace}.ent.{kind}"


def entity_filter(workspace: str, partition: int | str = "*") -> str:
    """Filter matching every stored entity event of one workspace ("*": of every one)."""
    return f"mnemo.evt.{workspace}.{partition}.ent.>"


def workspace_entities(workspace: str) -> str:
    """Filter matching the stored entity events of one workspace, in whichever partition."""
    return f"mnemo.evt.{workspace}.*.ent.>"


def workspace_filter(workspace: str) -> str:
    """Filter matching every stored event of one workspace."""
    return f"mnemo.evt.{workspace}.>"


def message_filter_of(workspace: str) -> str:
    """Filter matching the stored message events of one workspace."""
    return f"mnemo.evt.{workspace}.*.msg.*"


def session_messages_filter(workspace: str, session: str) -> str:
    """Filter matching the stored message events of one session."""
    return f"mnemo.evt.{workspace}.*.msg.{session}"


def read_model_event(subject: str) -> bool:
    """Whether an event published on ``subject`` is one the entity and message projection
    applies (an entity, a message or a stage's progress event, not a memory event)."""
    parts = subject.split(".")
    return len(parts) > 3 and parts[:2] == ["mnemo", "evt"] and parts[3] in ("ent", "msg", "work")


def message_subject(workspace: str, session: str) -> str:
    """Subject of a message event in one session."""
    return f"mnemo.evt.{workspace}.msg.{session}"


def observation_subject(workspace: str, observer: str, observed: str) -> str:
    """Subject of a memory event in one (observer, observed) representation."""
    return f"mnemo.evt.{workspace}.obs.{observer}.{observed}"


def summary_subject(workspace: str, session: str) -> str:
    """Subject of a session's summary events."""
    return f"mnemo.evt.{workspace}.sum.{session}"


def derivation_work_subject(workspace: str, observer: str, observed: str) -> str:
    """Subject of the deriver's progress in one (observer, observed) representation's line."""
    return f"mnemo.evt.{workspace}.work.deriver.{observer}.{observed}"


def summary_work_subject(workspace: str, session: str) -> str:
    """Subject of the summarizer's progress in one session."""
    return f"mnemo.evt.{workspace}.work.summarizer.{session}"


def query_subject(workspace: str, kind: str) -> str:
    """Subject a read query of ``kind`` (context, chat, ...) for ``workspace`` is sent on."""
    return f"mnemo.qry.{workspace}.{kind}"


def query_filter(kind: str) -> str:
    """What a query service subscribes to for ``kind``."""
    return f"mnemo.qry.*.{kind}"


SUMMARIZER: Final = "summarizer"
DERIVER: Final = "deriver"
DEAD_LETTER_STREAM: Final = "MNEMO_DEAD_LETTERS"
DEAD_LETTER_SUBJECTS: Final = "mnemo.dlq.>"
MEMORY_PROJECTION_APPLIED: Final = "mnemo.projector.memory.applied"
PASSAGES_APPLIED: Final = "mnemo.projector.passages.applied"


def dead_letter_subject(stage: str) -> str:
    """Where a stage parks work it could not complete, with the reason."""
    return f"mnemo.dlq.{stage}"


def workspace_from_command_subject(subject: str) -> str:
    """The workspace token of a command subject."""
    return subject.split(".", 2)[2]


INBOX_PREFIX: Final = "_INBOX."


def is_inbox(subject: str) -> bool:
    """Whether ``subject`` is a requester's inbox: the only kind of subject Mnemo replies to, so
    that a request naming another subject (an event subject of the log, say) as its reply
    cannot make a service publish there."""
    return subject.startswith(INBOX_PREFIX)


def agent_inbox_prefix(workspace: str) -> str:
    """The inbox prefix an agent of ``workspace`` connects with (nats-py ``inbox_prefix``): its
    replies arrive under it, where no agent of another workspace may subscribe."""
    return f"{INBOX_PREFIX}{workspace}"


def agent_publish(workspace: str) -> tuple[str, ...]:
    """What an agent of ``workspace`` may publish: its commands and read queries."""
    return (command_subject(workspace), query_subject(workspace, "*"))


def agent_subscribe(workspace: str) -> tuple[str, ...]:
    """What an agent of ``workspace`` may subscribe to: the replies to its own requests."""
    return (f"{agent_inbox_prefix(workspace)}.>",)


WEBHOOK_STREAM: Final = "MNEMO_WEBHOOKS"
WEBHOOK_SUBJECTS: Final = "mnemo.hook.>"
FANOUT_DURABLE: Final = "webhook-fanout"
DELIVERY_DURABLE: Final = "webhook-delivery"
PROGRESS_SUBJECTS: Final = "mnemo.progress.*"


def hook_event_subject(workspace: str) -> str:
    """Where an event to announce to ``workspace``'s endpoints is queued."""
    return f"mnemo.hook.evt.{workspace}"


def hook_delivery_subject(workspace: str) -> str:
    """Where one delivery (an event for one endpoint) is queued."""
    return f"mnemo.hook.dlv.{workspace}"


def progress_subject(workspace: str) -> str:
    """Where a stage announces that work of ``workspace`` started or finished (core NATS)."""
    return f"mnemo.progress.{workspace}"


# --- partitions -------------------------------------------------------------------------------

DEFAULT_PARTITIONS: Final = 8
MAX_PARTITIONS: Final = 1024
Partition = int | str  # a partition number, or "*" for all of them

# Every stored event subject, and those of each kind (any partition by default).
OBSERVATION_FILTER: Final = "mnemo.evt.*.*.obs.>"
MESSAGE_FILTER: Final = "mnemo.evt.*.*.msg.*"


def partition_filter(partition: Partition = "*") -> str:
    """Every stored event of one partition."""
    return f"mnemo.evt.*.{partition}.>"


def message_filter(partition: Partition = "*") -> str:
    """The stored message events of one partition."""
    return f"mnemo.evt.*.{partition}.msg.*"


def observation_filter(partition: Partition = "*") -> str:
    """The stored memory events (observations, cards) of one partition."""
    return f"mnemo.evt.*.{partition}.obs.>"


def summary_filter(partition: Partition = "*") -> str:
    """The stored summary events of one partition."""
    return f"mnemo.evt.*.{partition}.sum.>"


def dream_filter(partition: Partition = "*") -> str:
    """The stored dream events of one partition."""
    return f"mnemo.evt.*.{partition}.dream.>"


def work_filter(partition: Partition = "*") -> str:
    """The stored progress events of the stages (``work``) of one partition."""
    return f"mnemo.evt.*.{partition}.work.>"


def erasure_filters(partition: Partition = "*") -> list[str]:
    """The stored entity events that may erase data: the deletions of a workspace, a session, a
    peer or a message (and the other events of those subjects)."""
    return [f"mnemo.evt.*.{partition}.ent.{kind}" for kind in _ERASABLE]


_ERASABLE: Final = ("session", "workspace", "peer", "message")


def of_workspace(stored_filter: str, workspace: str) -> str:
    """A filter of stored events (``mnemo.evt.*.<partition>...``) narrowed to ``workspace``."""
    prefix = "mnemo.evt.*."
    if not stored_filter.startswith(prefix):
        raise ValueError(f"not a filter of stored events of any workspace: {stored_filter!r}")
    return f"mnemo.evt.{workspace}.{stored_filter.removeprefix(prefix)}"


def stage_durable(stage: str, partition: int) -> str:
    """The durable consumer through which ``stage`` reads one partition."""
    return f"{stage}-p{partition}"


def published_filter(kind: str) -> str:
    """Every event of ``kind`` (``ent``, ``obs``, ``sum``...) as published, before the stream's
    transform adds the partition: what a core NATS subscriber sees of it."""
    return f"mnemo.evt.*.{kind}.>"


def partition_of(workspace: str, partitions: int) -> int:
    """The partition of ``workspace``: what the stream's transform computes (NATS's
    ``partition()``: FNV-1a, 32 bits, of the token, modulo the count)."""
    h = 0x811C9DC5
    for byte in workspace.encode():
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h % partitions


_TRANSFORM_SOURCE: Final = "mnemo.evt.*.>"
_TRANSFORM_DEST = re.compile(
    r"^mnemo\.evt\.\{\{wildcard\(1\)\}\}\.\{\{partition\((\d+),1\)\}\}\.>$"
)


def stream_transform(partitions: int) -> tuple[str, str]:
    """The stream's subject transform (source, destination) for ``partitions``."""
    if not 1 <= partitions <= MAX_PARTITIONS:
        raise ValueError(f"partitions must be from 1 to {MAX_PARTITIONS}, not {partitions}")
    return _TRANSFORM_SOURCE, f"mnemo.evt.{{{{wildcard(1)}}}}.{{{{partition({partitions},1)}}}}.>"


def transform_partitions(source: str | None, destination: str | None) -> int | None:
    """The partition count a stream's transform encodes; None if it is not Mnemo's."""
    if source != _TRANSFORM_SOURCE or destination is None:
        return None
    found = _TRANSFORM_DEST.match(destination)
    return int(found.group(1)) if found else None


def partition_of_subject(subject: str) -> int | None:
    """The partition token of a stored event subject, if it has one."""
    parts = subject.split(".")
    if len(parts) > 3 and parts[0] == "mnemo" and parts[1] == "evt" and parts[3].isdigit():
        return int(parts[3])
    return None


def workspace_of_subject(subject: str) -> str | None:
    """The workspace of an event subject (``mnemo.evt.<workspace>...``), if it is one."""
    parts = subject.split(".")
    if len(parts) > 3 and parts[0] == "mnemo" and parts[1] == "evt":
        return parts[2]
    return None
