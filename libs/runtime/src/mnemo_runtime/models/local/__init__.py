"""The deterministic local reasoner: Mnemo's offline model, built from rules, not weights.

It implements ``ChatModel`` so a fresh checkout runs with no API key, and it answers as
``local-heuristic`` so nobody mistakes its output for a language model's. What it does for a
stage is a skill of that stage's service, which builds its reasoner with it (the deriver, the
summarizer, the dialectic and the dreamer each do, in their ``local`` module or composition
root). A stage without a skill is refused with ``ModelRejected``, which tells the operator to
configure a provider for it. The text rules the skills share (sentences, pronouns, verbs,
dates, names) live beside it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from mnemo_runtime.models.calls import CallRuntime
from mnemo_runtime.models.local.identity import MODEL_NAME
from mnemo_runtime.models.ports import (
    ChatModel,
    ModelRejected,
    ModelRequest,
    ModelResponse,
    Stage,
)

PROVIDER = "local"


class Skill(Protocol):
    """What the local reasoner does for one stage; pure and synchronous."""

    def respond(self, request: ModelRequest) -> ModelResponse:
        """The reasoner's turn for ``request``."""
        ...


class LocalReasoner:
    """A ``ChatModel`` that answers each stage with its registered heuristic skill."""

    def __init__(
        self,
        skills: Mapping[Stage, Skill] | None = None,
        *,
        calls: CallRuntime | None = None,
    ) -> None:
        self._skills = dict(skills or {})
        self._calls = calls

    @property
    def stages(self) -> frozenset[Stage]:
        """The stages this reasoner can answer."""
        return frozenset(self._skills)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        """The registered skill's answer; ``ModelRejected`` for a stage without one."""
        if self._calls is None:
            return self._respond(request)

        async def attempt() -> ModelResponse:
            return self._respond(request)

        # Through CallRuntime, local calls are traced and accounted like any provider's.
        return await self._calls.call(
            provider=PROVIDER, model=MODEL_NAME, request=request, attempt=attempt
        )

    def _respond(self, request: ModelRequest) -> ModelResponse:
        skill = self._skills.get(request.stage)
        if skill is None:
            raise ModelRejected(
                f"the local heuristic reasoner has no skill for the {request.stage.value} stage "
                f"yet; configure a model provider for it (MNEMO_MODEL_{request.stage.name}="
                "anthropic or openai)"
            )
        return skill.respond(request)


def local_model(stage: Stage) -> ChatModel:  # noqa: ARG001  (the factory shape takes a stage)
    """A ``LocalModelFactory`` for a stage no service gives a skill to here (an answerer, a
    judge): the local reasoner without skills, which refuses each request, naming the setting
    that configures a provider."""
    return LocalReasoner()


__all__ = ["MODEL_NAME", "LocalReasoner", "Skill", "local_model"]
