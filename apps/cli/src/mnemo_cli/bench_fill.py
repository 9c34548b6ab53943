"""A representation of any size for the read benchmarks, loaded in bulk as the projections lay it.

Messages, their passages (one each), observations citing them, both kinds' vectors and BM25
postings: what the entity, passage and memory projections write, loaded with COPY instead of
one event at a time. Texts cycle through a set of varied sentences; each copy's vector is its
sentence's own embedding, jittered a little, standing for the copy's small difference in
wording (embedding 100,000 texts would take minutes). Random vectors would not do: no
embedding model produces them, and a graph index finds a tenth of their true neighbours.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import orjson

from mnemo_projector import lexicon
from mnemo_runtime.embeddings import Vectors
from mnemo_runtime.pg import Pool
from mnemo_runtime.tokens import TokenCounter
from mnemo_runtime.vectors.pgvector import DEFAULT_TABLE

# Per-dimension noise on copies of a sentence's vector: cosine about 0.98 to the original.
JITTER = 0.01
# The summarizer's cadence keeps summaries this many messages behind the newest one.
SUMMARY_LAG = 20
CHUNK = 5_000
PEER = "bob"
_GRAPHS = {
    "message_passages_hnsw": "message_passages USING hnsw (embedding halfvec_ip_ops)",
    f"{DEFAULT_TABLE}_hnsw": f"{DEFAULT_TABLE} USING hnsw (embedding vector_ip_ops)",
}


def _vectors(base: Vectors, rows: np.ndarray[Any, Any], seed: int) -> list[str]:
    rng = np.random.default_rng(seed)
    v = base[rows] + rng.standard_normal((len(rows), base.shape[1]), dtype=np.float32) * JITTER
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    return [orjson.dumps(x, option=orjson.OPT_SERIALIZE_NUMPY).decode() for x in v]


async def drop_graphs(pool: Pool) -> None:
    """Drop the vector graphs before a bulk load (building them once after is much faster)."""
    async with pool.connection() as conn:
        for name in _GRAPHS:
            await conn.execute(f"DROP INDEX IF EXISTS {name}")


async def build_graphs(pool: Pool) -> None:
    """Build the vector graphs as the projections define them."""
    async with pool.connection() as conn:
        await conn.execute("SET maintenance_work_mem = '1GB'")
        for name, target in _GRAPHS.items():
            await conn.execute(
                f"CREATE INDEX IF NOT EXISTS {name} ON {target} WITH (m = 16, ef_construction = 64)"
            )
        # What autovacuum does for a live table: statistics for the planner, and the visibility
        # map that lets index-only scans skip the table.
        for table in (
            "messages",
            "message_passages",
            "observations",
            "observation_sources",
            DEFAULT_TABLE,
            "search_terms",
            "search_df",
            "search_docs",
        ):
            await conn.execute(f"VACUUM ANALYZE {table}")


async def fill_representation(
    pool: Pool,
    ws: str,
    n: int,
    sentences: Sequence[str],
    base: Vectors,
    model: str,
    start: datetime,
    step: timedelta,
) -> None:
    """A session of ``n`` messages from bob, summaries, and ``n`` observations of (bob, bob)."""
    counter = TokenCounter()
    texts = [f"{sentences[i % len(sentences)]} (#{i})" for i in range(n)]
    tokens = counter.count_many(texts)
    rows = np.arange(n) % len(sentences)
    async with pool.connection() as conn:
        await conn.execute(
            "INSERT INTO workspaces (id, uid, metadata, configuration, created_at)"
            " VALUES (%s, %s, '{}', '{}', now())",
            (ws, ws),
        )
        for peer in ("alice", PEER):
            await conn.execute(
                "INSERT INTO peers (workspace, id, uid, created_at) VALUES (%s, %s, %s, now())",
                (ws, peer, f"{ws}-{peer}"),
            )
        rep = orjson.dumps([{"observer": PEER, "observed": PEER}]).decode()
        async with conn.cursor().copy(
            "COPY messages (workspace, id, session_id, seq, peer_id, content, token_count,"
            " created_at, representations) FROM STDIN"
        ) as copy:
            for i in range(n):
                when = start + step * i
                await copy.write_row(
                    (ws, f"m{i}", "s", i + 1, PEER, texts[i], tokens[i], when, rep)
                )
        covered = max(n - SUMMARY_LAG, 1)
        for kind, words in (("short", 200), ("long", 900)):
            await conn.execute(
                "INSERT INTO summaries (workspace, session_id, summary_type, seq, content,"
                " message_id, message_seq, messages_covered, token_count, created_at)"
                " VALUES (%s, 's', %s, 1, %s, %s, %s, %s, %s, now())",
                (ws, kind, " ".join(["summary"] * words), f"m{covered}", covered, covered, words),
            )
        vectors = _vectors(base, rows, seed=n)
        async with conn.cursor().copy(
            "COPY message_passages (workspace, message_id, passage, session_id, peer_id, observers,"
            " seq, created_at, start_char, end_char, parts, embedding, embedding_model) FROM STDIN"
        ) as copy:
            for i in range(n):
                await copy.write_row(
                    (
                        ws,
                        f"m{i}",
                        0,
                        "s",
                        PEER,
                        "{bob}",
                        i + 1,
                        start + step * i,
                        0,
                        len(texts[i]),
                        1,
                        vectors[i],
                        model,
                    )
                )
        observed = [f"Bob: {t}" for t in texts]
        counts = counter.count_many(observed)
        async with conn.cursor().copy(
            "COPY observations (workspace, id, observer, observed, session_id, level, content,"
            " content_key, source_message_ids, origin, created_at, observed_at, seq, token_count)"
            " FROM STDIN"
        ) as copy:
            for i in range(n):
                when = start + step * i
                await copy.write_row(
                    (
                        ws,
                        f"{ws}-o{i}",
                        PEER,
                        PEER,
                        "s",
                        "explicit",
                        observed[i],
                        observed[i],
                        f"{{m{i}}}",
                        "bench",
                        when,
                        when,
                        i,
                        counts[i],
                    )
                )
        async with conn.cursor().copy(
            "COPY observation_sources (workspace, observation_id, source_kind, source_id,"
            " observer, observed) FROM STDIN"
        ) as copy:
            for i in range(n):
                await copy.write_row((ws, f"{ws}-o{i}", "message", f"m{i}", PEER, PEER))
        vectors = _vectors(base, rows, seed=n + 1)
        async with conn.cursor().copy(
            f"COPY {DEFAULT_TABLE} (id, workspace, observer, observed, level, session_id,"
            " created_at, embedding) FROM STDIN"
        ) as copy:
            for i in range(n):
                epoch = (start + step * i).timestamp()
                await copy.write_row(
                    (f"{ws}-o{i}", ws, PEER, PEER, "explicit", "s", epoch, vectors[i])
                )
        for at in range(0, n, CHUNK):
            part = range(at, min(at + CHUNK, n))
            await lexicon.index(
                conn, [lexicon.Document(ws, "m", PEER, f"m{i}", 0, texts[i]) for i in part]
            )
            owner = lexicon.observation_owner(PEER, PEER)
            await lexicon.index(
                conn,
                [lexicon.Document(ws, "o", owner, f"{ws}-o{i}", 0, observed[i]) for i in part],
            )
