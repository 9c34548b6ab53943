"""The load benchmark's parts that need no stack: its traffic, its figures, its table, its client."""

from __future__ import annotations

import asyncio
import json
import os
import time
from datetime import UTC, datetime
from typing import Any, cast

import pytest

from mnemo_cli import bench_load
from mnemo_cli.bench_cpu import fixed_work, host_probe, spent
from mnemo_cli.bench_formation import workspace_id
from mnemo_cli.bench_http import Conn, Target
from mnemo_cli.bench_load import LoadSettings, read_rounds
from mnemo_cli.bench_load_report import rows
from mnemo_cli.bench_traffic import (
    BATCH_HEAD_S,
    MADE,
    Corpus,
    beside_batches,
    drained,
    percentiles,
    progress_line,
    retold,
    wait_drained,
)
from mnemo_cli.proc_cpu import parse_stat
from mnemo_deriver.contract import BatchMessage
from mnemo_deriver.local import derive
from mnemo_schema.subjects import partition_of

TICK = os.sysconf("SC_CLK_TCK")


def test_messages_cycle_the_turns_without_repeating_one() -> None:
    corpus = Corpus([("user", "I moved. I love it!"), ("assistant", "Where to")], ["q?"])
    got = corpus.messages(0, 5)
    assert [m["peer_id"] for m in got] == ["user", "assistant", "user", "assistant", "user"]
    assert got[0]["content"] == "I moved. I love it!"
    assert got[2]["content"] == "I moved (take 2). I love it (take 2)!"
    assert got[3]["content"] == "Where to (take 2)"
    assert len({m["content"] for m in corpus.messages(0, 40)}) == 40
    assert corpus.messages(3, 2) == got[3:5]


def test_a_retold_turn_derives_new_observations() -> None:
    when = datetime(2025, 5, 1, tzinfo=UTC)
    text = "I adopted a dog named Rex. Last Friday I went to Lisbon!"
    facts = [
        [o.fact for o in derive("user", [BatchMessage(0, "user", t, when)]).observations]
        for t in (text, retold(text, 1))
    ]
    assert len(facts[0]) == len(facts[1]) == 2
    assert not set(facts[0]) & set(facts[1])


def test_the_locomo_corpus_or_generated_sentences() -> None:
    corpus = Corpus.locomo()
    assert len(corpus.turns) >= 1000 and corpus.questions
    assert {peer for peer, _ in corpus.turns} == {"user", "assistant"}


def test_percentiles() -> None:
    got = percentiles([float(v) for v in range(1, 101)])
    assert got["n"] == 100 and got["max_ms"] == 100.0
    assert got["p50_ms"] == pytest.approx(50.5) and got["p99_ms"] == pytest.approx(99.01)
    assert percentiles([])["n"] == 0


def _status(total: int, pending: int, running: int) -> dict[str, int]:
    return {
        "total_work_units": total,
        "pending_work_units": pending,
        "in_progress_work_units": running,
    }


def test_a_queue_drains_when_it_has_work_and_none_left() -> None:
    assert drained(_status(10, 0, 0))
    assert not drained(_status(10, 0, 1)) and not drained(_status(10, 2, 0))
    assert not drained(_status(0, 0, 0))  # nothing counted yet is not done


def _status(completed: int, in_progress: int, pending: int) -> dict[str, int]:
    return {
        "total_work_units": completed + in_progress + pending,
        "completed_work_units": completed,
        "in_progress_work_units": in_progress,
        "pending_work_units": pending,
    }


def test_a_queue_status_as_a_line_of_progress() -> None:
    assert progress_line(_status(12_345, 40, 27_615), 61.4) == (
        "12,345 of 40,000 work units completed (31%), 40 in progress, after 61 s"
    )
    assert progress_line(_status(0, 0, 0), 0.2) == (
        "0 of 0 work units completed (0%), 0 in progress, after 0 s"
    )


class _Queue:
    """Queue statuses in turn, as the server would give them."""

    def __init__(self, statuses: list[dict[str, int]]) -> None:
        self.statuses = statuses

    async def json(self, method: str, path: str, **params: Any) -> dict[str, int]:
        return self.statuses.pop(0)


