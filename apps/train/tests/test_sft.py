"""Prompt-masked SFT on a tiny model built from a config inside the test (nothing downloaded).

Runs in the train environment (``make train-env``; ``make test`` runs it there).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers  # noqa: E402

from mnemo_deriver.contract import ExtractedObservation, render_batch  # noqa: E402
from mnemo_train.records import prompt_and_target, sft_record  # noqa: E402
from mnemo_train.sft import IGNORE, SftOptions, encode, train  # noqa: E402

pytestmark = pytest.mark.sft


def _records() -> list[dict]:
    from datetime import UTC, datetime

    from mnemo_deriver.contract import BatchMessage

    at = datetime(2024, 3, 11, 9, tzinfo=UTC)
    out = []
    for i, (text, fact, span) in enumerate(
        [
            (
                "I adopted a dog named Rex.",
                "Ann adopted a dog named Rex.",
                "I adopted a dog named Rex",
            ),
            (
                "I work as a nurse in Porto.",
                "Ann works as a nurse in Porto.",
                "I work as a nurse in Porto",
            ),
        ]
    ):
        batch = render_batch("ann", [BatchMessage(0, "ann", text, at)])
        obs = [ExtractedObservation(fact=fact, source_message_index=0, source_span=span)]
        out.append(sft_record(f"r{i}", batch, obs))
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A two-layer Llama with a byte-level BPE tokenizer trained here on the records' text."""
    texts = [m["content"] or prompt_and_target(r)[1] for r in _records() for m in r["messages"]]
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=600,
            special_tokens=["<pad>", "<eos>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    fast = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tok, eos_token="<eos>", pad_token="<pad>"
    )
    config = transformers.LlamaConfig(
        vocab_size=fast.vocab_size,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        eos_token_id=fast.eos_token_id,
        pad_token_id=fast.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
    path = tmp_path_factory.mktemp("tiny")
    model.save_pretrained(path)
    fast.save_pretrained(path)
    return path


def test_prompt_tokens_carry_no_loss(tiny: Path) -> None:
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(tiny))
    record = _records()[0]
    ids, labels = encode(tokenizer, record)
    masked = labels.count(IGNORE)
    assert 0 < masked < len(labels) and labels[:masked] == [IGNORE] * masked
    assert labels[masked:] == ids[masked:] and ids[-1] == tokenizer.eos_token_id
    target = tokenizer.decode(ids[masked:-1])
    assert target == prompt_and_target(record)[1]


def test_the_loss_falls_and_the_checkpoint_loads_and_generates(tiny: Path, tmp_path: Path) -> None:
    data = tmp_path / "sft.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in _records()))
    out = tmp_path / "ckpt"
    result = train(tiny, data, out, SftOptions(epochs=6, lr=3e-3))
    losses = result["losses"]
    assert result["steps"] == 12 and result["too_long"] == 0
    assert sum(losses[-2:]) / 2 < 0.8 * sum(losses[:2]) / 2
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(out))
    model = transformers.AutoModelForCausalLM.from_pretrained(str(out))
    ids, labels = encode(tokenizer, _records()[0])
    prompt = ids[: labels.count(IGNORE)]
    generated = model.generate(torch.tensor([prompt]), max_new_tokens=8, do_sample=False)
    assert generated.shape[1] > len(prompt)
    assert isinstance(tokenizer.decode(generated[0, len(prompt) :]), str)
