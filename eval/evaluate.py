"""One evaluation from its settings: load the questions, build the policy, play, report.

    settings = EvalSettings(policy="oracle", split="dev", limit=20)
    split, policy = load_questions(settings), build_policy(settings)   # bad input raises here, before playing
    report = evaluate(settings, split, policy)
    write_report(report, settings.out_dir)

The command line (eval/__main__.py) and the checkpoint gates (eval/test_gates.py) both run this.
"""

from __future__ import annotations

import importlib.util
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from agent_env import DEFAULT_STEP_BUDGET
from eval.checkpoint import checkpoint_kind, load_checkpoint, load_with_unsloth
from eval.model_policy import (
    DEFAULT_MAX_NEW_TOKENS,
    FIRST_ROUND_TOKENS,
    ModelPolicy,
    generation_summary,
)
from eval.report import build_report
from eval.runner import BatchPolicy, play_split
from eval.vllm_policy import MISSING_VLLM, load_vllm_policy, vllm_available
from policies import SCRIPTED_POLICIES, Policy, make_policy
from spider_data import BUILTIN_DATA_DIR, SPLIT_FILES, SpiderSplit, hardness_names, load_split

BACKENDS = ("transformers", "unsloth", "vllm")
GENERATION_MODES = ("padded", "rounds", "continuous")
DEFAULT_OUT_ROOT = Path("eval_out")


PROGRESS_LINE_SECONDS = 30.0  # with --no-progress, a plain line this often: a log shows how far an eval got


def default_backend() -> str:
    """Unsloth's fast generation on a CUDA machine that has it (several times faster), else transformers."""
    return "unsloth" if torch.cuda.is_available() and importlib.util.find_spec("unsloth") is not None else "transformers"


def default_batch_size() -> int:
    """Episodes in flight at once: most of a split on a GPU (decode steps cost about the same at any batch
    there; ModelPolicy splits a turn's generation by free memory), a few on a CPU."""
    return 512 if torch.cuda.is_available() else 16


@dataclass
class EvalSettings:
    """What to evaluate (a checkpoint or a built-in policy), on which questions, and how."""

    checkpoint: Path | None = field(default=None, metadata={"help": "Trained adapter or full model folder."})
    policy: str | None = field(default=None, metadata={"help": f"Built-in policy: {', '.join(SCRIPTED_POLICIES)}."})
    data_dir: Path = field(default=BUILTIN_DATA_DIR, metadata={"help": "Spider-format data folder."})
    split: str = field(default="dev", metadata={"help": "dev (dev.json) or train (train_spider.json)."})
    out: Path | None = field(default=None, metadata={"help": "Report folder (default eval_out/<name>-<split>)."})
    limit: int | None = field(default=None, metadata={"help": "Only the first N questions (after --hardness)."})
    hardness: list[str] | None = field(default=None, metadata={"help": "Only these hardness classes."})
    step_budget: int = field(default=DEFAULT_STEP_BUDGET, metadata={"help": "Tool calls per episode."})
    batch_size: int = field(default_factory=default_batch_size,
                            metadata={"help": "Episodes a model plays at once (default: 512 on a GPU, 16 on CPU)."})
    max_new_tokens: int = field(default=DEFAULT_MAX_NEW_TOKENS, metadata={"help": "Tokens per model turn."})
    temperature: float = field(default=0.0, metadata={"help": "0 for greedy decoding, else sampling."})
    seed: int = field(default=0, metadata={"help": "Seed for sampling (temperature > 0)."})
    base_model: str | None = field(default=None, metadata={"help": "Base model for an adapter, if not its own."})
    backend: str = field(default_factory=default_backend,
                         metadata={"help": "unsloth (default on a CUDA GPU with unsloth installed), transformers, or "
                                           "vllm (a CUDA GPU with vllm installed: continuous batching and prefix "
                                           "caching; --generation does not apply)."})
    # rounds by default: on the H200 the 614 held-out questions took 78.6 s against 123.3 s padded, the same
    # accuracy (docs/gpu_measurements/eval_modes_2026-12-01f.json); on CPU 0.80x.
    generation: str = field(default="rounds", metadata={
        "help": "rounds (default): padded calls of --first-round-tokens for every row, then the rest of the turn "
                "for the rows still writing; padded: each turn in left-padded generate calls that last as long as "
                "their longest row; continuous: transformers' continuous batching (paged KV cache, rows leave "
                "when their turn ends; --backend transformers only)."})
    first_round_tokens: int = field(default=FIRST_ROUND_TOKENS, metadata={
        "help": f"--generation rounds: tokens of a turn's first round (default {FIRST_ROUND_TOKENS})."})
    grouped_decode_attention: bool = field(default=True, metadata={
        "help": "--backend unsloth: a batched decode step's attention as grouped products, as training decodes "
                "(default); off: Unsloth's own attention call, which runs PyTorch's math kernel once a batch is "
                "padded (several times slower at the eval's 512 rows)."})
    progress: bool = field(default=True, metadata={"help": "Show progress bars."})

    def __post_init__(self) -> None:
        if (self.checkpoint is None) == (self.policy is None):
            raise ValueError("give exactly one of --checkpoint PATH or --policy NAME")
        if self.policy is not None and self.policy not in SCRIPTED_POLICIES:
            raise ValueError(f"unknown policy {self.policy!r}; built-in policies are: {', '.join(SCRIPTED_POLICIES)}")
        if self.checkpoint is not None:
            self.checkpoint = Path(self.checkpoint)
            checkpoint_kind(self.checkpoint)  # raises CheckpointError, saying what is wrong
        if self.split not in SPLIT_FILES:
            raise ValueError(f"unknown split {self.split!r}; choose {' or '.join(SPLIT_FILES)}")
        if self.hardness is not None:  # read as the data loader reads it (any case), in Spider's order
            self.hardness = hardness_names(self.hardness)
        for name in ("limit", "step_budget", "batch_size", "max_new_tokens", "first_round_tokens"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise ValueError(f"--{name.replace('_', '-')} must be at least 1, got {value}")
        if self.temperature < 0:
            raise ValueError(f"--temperature must be 0 (greedy) or more, got {self.temperature}")
        if self.backend not in BACKENDS:
            raise ValueError(f"unknown backend {self.backend!r}; choose from {', '.join(BACKENDS)}")
        if self.generation not in GENERATION_MODES:
            raise ValueError(f"unknown generation {self.generation!r}; choose from {', '.join(GENERATION_MODES)}")
        if self.backend == "vllm" and self.checkpoint is not None and not vllm_available():
            raise ValueError(MISSING_VLLM)
        if self.generation == "continuous" and self.checkpoint is not None and self.backend == "unsloth":
            # Unsloth replaces the attention forward with its own kernels, which do not read a paged cache.
            raise ValueError("--generation continuous runs on transformers' own attention: add --backend transformers")
        self.data_dir = Path(self.data_dir)

    @property
    def name(self) -> str:
        """What is evaluated, in a word: the policy name or the checkpoint folder's name."""
        if self.checkpoint is not None:
            parent = self.checkpoint.resolve().parent.name
            return f"{parent}-{self.checkpoint.name}" if parent else self.checkpoint.name
        assert self.policy is not None
        return self.policy

    @property
    def out_dir(self) -> Path:
        return self.out if self.out is not None else DEFAULT_OUT_ROOT / f"{self.name}-{self.split}"

    def to_dict(self) -> dict[str, Any]:
        settings = {key: str(value) if isinstance(value, Path) else value for key, value in asdict(self).items()}
        settings["policy"] = self.policy or f"checkpoint {self.checkpoint}"
        settings["data_dir"] = str(self.data_dir.resolve())
        return settings


def _environment_number(name: str) -> int | None:
    value = os.environ.get(name)
    if not value:
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"{name}={value!r}: give a whole number") from None


