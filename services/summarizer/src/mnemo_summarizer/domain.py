"""From a due summary to a model request, and from the model's answer to ``SummaryUpdated``. Pure.

The request is one user turn in a plain text format, readable by a language model; ``render``
writes it and ``parse_input`` reads it back (the local reasoner's summarizer skill, ``local``,
works from what it reads)::

    Summary: short
    Word limit: 150

    Previous summary:
    <the previous summary of this type, or "(none)">

    New messages:
    [2023-05-08T13:56:00+00:00] caroline: I went to a LGBTQ support group yesterday.
    [2023-05-08T13:57:00+00:00] melanie: That's great!

One message per line: its creation time in brackets, the author's peer id, a colon, and the
content with line breaks folded into spaces.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from mnemo_runtime.deadletters import Letter
from mnemo_runtime.models import Message, ModelRequest, ModelResponse, Stage, with_instructions
from mnemo_schema.events import MessagePosted
from mnemo_schema.ids import derived_event_id
from mnemo_schema.summaries import SummaryType, SummaryUpdated
from mnemo_summarizer.cadence import Job, Turn

SUMMARIZER_PROMPT = """\
You maintain a running summary of a conversation stored in Mnemo, a memory for AI agents. \
Agents read this summary instead of the full transcript, so it must carry what they need to \
continue the conversation well.

You are given the previous summary (or none) and the messages that came after it. Write one \
updated summary that merges the two:
- Keep every person's name, and who said or did what.
- Keep dates, times, places, numbers and other specifics exactly as given.
- Keep decisions, plans, commitments, preferences and open questions or unfinished threads.
- Drop greetings, small talk and repetition.
- When a new message contradicts the previous summary, the newer message wins.
- Write in the third person, in plain prose, oldest to newest.
- Stay under the word limit; when space is short, compress older material before newer.

Answer with the summary text only: no heading, no preamble, no commentary."""

NONE = "(none)"
_BREAKS = re.compile(r"\s*[\r\n]+\s*")
_HEADER = re.compile(r"^Summary:\s*(?P<kind>short|long)\s*$", re.M)
_LIMIT = re.compile(r"^Word limit:\s*(?P<limit>\d+)\s*$", re.M)
_SECTIONS = re.compile(
    r"^Previous summary:\s*$(?P<prev>.*?)^New messages:\s*$(?P<msgs>.*)", re.M | re.S
)
_LINE = re.compile(r"^\[(?P<at>[^\]]*)\]\s+(?P<peer>[A-Za-z0-9_-]+):\s?(?P<content>.*)$")


def render_line(turn: Turn) -> str:
    """One message in the request's format."""
    content = _BREAKS.sub(" ", turn.content.strip())
    return f"[{turn.created_at.isoformat()}] {turn.peer_id}: {content}"


def render(job: Job, word_limit: int) -> str:
    """The user turn asking for ``job``'s summary."""
    previous = (job.previous or "").strip() or NONE
    lines = "\n".join(render_line(t) for t in job.turns)
    return (
        f"Summary: {job.kind}\nWord limit: {word_limit}\n\n"
        f"Previous summary:\n{previous}\n\nNew messages:\n{lines}\n"
    )


@dataclass(frozen=True)
class Spoken:
    """One message of a request."""

    peer_id: str
    content: str


@dataclass(frozen=True)
class SummaryInput:
    """A request's text, read back."""

    kind: str
    word_limit: int
    previous: str | None
    messages: tuple[Spoken, ...]


def parse_input(text: str) -> SummaryInput:
    """Read a request written by ``render``; ``ValueError`` when it is not in that format."""
    kind, limit, sections = _HEADER.search(text), _LIMIT.search(text), _SECTIONS.search(text)
    if kind is None or limit is None or sections is None:
        raise ValueError("not a summarizer request (missing header, word limit or sections)")
    previous = sections["prev"].strip()
    messages = []
    for line in sections["msgs"].splitlines():
        if (m := _LINE.match(line.strip())) is not None and m["content"].strip():
            messages.append(Spoken(m["peer"], m["content"].strip()))
    return SummaryInput(
        kind["kind"],
        int(limit["limit"]),
        None if previous in ("", NONE) else previous,
        tuple(messages),
    )


