"""Every stream, subject and durable name on the bus, in one place.

Layout (ids match ``ID_PATTERN`` so they are safe subject tokens):

- ``mnemo.evt.<workspace>.ent.<kind>``      entity events (workspace, peer, session, membership)
- ``mnemo.evt.<workspace>.msg.<session>``   message events, so a consumer can filter one session
- ``mnemo.evt.<workspace>.obs.<observer>.<observed>``  memory events of one representation
- ``mnemo.evt.<workspace>.sum.<session>``   session summaries
- ``mnemo.cmd.<workspace>``                 commands to ingest, request-reply (core NATS)
- ``mnemo.qry.<workspace>.<kind>``          read queries (context, chat), request-reply (core NATS)
- ``mnemo.projector.applied``               projector watermark notifications (core NATS)
"""

from __future__ import annotations

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


def entity_filter(workspace: str) -> str:
    """Filter matching every entity event of one workspace."""
    return f"mnemo.evt.{workspace}.ent.>"


def message_subject(workspace: str, session: str) -> str:
    """Subject of a message event in one session."""
    return f"mnemo.evt.{workspace}.msg.{session}"


def observation_subject(workspace: str, observer: str, observed: str) -> str:
    """Subject of a memory event in one (observer, observed) representation."""
    return f"mnemo.evt.{workspace}.obs.{observer}.{observed}"


def summary_subject(workspace: str, session: str) -> str:
    """Subject of a session's summary events."""
    return f"mnemo.evt.{workspace}.sum.{session}"


def query_subject(workspace: str, kind: str) -> str:
    """Subject a read query of ``kind`` (context, chat, ...) for ``workspace`` is sent on."""
    return f"mnemo.qry.{workspace}.{kind}"


def query_filter(kind: str) -> str:
    """What a query service subscribes to for ``kind``."""
    return f"mnemo.qry.*.{kind}"


SUMMARIZER_DURABLE: Final = "summarizer"
OBSERVATION_FILTER: Final = "mnemo.evt.*.obs.>"
MESSAGE_FILTER: Final = "mnemo.evt.*.msg.*"
DERIVER_DURABLE: Final = "deriver"
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