def _environment_path(name: str) -> Path | None:
    value = os.environ.get(name)
    return Path(value) if value else None


def settings_from_environment(checkpoint: str) -> EvalSettings:
    """The settings of `EVAL_CHECKPOINT=PATH pytest eval/` (eval/test_gates.py): EVAL_DATA_DIR, EVAL_SPLIT,
    EVAL_LIMIT, EVAL_BATCH_SIZE, EVAL_BACKEND, EVAL_OUT. An unset (or empty) one keeps EvalSettings' default,
    left to the dataclass: some are computed (the batch size and backend by device) and are no class attributes."""
    given: dict[str, Any] = {
        "data_dir": _environment_path("EVAL_DATA_DIR"),
        "split": os.environ.get("EVAL_SPLIT") or None,
        "limit": _environment_number("EVAL_LIMIT"),
        "batch_size": _environment_number("EVAL_BATCH_SIZE"),
        "backend": os.environ.get("EVAL_BACKEND") or None,
        "out": _environment_path("EVAL_OUT"),
    }
    given = {name: value for name, value in given.items() if value is not None}
    return EvalSettings(checkpoint=Path(checkpoint), **given)


def load_questions(settings: EvalSettings) -> SpiderSplit:
    """The split's questions after --hardness and --limit; FileNotFoundError/ValueError name bad input."""
    return load_split(
        settings.data_dir, settings.split, hardness=settings.hardness, limit=settings.limit, progress=settings.progress
    )


def build_policy(settings: EvalSettings) -> Policy | BatchPolicy:
    """A scripted policy by name, or the checkpoint loaded as a ModelPolicy (CheckpointError if it cannot load)."""
    if settings.policy is not None:
        return make_policy(settings.policy)
    assert settings.checkpoint is not None
    if settings.backend == "vllm":
        return load_vllm_policy(settings.checkpoint, base_model=settings.base_model,
                                max_new_tokens=settings.max_new_tokens, temperature=settings.temperature,
                                seed=settings.seed, name=settings.name)
    if settings.backend == "unsloth":
        model, tokenizer = load_with_unsloth(settings.checkpoint,
                                             grouped_decode_attention=settings.grouped_decode_attention)
    else:
        model, tokenizer = load_checkpoint(settings.checkpoint, base_model=settings.base_model)
    return ModelPolicy(
        model, tokenizer, max_new_tokens=settings.max_new_tokens, temperature=settings.temperature, name=settings.name,
        **generation_options(settings.generation, settings.first_round_tokens),
    )


def generation_options(generation: str, first_round_tokens: int) -> dict[str, Any]:
    """ModelPolicy's attributes for a --generation mode (a loaded policy can be switched by setting them)."""
    return {"continuous": generation == "continuous",
            "first_round_tokens": first_round_tokens if generation == "rounds" else None}


def evaluate(settings: EvalSettings, split: SpiderSplit, policy: Policy | BatchPolicy) -> dict[str, Any]:
    """Play every question and return the report (see eval.report for its keys)."""
    torch.manual_seed(settings.seed)
    calls = getattr(policy, "generation_calls", None)  # a model policy's generate calls (reused across splits)
    calls_before = len(calls) if calls is not None else 0
    started = time.perf_counter()
    records = play_split(
        split, policy, step_budget=settings.step_budget, batch_size=settings.batch_size, progress=settings.progress,
        log_every=PROGRESS_LINE_SECONDS,
    )
    elapsed_s = time.perf_counter() - started
    report = build_report(records, settings=settings.to_dict(), elapsed_s=elapsed_s)
    if calls is not None:
        report["timing"]["generation"] = generation_summary(calls[calls_before:], elapsed_s)
    return report
