"""How a GRPO phase's episodes are batched: whole prompt groups an optimizer step, generated in rounds or reused.

TRL's GRPOTrainer steps the optimizer every ``gradient_accumulation_steps`` micro-batches and generates every
``steps_per_generation`` x ``num_iterations`` micro-batches. Either may be the larger:

- fewer micro-batches a generation than a step: the step generates in several rounds, all from the weights it
  updates (on-policy). train.py's default: 16 groups a step in rounds of 4, for an L4's memory.
- more: one generation batch trains several optimizer steps, like PPO's mini-batches. The later steps train on
  episodes the weights before the last update wrote (TRL's clipped ratio bounds how far they move); the
  generation, most of a step's time, buys several updates.

A generation round that ends inside an optimizer step is refused: one of the two must divide the other. Where a
generation batch trains several steps, checkpoints fall between batches.
"""

from __future__ import annotations

import math
import os
from fractions import Fraction
from typing import Any

# Rows generated together grow the KV cache; a step of more prompt groups than this generates them in rounds
# (TRL's steps_per_generation), unless --generation_batch_size or --steps_per_generation is given. The
# 1.7B-shaped step (random weights, 1024-token completions) peaked at 8.2 GiB on the H200 generating 2 groups and
# 12.3 GiB generating 4; the default step of 16 groups in four such rounds at 12.4 GiB reserved (docs/gpu.md,
# 2026-12-03c and 2026-12-04), under an L4's 22.5. A GPU with room generates a whole step at once with
# --steps_per_generation equal to --gradient_accumulation_steps.
MAX_GENERATION_GROUPS = 4


def launched_processes() -> int:
    """The processes the launcher started (its WORLD_SIZE; the devices are not set up when the settings are read)."""
    return int(os.environ.get("WORLD_SIZE", "1"))


def episodes_per_step(grpo: Any) -> int:
    """Completions an optimizer step trains on, over every process: TRL and Unsloth count every process's, so
    1 x 3 on 2 GPUs holds one whole group of 6."""
    return grpo.per_device_train_batch_size * grpo.gradient_accumulation_steps * launched_processes()


def episodes_per_generation(grpo: Any) -> int:
    """Completions one generation round generates for training, over every process: ``steps_per_generation``
    micro-batches (the extra groups of --oversample_groups come on top)."""
    return grpo.per_device_train_batch_size * launched_processes() * grpo.steps_per_generation


def optimizer_steps_per_generation(grpo: Any) -> Fraction:
    """Optimizer steps that one generation batch trains: 1/4 where a step generates in four rounds, 3 where each
    generation batch trains three steps."""
    return Fraction(grpo.steps_per_generation * grpo.num_iterations, grpo.gradient_accumulation_steps)


def nearest_valid_batches(per_device: int, accumulation: int, num_generations: int, processes: int = 1) -> list[str]:
    """Settings near the given ones whose step holds whole prompt groups: the accumulations just below and above
    at the same micro-batch, and micro-batches of one group for about the same step."""
    unit = num_generations // math.gcd(per_device * processes, num_generations)  # valid accumulations: its multiples
    below = accumulation // unit * unit
    options = [f"--per_device_train_batch_size {per_device} --gradient_accumulation_steps {candidate}"
               for candidate in (below, below + unit) if candidate >= 1]
    groups = max(1, round(per_device * accumulation / num_generations))
    options.append(f"--per_device_train_batch_size {num_generations} --gradient_accumulation_steps {groups}")
    return options


def generation_steps(per_device: int, accumulation: int, processes: int, num_generations: int,
                     max_groups: int) -> int:
    """TRL's steps_per_generation for an optimizer step generated in rounds of at most ``max_groups`` prompt groups:
    the most micro-batches a round can hold that divide the step evenly (rollouts stay on-policy) and make whole
    groups; the whole step in one round (TRL's default) when no smaller round does."""
    rows_per_micro_batch = per_device * processes
    for steps in range(accumulation, 0, -1):
        rows = rows_per_micro_batch * steps
        if accumulation % steps == 0 and rows % num_generations == 0 and rows <= max_groups * num_generations:
            return steps
    return accumulation


