"""Reads and memory formation under load, on the running local stack, through its HTTP API.

The figures, in the order they are taken (each on workspaces of its own):

1. formation: a history of ``histories`` messages posted flat out to each read workspace; the
   largest one is timed from its first POST until its queue counts every unit completed
   (derived, applied and searchable): messages per second fully formed.
2. freshness while half that rate is posted to another session of the same workspace.
3. the reads on the quiet stack (get_context with a search query, tokens=2000 and peer_target;
   the dialectic's prefetch, as ``conclusions/query`` asks it of the same engine: the 12 best
   observations within a cosine distance of 0.9; the peer chat with the local reasoner), the
   sizes in alternation; before them, the host probe (``bench_cpu.host_probe``: a fixed
   computation timed as many times as there are quiet rounds, the host's speed and spread).
4. a burst to workspace A, then a five-message chat in workspace C: when the deriver reaches
   the chat and when its queue drains; then freshness in a workspace B of another partition,
   and in one of A's partition, while A's backlog lasts.
5. the same reads while ``load_rate`` messages/s are posted to another session of the same
   workspace (memory formation busy meanwhile, with what is left of the burst and with the
   load), side by side with the quiet figures of step 3; after each size's reads, the host
   probe again with the load still on (what the load alone does to a fixed computation's
   tail).

``python -m mnemo_cli.bench_load`` runs them alone (sizes from its flags or
``MNEMO_BENCH_LOAD_*``); ``mnemo bench-perf`` runs them with the rest. On cores that other work
keeps busy, ``--formation-priority normal`` starts the memory process again at normal priority
for steps 1, 2 and 4 (an idle-priority one would get nothing there), and at its own for the
reads.

``--url`` (or ``MNEMO_BENCH_LOAD_URL``) takes the figures of a deployed Mnemo instead, through
its gateway, with the key in ``HONCHO_API_KEY`` and its partition count in ``MNEMO_PARTITIONS``
(the chart's ``loadBench`` runs it so, inside the cluster, as a Helm test). The client cannot see
the deployment's processes there: the CPU rows are the client's own, the host probe times the
client's machine, and the memory process's priority is the deployment's. The workspaces the run
made are deleted when it ends, unless ``--keep-workspaces true``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urlencode

from pydantic import Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from mnemo_cli.bench_cpu import Meter, host_probe
from mnemo_cli.bench_formation import chat_after_burst, formation, freshness_under
from mnemo_cli.bench_http import Conn, Target
from mnemo_cli.bench_load_report import rows
from mnemo_cli.bench_traffic import (
    MADE,
    Corpus,
    PacedLoad,
    beside_batches,
    percentiles,
    post_flat_out,
    wait_drained,
    workspace,
)
from mnemo_cli.local import MEMORY_PRIORITY, background_priority, stop, up
from mnemo_runtime.settings import InfraSettings
from mnemo_schema.errors import refusal
from mnemo_schema.subjects import DEFAULT_PARTITIONS


class LoadSettings(BaseSettings):
    """How large each load figure is, and the memory process's priority while memory forms
    (``MNEMO_BENCH_LOAD_<FIELD>``)."""

    model_config = SettingsConfigDict(env_prefix="MNEMO_BENCH_LOAD_")

    histories: Annotated[list[int], NoDecode] = Field(default=[1_000, 20_000], min_length=1)
    load_rate: float = Field(default=1_000.0, gt=0)
    # Each size's loaded window (about 650 get_contexts in 30 s, ending early if the questions
    # run out) and the quiet rounds: a p99 of a few hundred reads is their 2nd to 4th slowest.
    load_seconds: float = Field(default=30.0, gt=1)
    read_samples: int = Field(default=300, ge=10)
    freshness_samples: int = Field(default=20, ge=1)
    burst: int = Field(default=20_000, ge=100)
    chat: int = Field(default=5, ge=1)
    fairness_samples: int = Field(default=10, ge=1)
    timeout_s: float = Field(default=3_600.0, gt=0)
    # None: the stack as it runs. Otherwise the memory process is started again at this
    # priority (MNEMO_MEMORY_PRIORITY's values) for the formation, freshness, burst and
    # fairness figures, and at its own for the reads. On cores that other work keeps busy, an
    # idle-priority memory process gets nothing, and those figures would measure the others.
    formation_priority: str | None = None
    # A deployed Mnemo's gateway (http:// or https://, with the path it is served under, if
    # any). None: the local stack.
    url: str | None = None
    # Whether the workspaces the run made stay afterwards. None: on a deployed Mnemo they are
    # deleted, on the local stack they stay (a fresh stack is thrown away whole).
    keep_workspaces: bool | None = None

    @field_validator("url")
    @classmethod
    def _gateway(cls, value: str | None) -> str | None:
        if value is not None:
            Target.of(value)  # refused here, before a run, rather than at its first request
        return value

    @model_validator(mode="after")
    def _priority_is_local(self) -> LoadSettings:
        if self.url is not None and self.formation_priority is not None:
            raise ValueError(
                "formation_priority restarts the local memory process: not with url, where the"
                " deployment sets its priority"
            )
        return self

    @field_validator("formation_priority")
    @classmethod
    def _priority(cls, value: str | None) -> str | None:
        try:
            background_priority(value or "normal")
        except SystemExit as err:
            raise ValueError(str(err)) from err
        return value

    @field_validator("histories", mode="before")
    @classmethod
    def _listed(cls, value: object) -> object:
        """``1000,20000`` from the environment or a flag."""
        return [v for v in value.split(",") if v.strip()] if isinstance(value, str) else value

    @field_validator("histories")
    @classmethod
    def _ascending(cls, value: list[int]) -> list[int]:
        if any(n < 100 for n in value):
            raise ValueError("each history has at least 100 messages")
        return sorted(value)


def _context(ws: str, question: str) -> tuple[str, str, dict[str, Any] | None]:
    query = urlencode({"tokens": 2000, "peer_target": "user", "search_query": question})
    return "GET", f"/v3/workspaces/{ws}/sessions/history/context?{query}", None


def _prefetch(ws: str, question: str) -> tuple[str, str, dict[str, Any] | None]:
    body = {
        "query": question,
        "top_k": 12,
        "distance": 0.9,
        "filters": {"observer_id": "user", "observed_id": "user"},
    }
    return "POST", f"/v3/workspaces/{ws}/conclusions/query", body


def _chat(ws: str, question: str) -> tuple[str, str, dict[str, Any] | None]:
    return "POST", f"/v3/workspaces/{ws}/peers/user/chat", {"query": question}


READS = {"get_context": _context, "prefetch": _prefetch, "chat": _chat}
# While a long phase waits for a queue to drain, its progress is printed this often.
REPORT_EVERY_S = 30.0
CHAT_EVERY = 5  # a chat every fifth round: it costs several searches


async def read_rounds(
    conn: Conn,
    spaces: Sequence[str],
    questions: Sequence[str],
    *,
    rounds: int = 0,
    until: float = 0.0,
    spans: list[tuple[float, float]] | None = None,
) -> dict[str, dict[str, list[float]]]:
    """Rounds of reads (get_context, prefetch, every fifth a chat) for each workspace in
    turn, one request at a time: ``rounds`` of them, or until ``until`` (perf_counter), or
    whichever comes first if both are given; each get_context's start and end into
    ``spans`` if given."""
    lat: dict[str, dict[str, list[float]]] = {ws: {k: [] for k in READS} for ws in spaces}
    i = 0
    while (not rounds or i < rounds) and (not until or time.perf_counter() < until):
        question = questions[i % len(questions)]
        for ws in spaces:
            for kind, read in READS.items():
                if kind == "chat" and i % CHAT_EVERY:
                    continue
                method, path, body = read(ws, question)
                t = time.perf_counter()
                await conn.request(method, path, body)
                done = time.perf_counter()
                lat[ws][kind].append((done - t) * 1000)
                if spans is not None and kind == "get_context":
                    spans.append((t, done))
        i += 1
    return lat


def _summary(lat: dict[str, list[float]]) -> dict[str, dict[str, float]]:
    return {kind: percentiles(values) for kind, values in lat.items()}


async def reads_under_load(
    settings: InfraSettings,
    url: str,
    spaces: dict[int, str],
    corpus: Corpus,
    sizes: LoadSettings,
    stack: bool = True,
) -> dict[int, dict[str, Any]]:
    """Each size's reads while ``load_rate`` messages/s go to another session of its workspace."""
    conn = await Conn.open(url)
    out: dict[int, dict[str, Any]] = {}
    for n, ws in spaces.items():
        load = PacedLoad(url, ws, "load", corpus, sizes.load_rate, start_at=n)
        await load.start()
        await asyncio.sleep(1.0)  # the load reaches its rate
        meter = Meter(settings, stack)
        until = time.perf_counter() + sizes.load_seconds - 1.0
        # Questions the quiet rounds did not ask: a question asked again is answered from the
        # query vectors the engine remembers.
        # Never one twice, either: the window ends when they run out.
        asked = corpus.questions[sizes.read_samples :] or corpus.questions
        spans: list[tuple[float, float]] = []
        lat = await read_rounds(conn, [ws], asked, rounds=len(asked), until=until, spans=spans)
        cost = meter.read()
        # The host probe again, the load still on: how far the same fixed computation's tail
        # moves with the load alone, beside how far the reads' does.
        host = percentiles(await host_probe(sizes.read_samples))
        achieved = await load.stop()
        out[n] = {"reads": _summary(lat[ws]), "load": achieved, "cost": cost, "host": host}
        # Where the loaded tail is: the get_contexts that met a batch's first moments, and the
        # rest.
        out[n]["batches"] = beside_batches(spans, load.post_spans)
    conn.close()
    return out


