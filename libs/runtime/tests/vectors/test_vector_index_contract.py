"""The VectorIndex contract, run against the fake, pgvector, the embedded shard and the server
adapter.

The server adapter runs on qdrant-client's local mode, which stands in for a Qdrant server here:
in memory, and on a directory for the reopen tests. pgvector runs on a real Postgres (a table of
each test's own), so its cases count as integration tests.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from qdrant_client import AsyncQdrantClient

from mnemo_runtime.vectors import (
    DimensionMismatchError,
    EdgeVectorIndex,
    IndexNotReadyError,
    InMemoryVectorIndex,
    Level,
    MissingScopeError,
    ModelMismatchError,
    ObservationPayload,
    PgVectorIndex,
    QdrantServerVectorIndex,
    Scope,
    SearchFilters,
    VectorIndex,
    VectorPoint,
)

pytestmark = pytest.mark.filterwarnings(
    "ignore:Payload indexes have no effect in the local Qdrant:UserWarning"
)

DIM = 8
MODEL = "test-model"


@dataclass(frozen=True)
class Backend:
    name: str
    open: Callable[[], VectorIndex]
    persistent: bool


def _backend(name: str, root: Path, request: pytest.FixtureRequest) -> Backend:
    if name == "fake":
        return Backend(name, InMemoryVectorIndex, persistent=False)
    if name == "pgvector":
        pool = request.getfixturevalue("pg_pool")
        table = f"contract_{uuid.uuid4().hex[:12]}"
        return Backend(name, lambda: PgVectorIndex(pool, table), persistent=True)
    if name == "edge":
        return Backend(name, lambda: EdgeVectorIndex(root / "edge"), persistent=True)
    if name == "server-memory":
        return Backend(
            name,
            lambda: QdrantServerVectorIndex(AsyncQdrantClient(location=":memory:")),
            persistent=False,
        )
    if name == "server-path":
        return Backend(
            name,
            lambda: QdrantServerVectorIndex(AsyncQdrantClient(path=str(root / "qdrant"))),
            persistent=True,
        )
    raise ValueError(name)


@pytest.fixture(
    params=[
        "fake",
        pytest.param("pgvector", marks=pytest.mark.integration),
        "edge",
        "server-memory",
        "server-path",
    ]
)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    return _backend(request.param, tmp_path, request)


@pytest.fixture
async def index(backend: Backend) -> AsyncIterator[VectorIndex]:
    opened = backend.open()
    await opened.ensure(DIM, MODEL)
    yield opened
    await opened.close()


def vec(*components: float) -> np.ndarray:
    """An 8-dimensional vector with the given leading components."""
    out = np.zeros(DIM, dtype=np.float32)
    out[: len(components)] = components
    return out


def point(
    point_id: str,
    vector: np.ndarray,
    scope: Scope,
    *,
    level: Level = "explicit",
    session_id: str | None = None,
    created_at: float = 1_700_000_000.0,
) -> VectorPoint:
    payload = ObservationPayload(
        workspace=scope.workspace,
        observer=scope.observer,
        observed=scope.observed,
        level=level,
        created_at=created_at,
        session_id=session_id,
    )
    return VectorPoint(point_id, vector, payload)


AB = Scope("w1", "alice", "bob")
AC = Scope("w1", "alice", "carol")
BB = Scope("w1", "bob", "bob")
AB_OTHER_WORKSPACE = Scope("w2", "alice", "bob")
E0 = vec(1.0)


async def ids_in(
    index: VectorIndex,
    scope: Scope,
    *,
    filters: SearchFilters | None = None,
    max_distance: float | None = None,
) -> list[str]:
    hits = await index.search(E0, scope, limit=100, filters=filters, max_distance=max_distance)
    return [hit.id for hit in hits]


async def test_upsert_is_idempotent_on_id(index: VectorIndex) -> None:
    await index.upsert([point("o1", vec(1, 1), AB)])
    await index.upsert([point("o1", vec(1, 1), AB)])
    await index.upsert([point("o1", vec(1.0), AB, level="deductive", session_id="s9")])

    assert await index.count(AB) == 1
    [hit] = await index.search(E0, AB)
    assert hit.id == "o1"
    assert hit.score == pytest.approx(1.0, abs=1e-5)
    assert hit.payload.level == "deductive"
    assert hit.payload.session_id == "s9"
    assert hit.payload.scope == AB


async def test_delete_removes_points_and_ignores_unknown_ids(index: VectorIndex) -> None:
    await index.upsert([point(f"o{i}", vec(1, i), AB) for i in range(3)])
    await index.delete(["o0", "o2", "never-written"])
    await index.delete([])

    assert await index.count(AB) == 1
    assert await ids_in(index, AB) == ["o1"]


async def test_a_scope_never_sees_another_scopes_points(index: VectorIndex) -> None:
    await index.upsert(
        [
            point("ab", E0, AB),
            point("ac", E0, AC),
            point("bb", E0, BB),
            point("ab-w2", E0, AB_OTHER_WORKSPACE),
        ]
    )

    assert await ids_in(index, AB) == ["ab"]
    assert await ids_in(index, AC) == ["ac"]
    assert await ids_in(index, BB) == ["bb"]
    assert await ids_in(index, AB_OTHER_WORKSPACE) == ["ab-w2"]
    assert await ids_in(index, Scope("w1", "bob", "alice")) == []
    assert [await index.count(s) for s in (AB, AC, BB, AB_OTHER_WORKSPACE)] == [1, 1, 1, 1]


async def test_results_are_ordered_by_similarity_and_limited(index: VectorIndex) -> None:
    await index.upsert(
        [
            point("far", vec(0, 1), AB),
            point("same", vec(2.0), AB),
            point("near", vec(1, 0.2), AB),
            point("mid", vec(1, 1), AB),
            point("opposite", vec(-1.0), AB),
        ]
    )

    hits = await index.search(E0, AB, limit=10)
    assert [h.id for h in hits] == ["same", "near", "mid", "far", "opposite"]
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert hits[2].score == pytest.approx(2**-0.5, abs=1e-5)
    assert hits[-1].distance == pytest.approx(2.0, abs=1e-5)
    for hit in hits:
        assert hit.distance == pytest.approx(1.0 - hit.score)
    assert [h.id for h in await index.search(E0, AB, limit=2)] == ["same", "near"]


async def test_max_distance_cuts_off_far_points(index: VectorIndex) -> None:
    await index.upsert(
        [
            point("same", E0, AB),
            point("diagonal", vec(1, 1), AB),  # distance 0.29
            point("orthogonal", vec(0, 1), AB),  # distance 1
            point("opposite", vec(-1.0), AB),  # distance 2
        ]
    )

    assert await ids_in(index, AB, max_distance=0.01) == ["same"]
    assert await ids_in(index, AB, max_distance=0.5) == ["same", "diagonal"]
    assert await ids_in(index, AB, max_distance=1.5) == ["same", "diagonal", "orthogonal"]
    assert len(await ids_in(index, AB, max_distance=2.0)) == 4


async def test_level_session_and_time_filters(index: VectorIndex) -> None:
    await index.upsert(
        [
            point("e", vec(1, 0.1), AB, level="explicit", session_id="s1", created_at=100.0),
            point("d", vec(1, 0.2), AB, level="deductive", session_id="s1", created_at=200.0),
            point("i", vec(1, 0.3), AB, level="inductive", session_id="s2", created_at=300.0),
            point("c", vec(1, 0.4), AB, level="contradiction", created_at=400.0),
        ]
    )

    only = SearchFilters.of

    assert await ids_in(index, AB, filters=only(levels=["deductive", "inductive"])) == ["d", "i"]
    assert await ids_in(index, AB, filters=only(levels=["contradiction"])) == ["c"]
    assert await ids_in(index, AB, filters=only(session_id="s1")) == ["e", "d"]
    assert await ids_in(index, AB, filters=only(created_since=200.0)) == ["d", "i", "c"]
    assert await ids_in(index, AB, filters=only(created_before=300.0)) == ["e", "d"]
    window = only(created_since=150.0, created_before=400.0, levels=["inductive", "explicit"])
    assert await ids_in(index, AB, filters=window) == ["i"]
    assert await ids_in(index, AB, filters=only(session_id="s1", levels=["inductive"])) == []
    assert await ids_in(index, AC, filters=only(session_id="s1")) == []


async def test_queries_without_the_scope_key_are_refused(index: VectorIndex) -> None:
    await index.upsert([point("o1", E0, AB)])

    for not_a_scope in (None, ("w1", "alice", "bob"), "w1/alice/bob"):
        with pytest.raises(MissingScopeError):
            await index.search(E0, not_a_scope)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="Scope"):
            await index.count(not_a_scope)  # type: ignore[arg-type]
    for partial in (("w1", "alice", ""), ("w1", "", "bob"), ("", "alice", "bob")):
        with pytest.raises(ValueError):
            Scope(*partial)


async def test_dimension_mismatch_is_an_error(index: VectorIndex) -> None:
    with pytest.raises(DimensionMismatchError):
        await index.upsert([point("o1", np.ones(DIM + 1, dtype=np.float32), AB)])
    with pytest.raises(DimensionMismatchError):
        await index.search(np.ones(DIM - 1, dtype=np.float32), AB)
    with pytest.raises(DimensionMismatchError):
        await index.ensure(DIM * 2, MODEL)
    with pytest.raises(ModelMismatchError):
        await index.ensure(DIM, "another-model")
    await index.ensure(DIM, MODEL)  # the same parameters again are fine
    assert await index.count(AB) == 0


async def test_bad_vectors_and_arguments_are_refused(index: VectorIndex) -> None:
    with pytest.raises(ValueError, match="zero"):
        await index.upsert([point("o1", vec(), AB)])
    with pytest.raises(ValueError, match="NaN"):
        await index.search(vec(float("nan")), AB)
    with pytest.raises(ValueError, match="limit"):
        await index.search(E0, AB, limit=0)
    with pytest.raises(ValueError, match="max_distance"):
        await index.search(E0, AB, max_distance=3.0)
    assert await index.count(AB) == 0


async def test_an_index_is_unusable_before_ensure(backend: Backend) -> None:
    fresh = backend.open()
    try:
        with pytest.raises(IndexNotReadyError):
            await fresh.upsert([point("o1", E0, AB)])
        with pytest.raises(IndexNotReadyError):
            await fresh.search(E0, AB)
    finally:
        await fresh.close()


async def test_points_survive_close_and_reopen(backend: Backend) -> None:
    if not backend.persistent:
        pytest.skip(f"{backend.name} keeps nothing after close")
    first = backend.open()
    await first.ensure(DIM, MODEL)
    await first.upsert([point("kept", E0, AB), point("gone", vec(1, 1), AB)])
    await first.delete(["gone"])
    await first.close()

    second = backend.open()
    try:
        await second.ensure(DIM, MODEL)
        assert await second.count(AB) == 1
        [hit] = await second.search(E0, AB)
        assert (hit.id, hit.payload.scope) == ("kept", AB)
    finally:
        await second.close()

    third = backend.open()
    try:
        with pytest.raises(DimensionMismatchError):
            await third.ensure(DIM + 1, MODEL)
        with pytest.raises(ModelMismatchError):
            await third.ensure(DIM, "another-model")
    finally:
        await third.close()


async def test_optimize_keeps_every_point_and_every_answer(index: VectorIndex) -> None:
    await index.upsert([point(f"o{i}", vec(1.0, i / 10), AB) for i in range(20)])
    await index.upsert([point("c1", vec(1.0), AC)])
    await index.delete(["o0"])
    before = await ids_in(index, AB)

    assert isinstance(await index.optimize(), bool)

    assert await index.count(AB) == 19 and await index.count(AC) == 1
    assert await ids_in(index, AB) == before
    assert before[:3] == ["o1", "o2", "o3"]
