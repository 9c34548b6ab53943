"""``mnemo train deriver-sft``: next-token cross-entropy on the target JSON only.

L(θ) = −Σ_{t ∈ target} log p_θ(y_t | y_<t, x): x is the Deriver Prompt and the rendered batch,
the target the arguments of the deriver's tool call. Prompt tokens get the label -100, which
the model's loss ignores. A tokenizer with a chat template renders the record as the model will
be served (the full conversation minus the answer is the prompt); one without uses a plain
template of its own. Needs torch and transformers (the ``sft`` extra; ``make train-env``).
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from mnemo_train.records import prompt_and_target

IGNORE = -100


@dataclass(frozen=True)
class SftOptions:
    epochs: int = 1
    lr: float = 2e-5
    max_length: int = 4096
    seed: int = 0


def _plain_prompt(messages: list[dict[str, Any]]) -> str:
    return "".join(f"<|{m['role']}|>\n{m['content']}\n" for m in messages) + "<|assistant|>\n"


def encode(tokenizer: Any, record: dict[str, Any]) -> tuple[list[int], list[int]]:
    """Token ids of the whole example and its labels: -100 over the prompt, ids over the target."""
    prompt_messages, arguments = prompt_and_target(record)
    if getattr(tokenizer, "chat_template", None):
        prompt = tokenizer.apply_chat_template(
            prompt_messages, tools=record.get("tools"), add_generation_prompt=True, tokenize=False
        )
        full = tokenizer.apply_chat_template(
            record["messages"], tools=record.get("tools"), tokenize=False
        )
        if not full.startswith(prompt):
            raise ValueError("the chat template does not render the prompt as a prefix")
        answer = full[len(prompt) :]
    else:
        prompt, answer = _plain_prompt(prompt_messages), arguments
    prompt_ids = list(tokenizer(prompt, add_special_tokens=False)["input_ids"])
    answer_ids = list(tokenizer(answer, add_special_tokens=False)["input_ids"])
    if tokenizer.eos_token_id is not None and answer_ids[-1:] != [tokenizer.eos_token_id]:
        answer_ids.append(int(tokenizer.eos_token_id))
    return prompt_ids + answer_ids, [IGNORE] * len(prompt_ids) + answer_ids


def train(model_dir: str | Path, data: Path, out: Path, options: SftOptions) -> dict[str, Any]:
    """Fine-tune the model in ``model_dir`` on ``data`` (sft.jsonl); save it to ``out``."""
    torch.manual_seed(options.seed)
    tokenizer: Any = AutoTokenizer.from_pretrained(str(model_dir))
    model: Any = AutoModelForCausalLM.from_pretrained(str(model_dir))
    records = [json.loads(line) for line in data.read_text().splitlines() if line.strip()]
    examples = [encode(tokenizer, r) for r in records]
    fit = [e for e in examples if len(e[0]) <= options.max_length]
    optimiser = torch.optim.AdamW(model.parameters(), lr=options.lr)
    rng = random.Random(options.seed)
    losses: list[float] = []
    model.train()
    for _ in range(options.epochs):
        for ids, labels in rng.sample(fit, len(fit)):
            loss = model(input_ids=torch.tensor([ids]), labels=torch.tensor([labels])).loss
            loss.backward()
            optimiser.step()
            optimiser.zero_grad()
            losses.append(float(loss.item()))
    model.eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
    return {
        "records": len(records),
        "too_long": len(examples) - len(fit),
        "steps": len(losses),
        "losses": losses,
        "out": str(out),
    }
