"""How train.py may be launched: one process, or several of one host, and what several do after running out of memory.

    check_launch(agent, grpo)                      # before any model loads: ValueError for an unsupported setup
    advice = multi_process_oom_advice(grpo, agent, out_dir)   # the restart command, when one rank ran out of memory

Several processes of one host (DDP through `accelerate launch --config_file configs/accelerate/ddp.yaml` or
torchrun) suit both backends; DeepSpeed ZeRO takes the plain transformers backend, and the warm-up one process.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from output_folders import last_checkpoint
from sft import PHASE_NAME as WARMUP_PHASE


def uses_deepspeed(grpo: Any) -> bool:
    """Whether this run trains under DeepSpeed: `accelerate launch` with a DeepSpeed config sets
    ACCELERATE_USE_DEEPSPEED for every process; TRL's own --deepspeed CONFIG.json asks for it directly."""
    return bool(grpo.deepspeed) or os.environ.get("ACCELERATE_USE_DEEPSPEED", "false").lower() in ("true", "1")


def check_launch(agent: Any, grpo: Any) -> None:
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
    if agent.phase == WARMUP_PHASE and grpo.world_size > 1:
        raise ValueError(f"--phase sft is a one-process loop, but this launch has {grpo.world_size} processes "
                         "(each would write the same adapter): run `python train.py --phase sft` without "
                         "accelerate launch or torchrun")
    if agent.oversample_groups and grpo.world_size > 1:
        # TRL scores every rank's rows together and a group's rows may sit on several ranks: a rank cannot drop
        # or keep a group alone (dynamic_sampling.py).
        raise ValueError(f"--oversample_groups runs in one process, but this launch has {grpo.world_size}: leave "
                         "it at 0 under accelerate launch or torchrun, or train in one process")
    if agent.guide_unsolved and grpo.world_size > 1:  # the same: a group's rows may sit on several ranks
        raise ValueError(f"--guide_unsolved runs in one process, but this launch has {grpo.world_size}: leave it off "
                         "under accelerate launch or torchrun, or train in one process")


def multi_process_oom_advice(grpo: Any, agent: Any, out_dir: Path) -> str:
    """What to do after an out-of-memory error in a multi-process run: restart it, resumed and shorter."""
    fallback = agent.oom_fallback_completion_length
    shorter = fallback if fallback < grpo.max_completion_length else max(1, grpo.max_completion_length // 2)
    checkpoint = last_checkpoint(out_dir)
    resume = f"--resume (from {checkpoint.name}) " if checkpoint else "(no checkpoint yet, so without --resume) "
    return (f"out of memory on rank {grpo.process_index} of {grpo.world_size} at max_completion_length "
            f"{grpo.max_completion_length}; with several processes there is no automatic retry (one rank retrying "
            f"alone would hang the others in a collective): restart the same launch command {resume}"
            f"with --max_completion_length {shorter}")
