"""What `make demo` says about the reasoner it runs with."""

from __future__ import annotations

import os

import pytest
from pydantic import SecretStr

from mnemo_cli.demo import reasoners
from mnemo_runtime.models.config import ModelChoice, ModelSettings


@pytest.fixture(autouse=True)
def no_model_configured(monkeypatch):
    for var in list(os.environ):
        if var.startswith("MNEMO_MODEL_") or var in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
            monkeypatch.delenv(var)


def test_without_a_model_the_demo_names_the_heuristic_and_how_to_switch():
    said = reasoners(ModelSettings())

    assert said.startswith("Reasoner: Mnemo's local heuristic reasoner")
    assert "no model is configured" in said
    for way in ("ANTHROPIC_API_KEY", "MNEMO_MODEL_DEFAULT=openai:", "llamacpp:/path/model.gguf"):
        assert way in said


def test_with_models_the_demo_names_each_stages_reasoner():
    settings = ModelSettings(
        anthropic_api_key=SecretStr("sk-ant"),
        deriver=ModelChoice(provider="llamacpp", model="/models/qwen2.5-3b-instruct-q4_k_m.gguf"),
        summarizer=ModelChoice(provider="local"),
    )

    lines = [line.strip() for line in reasoners(settings).splitlines()]

    assert lines[0] == "Reasoner per stage:"
    assert "deriver            llamacpp: qwen2.5-3b-instruct-q4_k_m.gguf" in lines
    assert "summarizer         local heuristic" in lines
    assert "dialectic_max      anthropic: claude-opus-4-6" in lines


def test_memory_unfinished_in_time_is_said_with_what_the_memory_process_got():
    from mnemo_cli.demo import unfinished

    said = unfinished(120.4, "the memory process is waiting for CPU: it had 2 % of a CPU")
    assert said.splitlines() == [
        "  Memory has not finished forming after 120 s; the answers below use what has formed"
        " so far.",
        "  The memory process is waiting for CPU: it had 2 % of a CPU.",
    ]
    assert unfinished(120.0, "").count("\n") == 0
