import asyncio
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from fixtures import write_locomo

from mnemo_bench.mnemo_retrieval import ContextRetriever, MnemoRetriever, target_speaker
from mnemo_bench.readers import read_locomo


class FakeHoncho:
    workspace_id = "ws"

    def peer(self, peer_id: str) -> Any:
        hits = {"ann": [SimpleNamespace(id="o1", content="Ann has a dog named Rex")], "bob": []}
        query = lambda _q, top_k: hits[peer_id][:top_k]  # noqa: E731
        return SimpleNamespace(id=peer_id, conclusions=SimpleNamespace(query=query))

    def search(self, _query: str, limit: int) -> list[Any]:
        msgs = [SimpleNamespace(content="Rex learned to swim", metadata={"turn_id": "D2:2"})]
        return msgs[:limit]

    def session(self, session_id: str) -> Any:
        assert session_id == "session-2"

        def context(**kw: Any) -> Any:
            assert kw["peer_target"] == "ann" and kw["tokens"] == 2000
            return SimpleNamespace(
                peer_representation="- [2023-05-08] Ann has a dog named Rex\n",
                messages=[
                    SimpleNamespace(content="x", metadata={"turn_id": "D2:1"}),
                    SimpleNamespace(content="y", metadata={"turn_id": "D2:2"}),
                ],
                summary=None,
            )

        return SimpleNamespace(context=context)


class FakeSpaces:
    def ensure(self, _case: Any) -> FakeHoncho:
        return FakeHoncho()


class FakeProvenance:
    def turns_of(self, workspace: str, ids: list[str]) -> dict[str, list[str]]:
        assert workspace == "ws"
        return {i: ["D1:1"] if i == "o1" else [] for i in ids}

    def observations(self, _ws: str, observed: str) -> dict[str, str]:
        return {"Ann has a dog named Rex": "o1"} if observed == "ann" else {}


def test_mnemo_is_the_engine_s_message_search_as_turn_ids(tmp_path: Path) -> None:
    (case,) = read_locomo(write_locomo(tmp_path))
    q = case.questions[0]
    assert target_speaker(case, q) == "Ann"
    got = asyncio.run(MnemoRetriever(FakeSpaces()).retrieve(case, q, 10))  # type: ignore[arg-type]
    assert got.ids == ("D2:2",)


def test_context_blob_evidence(tmp_path: Path) -> None:
    (case,) = read_locomo(write_locomo(tmp_path))
    retriever = ContextRetriever(FakeSpaces(), FakeProvenance(), 2000)  # type: ignore[arg-type]
    got = asyncio.run(retriever.retrieve(case, case.questions[0], 20))
    assert retriever.name == "context@2000"
    assert got.ids == ("D1:1", "D2:2", "D2:1")  # representation first, then newest messages
