"""Rollout throughput: episodes through the environment, and complete rollouts (generation + environment).

    pytest benchmarks/bench_rollouts.py --benchmark-only                  # figures are printed as they come
    pytest benchmarks/bench_rollouts.py --benchmark-only --benchmark-json=rollouts.json  # and kept in extra_info

- the oracle through SQLEnv, on the built-in data and on real Spider (SPIDER_DIR, default ../shared/spider):
  episodes/s of the environment alone, the ceiling of any rollout;
- the tiny random Qwen3 on CPU through the eval suite's ModelPolicy: rollouts/s with generation;
- on a CUDA machine with Unsloth installed: Qwen3-1.7B's exact architecture (random weights, bf16) loaded
  with Unsloth's FastLanguageModel, generation tokens/s and rollouts/s. Skipped elsewhere, with the reason.

Random weights never write a tool call, so the model rollouts generate every turn for real (all
max_new_tokens of it: random weights rarely stop early, the worst case) and then act out the oracle's
plan instead of parsing the text: what a rollout costs when a trained model makes the oracle's calls.
"""

from __future__ import annotations

import importlib.util
import os
import time
from pathlib import Path
from typing import Any

import pytest
import torch

from agent_env import DEFAULT_STEP_BUDGET, SQLEnv
from eval.checkpoint import import_unsloth, load_checkpoint, load_with_unsloth
from eval.model_policy import Completion, ModelPolicy, TurnDecision
from eval.runner import EpisodeEnd, StopReason, play_batched, play_scripted
from policies import OraclePolicy, initial_messages
from prompt import system_prompt
from spider_data import BUILTIN_DATA_DIR, load_split, to_grpo_rows

# None of the imports above loads transformers; unsloth must come before it (it patches it and trl).
HAS_CUDA = torch.cuda.is_available()
HAS_UNSLOTH = importlib.util.find_spec("unsloth") is not None
if HAS_CUDA and HAS_UNSLOTH:
    import_unsloth()
os.environ.setdefault("HF_HUB_OFFLINE", "1")

SPIDER_STRIDE = 5  # every 5th Spider train question: ~1,300 episodes over all 136 databases present
CPU_ROLLOUTS, CPU_BATCH, CPU_NEW_TOKENS = 8, 4, 16
GPU_ROLLOUTS, GPU_BATCH, GPU_NEW_TOKENS = 32, 16, 128
QWEN3_1_7B_DIR = Path(os.environ.get("QWEN3_1_7B_RANDOM_DIR", "/tmp/qwen3-1.7b-random"))

needs_cuda = pytest.mark.skipif(not HAS_CUDA, reason="needs a CUDA GPU (Unsloth's fast generation is CUDA-only)")
needs_unsloth = pytest.mark.skipif(not HAS_UNSLOTH, reason="unsloth is not installed")


def report(benchmark: Any, capsys: pytest.CaptureFixture, title: str, **figures: float) -> None:
    """Keep the figures in the benchmark's extra_info and print them past pytest's capture."""
    benchmark.extra_info.update({name: round(value, 3) for name, value in figures.items()})
    with capsys.disabled():
        shown = [f"{name.replace('_', ' ')} {value:,}" if isinstance(value, int) else
                 f"{name.replace('_', ' ')} {value:,.1f}" for name, value in figures.items()]
        print(f"\n{title}: " + ", ".join(shown))


class OracleTurns(ModelPolicy):
    """Generates every turn for real, then makes the oracle's next call instead of parsing the text."""

    def __init__(self, *arguments: Any, **options: Any) -> None:
        super().__init__(*arguments, **options)
        self.plans: dict[int, list] = {}

    def start(self, key: int, row: dict[str, Any]) -> None:
        super().start(key, row)
        self.plans[key] = OraclePolicy().plan(row)

    def read_turn(self, key: int, completion: Completion, prompt_ids: list[int]) -> TurnDecision:
        plan = self.plans[key]
        return TurnDecision([plan.pop(0)]) if plan else TurnDecision([], StopReason.NO_TOOL_CALL)

    def finish(self, key: int) -> EpisodeEnd:
        self.plans.pop(key)
        return super().finish(key)


def rollouts(policy: ModelPolicy, rows: list[dict[str, Any]], batch_size: int) -> dict[str, float]:
    """Play every row; returns the counts a throughput needs."""
    ends = [end for _, _, _, end in play_batched(rows, policy, step_budget=DEFAULT_STEP_BUDGET, batch_size=batch_size)]
    return {"turns": sum(end.turns for end in ends), "tokens": sum(end.generated_tokens for end in ends)}


def builtin_rows(count: int | None = None) -> list[dict[str, Any]]:
    return to_grpo_rows(load_split(BUILTIN_DATA_DIR, "train", progress=False).examples,
                        system_prompt(DEFAULT_STEP_BUDGET))[:count]


# --- the environment alone ------------------------------------------------------------------------


