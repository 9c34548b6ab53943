"""The deriver's skill of the local reasoner: explicit self-disclosures, rewritten by rules.

This is a heuristic, not a language model. It reads the rendered batch out of the request,
keeps the target's own first-person statements sentence by sentence, splits them at clause
boundaries, resolves relative dates against each message's timestamp and rewrites them in the
third person. Of a sentence that asks, it keeps what is stated before the question ("I'm
building a budget tracker, can you help me with the schema?") and the speaker's own reason
inside it ("..., considering I'm on Flask 2.3"), never the question itself. It cites the whole sentence as the span, so every span is grounded by
construction. It restores a dropped "I" only in a few set patterns ("Researching adoption
agencies", "Gonna move"), so most facts stated without a first-person word are missed; it
cannot resolve "it" or "they" (clauses opening with them are dropped, keeping only an embedded
"since I ..."); it keeps some opinions a model would skip. It only ever rephrases what the
target wrote.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from mnemo_deriver.contract import (
    BatchMessage,
    DeriverOutput,
    ExtractedObservation,
    find_batch,
    parse_batch,
)
from mnemo_runtime.models import ChatModel, Stage
from mnemo_runtime.models.local import LocalReasoner
from mnemo_runtime.models.local.dates import resolve_dates
from mnemo_runtime.models.local.identity import MODEL_NAME, display_name
from mnemo_runtime.models.local.pronouns import mentions_self, supply_subject, to_third_person
from mnemo_runtime.models.local.sentences import (
    Cleaner,
    addresses_listener,
    embedded_clause,
    is_asking,
    is_courtesy,
    is_question,
    is_subordinate,
    may_state_fact,
    opens_unresolved,
    split_clauses,
    split_sentences,
)
from mnemo_runtime.models.ports import (
    ModelRejected,
    ModelRequest,
    ModelResponse,
    ToolCall,
    ToolSpec,
    Usage,
)

_SPACES = re.compile(r"\s+")
_SPACE_BEFORE_PUNCT = re.compile(r"\s+([,.;:!?])")


def derive(target: str, messages: Sequence[BatchMessage]) -> DeriverOutput:
    """The observations the heuristic finds about ``target`` in a batch.

    Each message is read on its own (a fact repeated within a message is recorded once; one
    restated in a later message is that message's observation too, merged by the memory
    projection), so what a message yields does not depend on the messages batched with it:
    one deriver and several, with their different batch boundaries, derive the same. The
    exception is a message that does not follow another peer's turn: whom its "you" names, and
    which names it may address, come from the other speakers in the batch.
    """
    cleaner = Cleaner({target, *(m.peer_id for m in messages)})
    observations: list[ExtractedObservation] = []
    for position, message in enumerate(messages):
        if message.is_context or message.peer_id != target:
            continue
        seen: set[str] = set()
        listener = _listener(messages, position)
        for sentence in split_sentences(message.content):
            for fact in _facts(sentence, message, target, listener, cleaner):
                if fact.casefold() not in seen:
                    seen.add(fact.casefold())
                    observations.append(
                        ExtractedObservation(
                            fact=fact, source_message_index=message.index, source_span=sentence
                        )
                    )
    return DeriverOutput(observations=observations)


def _statements(sentence: str) -> list[tuple[str, bool]]:
    """The sentence's clauses that may state something, each with whether it is what remains
    of a question or request (its own subordinate clause, "... considering I'm on Flask 2.3")."""
    clauses = split_clauses(sentence)
    last = len(clauses) - 1
    # What a question sentence asks is its last clause, whatever it opens with; what it states
    # comes before ("I'm building a tracker, can you help me with the schema?").
    asking = [is_asking(c) or (n == last and is_question(sentence)) for n, c in enumerate(clauses)]
    out = []
    for n, clause in enumerate(clauses):
        if asking[n]:
            inner = embedded_clause(clause)
            if inner is not None:
                out.append((inner, True))
        # A condition of the question after it is not a fact ("Once I have HTTPS set up, how
        # do I renew the certificate?").
        elif not (n < last and asking[n + 1] and is_subordinate(clause)):
            out.append((clause, False))
    return out


def _facts(
    sentence: str, message: BatchMessage, target: str, listener: str | None, cleaner: Cleaner
) -> list[str]:
    if is_courtesy(sentence):
        return []
    statements = _statements(sentence)
    stated = " ".join(clause for clause, _ in statements)
    to_listener = addresses_listener(stated)
    # Without a first-person word, only a dropped subject could make it a disclosure, and
    # that is not supplied when the sentence speaks to the listener.
    if not statements or (to_listener and not mentions_self(stated)):
        return []
    facts = []
    for clause, inner in statements:
        text = cleaner.clean(clause)
        # A subordinate clause kept from a question opens with its own subject.
        if not inner and opens_unresolved(text):
            text = cleaner.clean(embedded_clause(text) or "")
        elif not inner and text and not to_listener:
            supplied = supply_subject(text)
            if supplied is None:
                continue
            text = supplied
        if not mentions_self(text) or not may_state_fact(text):
            continue
        dated = resolve_dates(text, message.created_at.date())
        rewritten = to_third_person(
            dated, display_name(target), listener and display_name(listener)
        )
        if rewritten is not None:
            facts.append(_finish(rewritten))
    return facts


def _listener(messages: Sequence[BatchMessage], position: int) -> str | None:
    """Whom the message at ``position`` addresses: the nearest other speaker, earlier first."""
    speaker = messages[position].peer_id
    earlier = (m.peer_id for m in reversed(messages[:position]) if m.peer_id != speaker)
    later = (m.peer_id for m in messages[position + 1 :] if m.peer_id != speaker)
    return next(earlier, None) or next(later, None)


def _finish(fact: str) -> str:
    fact = _SPACE_BEFORE_PUNCT.sub(r"\1", _SPACES.sub(" ", fact)).strip(" ,;:")
    # A closing quote that already ends a sentence ('called "Finding Freedom."') needs no stop.
    end = "" if fact.endswith(('."', '!"', ".'", "!'")) else "."
    return fact[0].upper() + fact[1:] + end


class LocalDeriver:
    """Answers a deriver request's forced output tool with heuristically extracted facts."""

    def respond(self, request: ModelRequest) -> ModelResponse:
        """A single call to the forced tool whose input is a ``DeriverOutput``."""
        tool = request.forced_tool()
        if tool is None:
            raise ModelRejected(
                "the local reasoner's deriver answers only through a forced output tool"
            )
        _check_schema(tool)
        batch = _batch_text(request)
        try:
            target, messages = parse_batch(batch)
        except ValueError as exc:
            raise ModelRejected(f"the local reasoner could not read the batch: {exc}") from exc
        output = derive(target, messages).model_dump(mode="json")
        prompt = request.system + "".join(m.text() for m in request.messages)
        return ModelResponse(
            tool_calls=(ToolCall(id="local-deriver-0", name=tool.name, input=output),),
            stop_reason="tool_use",
            # Rough counts (four characters a token) so local runs still show in the ledger.
            usage=Usage(input_tokens=len(prompt) // 4, output_tokens=len(json.dumps(output)) // 4),
            model=MODEL_NAME,
        )


def _check_schema(tool: ToolSpec) -> None:
    properties = tool.input_schema.get("properties", {})
    if not isinstance(properties, dict) or "observations" not in properties:
        raise ModelRejected(
            f"the local reasoner's deriver fills a DeriverOutput; tool {tool.name} asks for "
            "something else"
        )


def _batch_text(request: ModelRequest) -> str:
    for message in request.messages:
        if message.role == "user":
            batch = find_batch(message.text())
            if batch is not None:
                return batch
    raise ModelRejected("the deriver request carries no rendered batch (see render_batch)")


def local_deriver(stage: Stage = Stage.DERIVER) -> ChatModel:  # noqa: ARG001  (a factory)
    """The local reasoner with the deriver's skill (a ``LocalModelFactory``)."""
    return LocalReasoner({Stage.DERIVER: LocalDeriver()})
