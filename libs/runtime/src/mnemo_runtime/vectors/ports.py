"""The vector index port: similarity retrieval over observations, always inside one representation.

Embeddings are only an index: the observation itself lives in Postgres and the event log. A point
carries just enough payload to filter and to map a hit back to its observation. Every query is keyed
by (workspace, observer, observed); a query without that key is refused, never widened.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias, get_args

import numpy as np
import numpy.typing as npt

from mnemo_runtime.pg import Connection

Level = Literal["explicit", "deductive", "inductive", "contradiction"]
LEVELS: frozenset[Level] = frozenset(get_args(Level))

VectorLike: TypeAlias = Sequence[float] | npt.NDArray[np.floating[Any]]
Vector: TypeAlias = npt.NDArray[np.float32]


class VectorIndexError(Exception):
    """Base class of the errors the vector index raises."""


class MissingScopeError(VectorIndexError, ValueError):
    """A query without the (workspace, observer, observed) key."""


class DimensionMismatchError(VectorIndexError, ValueError):
    """A vector, or a requested index, whose dimension differs from the stored one."""


class ModelMismatchError(VectorIndexError, ValueError):
    """An index opened for a different embedding model than the one its vectors came from."""


class IndexNotReadyError(VectorIndexError, RuntimeError):
    """The index was used before `ensure` (or after `close`)."""


def _require_id(name: str, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise MissingScopeError(f"{name} must be a non-empty string, got {value!r}")


@dataclass(frozen=True, slots=True)
class Scope:
    """The representation a query runs in: what `observer` believes about `observed`."""

    workspace: str
    observer: str
    observed: str

    def __post_init__(self) -> None:
        _require_id("workspace", self.workspace)
        _require_id("observer", self.observer)
        _require_id("observed", self.observed)


def require_scope(scope: object) -> Scope:
    """The scope itself, or MissingScopeError: the store answers no query without the key."""
    if not isinstance(scope, Scope):
        raise MissingScopeError(
            "vector queries require a Scope(workspace, observer, observed); "
            f"got {type(scope).__name__}"
        )
    return scope


@dataclass(frozen=True, slots=True)
class ObservationPayload:
    """What a point records about its observation: its representation, level, session and time."""

    workspace: str
    observer: str
    observed: str
    level: Level
    created_at: float
    session_id: str | None = None

    def __post_init__(self) -> None:
        Scope(self.workspace, self.observer, self.observed)
        if self.level not in LEVELS:
            raise ValueError(f"unknown observation level {self.level!r}")
        if not math.isfinite(self.created_at):
            raise ValueError("created_at must be a finite epoch timestamp")

    @property
    def scope(self) -> Scope:
        """The representation this observation belongs to."""
        return Scope(self.workspace, self.observer, self.observed)


@dataclass(frozen=True, slots=True)
class VectorPoint:
    """One observation's embedding; upserting the same id again replaces it."""

    id: str
    vector: VectorLike
    payload: ObservationPayload

    def __post_init__(self) -> None:
        if not isinstance(self.id, str) or not self.id:
            raise ValueError("a point id must be a non-empty string")


@dataclass(frozen=True, slots=True)
class SearchFilters:
    """Narrowing inside a scope: levels, one session, a creation-time window [since, before)."""

    levels: frozenset[Level] | None = None
    session_id: str | None = None
    created_since: float | None = None
    created_before: float | None = None

    def __post_init__(self) -> None:
        if self.levels is not None:
            levels = frozenset(self.levels)
            if not levels:
                raise ValueError("levels must be None (any level) or non-empty")
            unknown = levels - LEVELS
            if unknown:
                raise ValueError(f"unknown observation levels {sorted(unknown)}")
            object.__setattr__(self, "levels", levels)

    @classmethod
    def of(
        cls,
        levels: Iterable[Level] | None = None,
        session_id: str | None = None,
        created_since: float | None = None,
        created_before: float | None = None,
    ) -> SearchFilters:
        """Filters from any iterable of levels."""
        return cls(
            None if levels is None else frozenset(levels), session_id, created_since, created_before
        )

    def matches(self, payload: ObservationPayload) -> bool:
        """Whether a payload passes these filters (the reference semantics adapters must match)."""
        return (
            (self.levels is None or payload.level in self.levels)
            and (self.session_id is None or payload.session_id == self.session_id)
            and (self.created_since is None or payload.created_at >= self.created_since)
            and (self.created_before is None or payload.created_at < self.created_before)
        )


@dataclass(frozen=True, slots=True)
class VectorHit:
    """A search result: cosine similarity `score` in [-1, 1] and `distance` = 1 - score."""

    id: str
    score: float
    payload: ObservationPayload

    @property
    def distance(self) -> float:
        """Cosine distance, 0 for identical directions, 2 for opposite ones."""
        return 1.0 - self.score


def check_vector(values: VectorLike, dimension: int) -> Vector:
    """`values` as a float32 vector of `dimension`, finite and non-zero (cosine needs one)."""
    vector = np.asarray(values, dtype=np.float32)
    if vector.ndim != 1 or vector.shape[0] != dimension:
        raise DimensionMismatchError(
            f"expected a vector of dimension {dimension}, got shape {vector.shape}"
        )
    if not np.isfinite(vector).all():
        raise ValueError("vector contains NaN or infinite components")
    if not np.any(vector):
        raise ValueError("the zero vector has no cosine similarity")
    return vector


def check_search(limit: int, max_distance: float | None) -> float | None:
    """Validates search arguments; returns the minimum similarity implied by `max_distance`."""
    if limit < 1:
        raise ValueError("limit must be at least 1")
    if max_distance is None:
        return None
    if not 0.0 <= max_distance <= 2.0:
        raise ValueError("max_distance is a cosine distance in [0, 2]")
    # 2 admits everything; as a threshold of -1 it would drop opposite vectors to rounding.
    return None if max_distance == 2.0 else 1.0 - max_distance


class VectorIndex(Protocol):
    """Similarity retrieval over observations, keyed by (workspace, observer, observed)."""

    async def ensure(self, dimension: int, model_name: str) -> None:
        """Creates or opens the index; refuses a dimension or model other than the stored one."""
        ...

    async def upsert(
        self, points: Sequence[VectorPoint], *, conn: Connection | None = None
    ) -> None:
        """Writes points; idempotent on id (a repeated id replaces the earlier point).

        A store inside Postgres writes them in ``conn``'s transaction when one is given, so they
        commit or roll back with the caller's rows; other stores ignore it.
        """
        ...

    async def delete(self, ids: Sequence[str], *, conn: Connection | None = None) -> None:
        """Removes points by observation id; unknown ids are ignored (``conn`` as for upsert)."""
        ...

    async def search(
        self,
        query_vector: VectorLike,
        scope: Scope,
        *,
        limit: int = 10,
        filters: SearchFilters | None = None,
        max_distance: float | None = None,
    ) -> list[VectorHit]:
        """The `limit` nearest points in `scope`, best first, none beyond `max_distance`."""
        ...

    async def count(self, scope: Scope) -> int:
        """How many points `scope` holds."""
        ...

    async def optimize(self) -> bool:
        """Builds the search structures for what was written since; False if nothing to do.

        A store that maintains them by itself (a Qdrant server) does nothing here.
        """
        ...

    async def close(self) -> None:
        """Releases the store; points already written stay durable."""
        ...
