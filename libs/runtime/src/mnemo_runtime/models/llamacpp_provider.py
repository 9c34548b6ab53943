"""``ChatModel`` on a GGUF model run in process by llama.cpp.

Tool calls are always asked for as schema-constrained JSON (``json_actions``): llama.cpp turns
the schema into a grammar, so every token the model emits keeps the answer valid JSON of that
shape, whatever the model's chat template knows of tools. An answer can still be cut short by
``max_tokens`` (small models repeat themselves); it then fails validation and is fed back, as
from any provider. Retries, tracing and accounting are the shared ``CallRuntime``'s.
"""

from __future__ import annotations

import asyncio
import threading
import time

from pydantic import ValidationError

from mnemo_runtime.models.calls import CallRuntime, ProviderModel, Transient
from mnemo_runtime.models.llamacpp_engine import ChatEngine, EngineRejected, EngineTimeout
from mnemo_runtime.models.openai_wire import Completion, chat_body, response
from mnemo_runtime.models.ports import ModelRejected, ModelRequest, ModelResponse

# llama.cpp answers 503 while a model is loading and 429 when its queue is full.
_RETRYABLE_STATUSES = frozenset({429, 503})


class LlamaCppModel(ProviderModel):
    """A model that a ``ChatEngine`` runs in this process."""

    provider = "llamacpp"

    def __init__(
        self,
        engine: ChatEngine,
        *,
        timeout_s: float = 300.0,
        repeat_penalty: float = 1.0,
        calls: CallRuntime | None = None,
    ) -> None:
        super().__init__(engine.name, calls)
        self.engine = engine
        self._timeout_s = timeout_s
        self._repeat_penalty = repeat_penalty

    async def _once(self, request: ModelRequest) -> ModelResponse:
        body = chat_body(request, self.model, "json_schema")
        if self._repeat_penalty != 1.0:
            # llama.cpp's own sampling field: small models repeat list items until max_tokens.
            body["repeat_penalty"] = self._repeat_penalty
        cancelled = threading.Event()
        deadline = time.monotonic() + self._timeout_s
        try:
            raw = await asyncio.to_thread(
                self.engine.chat, body, deadline=deadline, cancelled=cancelled
            )
        except EngineTimeout as exc:
            raise Transient(f"no answer within {self._timeout_s:g} s") from exc
        except EngineRejected as exc:
            if exc.status in _RETRYABLE_STATUSES:
                raise Transient(f"{exc.status}: {exc.reason}") from exc
            raise ModelRejected(exc.reason, status=exc.status) from exc
        finally:
            # Reached on cancellation too: the worker thread stops generating at its next token.
            cancelled.set()
        try:
            completion = Completion.model_validate(raw)
        except ValidationError as exc:
            raise ModelRejected(f"unreadable completion: {exc}") from exc
        if not completion.choices:
            raise ModelRejected("completion has no choices")
        return response(completion, request, self.model, "json_schema")