def oracle_throughput(benchmark: Any, capsys: pytest.CaptureFixture, rows: list[dict[str, Any]], title: str) -> None:
    def play_all() -> int:
        played = play_scripted(rows, OraclePolicy(), step_budget=DEFAULT_STEP_BUDGET)
        return sum(episode.in_episode_steps for _, _, episode, _ in played)

    steps = benchmark.pedantic(play_all, rounds=3, warmup_rounds=1)  # the warm-up fills load_gold's cache
    seconds = benchmark.stats.stats.mean
    report(benchmark, capsys, title, episodes=len(rows), episodes_per_second=len(rows) / seconds,
           tool_calls_per_second=steps / seconds)


def test_oracle_episodes_per_second_on_builtin_data(benchmark: Any, capsys: pytest.CaptureFixture) -> None:
    oracle_throughput(benchmark, capsys, builtin_rows(), "oracle through SQLEnv, built-in train split")


@pytest.mark.spider
def test_oracle_episodes_per_second_on_real_spider(
    benchmark: Any, capsys: pytest.CaptureFixture, spider_path: Path
) -> None:
    rows = to_grpo_rows(load_split(spider_path, "train", progress=False).examples[::SPIDER_STRIDE],
                        system_prompt(DEFAULT_STEP_BUDGET))
    oracle_throughput(benchmark, capsys, rows, f"oracle through SQLEnv, every {SPIDER_STRIDE}th Spider train question")


# --- generation plus environment ------------------------------------------------------------------


def test_tiny_model_rollouts_per_second_on_cpu(
    benchmark: Any, capsys: pytest.CaptureFixture, tiny_model_dir: Path
) -> None:
    model, tokenizer = load_checkpoint(tiny_model_dir, device="cpu")
    policy = OracleTurns(model, tokenizer, max_new_tokens=CPU_NEW_TOKENS)
    rows = builtin_rows(CPU_ROLLOUTS)
    counts = benchmark.pedantic(rollouts, args=(policy, rows, CPU_BATCH), rounds=2, warmup_rounds=1)
    seconds = benchmark.stats.stats.mean
    report(benchmark, capsys, f"tiny Qwen3 on CPU, {CPU_ROLLOUTS} rollouts in batches of {CPU_BATCH}, "
           f"{CPU_NEW_TOKENS} new tokens a turn", rollouts_per_second=len(rows) / seconds,
           turns_per_rollout=counts["turns"] / len(rows), generated_tokens_per_second=counts["tokens"] / seconds)


@pytest.fixture(scope="module")
def unsloth_policy(request: pytest.FixtureRequest) -> OracleTurns:
    from models import build_qwen3_1_7b_random

    started = time.perf_counter()
    model, tokenizer = load_with_unsloth(build_qwen3_1_7b_random(QWEN3_1_7B_DIR))
    terminal = request.config.pluginmanager.get_plugin("terminalreporter")
    terminal.write_line(f"\nQwen3-1.7B (random weights) built and loaded with Unsloth in "
                        f"{time.perf_counter() - started:.0f} s")
    return OracleTurns(model, tokenizer, max_new_tokens=GPU_NEW_TOKENS)


@needs_cuda
@needs_unsloth
@pytest.mark.gpu
@pytest.mark.parametrize("batch_size", [1, GPU_BATCH])
def test_qwen3_1_7b_unsloth_generation_tokens_per_second(
    benchmark: Any, capsys: pytest.CaptureFixture, unsloth_policy: OracleTurns, batch_size: int
) -> None:
    contexts = [unsloth_policy.prompt_ids(initial_messages(SQLEnv(), row)) for row in builtin_rows(batch_size)]
    completions = benchmark.pedantic(unsloth_policy.generate, args=(contexts,), rounds=3, warmup_rounds=1)
    seconds = benchmark.stats.stats.mean
    tokens = sum(len(completion.ids) for completion in completions)
    report(benchmark, capsys, f"Qwen3-1.7B architecture, Unsloth, one turn for {batch_size} prompts of "
           f"~{sum(map(len, contexts)) // len(contexts)} tokens", generation_tokens_per_second=tokens / seconds,
           tokens_per_sequence=tokens / batch_size, seconds_per_turn=seconds)


@needs_cuda
@needs_unsloth
@pytest.mark.gpu
def test_qwen3_1_7b_unsloth_rollouts_per_second(
    benchmark: Any, capsys: pytest.CaptureFixture, unsloth_policy: OracleTurns
) -> None:
    rows = builtin_rows(GPU_ROLLOUTS)
    counts = benchmark.pedantic(rollouts, args=(unsloth_policy, rows, GPU_BATCH), rounds=2, warmup_rounds=1)
    seconds = benchmark.stats.stats.mean
    report(benchmark, capsys, f"Qwen3-1.7B architecture, Unsloth, {GPU_ROLLOUTS} rollouts in batches of "
           f"{GPU_BATCH}, {GPU_NEW_TOKENS} new tokens a turn", rollouts_per_second=len(rows) / seconds,
           turns_per_rollout=counts["turns"] / len(rows), generated_tokens_per_second=counts["tokens"] / seconds)
