"""Construct an embedder by kind, for composition roots that read the kind from settings."""

from __future__ import annotations

from pathlib import Path
from typing import Literal, get_args

import httpx
from pydantic import SecretStr

from mnemo_runtime.embeddings.fake import FakeEmbedder
from mnemo_runtime.embeddings.minilm import MiniLMEmbedder
from mnemo_runtime.embeddings.onnx_minilm import OnnxMiniLMEmbedder
from mnemo_runtime.embeddings.openai_compat import OpenAICompatEmbedder
from mnemo_runtime.embeddings.ports import Embedder

# "minilm" runs all-MiniLM-L6-v2 on onnxruntime; "minilm-numpy" is the same model in plain
# numpy (same vectors within float32 rounding, slower), kept as a dependency-light reference.
EmbedderKind = Literal["minilm", "minilm-numpy", "openai", "fake"]
EMBEDDER_KINDS: tuple[str, ...] = get_args(EmbedderKind)
LOCAL_EMBEDDER_KINDS = frozenset({"minilm", "minilm-numpy"})


def build_embedder(
    kind: str,
    *,
    model: str | None = None,
    dimension: int | None = None,
    base_url: str | None = None,
    api_key: SecretStr | None = None,
    batch_size: int | None = None,
    model_dir: Path | None = None,
    workers: int | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    query_int8: bool | None = None,
) -> Embedder:
    """An embedder of the given kind; options that kind does not use must be left unset.

    ``workers`` is how many cores a local embedder may use (default 1). ``query_int8``
    (minilm only, default true): search queries go through int8 weights, about twice as fast.
    """
    if kind in LOCAL_EMBEDDER_KINDS:
        _reject(kind, model=model, dimension=dimension, base_url=base_url, api_key=api_key)
        _reject(kind, transport=transport)
        cores = workers or 1
        if kind == "minilm":
            # Several batches run one per core; a single batch (a query) runs on one thread: on
            # two cores, two intra-op threads embedded a query no faster (4.45 against 4.59 ms
            # on an idle host) for 35 % more CPU, and slower (6.5 against 4.8 ms) once the
            # other core was busy, as it is while memory forms.
            return OnnxMiniLMEmbedder(
                model_dir,
                batch_size=batch_size or 16,
                workers=cores,
                threads=1,
                query_int8=query_int8 is not False,
            )
        _reject(kind, query_int8=query_int8)
        return MiniLMEmbedder(model_dir, batch_size=batch_size or 32, workers=cores)
    if kind == "openai":
        if base_url is None or model is None or dimension is None:
            raise ValueError("an 'openai' embedder needs base_url, model and dimension")
        _reject(kind, model_dir=model_dir, workers=workers, query_int8=query_int8)
        return OpenAICompatEmbedder(
            base_url=base_url,
            model=model,
            dimension=dimension,
            api_key=api_key,
            batch_size=batch_size or 128,
            transport=transport,
        )
    if kind == "fake":
        _reject(kind, base_url=base_url, api_key=api_key, batch_size=batch_size)
        _reject(kind, model_dir=model_dir, workers=workers, transport=transport)
        _reject(kind, query_int8=query_int8)
        return FakeEmbedder(dimension or 256, model or "fake-hashed-bow")
    raise ValueError(f"unknown embedder kind {kind!r}; expected one of {EMBEDDER_KINDS}")


def _reject(kind: str, **options: object) -> None:
    # A setting silently ignored is a misconfiguration nobody notices until vectors are wrong.
    given = sorted(name for name, value in options.items() if value is not None)
    if given:
        raise ValueError(f"{kind!r} embedder does not take {', '.join(given)}")
