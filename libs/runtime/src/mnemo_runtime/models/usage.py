"""Token and latency accounting per stage, shared by every provider in a process."""

from __future__ import annotations

import threading
from dataclasses import dataclass

from mnemo_runtime.metrics import observe_model_call
from mnemo_runtime.models.ports import Stage, Usage


@dataclass(frozen=True)
class StageUsage:
    """What one stage's model calls have cost so far."""

    calls: int = 0
    failures: int = 0
    retries: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0

    def __add__(self, other: StageUsage) -> StageUsage:
        return StageUsage(
            calls=self.calls + other.calls,
            failures=self.failures + other.failures,
            retries=self.retries + other.retries,
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            latency_ms=self.latency_ms + other.latency_ms,
        )


class UsageLedger:
    """Accumulates calls, tokens, retries and latency per stage.

    A lock rather than per-task state: providers may be shared by tasks on one loop and by worker
    threads, and each update is a few additions, so contention is negligible.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_stage: dict[Stage, StageUsage] = {}

    def record(self, stage: Stage, usage: Usage, *, latency_ms: float, retries: int) -> None:
        """Account one successful call."""
        observe_model_call(
            stage.value,
            ok=True,
            latency_ms=latency_ms,
            retries=retries,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
        )
        self._add(
            stage,
            StageUsage(
                calls=1,
                retries=retries,
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                latency_ms=latency_ms,
            ),
        )

    def record_failure(self, stage: Stage, *, latency_ms: float, retries: int) -> None:
        """Account one call that ended in an error."""
        observe_model_call(stage.value, ok=False, latency_ms=latency_ms, retries=retries)
        self._add(stage, StageUsage(calls=1, failures=1, retries=retries, latency_ms=latency_ms))

    def stage(self, stage: Stage) -> StageUsage:
        """The totals of one stage (zeros when it never called)."""
        with self._lock:
            return self._by_stage.get(stage, StageUsage())

    def snapshot(self) -> dict[Stage, StageUsage]:
        """A copy of every stage's totals."""
        with self._lock:
            return dict(self._by_stage)

    def total(self) -> StageUsage:
        """The totals across stages."""
        total = StageUsage()
        for usage in self.snapshot().values():
            total = total + usage
        return total

    def _add(self, stage: Stage, delta: StageUsage) -> None:
        with self._lock:
            self._by_stage[stage] = self._by_stage.get(stage, StageUsage()) + delta