def request(
    job: Job, word_limit: int, max_tokens: int, instructions: str | None = None
) -> ModelRequest:
    """One plain-text model turn per summary (under the application's instructions, if any)."""
    return ModelRequest(
        stage=Stage.SUMMARIZER,
        system=with_instructions(SUMMARIZER_PROMPT, instructions),
        messages=(Message.user(render(job, word_limit)),),
        max_tokens=max_tokens,
        temperature=0.0,
    )


def answer(response: ModelResponse) -> str | None:
    """The summary in a model's answer; None when the answer is unusable (empty or refused).

    A truncated answer (``max_tokens``) is kept: a summary cut short still covers most of
    the session, and the next one is written from it.
    """
    if response.stop_reason == "refusal":
        return None
    text = response.text.strip()
    for prefix in ("Summary:", "Updated summary:"):
        if text.startswith(prefix):
            text = text[len(prefix) :].strip()
    return text or None


def summary_event_id(workspace: str, session_id: str, kind: SummaryType, seq: int) -> str:
    """The same id for the same summary, so a redelivered message cannot publish it twice."""
    return derived_event_id("sum", workspace, session_id, kind, str(seq))


def summary_event(job: Job, content: str, token_count: int, cause: MessagePosted) -> SummaryUpdated:
    """The event recording ``job``'s summary, caused by the message that completed it."""
    return _summary(
        job,
        content,
        token_count,
        event_id=summary_event_id(cause.workspace, cause.session_id, job.kind, job.newest.seq),
        workspace=cause.workspace,
        session_id=cause.session_id,
        trace=cause.trace,
        correlation_id=cause.correlation_id,
        causation_id=cause.event_id,
    )


def redriven_summary(
    job: Job, content: str, token_count: int, workspace: str, session_id: str
) -> SummaryUpdated:
    """A summary written again on an operator's request (an id of its own: the log must not
    take it for a repeat of the summary that covered the same newest message)."""
    event_id = derived_event_id(
        "sum-redriven", workspace, session_id, job.kind, str(job.newest.seq), content
    )
    return _summary(
        job, content, token_count, event_id=event_id, workspace=workspace, session_id=session_id
    )


def _summary(job: Job, content: str, token_count: int, **envelope: Any) -> SummaryUpdated:
    return SummaryUpdated(
        **envelope,
        summary_type=job.kind,
        content=content,
        message_id=job.newest.message_id,
        message_seq=job.newest.seq,
        messages_covered=job.messages_covered,
        token_count=token_count,
    )


def turn_of(seq: int, event: MessagePosted) -> Turn:
    """The summarizer's view of a posted message."""
    return Turn(seq, event.message_id, event.peer_id, event.content, event.created_at)


def summary_letter(job: Job, cause: MessagePosted, reason: str) -> Letter:
    """The dead letter that parks a summary that could not be written."""
    newest = job.newest
    return Letter(
        key=f"{cause.workspace}/{cause.session_id}/{job.kind}/{newest.seq}",
        reason=reason,
        workspace=cause.workspace,
        session_id=cause.session_id,
        detail={
            "summary_type": job.kind,
            "message_seq": newest.seq,
            "message_ids": [t.message_id for t in job.turns],
        },
    )


def message_letter(seq: int, e: MessagePosted, reason: str, attempts: int) -> Letter:
    """The dead letter that parks a message that could not be counted."""
    return Letter(
        key=f"{e.workspace}/{e.session_id}/message/{seq}",
        reason=reason,
        stream_seq=seq,
        workspace=e.workspace,
        session_id=e.session_id,
        attempts=attempts,
        detail={"message_ids": [e.message_id]},
    )