def check_whole_groups(grpo: Any) -> None:
    """Where TRL is to derive the generation batch from the step, the step must hold whole prompt groups
    (ValueError with the nearest settings that do)."""
    processes, batch = launched_processes(), episodes_per_step(grpo)
    if batch % grpo.num_generations:
        options = "\n  ".join(nearest_valid_batches(grpo.per_device_train_batch_size, grpo.gradient_accumulation_steps,
                                                    grpo.num_generations, processes))
        across = f" x {processes} processes" if processes > 1 else ""
        raise ValueError(
            f"per_device_train_batch_size x gradient_accumulation_steps{across} = {batch} completions per step, "
            f"which is not a multiple of --num_generations {grpo.num_generations}: GRPO needs whole groups of "
            f"{grpo.num_generations} completions per prompt. Nearest valid settings:\n  {options}"
        )


def default_generation_steps(grpo: Any) -> int:
    """steps_per_generation when neither it nor the generation batch is given: the step in rounds of at most
    MAX_GENERATION_GROUPS groups."""
    return generation_steps(grpo.per_device_train_batch_size, grpo.gradient_accumulation_steps, launched_processes(),
                            grpo.num_generations, MAX_GENERATION_GROUPS)


def check_rounds_meet_steps(grpo: Any) -> None:
    """Generation rounds and optimizer steps must nest (ValueError saying how otherwise): a round that ends inside
    a step would train that step on two rounds of which one is off-policy, and its logs would mix the two."""
    ratio = optimizer_steps_per_generation(grpo)
    if ratio.numerator == 1 or ratio.denominator == 1:
        return
    micro_batches = grpo.steps_per_generation * grpo.num_iterations
    iterations = f" x --num_iterations {grpo.num_iterations}" if grpo.num_iterations != 1 else ""
    accumulation = grpo.gradient_accumulation_steps
    raise ValueError(
        f"a generation batch of {micro_batches} micro-batches (--steps_per_generation {grpo.steps_per_generation}"
        f"{iterations}, i.e. --generation_batch_size {grpo.generation_batch_size}) and an optimizer step of "
        f"{accumulation} (--gradient_accumulation_steps): one must divide "
        f"the other. A divisor of {accumulation} generates each step in rounds; a multiple of {accumulation} "
        f"trains several optimizer steps on each generation batch"
    )


def align_checkpoints(grpo: Any) -> None:
    """Where each generation batch trains several optimizer steps, keep checkpoints between batches (--save_steps
    rounded up to a multiple of those steps): TRL saves no half-trained batch, so --resume from inside one would
    generate the batch's prompts again and skip others."""
    reuse = optimizer_steps_per_generation(grpo)
    if reuse > 1 and grpo.save_strategy == "steps" and grpo.save_steps >= 1:
        steps_per_batch = int(reuse)
        grpo.save_steps = math.ceil(grpo.save_steps / steps_per_batch) * steps_per_batch


def phase_length(questions: int, grpo: Any) -> str:
    """How long a GRPO phase runs, for the log: its optimizer steps and episodes, --max_steps where set, else about
    its epochs' (TRL rounds each epoch's steps and drops a last generation batch short of whole groups); and how
    many optimizer steps each generation batch trains, where more than one."""
    per_step = episodes_per_step(grpo)
    reuse = optimizer_steps_per_generation(grpo)
    generated = episodes_per_generation(grpo)
    if grpo.max_steps > 0:
        steps, source = grpo.max_steps, " (--max_steps)"
    else:
        steps = math.ceil(questions * grpo.num_generations * grpo.num_train_epochs * grpo.num_iterations / per_step)
        source = ""
    if reuse > 1:
        groups = generated // grpo.num_generations
        batches = (f", {reuse} to each generation batch of {generated} episodes ({groups} "
                   f"question{'s' * (groups != 1)} x {grpo.num_generations})")
    else:
        groups = per_step // grpo.num_generations
        batches = f" ({groups} question{'s' * (groups != 1)} x {grpo.num_generations})"
    reused = f", each trained {grpo.num_iterations} times" if grpo.num_iterations > 1 else ""
    return (f"{'' if source else 'about '}{steps} optimizer steps{source} of {per_step} episodes{batches}: "
            f"{steps * per_step // grpo.num_iterations} episodes{reused}")