async def run(
    settings: InfraSettings, sizes: LoadSettings, url: str, deployed: bool = False
) -> dict[str, Any]:
    """Every load figure, in order, on the stack at ``url``; the results, each with its cost
    (wall seconds, each process's CPU seconds, the host's load). ``deployed``: ``url`` is a
    deployed Mnemo, whose processes this one cannot see (only its own CPU is counted)."""
    partitions = settings.partitions or DEFAULT_PARTITIONS
    stack = not deployed
    if deployed and sizes.formation_priority is not None:
        raise ValueError("formation_priority restarts the local memory process, not a deployed one")
    corpus = Corpus.locomo()
    conns = [await Conn.open(url) for _ in range(4)]
    tag = uuid.uuid4().hex[:6]
    spaces = {
        n: await workspace(conns[0], f"lb-read{n}-{tag}", ["history", "load"])
        for n in sizes.histories
    }
    result: dict[str, Any] = {"sizes": sizes.model_dump(), "deployed": deployed}
    own = os.environ.get(MEMORY_PRIORITY, "idle")
    await _memory_at(settings, sizes.formation_priority)
    *small, large = sizes.histories
    for n in small:
        print(f"load: a history of {n:,} messages ...", flush=True)
        await post_flat_out(conns, spaces[n], "history", corpus, n)
        result.setdefault("histories", {})[n] = await wait_drained(
            conns[0], spaces[n], sizes.timeout_s, report_every=REPORT_EVERY_S
        )
    print(f"load: formation, {large:,} messages flat out until all formed ...", flush=True)
    meter = Meter(settings, stack)
    result["formation"] = await formation(
        conns, spaces[large], corpus, large, 0, sizes.timeout_s, report_every=REPORT_EVERY_S
    )
    result["formation"]["cost"] = meter.read()
    half = result["formation"]["msg_per_s"] / 2
    print(f"load: freshness at half that rate ({half:.0f} msg/s) ...", flush=True)
    meter = Meter(settings, stack)
    result["freshness"] = await freshness_under(
        url, corpus, half, sizes.freshness_samples, timeout=60.0
    )
    result["freshness"]["cost"] = meter.read()
    print("load: reads on the quiet stack ...", flush=True)
    await _memory_at(settings, sizes.formation_priority and own)
    result["host"] = percentiles(await host_probe(sizes.read_samples))
    meter = Meter(settings, stack)
    quiet = await read_rounds(
        conns[0], list(spaces.values()), corpus.questions, rounds=sizes.read_samples
    )
    cost = meter.read()
    result["quiet"] = {n: {"reads": _summary(quiet[ws]), "cost": cost} for n, ws in spaces.items()}
    print(f"load: a burst of {sizes.burst:,}, then a {sizes.chat}-message chat ...", flush=True)
    await _memory_at(settings, sizes.formation_priority)
    meter = Meter(settings, stack)
    result |= await chat_after_burst(
        url, corpus, sizes.burst, sizes.chat, partitions, sizes.fairness_samples, timeout=120.0
    )
    result["burst"]["cost"] = meter.read()
    print(f"load: reads while {sizes.load_rate:.0f} msg/s are posted ...", flush=True)
    await _memory_at(settings, sizes.formation_priority and own)
    result["loaded"] = await reads_under_load(settings, url, spaces, corpus, sizes, stack)
    for conn in conns:
        conn.close()
    return result


