"""Building the memory adapters a process needs: the embedder and the vector index."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from mnemo_runtime.embeddings import LOCAL_EMBEDDER_KINDS, Embedder, build_embedder
from mnemo_runtime.embeddings.metered import MeteredEmbedder
from mnemo_runtime.pg import Pool
from mnemo_runtime.vectors import VectorIndex, build_vector_index


class MemorySettings(BaseSettings):
    """Env prefix MNEMO_MEMORY_; QDRANT_URL picks a Qdrant server over the embedded store."""

    model_config = SettingsConfigDict(env_prefix="MNEMO_MEMORY_", extra="ignore")

    qdrant_url: str | None = Field(default=None, validation_alias="QDRANT_URL")
    # Without a Qdrant server: "pgvector" (vectors in Postgres, readable by every process) or
    # "edge" (an embedded Qdrant shard, readable only by the process that opens it).
    vectors: Literal["pgvector", "edge"] = "pgvector"
    # The embedded shard's folder; defaults under MNEMO_STATE_DIR.
    qdrant_path: Path | None = None
    embedder: str = "minilm"
    near_duplicate_distance: float = Field(default=0.05, ge=0.0, le=1.0)
    # Cores the local embedder may use: a call of several batches runs one batch per core (a
    # query, one batch, runs on one). onnxruntime and numpy release the GIL, so these threads
    # use the other cores.
    embed_workers: int = Field(default=2, ge=1)
    # minilm only: search queries go through int8 weights (about twice as fast; see
    # OnnxMiniLMEmbedder), stored texts always through the full-precision ones.
    embed_query_int8: bool = True

    @property
    def shared(self) -> bool:
        """Whether any process may open the index (pgvector, a Qdrant server): the embedded
        shard has a single owner."""
        return self.qdrant_url is not None or self.vectors == "pgvector"


@dataclass
class MemoryAdapters:
    embedder: Embedder
    index: VectorIndex

    async def close(self) -> None:
        """Release the index."""
        await self.index.close()


async def open_memory(
    settings: MemorySettings, state_dir: Path, pool: Pool | None = None
) -> MemoryAdapters:
    """The embedder and an index ready for its model and dimension (pgvector in ``pool``'s
    Postgres by default)."""
    workers = settings.embed_workers if settings.embedder in LOCAL_EMBEDDER_KINDS else None
    query_int8 = settings.embed_query_int8 if settings.embedder == "minilm" else None
    embedder = MeteredEmbedder(
        build_embedder(settings.embedder, workers=workers, query_int8=query_int8)
    )
    path = settings.qdrant_path or (state_dir / "qdrant")
    if settings.vectors == "edge" and settings.qdrant_url is None:
        path.mkdir(parents=True, exist_ok=True)
    index = build_vector_index(settings.qdrant_url, path, pool=pool, store=settings.vectors)
    await index.ensure(embedder.dimension, embedder.model_name)
    return MemoryAdapters(embedder, index)