async def test_waiting_on_a_queue_says_how_far_it_is_while_it_waits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    statuses = [_status(0, 2, 8), _status(6, 2, 2), _status(10, 0, 0)]
    got = await wait_drained(cast(Conn, _Queue(statuses)), "w", 10.0, every=0.0, report_every=0.0)
    assert got["drained"] and got["completed_units"] == 10
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(",")[0] for line in lines] == [
        "load:   0 of 10 work units completed (0%)",
        "load:   6 of 10 work units completed (60%)",
    ]
    # Without report_every, nothing is said.
    statuses = [_status(0, 2, 8), _status(10, 0, 0)]
    await wait_drained(cast(Conn, _Queue(statuses)), "w", 10.0, every=0.0)
    assert capsys.readouterr().out == ""


def test_a_workspace_id_in_the_partition_asked_for() -> None:
    home = partition_of("lb-a", 8)
    apart = workspace_id("lb-b", 8, home.__ne__)
    beside = workspace_id("lb-c", 8, home.__eq__)
    assert partition_of(apart, 8) != home and partition_of(beside, 8) == home
    assert apart.startswith("lb-b-")


def test_sizes_from_the_environment_and_from_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MNEMO_BENCH_LOAD_HISTORIES", "20000,1000")
    monkeypatch.setenv("MNEMO_BENCH_LOAD_BURST", "500")
    sizes = LoadSettings()
    assert sizes.histories == [1000, 20000] and sizes.burst == 500
    assert LoadSettings(histories="300", load_rate="50").histories == [300]  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="at least 100"):
        LoadSettings(histories="10")  # type: ignore[arg-type]
    assert LoadSettings().formation_priority is None  # the stack as it runs
    assert LoadSettings(formation_priority="normal").formation_priority == "normal"
    with pytest.raises(ValueError, match="MNEMO_MEMORY_PRIORITY"):
        LoadSettings(formation_priority="fast")


