"""Text embeddings: the Embedder port and its local, remote and fake implementations."""

from mnemo_runtime.embeddings.factory import (
    EMBEDDER_KINDS,
    LOCAL_EMBEDDER_KINDS,
    EmbedderKind,
    build_embedder,
)
from mnemo_runtime.embeddings.fake import FakeEmbedder
from mnemo_runtime.embeddings.minilm import MiniLMEmbedder
from mnemo_runtime.embeddings.onnx_minilm import OnnxMiniLMEmbedder
from mnemo_runtime.embeddings.openai_compat import OpenAICompatEmbedder
from mnemo_runtime.embeddings.ports import Embedder, EmbeddingError, Vector, Vectors

__all__ = [
    "EMBEDDER_KINDS",
    "LOCAL_EMBEDDER_KINDS",
    "Embedder",
    "EmbedderKind",
    "EmbeddingError",
    "FakeEmbedder",
    "MiniLMEmbedder",
    "OnnxMiniLMEmbedder",
    "OpenAICompatEmbedder",
    "Vector",
    "Vectors",
    "build_embedder",
]
