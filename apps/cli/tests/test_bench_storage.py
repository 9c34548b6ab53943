"""The vector stores' side-by-side benchmark runs on a scratch database of its own."""

from __future__ import annotations

import pytest

from mnemo_cli.bench_storage import compare_stores

pytestmark = pytest.mark.integration


async def test_the_stores_are_compared_on_a_scratch_database_made_like_the_services() -> None:
    # Its own Postgres, with the services' schema (the vector index records its model there).
    got = await compare_stores(300, rounds=1)
    assert got["points"] == 600
    for store in ("pgvector", "edge"):
        assert got[store]["p50_ms"] > 0 and got[store]["load_s"] > 0
