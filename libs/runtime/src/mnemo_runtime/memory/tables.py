"""Postgres tables of the representation store (written by the memory projection only).

Their schema is in the memory projection's migrations (``mnemo_projector/migrations``).
"""

from __future__ import annotations

MEMORY_PROJECTION = "memory"

TABLES = (
    "observations", "observation_aliases", "observation_sources", "observation_rejections",
    "peer_cards",
)  # fmt: skip
