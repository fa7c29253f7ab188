"""Where a phase's outputs live: its folder, its checkpoints, its adapter, and an earlier run moved aside.

    out_dir = phase_dir(grpo, "easy")                 # OUTPUT_DIR/easy: checkpoints, adapter/, logs, curves
    checkpoint = check_outputs(agent, grpo, phase)    # what --resume continues; errors for what cannot work
    start_afresh(out_dir, agent)                      # a new run moves an earlier one aside, never over it

Every phase, the warm-up's included, saves its LoRA to ``OUTPUT_DIR/<phase>/adapter``, where a later phase's
``start_from`` (curriculum.py) finds it; a run that stops keeps its ``checkpoint-N`` folders for ``--resume``. Each
checkpoint carries what the adapter folder carries beside the LoRA (``CheckpointCompanions``), so that it can be
evaluated or started from like the adapter: ``python -m eval --checkpoint outputs/mixed/checkpoint-30``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

from accelerate import PartialState
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

import models

ADAPTER_DIRNAME = "adapter"  # one name for every phase's LoRA folder, the warm-up's included
# The questions the warm-up trained on (spider_data.question_key), kept beside its LoRA and carried by every phase after
# it, so that a GRPO phase can train on others (--skip_warmup_questions).
WARMUP_QUESTIONS_FILENAME = "warmup_questions.json"


def phase_dir(grpo: Any, phase_name: str) -> Path:
    return Path(grpo.output_dir) / phase_name


def last_checkpoint(directory: Path) -> Path | None:
    checkpoints = sorted(directory.glob("checkpoint-*"), key=lambda path: int(path.name.split("-")[-1]))
    return checkpoints[-1] if checkpoints else None


def check_outputs(agent: Any, grpo: Any, phase: Any) -> Path | None:
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


def start_afresh(out_dir: Path, agent: Any) -> None:
    """A new run of a phase moves the earlier run's folder aside (never silently over it); --resume continues it."""
    if agent.resume:
        return
    if agent.dry_run:
        if out_dir.is_dir() and any(out_dir.iterdir()):
            print(f"[train] {out_dir} holds an earlier run: a real run would move it aside and start afresh")
        return
    with PartialState().main_process_first():  # the main process moves it; the others then find none
        earlier = move_earlier_run_aside(out_dir)
    if earlier is not None:
        print(f"[train] {out_dir} held an earlier run: moved it to {earlier}; this run starts afresh "
              "(--resume continues a run instead)", flush=True)


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


def save_warmup_questions(folder: Path, question_keys: Collection[str]) -> None:
    """The warm-up's questions beside a LoRA (nothing when there are none to carry)."""
    if question_keys:
        (Path(folder) / WARMUP_QUESTIONS_FILENAME).write_text(json.dumps(sorted(question_keys)), encoding="utf-8")


def warmup_questions(folder: Path) -> frozenset[str]:
    """The questions the warm-up behind an adapter folder trained on; empty where it recorded none (warm-ups saved
    before the file existed, or a folder not grown from a warm-up)."""
    path = Path(folder) / WARMUP_QUESTIONS_FILENAME
    return frozenset(json.loads(path.read_text(encoding="utf-8"))) if path.is_file() else frozenset()


def save_companions(folder: Path, tool_token_rows: dict[str, Any], sampler: Any,
                    warmup_question_keys: Collection[str] = ()) -> None:
    """The files a phase keeps beside a LoRA it saves (its adapter folder, each checkpoint): the tool-tag rows its
    start adapter carried into the base weights (without them the folder's tool calls would be decoded by the base
    model's untrained tag rows), the question history of ``sampler`` (sampling.InformativeSampler, or None),
    which the next phase's sampler, or a resumed run's, reads, and the warm-up's questions it carries."""
    models.save_tool_token_rows(folder, tool_token_rows)
    if sampler is not None:
        sampler.save(folder)
    save_warmup_questions(folder, warmup_question_keys)


class CheckpointCompanions(TrainerCallback):
    """Gives every ``checkpoint-N`` the companions its phase's adapter folder gets (``save_companions``), as of that
    step, so that a checkpoint loads like the adapter."""

    def __init__(self, tool_token_rows: dict[str, Any], sampler: Any,
                 warmup_question_keys: Collection[str] = ()) -> None:
        self.tool_token_rows = tool_token_rows
        self.sampler = sampler
        self.warmup_question_keys = warmup_question_keys

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl,
                **kwargs: Any) -> TrainerControl:
        folder = Path(args.output_dir) / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
        if state.is_world_process_zero and folder.is_dir():
            save_companions(folder, self.tool_token_rows, self.sampler, self.warmup_question_keys)
        return control