class _Asked:
    """Records the paths it is asked; answers at once."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    async def request(self, method: str, path: str, body: Any) -> None:
        self.paths.append(path)


async def test_read_rounds_end_at_their_count_or_their_time_whichever_is_first() -> None:
    questions = ["where", "when", "who"]
    far = time.perf_counter() + 60.0
    asked = _Asked()
    lat = await read_rounds(cast(Conn, asked), ["w"], questions, rounds=3, until=far)
    assert len(lat["w"]["get_context"]) == 3  # the count first: no question asked twice
    assert sum("search_query=when" in p for p in asked.paths) == 1
    late = _Asked()
    got = await read_rounds(cast(Conn, late), ["w"], questions, rounds=3, until=1.0)
    assert late.paths == [] and got["w"]["get_context"] == []  # the time first
    counted = _Asked()
    spans: list[tuple[float, float]] = []
    await read_rounds(cast(Conn, counted), ["w"], questions, rounds=5, spans=spans)
    assert sum("get_context" in p or "/context" in p for p in counted.paths) == 5
    assert len(spans) == 5 and all(a <= b for a, b in spans)  # each get_context's, in order
    assert [a for a, _ in spans] == sorted(a for a, _ in spans)


def test_reads_are_split_by_whether_they_met_a_batchs_first_moments() -> None:
    head = BATCH_HEAD_S
    posts = [(10.0, 10.04), (10.4, 10.45)]
    reads = [
        (9.99, 10.01),  # runs into a batch's start
        (10.0 + head / 2, 10.0 + head / 2 + 0.03),  # begins inside a head
        (10.0 + head + 0.001, 10.0 + head + 0.02),  # begins just after a head ended
        (10.2, 10.22),  # between the batches
        (10.38, 10.399),  # ends just before the next batch
        (10.38, 10.41),  # ends after the next one began
        (9.0, 9.02),  # before any batch
    ]
    split = beside_batches(reads, posts)
    assert split["during"]["n"] == 3 and split["rest"]["n"] == 4
    assert split["during"]["max_ms"] == pytest.approx(30.0)  # the longest that met one
    assert split["rest"]["max_ms"] == pytest.approx(20.0)
    nothing = beside_batches(reads, [])
    assert nothing["during"]["n"] == 0 and nothing["rest"]["n"] == len(reads)


def _reads(p50: float, tail: float, n: int = 100) -> dict[str, dict[str, float]]:
    f = {"n": n, "p50_ms": p50, "p95_ms": tail, "p99_ms": tail, "max_ms": tail}
    return {"get_context": f, "prefetch": f, "chat": f}


COST = {"seconds": 10.0, "cpu_s": {"memory": 4.0, "postgres": 2.0}, "host_load": [1.0, 2.5]}


def _result() -> dict[str, Any]:
    fresh = {"n": 5, "p50_ms": 400.0, "p95_ms": 500.0, "p99_ms": 600.0, "max_ms": 600.0}
    load = {"achieved_msg_per_s": 990.0}
    probes = {"observation_ms": fresh | {"not_found": 1}, "search_ms": fresh}
    return {
        "formation": {"messages": 20000, "msg_per_s": 123.4, "cost": COST},
        "freshness": {"load": {"achieved_msg_per_s": 61.0}, **probes},
        "quiet": {"1000": {"reads": _reads(10.0, 20.0), "cost": COST}},
        "loaded": {"1000": {"reads": _reads(12.0, 30.0, 712), "load": load, "cost": COST}},
        "burst": {"messages": 20000},
        "chat": {
            "messages": 5,
            "reached_s": 0.8,
            "drained_after_reached_s": 2.5,
            "drained_after_post_s": 3.3,
        },
        "fairness": {
            "a_unfinished_units": [40000, 38000],
            "other_partition": probes,
            "same_partition": probes,
        },
    }


def test_the_table_rows_carry_the_figures_and_the_ratio_to_quiet() -> None:
    table = {name: value for name, value, _ in rows(_result())}
    assert table["memory formation, 20,000 msgs flat out until all formed"] == "123.4 msg/s"
    loaded = next(k for k in table if k.startswith("get_context") and "990" in k)
    assert loaded.endswith("p50 / p99 (x quiet) (n 712)")
    assert table[loaded] == "12.0 / 30.0 ms (1.50x)"
    quiet = "get_context, search query, 2000 tokens, history 1,000: quiet, p50 / p99 (n 100)"
    assert table[quiet] == "10.0 / 20.0 ms"
    assert any("40,000 -> 38,000" in k for k in table)
    assert table["  ... CPU ms per message formed"] == "memory 0.2, postgres 0.1"
    assert table["  ... cores used (quiet reads)"] == "memory 0.40, postgres 0.20"
    assert table["  ... its queue drains, from the deriver reaching it / from its post"] == (
        "2.5 / 3.3 s"
    )
    assert any("(n 5, 1 never)" in k for k in table)
    assert not any(k.startswith("host:") for k in table)  # a result from before the probe
    assert rows({}) == []


def test_the_loaded_reads_beside_the_batches_are_rows_under_theirs() -> None:
    result = _result()
    split = {
        "during": percentiles([30.0] * 10 + [50.0]),
        "rest": percentiles([15.0] * 98 + [25.0, 25.0]),
    }
    result["loaded"]["1000"]["batches"] = split
    table = [name for name, _, _ in rows(result)]
    values = {name: value for name, value, _ in rows(result)}
    during = f"  ... at 990 msg/s: those meeting a batch's first {BATCH_HEAD_S * 1000:.0f} ms"
    at = table.index(f"{during}, p50 / p99 (n 11)")
    assert "at 990 msg/s" in table[at - 1] and table[at + 1] == "  ... the rest, p50 / p99 (n 100)"
    assert values[f"{during}, p50 / p99 (n 11)"] == "30.0 / 48.0 ms"
    assert values["  ... the rest, p50 / p99 (n 100)"] == "15.0 / 25.0 ms"
    assert not any("batch's first" in k for k, _, _ in rows(_result()))  # a result from before


def test_the_host_probe_is_a_row_with_its_spread() -> None:
    result = _result() | {"host": percentiles([4.0] * 98 + [8.0, 8.0])}
    table = {name: value for name, value, _ in rows(result)}
    label = "host: a fixed pure-Python computation, quiet, p50 / p99 (p99 / p50) (n 100)"
    assert table[label] == "4.0 / 8.0 ms (2.00x)"


def test_the_host_probe_under_load_is_a_row_beside_the_reads_with_its_ratio_to_quiet() -> None:
    result = _result() | {"host": percentiles([4.0] * 98 + [8.0, 8.0])}
    result["loaded"]["1000"]["host"] = percentiles([5.0] * 98 + [12.0, 12.0])
    table = [name for name, _, _ in rows(result)]
    values = {name: value for name, value, _ in rows(result)}
    label = "host: the same computation at 990 msg/s, after history 1,000's reads, p50 / p99"
    assert values[f"{label} (x quiet) (n 100)"] == "5.0 / 12.0 ms (1.50x)"
    # Under that size's loaded reads, before their cores.
    at = table.index(f"{label} (x quiet) (n 100)")
    assert "at 990 msg/s" in table[at - 1] and table[at + 1].startswith("  ... cores used (reads")
    del result["host"]  # a probe under load without a quiet one: no ratio
    values = {name: value for name, value, _ in rows(result)}
    assert values[f"{label} (x quiet) (n 100)"] == "5.0 / 12.0 ms"


async def test_the_host_probe_times_the_same_work_each_time() -> None:
    assert fixed_work(10) == sum((i * i) % 7 for i in range(10))
    quick = await host_probe(5, steps=1_000)
    slow = await host_probe(5, steps=100_000)
    assert len(quick) == len(slow) == 5 and all(t > 0 for t in quick)
    assert sorted(slow)[2] > sorted(quick)[2]  # a hundred times the work: slower at the median


def test_what_never_happened_is_said_so_and_stays_json() -> None:
    result = _result()
    result["chat"]["reached_s"] = None
    result["chat"]["drained_after_reached_s"] = None
    again = json.loads(json.dumps(result, allow_nan=False))
    table = {name: value for name, value, _ in rows(again)}
    assert "never / 3.3 s" in table.values()
    assert any(v == "never s" for v in table.values())


async def _serve(replies: list[tuple[int, bytes]], seen: list[bytes], close: bool) -> Any:
    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        while replies:
            head = await r.readuntil(b"\r\n\r\n")
            length = next(
                int(line.split(b":")[1])
                for line in head.split(b"\r\n")
                if line.lower().startswith(b"content-length")
            )
            seen.append(head.split(b"\r\n")[0] + b" " + await r.readexactly(length))
            status, body = replies.pop(0)
            w.write(b"HTTP/1.1 %d X\r\nContent-Length: %d\r\n\r\n%s" % (status, len(body), body))
            await w.drain()
            if close:  # as a server does with a connection idle too long
                break
        w.close()

    return await asyncio.start_server(handle, "127.0.0.1", 0)


@pytest.mark.parametrize("close", [False, True])
async def test_the_lean_client_speaks_http_and_reopens_an_idle_connection(close: bool) -> None:
    seen: list[bytes] = []
    server = await _serve([(200, b'{"a": 1}'), (200, b"[]"), (404, b"no")], seen, close)
    port = server.sockets[0].getsockname()[1]
    conn = await Conn.open(f"http://127.0.0.1:{port}", idle_s=-1.0 if close else 60.0)
    assert await conn.json("GET", "/x", tokens=2000, peer=None) == {"a": 1}
    assert await conn.post("/y", {"b": 2}) == b"[]"
    with pytest.raises(RuntimeError, match="404"):
        await conn.request("DELETE", "/z")
    conn.close()
    server.close()
    assert seen == [
        b"GET /x?tokens=2000 HTTP/1.1 ",
        b'POST /y HTTP/1.1 {"b": 2}',
        b"DELETE /z HTTP/1.1 ",
    ]


def test_cpu_time_from_proc_stat_fields() -> None:
    # /proc/<pid>/stat after "(comm)": state ppid ... utime(14) stime(15) cutime(16) cstime(17)
    fields = ["S", "42", *["0"] * 9, "250", "50", "100", "0", *["0"] * 30]
    parent, own, children = parse_stat(fields)
    assert (
        parent == 42 and own == pytest.approx(300 / TICK) and children == pytest.approx(100 / TICK)
    )
    assert spent({"api": 1.0, "gone": 2.0}, {"api": 3.5, "new": 1.0}) == {"api": 2.5}


async def test_the_lean_client_reaches_a_gateway_under_a_path_with_its_host_and_chunks() -> None:
    seen: list[bytes] = []

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        head = await r.readuntil(b"\r\n\r\n")
        seen.extend(head.split(b"\r\n")[:2])  # the request line and the Host header
        # A proxy's answer: the body in chunks (one with an extension), then a trailer.
        w.write(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b'4\r\n{"a"\r\n5;x=1\r\n: [1,\r\n3\r\n 2]\r\n1\r\n}\r\n0\r\nX-T: 1\r\n\r\n'
        )
        await w.drain()
        w.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    conn = await Conn.open(f"http://127.0.0.1:{port}/mnemo/")
    assert await conn.json("GET", "/v3/workspaces/w", x=1) == {"a": [1, 2]}
    conn.close()
    server.close()
    assert seen == [b"GET /mnemo/v3/workspaces/w?x=1 HTTP/1.1", f"Host: 127.0.0.1:{port}".encode()]


def test_a_gateway_url_and_what_it_is_refused_for() -> None:
    t = Target.of("https://mnemo.example.com/api")
    assert (t.host, t.port, t.tls, t.base, t.host_header) == (
        "mnemo.example.com",
        443,
        True,
        "/api",
        "mnemo.example.com",
    )
    t = Target.of("http://[::1]:8000")
    assert (t.port, t.tls, t.base, t.host_header) == (8000, False, "", "[::1]:8000")
    for bad in ("ftp://h", "mnemo:8000", "http://", "http://u:p@h", "http://h/?q=1"):
        with pytest.raises(ValueError):
            Target.of(bad)


def test_a_deployed_mnemo_is_named_by_url_and_its_memory_priority_is_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("MNEMO_BENCH_LOAD_URL", "http://mnemo-gateway:8000")
    sizes = LoadSettings()
    assert sizes.url == "http://mnemo-gateway:8000" and sizes.keep_workspaces is None
    with pytest.raises(ValueError, match="formation_priority"):
        LoadSettings(formation_priority="normal")
    monkeypatch.delenv("MNEMO_BENCH_LOAD_URL")
    with pytest.raises(ValueError, match="url"):
        LoadSettings(url="mnemo-gateway:8000")


def test_a_bad_flag_is_refused_naming_it_before_anything_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        bench_load.main(["--url", "mnemo-gateway:8000"])
    assert exit_.value.code == 2
    assert "url: Value error, not an http:// or https:// URL" in capsys.readouterr().err
    assert not MADE  # nothing was asked of any gateway


def test_on_a_deployed_mnemo_the_rows_say_whose_cpu_and_host_they_are() -> None:
    probe = {"n": 300, "p50_ms": 20.0, "p99_ms": 30.0}
    result = _result() | {"host": probe}
    result["loaded"]["1000"]["host"] = probe
    local = {name for name, _, _ in rows(result)}
    deployed = {name for name, _, _ in rows(result | {"deployed": True})}
    assert any(n.startswith("host: a fixed") for n in local)
    assert any(n.startswith("peer chat (local reasoner)") for n in local)
    assert not any("local reasoner" in n for n in deployed)
    assert any(n.startswith("peer chat, history") for n in deployed)
    assert any(n.startswith("the client's host: a fixed") for n in deployed)
    assert any(n.startswith("  ... the client's cores used") for n in deployed)
    assert not any(n.startswith("host:") or "... cores used" in n for n in deployed)
