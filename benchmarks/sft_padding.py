"""How much of the warm-up's forward passes is padding, with micro-batches in arrival order and sorted by length.

    python benchmarks/sft_padding.py --data-dir ../shared/spider               # the learning proof's sft-4x warm-up
    python benchmarks/sft_padding.py --data-dir ../shared/spider --questions 600 --micro-batch 4

CPU only, no model: the warm-up's own oracle episodes (sft.warmup_conversations, both system prompts), tokenized
with the Qwen tokenizer (the 0.5B's and the 1.5B's vocabulary), drawn in the warm-up's step order
(sft.step_episodes, as sft.train_sft draws them). A micro-batch is as long as its longest episode; the printed
shares are padding positions over all positions, and the positions sorting saves (what the forward and backward
passes no longer compute).
"""

from __future__ import annotations

import argparse
import itertools
import os
import sys
from pathlib import Path

REPO_DIR = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_DIR))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import train  # noqa: E402  (imports unsloth first, as train.py must)
import sft  # noqa: E402, I001
from chat_format import masked_chat_template  # noqa: E402
from models import build_qwen3_tokenizer  # noqa: E402


def padded_positions(micro_batches: list[list[int]], lengths: list[int]) -> int:
    return sum(len(micro) * max(lengths[index] for index in micro) for micro in micro_batches)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="Spider folder (train_spider.json, database/)")
    parser.add_argument("--questions", type=int, default=2400, help="warm-up questions (sft-4x: 2400)")
    parser.add_argument("--batch-size", type=int, default=8, help="episodes per step (--sft_batch_size)")
    parser.add_argument("--micro-batch", type=int, default=6, help="episodes per forward pass "
                                                                   "(--per_device_train_batch_size)")
    parser.add_argument("--seed", type=int, default=0)
    arguments = parser.parse_args()
    if not (arguments.data_dir / "train_spider.json").is_file():
        parser.error(f"no train_spider.json in {arguments.data_dir}")
    agent, _, _ = train.parse_config(["--phase", "sft", "--data_dir", str(arguments.data_dir),
                                      "--max_questions", str(arguments.questions)])
    tokenizer = build_qwen3_tokenizer()
    template = masked_chat_template(tokenizer)
    conversations = sft.warmup_conversations(agent, seed=arguments.seed)
    data = [sft.encode_conversation(tokenizer, conversation, template) for conversation in conversations]
    lengths = [len(item.input_ids) for item in data]
    draws = sft.step_episodes(len(data), arguments.batch_size, arguments.seed)
    steps = list(itertools.islice(draws, len(data) // arguments.batch_size))
    real = sum(lengths[index] for picked in steps for index in picked)
    size = arguments.micro_batch
    arrival = sum(padded_positions(sft.cut_into_micro_batches(picked, size), lengths) for picked in steps)
    by_length = sum(padded_positions(sft.length_sorted_micro_batches(picked, data, size), lengths) for picked in steps)
    print(f"{len(data)} episodes, {min(lengths)}-{max(lengths)} tokens (median {sorted(lengths)[len(lengths) // 2]}); "
          f"{len(steps)} steps of {arguments.batch_size} in micro-batches of {size}")
    print(f"padding: {1 - real / arrival:.1%} of positions in arrival order, {1 - real / by_length:.1%} sorted by "
          f"length; sorting saves {1 - by_length / arrival:.1%} of the positions")


if __name__ == "__main__":
    main()
