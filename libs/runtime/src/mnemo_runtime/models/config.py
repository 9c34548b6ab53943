"""Which provider and model each stage uses, and the factory that builds it.

``MNEMO_MODEL_<STAGE>=provider[:model]`` picks per stage (``MNEMO_MODEL_DERIVER=anthropic:
claude-haiku-4-5``, ``MNEMO_MODEL_DERIVER=llamacpp:/models/qwen2.5-7b-instruct-q4_k_m.gguf``);
``MNEMO_MODEL_DEFAULT`` covers the rest. Without either, the provider follows the keys present:
Anthropic when ``ANTHROPIC_API_KEY`` is set, else OpenAI-compatible when ``OPENAI_API_KEY`` is,
else the offline local reasoner, so a fresh checkout runs with no key.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal, assert_never

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field, SecretStr
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from mnemo_runtime.models.calls import CallRuntime, RetryPolicy
from mnemo_runtime.models.llamacpp_engine import SHARED_ENGINES, LlamaCppEngines, LlamaCppOptions
from mnemo_runtime.models.llamacpp_provider import LlamaCppModel
from mnemo_runtime.models.openai_provider import OpenAICompatibleModel
from mnemo_runtime.models.openai_wire import StructuredMode
from mnemo_runtime.models.ports import ChatModel, LocalModelFactory, Stage
from mnemo_runtime.models.usage import UsageLedger

ProviderName = Literal["anthropic", "openai", "llamacpp", "local"]

LOCAL_MODEL = "heuristic"

# Cheap, fast models where the call count is high (every message batch, every summary); stronger
# ones where a single answer carries more reasoning (dreaming, deep dialectic).
ANTHROPIC_DEFAULTS: dict[Stage, str] = {
    Stage.DERIVER: "claude-haiku-4-5",
    Stage.SUMMARIZER: "claude-haiku-4-5",
    Stage.DREAMER_DEDUCTION: "claude-sonnet-4-6",
    Stage.DREAMER_INDUCTION: "claude-sonnet-4-6",
    Stage.DIALECTIC_MINIMAL: "claude-haiku-4-5",
    Stage.DIALECTIC_LOW: "claude-haiku-4-5",
    Stage.DIALECTIC_MEDIUM: "claude-sonnet-4-6",
    Stage.DIALECTIC_HIGH: "claude-sonnet-4-6",
    Stage.DIALECTIC_MAX: "claude-opus-4-6",
}


class ModelChoice(BaseModel):
    """A provider and, optionally, a model; an empty model means the provider's default."""

    model_config = ConfigDict(frozen=True)

    provider: ProviderName
    model: str = ""

    @classmethod
    def parse(cls, value: str) -> ModelChoice:
        """Parse ``provider`` or ``provider:model``."""
        provider, _, model = value.partition(":")
        return cls.model_validate({"provider": provider.strip(), "model": model.strip()})


def _parse_choice(value: object) -> object:
    return ModelChoice.parse(value) if isinstance(value, str) else value


# NoDecode: the env value is "provider:model", not JSON.
StageChoice = Annotated[ModelChoice | None, NoDecode, BeforeValidator(_parse_choice)]


