"""Backoff arithmetic, retry-after parsing and the usage ledger."""

from __future__ import annotations

import threading

import pytest

from mnemo_runtime.models import ModelRejected, ModelRequest, ModelResponse, Stage, Usage
from mnemo_runtime.models.calls import CallRuntime, RetryPolicy, Transient, retry_after_s
from mnemo_runtime.models.usage import StageUsage, UsageLedger


def test_backoff_doubles_with_jitter_and_caps():
    policy = RetryPolicy(base_delay_s=0.5, max_delay_s=4.0)

    assert [policy.delay(n, 0.0) for n in range(1, 6)] == [0.25, 0.5, 1.0, 2.0, 2.0]
    assert [policy.delay(n, 0.999999) for n in range(1, 6)] == pytest.approx(
        [0.5, 1.0, 2.0, 4.0, 4.0]
    )


def test_retry_after_raises_the_wait_up_to_a_ceiling():
    policy = RetryPolicy(base_delay_s=0.5, max_retry_after_s=30.0)

    assert policy.delay(1, 0.0, retry_after_s=3.0) == 3.0
    assert policy.delay(1, 0.0, retry_after_s=0.0) == 0.25
    assert policy.delay(1, 0.0, retry_after_s=3600.0) == 30.0


def test_policy_needs_one_attempt():
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),
        ({"retry-after": "Wed, 21 Oct 2026 07:28:00 GMT"}, None),
        ({}, None),
    ],
)
def test_retry_after_header(headers, expected):
    assert retry_after_s(headers) == expected


async def test_rejections_are_not_retried_and_are_accounted(sleeps):
    ledger = UsageLedger()
    runtime = CallRuntime(ledger=ledger, sleep=sleeps)
    request = ModelRequest(stage=Stage.DREAMER_INDUCTION, messages=())

    async def attempt() -> ModelResponse:
        raise ModelRejected("bad", status=400)

    with pytest.raises(ModelRejected):
        await runtime.call(provider="x", model="m", request=request, attempt=attempt)

    assert ledger.stage(Stage.DREAMER_INDUCTION).failures == 1
    assert sleeps.waits == []


async def test_transient_then_success_counts_one_retry(sleeps):
    ledger = UsageLedger()
    runtime = CallRuntime(ledger=ledger, sleep=sleeps, jitter=lambda: 0.0)
    outcomes: list[Exception | ModelResponse] = [
        Transient("503"),
        ModelResponse(usage=Usage(input_tokens=3, output_tokens=4)),
    ]

    async def attempt() -> ModelResponse:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    request = ModelRequest(stage=Stage.DIALECTIC_MAX, messages=())
    await runtime.call(provider="x", model="m", request=request, attempt=attempt)

    assert sleeps.waits == [0.25]
    assert ledger.stage(Stage.DIALECTIC_MAX) == StageUsage(
        calls=1, retries=1, input_tokens=3, output_tokens=4, latency_ms=ledger.total().latency_ms
    )


def test_ledger_totals_across_stages_and_threads():
    ledger = UsageLedger()

    def work(stage: Stage) -> None:
        for _ in range(500):
            ledger.record(stage, Usage(input_tokens=2, output_tokens=1), latency_ms=1.0, retries=0)

    threads = [threading.Thread(target=work, args=(s,)) for s in (Stage.DERIVER, Stage.DERIVER)]
    threads.append(threading.Thread(target=work, args=(Stage.SUMMARIZER,)))
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ledger.record_failure(Stage.SUMMARIZER, latency_ms=5.0, retries=3)

    assert ledger.stage(Stage.DERIVER) == StageUsage(
        calls=1000, input_tokens=2000, output_tokens=1000, latency_ms=1000.0
    )
    assert ledger.total() == StageUsage(
        calls=1501, failures=1, retries=3, input_tokens=3000, output_tokens=1500, latency_ms=1505.0
    )
    assert set(ledger.snapshot()) == {Stage.DERIVER, Stage.SUMMARIZER}
    assert ledger.stage(Stage.DIALECTIC_LOW) == StageUsage()