async def _memory_at(settings: InfraSettings, priority: str | None) -> None:
    """Start the memory process again at ``priority`` (None: leave it as it runs)."""
    if priority is None:
        return
    print(f"load: the memory process at priority {priority}", flush=True)
    stop(settings, "memory")
    kept = os.environ.get(MEMORY_PRIORITY)
    os.environ[MEMORY_PRIORITY] = priority
    try:
        await asyncio.to_thread(up, settings, 180.0, True)
    finally:
        if kept is None:
            os.environ.pop(MEMORY_PRIORITY)
        else:
            os.environ[MEMORY_PRIORITY] = kept


def main(argv: list[str] | None = None) -> None:
    """``python -m mnemo_cli.bench_load``: the load figures alone, on the running stack (or, with
    ``--url``, on a deployed Mnemo)."""
    p = argparse.ArgumentParser(
        prog="python -m mnemo_cli.bench_load",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    for name, info in LoadSettings.model_fields.items():
        p.add_argument(
            f"--{name.replace('_', '-')}", dest=name, default=None, help=f"default {info.default}"
        )
    args = {k: v for k, v in vars(p.parse_args(argv)).items() if v is not None}
    try:
        sizes = LoadSettings(**args)
    except ValidationError as err:
        p.error(refusal(err).detail)
    from mnemo_cli.local import gateway_url

    deployed = sizes.url is not None
    url = sizes.url or gateway_url()
    try:
        result = asyncio.run(run(InfraSettings(), sizes, url, deployed))
    finally:
        keep = sizes.keep_workspaces if sizes.keep_workspaces is not None else not deployed
        if not keep and MADE:
            asyncio.run(delete_workspaces(url, MADE))
    for name, value, target in rows(result):
        print(f"| {name} | {value} | {target} |")
    out = Path("bench-out")
    out.mkdir(exist_ok=True)
    (out / "load.json").write_text(json.dumps(result, indent=2))


async def delete_workspaces(url: str, made: Sequence[str]) -> None:
    """Delete each of ``made`` (the gateway erases a workspace's memory and log after it
    answers); one that cannot be deleted is said so, and the rest are still deleted."""
    print(f"load: deleting the {len(made)} workspaces the run made ...", flush=True)
    conn = await Conn.open(url)
    try:
        for ws in made:
            try:
                await conn.request("DELETE", f"/v3/workspaces/{ws}")
            except (RuntimeError, OSError) as err:
                print(f"load: workspace {ws} was not deleted: {err}", flush=True)
    finally:
        conn.close()


if __name__ == "__main__":
    main()
