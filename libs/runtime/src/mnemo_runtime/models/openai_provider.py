"""``ChatModel`` on an OpenAI-compatible chat-completions endpoint (vLLM, Ollama, LiteLLM).

Plain httpx rather than an SDK: these servers implement a common subset of the API, and owning
the few fields we use keeps their differences in one place (``openai_wire``). ``structured``
picks how tool calls are asked for: the API's ``tools`` (the default), or ``json_schema``
(``response_format``) for servers whose tool calling is missing or unreliable.
"""

from __future__ import annotations

import httpx
from pydantic import SecretStr, ValidationError

from mnemo_runtime.models.calls import CallRuntime, ProviderModel, Transient, retry_after_s
from mnemo_runtime.models.openai_wire import Completion, StructuredMode, chat_body, response
from mnemo_runtime.models.ports import ModelRejected, ModelRequest, ModelResponse

_RETRYABLE_STATUSES = frozenset({408, 409, 429})


class OpenAICompatibleModel(ProviderModel):
    """A model served behind ``{base_url}/chat/completions``."""

    provider = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: SecretStr | None = None,
        timeout_s: float = 120.0,
        structured: StructuredMode = "tools",
        transport: httpx.AsyncBaseTransport | None = None,
        calls: CallRuntime | None = None,
    ) -> None:
        super().__init__(model, calls)
        self.structured: StructuredMode = structured
        # Local servers (Ollama, vLLM) usually run without a key; send none rather than a dummy.
        headers = {"Authorization": f"Bearer {api_key.get_secret_value()}"} if api_key else {}
        self._http = httpx.AsyncClient(
            base_url=base_url, headers=headers, timeout=timeout_s, transport=transport
        )

    async def aclose(self) -> None:
        """Close the underlying HTTP connections."""
        await self._http.aclose()

    async def _once(self, request: ModelRequest) -> ModelResponse:
        try:
            reply = await self._http.post(
                "chat/completions", json=chat_body(request, self.model, self.structured)
            )
        except httpx.TransportError as exc:  # includes timeouts and refused connections
            raise Transient(f"{type(exc).__name__}: {exc}") from exc
        status = reply.status_code
        if status >= 400:
            reason = f"{status}: {reply.text[:500]}"
            if status in _RETRYABLE_STATUSES or status >= 500:
                raise Transient(reason, retry_after_s=retry_after_s(reply.headers))
            raise ModelRejected(reason, status=status)
        try:
            completion = Completion.model_validate_json(reply.content)
        except ValidationError as exc:
            raise ModelRejected(f"unreadable completion: {exc}", status=status) from exc
        if not completion.choices:
            raise ModelRejected("completion has no choices", status=status)
        return response(completion, request, self.model, self.structured)
