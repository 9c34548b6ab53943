"""How an observation is laid out as a Qdrant point, shared by the embedded and the server adapter.

Both adapters must agree on this layout: a store built embedded can be snapshotted into a server
collection, and either one rebuilt from the event log gives the same points.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any, cast

from mnemo_runtime.vectors.ports import Level, ObservationPayload, Scope, VectorPoint

# Fixed forever: point ids are derived from it, so changing it would orphan every stored point.
POINT_NAMESPACE = uuid.UUID("6f0e2c1a-43b5-5d8e-9a27-3c4f51d2b7e0")

# One keyword holding the whole (workspace, observer, observed) key. Filtering on it is a single
# lookup in a small postings list, where intersecting the three fields starts from `workspace`,
# which may match every point; measured about 3.5x faster at 100k points.
SCOPE_FIELD = "scope"
KEYWORD_FIELDS = ("workspace", "observer", "observed", "level", "session_id")
FLOAT_FIELDS = ("created_at",)
ID_FIELD = "observation_id"
MODEL_FIELD = "embedding_model"


def point_id(observation_id: str) -> uuid.UUID:
    """The Qdrant point id of an observation: a UUIDv5 of its id, stable across processes."""
    return uuid.uuid5(POINT_NAMESPACE, observation_id)


def scope_key(scope: Scope) -> str:
    """The single keyword a scope is filtered on (JSON, so no separator can be forged by an id)."""
    return json.dumps([scope.workspace, scope.observer, scope.observed], separators=(",", ":"))


def encode_payload(point: VectorPoint, model_name: str) -> dict[str, Any]:
    """The stored payload of a point."""
    p = point.payload
    return {
        ID_FIELD: point.id,
        SCOPE_FIELD: scope_key(p.scope),
        "workspace": p.workspace,
        "observer": p.observer,
        "observed": p.observed,
        "level": p.level,
        "session_id": p.session_id,
        "created_at": float(p.created_at),
        MODEL_FIELD: model_name,
    }


def decode_payload(raw: Mapping[str, Any] | None) -> tuple[str, ObservationPayload]:
    """The observation id and payload of a stored point."""
    if raw is None:
        raise ValueError("a stored point has no payload")
    session = raw.get("session_id")
    return str(raw[ID_FIELD]), ObservationPayload(
        workspace=str(raw["workspace"]),
        observer=str(raw["observer"]),
        observed=str(raw["observed"]),
        level=cast(Level, raw["level"]),
        created_at=float(raw["created_at"]),
        session_id=None if session is None else str(session),
    )