class ModelSettings(BaseSettings):
    """Model provider and model per stage, credentials and call policy."""

    model_config = SettingsConfigDict(
        env_prefix="MNEMO_MODEL_", extra="ignore", validate_by_name=True, validate_by_alias=True
    )

    default: StageChoice = None
    deriver: StageChoice = None
    summarizer: StageChoice = None
    dreamer_deduction: StageChoice = None
    dreamer_induction: StageChoice = None
    dialectic_minimal: StageChoice = None
    dialectic_low: StageChoice = None
    dialectic_medium: StageChoice = None
    dialectic_high: StageChoice = None
    dialectic_max: StageChoice = None

    anthropic_api_key: SecretStr | None = Field(
        default=None,
        validation_alias=AliasChoices("MNEMO_MODEL_ANTHROPIC_API_KEY", "ANTHROPIC_API_KEY"),
    )
    anthropic_base_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("MNEMO_MODEL_ANTHROPIC_BASE_URL", "ANTHROPIC_BASE_URL"),
    )
    openai_api_key: SecretStr | None = Field(
        default=None, validation_alias=AliasChoices("MNEMO_MODEL_OPENAI_API_KEY", "OPENAI_API_KEY")
    )
    openai_base_url: str = Field(
        default="https://api.openai.com/v1",
        validation_alias=AliasChoices("MNEMO_MODEL_OPENAI_BASE_URL", "OPENAI_BASE_URL"),
    )
    # Used for OpenAI-compatible stages configured without a model name.
    openai_model: str = "gpt-4.1-mini"
    # How tool calls are asked of an OpenAI-compatible server: its `tools` API, or a JSON schema
    # in `response_format` for servers whose tool calling is missing or unreliable.
    openai_structured: StructuredMode = "tools"

    # In-process llama.cpp (provider `llamacpp`, model: the path of a local GGUF file).
    llamacpp_threads: int | None = Field(default=None, ge=1)
    llamacpp_context: int = Field(default=8192, ge=512)
    llamacpp_parallel: int = Field(default=1, ge=1)
    # Per generation: CPU inference of a large model is much slower than a hosted API.
    llamacpp_timeout_s: float = Field(default=300.0, gt=0)
    # Above 1 penalises repeated tokens (1.1-1.3 helps small models end their lists).
    llamacpp_repeat_penalty: float = Field(default=1.0, ge=1.0, le=2.0)
    llamacpp_verbose: bool = False

    timeout_s: float = Field(default=120.0, gt=0)
    max_attempts: int = Field(default=4, ge=1)

    def default_provider(self) -> ProviderName:
        """The provider for stages not configured individually."""
        if self.default is not None:
            return self.default.provider
        if self.anthropic_api_key is not None:
            return "anthropic"
        if self.openai_api_key is not None:
            return "openai"
        return "local"

    def choice(self, stage: Stage) -> ModelChoice:
        """The provider and model ``stage`` uses, with defaults filled in."""
        # Stage values are the field names, so MNEMO_MODEL_<STAGE> is the stage's variable.
        configured: ModelChoice | None = getattr(self, stage.value)
        if configured is None:
            configured = self.default or ModelChoice(provider=self.default_provider())
        if configured.model:
            return configured
        return configured.model_copy(update={"model": self._default_model(configured, stage)})

    def llamacpp_options(self) -> LlamaCppOptions:
        """How GGUF models are loaded."""
        return LlamaCppOptions(
            threads=self.llamacpp_threads,
            context=self.llamacpp_context,
            parallel=self.llamacpp_parallel,
            verbose=self.llamacpp_verbose,
        )

    def _default_model(self, choice: ModelChoice, stage: Stage) -> str:
        if choice.provider == "anthropic":
            return ANTHROPIC_DEFAULTS[stage]
        if choice.provider == "openai":
            return self.openai_model
        if choice.provider == "llamacpp":
            raise ValueError(
                f"MNEMO_MODEL_{stage.name} names llamacpp without a model file: "
                "use llamacpp:/path/to/model.gguf"
            )
        return LOCAL_MODEL


def build_model(
    stage: Stage,
    settings: ModelSettings,
    *,
    local_factory: LocalModelFactory,
    ledger: UsageLedger | None = None,
    engines: LlamaCppEngines = SHARED_ENGINES,
) -> ChatModel:
    """The model ``stage`` is configured to use; pass one ledger to account every stage together.

    Stages configured with the same GGUF file share its engine in ``engines`` (one load).
    """
    choice = settings.choice(stage)
    calls = CallRuntime(
        retry=RetryPolicy(max_attempts=settings.max_attempts), ledger=ledger or UsageLedger()
    )
    if choice.provider == "anthropic":
        if settings.anthropic_api_key is None:
            raise ValueError(f"{stage} is configured for anthropic but ANTHROPIC_API_KEY is unset")
        # Imported only when chosen: the SDK takes seconds of CPU to import, at every start of
        # every process that builds a model.
        from mnemo_runtime.models.anthropic_provider import AnthropicModel

        return AnthropicModel(
            choice.model,
            api_key=settings.anthropic_api_key,
            base_url=settings.anthropic_base_url,
            timeout_s=settings.timeout_s,
            calls=calls,
        )
    if choice.provider == "openai":
        return OpenAICompatibleModel(
            choice.model,
            base_url=settings.openai_base_url,
            api_key=settings.openai_api_key,
            timeout_s=settings.timeout_s,
            structured=settings.openai_structured,
            calls=calls,
        )
    if choice.provider == "llamacpp":
        return LlamaCppModel(
            engines.get(_gguf_path(stage, choice.model), settings.llamacpp_options()),
            timeout_s=settings.llamacpp_timeout_s,
            repeat_penalty=settings.llamacpp_repeat_penalty,
            calls=calls,
        )
    if choice.provider == "local":
        return local_factory(stage)
    assert_never(choice.provider)


def _gguf_path(stage: Stage, model: str) -> Path:
    """The local GGUF file a llamacpp stage names; never a URL or a hub name to fetch."""
    variable = f"MNEMO_MODEL_{stage.name}"
    if "://" in model:
        raise ValueError(f"{variable}: llamacpp loads a local GGUF file, not {model!r}")
    path = Path(model).expanduser()
    if path.suffix.lower() != ".gguf":
        raise ValueError(f"{variable}: {model!r} is not a .gguf file")
    if not path.is_file():
        raise ValueError(f"{variable}: no GGUF model file at {path}")
    return path
