import math

from mnemo_bench.bm25 import BM25, tokenize
from mnemo_bench.metrics import evaluate, mean_metrics, ndcg_at, recall_at, rrf


def test_recall_and_ndcg() -> None:
    ranked = ["a", "x", "b", "a", "y"]
    assert recall_at(ranked, ["a", "b"], 1) == 0.5
    assert recall_at(ranked, ["a", "b"], 3) == 1.0
    assert recall_at(ranked, [], 3) == 0.0
    ideal = 1 + 1 / math.log2(3)
    assert math.isclose(ndcg_at(ranked, ["a", "b"], 3), (1 + 1 / math.log2(4)) / ideal)
    assert evaluate(["a"], ["a"])["ndcg@20"] == 1.0
    assert mean_metrics([{"r": 1.0}, {"r": 0.0}]) == {"r": 0.5}


def test_rrf_rewards_agreement() -> None:
    assert rrf(["a", "b", "c"], ["b", "c", "a"], ["b"])[0] == "b"


def test_bm25_ranks_rare_terms_first() -> None:
    docs = ["Ann: the dog swims", "Bob: pottery on friday", "Ann: the dog and the cat"]
    index = BM25(docs)
    assert index.rank("when is pottery?", 3) == [1]
    assert index.rank("dog swims", 2)[0] == 0
    assert tokenize("The Dog's") == ["dog", "s"]


def test_overlong_messages_are_split_at_whitespace() -> None:
    from mnemo_bench.mnemo_client import split_text

    parts = split_text("aaaa bbbb cccc", limit=10)
    assert parts == ["aaaa bbbb", "cccc"]
    assert split_text("x" * 25, limit=10) == ["x" * 10, "x" * 10, "x" * 5]
    assert split_text("short") == ["short"]
