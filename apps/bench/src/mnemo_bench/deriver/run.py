"""Traces of every (session, speaker) of the chosen conversations, resumable."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from mnemo_bench.cases import Case
from mnemo_bench.deriver.traces import Trace, derive_session, speakers_of
from mnemo_bench.mnemo_client import slug
from mnemo_bench.state import RunState
from mnemo_deriver.settings import DeriverSettings
from mnemo_runtime.models import ChatModel
from mnemo_runtime.tokens import TokenCounter

# LoCoMo conversations whose results may tune the deriver and the matcher; the rest is held out.
TUNING = frozenset({"conv-26", "conv-30"})


def split_of(case_id: str) -> str:
    """``tuning`` or ``held-out``."""
    return "tuning" if case_id in TUNING else "held-out"


async def traces(
    model: ChatModel, cases: Sequence[Case], state: RunState, settings: DeriverSettings
) -> list[Trace]:
    """The deriver's trace of each speaker in each session; done ones are read back, not redone."""
    count = TokenCounter()
    out: list[Trace] = []
    for case in cases:
        for session in case.sessions:
            for target in speakers_of(session):
                key = f"{case.id}/{slug(session.id)}/{target}"
                row = state.result(key)
                if row is None:
                    trace = await derive_session(model, case, session, target, settings, count)
                    state.append(trace.to_row())
                else:
                    trace = Trace.from_row(row)
                out.append(trace)
        print(f"  {case.id}: traced", file=sys.stderr)
    return out
