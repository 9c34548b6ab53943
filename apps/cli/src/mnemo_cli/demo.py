"""``mnemo demo``: ingest a real LoCoMo conversation through the honcho-ai SDK, show it back."""

from __future__ import annotations

import re
import time

from honcho import Honcho, Peer
from honcho.api_types import MessageCreateParams

from mnemo_cli import proc_cpu
from mnemo_cli.local import gateway_url, processes
from mnemo_cli.locomo import datasets_dir, load, turn_times
from mnemo_runtime.models import Stage
from mnemo_runtime.models.config import ModelSettings
from mnemo_runtime.settings import InfraSettings
from mnemo_runtime.stack import local_api_key

SWITCH = (
    "  To use a model, set one of these before `make demo` (after `make down`):\n"
    "    ANTHROPIC_API_KEY=...                                 Claude for every stage\n"
    "    MNEMO_MODEL_DEFAULT=openai:MODEL OPENAI_BASE_URL=URL  an OpenAI-compatible server "
    "(Ollama, vLLM, llama.cpp, LiteLLM)\n"
    "    MNEMO_MODEL_DEFAULT=llamacpp:/path/model.gguf         a local GGUF file, run in process\n"
    "  or one stage only: MNEMO_MODEL_DERIVER=..., MNEMO_MODEL_DIALECTIC_LOW=... (README: Local models)"
)


def _peer_id(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "-", name).lower()


def reasoners(settings: ModelSettings) -> str:
    """Which reasoner each stage uses under ``settings``, and how to switch."""
    choices = {stage: settings.choice(stage) for stage in Stage}
    if all(c.provider == "local" for c in choices.values()):
        return (
            "Reasoner: Mnemo's local heuristic reasoner (rules, not a language model; labelled "
            "local-heuristic) for every stage: no model is configured.\n" + SWITCH
        )
    lines = ["Reasoner per stage:"]
    for stage, choice in choices.items():
        shown = "local heuristic" if choice.provider == "local" else f"{choice.provider}: "
        if choice.provider != "local":
            shown += (
                choice.model.rsplit("/", 1)[-1] if choice.provider == "llamacpp" else choice.model
            )
        lines.append(f"  {stage.value:<18} {shown}")
    return "\n".join(lines)


def demo(conversation: str, max_sessions: int) -> None:
    """Ingest ``conversation`` (first ``max_sessions`` sessions) and print a summary."""
    try:
        print(reasoners(ModelSettings()) + "\n")
    except ValueError as err:  # a stage's model setting is unusable
        raise SystemExit(str(err)) from err
    path = datasets_dir() / "locomo" / "locomo-dev5.json"
    convs = {c.sample_id: c for c in load(path)}
    if conversation not in convs:
        raise SystemExit(f"unknown conversation {conversation!r}; have {', '.join(convs)}")
    conv = convs[conversation]
    # The SDK sends the key as `Authorization: Bearer <key>` (HONCHO_API_KEY works as well).
    key = local_api_key(InfraSettings().state_dir)
    honcho = Honcho(base_url=gateway_url(), workspace_id=f"demo-{conversation}", api_key=key)
    a, b = honcho.peer(_peer_id(conv.speaker_a)), honcho.peer(_peer_id(conv.speaker_b))
    speakers = {conv.speaker_a: a, conv.speaker_b: b}
    print(
        f"Ingesting {conversation}: {conv.speaker_a} and {conv.speaker_b}, "
        f"{min(max_sessions, len(conv.sessions))} of {len(conv.sessions)} sessions"
    )
    started = time.monotonic()
    total = 0
    for s in conv.sessions[:max_sessions]:
        session = honcho.session(
            f"session-{s.number}", metadata={"started_at": s.started_at.isoformat()}
        )
        session.add_peers([a, b])
        msgs = [
            MessageCreateParams(
                peer_id=speakers[t.speaker].id,
                content=t.text,
                created_at=when,
                metadata={"dia_id": t.dia_id},
            )
            for t, when in zip(s.turns, turn_times(s), strict=True)
        ]
        for i in range(0, len(msgs), 100):
            session.add_messages(msgs[i : i + 100])
        total += len(msgs)
        print(f"  session {s.number:>2} ({s.started_at:%d %b %Y}): {len(msgs)} messages")
    took = time.monotonic() - started
    print(f"Stored {total} messages in {took:.1f}s through the SDK.\n")
    first = honcho.session("session-1")
    print("First turns of session 1, read back from Mnemo:")
    for m in first.messages(size=5).items:
        when = f"{m.created_at:%Y-%m-%d %H:%M}"
        print(f"  [{when}] {m.peer_id}: {m.content[:90]}  ({m.token_count} tokens)")
    print("\nPeers:", ", ".join(p.id for p in honcho.peers()))
    print("Sessions:", ", ".join(s.id for s in honcho.sessions()))
    print(f"{a.id} is in {len(list(a.sessions()))} sessions")
    _show_memory(honcho, a, b)


# How long the demo waits for memory to form before it asks its questions of what has formed.
FORMING_S = 120.0


def unfinished(waited_s: float, cpu: str) -> str:
    """What the demo says when memory has not finished forming in time; ``cpu``: what the memory
    process got meanwhile (``proc_cpu.memory_since``), if known."""
    note = (
        f"  Memory has not finished forming after {waited_s:.0f} s; the answers below use what"
        " has formed so far."
    )
    return note + (f"\n  {cpu[0].upper()}{cpu[1:]}." if cpu else "")


def _show_memory(honcho: Honcho, *peers: Peer) -> None:
    print("\nWaiting for memory to form")
    memory = processes(InfraSettings()).get("memory")
    before = proc_cpu.read(memory) if memory else None
    started = time.monotonic()
    drained = False
    while time.monotonic() - started < FORMING_S:
        status = honcho.queue_status()
        if not status.pending_work_units and not status.in_progress_work_units:
            drained = True
            break
        print(
            f"  {status.completed_work_units}/{status.total_work_units} work units done", end="\r"
        )
        time.sleep(0.5)
    print(f"  {status.completed_work_units}/{status.total_work_units} work units done")
    if not drained:
        cpu = proc_cpu.memory_since(memory, before) if memory else ""
        print(unfinished(time.monotonic() - started, cpu))
    for peer in peers:
        facts = peer.conclusions.list(size=100)
        print(f"\nWhat Mnemo knows about {peer.id} ({facts.total} observations), first five:")
        for f in facts.items[:5]:
            print(f"  - {f.content}")
    _show_summary(honcho)
    for peer, question in (
        (peers[0], "What support group did she attend?"),
        (peers[0], "Where does she want to move to?"),
        (peers[1], "What does she do to relax?"),
        (peers[1], "What did she paint?"),
    ):
        print(f"\nQ about {peer.id}: {question}")
        reply = peer.chat(question, include_evidence=True)
        print(f"A: {reply.content}")
        if reply.evidence is not None:
            print(
                f"   (read {len(reply.evidence.conclusions)} observations and"
                f" {len(reply.evidence.messages)} messages)"
            )


def _show_summary(honcho: Honcho) -> None:
    """The newest summary of the first session long enough to have one (20+ messages)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        for session in honcho.sessions():
            summaries = session.summaries()
            best = summaries.long_summary or summaries.short_summary
            if best is not None:
                print(f"\nSummary of {session.id} ({best.summary_type}):\n  {best.content[:500]}")
                return
        time.sleep(0.5)
    print("\nNo session summary yet (sessions get one every 20 messages).")
