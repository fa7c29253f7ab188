"""train.py on several processes: two DDP ranks on CPU (gloo), launched the way GPU users launch it.

    accelerate launch --config_file configs/accelerate/ddp.yaml --num_processes 2 --mixed_precision no \\
        tests/test_distributed.py --report_dir DIR <train.py flags>

runs this file as each rank's script (the bottom of it): it installs tests/test_train.py's scripted
generation, calls train.main, and records what its rank ended with. accelerate's multi-GPU launcher
(torchrun underneath) falls back to CPU and gloo when there is no CUDA; `accelerate launch --cpu
--num_processes 2` would start one process only (accelerate's multi-CPU launch goes through mpirun).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:  # run as a rank's script by accelerate launch, not collected by pytest
    sys.path.insert(0, str(REPO_ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import train  # noqa: E402  (imports unsloth first, as train.py must)
from launch import check_launch  # noqa: E402
from tests.test_train import FakeTrainer, ScriptedAgent, read_jsonl  # noqa: E402

DDP_CONFIG = REPO_ROOT / "configs" / "accelerate" / "ddp.yaml"
PROCESSES = 2
OUTPUT_FILES = ["metrics.jsonl", "rollouts.jsonl", "train_config.json", "adapter/adapter_model.safetensors",
                "training_curves.png"]
# Logged per step by TRL (gathered over ranks) and by episode_metrics (gathered over ranks too).
STEP_METRICS = ["reward", "frac_reward_zero_std", "episode/accuracy", "episode/zero_advantage_groups",
                "episode/tool_calls", "episode/post_episode_calls", "episode/tool_error_rate"]


def phase_args(model: Path, output_dir: Path, *extra: str) -> list[str]:
    """A scripted easy phase of 2 questions x 2 generations, checkpointed every step."""
    return ["--phase", "easy", "--model", str(model), "--output_dir", str(output_dir), "--max_questions", "2",
            "--num_generations", "2", "--max_completion_length", "1536", "--save_steps", "1", "--report_to", "none",
            "--learning_rate", "1e-3", "--warmup_steps", "0", "--per_device_train_batch_size", "1", *extra]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def launch(report_dir: Path, train_args: list[str]) -> str:
    """Run train.py on PROCESSES ranks through accelerate launch and the shipped DDP config; returns the output."""
    command = [sys.executable, "-m", "accelerate.commands.launch", "--config_file", str(DDP_CONFIG),
               "--num_processes", str(PROCESSES), "--mixed_precision", "no", "--main_process_port", str(free_port()),
               __file__, "--report_dir", str(report_dir), *train_args]
    environment = {**os.environ, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    result = subprocess.run(command, cwd=REPO_ROOT, env=environment, capture_output=True, text=True, timeout=900)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    return output


def rank_reports(report_dir: Path) -> list[dict[str, Any]]:
    return [json.loads((report_dir / f"rank-{rank}.json").read_text()) for rank in range(PROCESSES)]


def step_entries(phase_dir: Path) -> list[dict[str, Any]]:
    return [entry for entry in read_jsonl(phase_dir / "metrics.jsonl") if "loss" in entry]


# --- one process and two write the same files, once -------------------------------------------


@pytest.mark.slow
def test_two_processes_train_like_one_and_write_every_file_once(tmp_path: Path, tiny_model_dir: Path) -> None:
    # One process with 2 accumulation steps and two with 1 each: both take 2 completions (one prompt
    # group) per optimizer step, so both run 2 steps per epoch; in the two-process run each group is
    # split across the ranks, the case that needs the gathers.
    single_dir, ddp_dir = tmp_path / "single", tmp_path / "ddp"
    scripted = ScriptedAgent()
    train.main(phase_args(tiny_model_dir, single_dir, "--gradient_accumulation_steps", "2"),
               before_train=scripted.install)
    output = launch(tmp_path / "reports", phase_args(tiny_model_dir, ddp_dir, "--gradient_accumulation_steps", "1"))
    single, ddp = single_dir / "easy", ddp_dir / "easy"

    for name in OUTPUT_FILES:
        assert (ddp / name).is_file() and (ddp / name).stat().st_size > 0, name
    assert sorted(path.name for path in ddp.iterdir()) == sorted(path.name for path in single.iterdir())
    assert output.count("[train] saved adapter to") == 1  # the main process saves; the other waits
    # Checkpoints are saved by both ranks together: one model, one random state per rank.
    assert {"adapter_model.safetensors", "trainer_state.json", "rng_state_0.pth", "rng_state_1.pth"} <= {
        path.name for path in (ddp / "checkpoint-2").iterdir()}

    # Every line once: the same steps, the same rollouts, the same whole-batch metrics as one process.
    assert [entry["step"] for entry in step_entries(ddp)] == [entry["step"] for entry in step_entries(single)] == [1, 2]
    assert len(read_jsonl(ddp / "metrics.jsonl")) == len(read_jsonl(single / "metrics.jsonl"))
    for ddp_entry, single_entry in zip(step_entries(ddp), step_entries(single), strict=True):
        for key in STEP_METRICS:
            assert ddp_entry[key] == pytest.approx(single_entry[key]), key
    assert all(entry["frac_reward_zero_std"] == 0.0 == entry["episode/zero_advantage_groups"]
               for entry in step_entries(ddp))  # a right and a wrong answer in every group, seen across ranks
    ddp_rollouts, single_rollouts = read_jsonl(ddp / "rollouts.jsonl"), read_jsonl(single / "rollouts.jsonl")
    assert [(rollout["step"], rollout["is_correct"]) for rollout in ddp_rollouts] == [
        (rollout["step"], rollout["is_correct"]) for rollout in single_rollouts]  # best and worst of each group
    assert json.loads((ddp / "train_config.json").read_text())["num_processes"] == PROCESSES
    assert json.loads((single / "train_config.json").read_text())["num_processes"] == 1

    # Each rank generated its own half and ended with the same LoRA weights (DDP averaged the gradients).
    reports = rank_reports(tmp_path / "reports")
    assert [report["world_size"] for report in reports] == [PROCESSES] * PROCESSES
    assert all(report["scripted_turns"] > 0 and report["global_step"] == 2 for report in reports)
    assert len({report["lora_sha256"] for report in reports}) == 1


@pytest.mark.slow
def test_two_processes_resume_from_their_checkpoint(tmp_path: Path, tiny_model_dir: Path) -> None:
    out = tmp_path / "out"
    launch(tmp_path / "first", phase_args(tiny_model_dir, out, "--gradient_accumulation_steps", "1"))
    launch(tmp_path / "resumed", phase_args(tiny_model_dir, out, "--gradient_accumulation_steps", "1",
                                            "--num_train_epochs", "2", "--resume"))
    assert [entry["step"] for entry in step_entries(out / "easy")] == [1, 2, 3, 4]  # none repeated, none lost
    assert [report["global_step"] for report in rank_reports(tmp_path / "resumed")] == [4, 4]
    assert len({report["lora_sha256"] for report in rank_reports(tmp_path / "resumed")}) == 1


# --- what a multi-process launch refuses --------------------------------------------------------


def test_unsloth_under_deepspeed_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    agent, _, _ = train.parse_config(["--backend", "unsloth"])
    one_gpu = SimpleNamespace(deepspeed=None, world_size=1)
    check_launch(agent, one_gpu)
    monkeypatch.setenv("ACCELERATE_USE_DEEPSPEED", "true")  # what accelerate launch sets for a DeepSpeed config
    with pytest.raises(ValueError, match="add --backend transformers"):
        check_launch(agent, one_gpu)
    agent.backend = "transformers"
    check_launch(agent, one_gpu)


def test_the_supervised_warm_up_is_refused_on_several_processes() -> None:
    agent, _, _ = train.parse_config(["--phase", "sft"])
    with pytest.raises(ValueError, match="one-process loop"):
        check_launch(agent, SimpleNamespace(deepspeed=None, world_size=2))


def test_batch_check_counts_every_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORLD_SIZE", "2")
    # Stop before TRL's own checks: they would set up devices, i.e. join a 2-process group that is not there.
    monkeypatch.setattr(train.GRPOConfig, "__post_init__", lambda self: None)
    train.parse_config(["--num_generations", "6", "--per_device_train_batch_size", "1",
                        "--gradient_accumulation_steps", "3"])  # 1 x 3 x 2 = 6
    with pytest.raises(ValueError, match=r"gradient_accumulation_steps x 2 processes = 8 completions"):
        train.parse_config(["--num_generations", "6", "--per_device_train_batch_size", "1",
                            "--gradient_accumulation_steps", "4"])


def test_out_of_memory_on_several_processes_stops_with_how_to_restart(tmp_path: Path) -> None:
    agent, _, _ = train.parse_config(["--output_dir", str(tmp_path)])
    (tmp_path / "checkpoint-3").mkdir()
    grpo = SimpleNamespace(world_size=2, process_index=1, max_completion_length=512)
    FakeTrainer.made = 0
    import torch

    with pytest.raises(torch.OutOfMemoryError, match=r"restart the same launch command --resume \(from "
                                                     r"checkpoint-3\) with --max_completion_length 384"):
        train.train_with_oom_fallback(lambda: FakeTrainer(grpo), grpo, agent, None, tmp_path)
    assert FakeTrainer.made == 1  # no second trainer: a retry on one rank would hang the other


# --- each rank's script (run by accelerate launch in the tests above) --------------------------


class RankScriptedAgent(ScriptedAgent):
    """ScriptedAgent numbering generations across ranks (each rank holds one completion of a group),
    so the two ranks together answer as one process does: right, then wrong."""

    def __init__(self, rank: int) -> None:
        super().__init__()
        self.rank = rank

    def turn(self, text: str, generation: int) -> str:
        return super().turn(text, generation + self.rank)


def accept_indexed_cpu_locations() -> None:
    """Let torch.load map tensors to "cpu:0", the device accelerate gives every CPU rank.

    Resuming with several processes, the HF Trainer loads the optimizer with map_location=args.device, and
    torch restores to "cpu" only ("RuntimeError: don't know how to restore data location of
    torch.storage.UntypedStorage (tagged with cpu:0)"). GPU ranks map to "cuda:N", which torch knows, so
    this is for CPU test runs only, not for train.py.
    """
    import torch

    def restore(storage: Any, location: str) -> Any:
        return storage if location.startswith("cpu:") else None

    torch.serialization.register_package(11, lambda storage: None, restore)  # after torch's own "cpu" (10)


def run_rank(report_dir: Path, train_args: list[str]) -> None:
    """Train this rank with scripted generation, then record its step, its turns and its LoRA weights."""
    accept_indexed_cpu_locations()
    rank = int(os.environ["RANK"])
    agent = RankScriptedAgent(rank)
    trainers: list[Any] = []

    def install(trainer: Any) -> None:
        agent.install(trainer)
        trainers.append(trainer)

    train.main(train_args, before_train=install)
    trainer = trainers[-1]
    lora = sorted((name, weight) for name, weight in trainer.model.named_parameters() if "lora_" in name)
    digest = hashlib.sha256(b"".join(weight.detach().cpu().numpy().tobytes() for _, weight in lora)).hexdigest()
    report = {"rank": rank, "world_size": trainer.accelerator.num_processes, "global_step": trainer.state.global_step,
              "scripted_turns": agent.calls, "lora_sha256": digest}
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / f"rank-{rank}.json").write_text(json.dumps(report))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="one rank of the distributed test: train.py, scripted")
    parser.add_argument("--report_dir", type=Path, required=True)
    known, rest = parser.parse_known_args()
    run_rank(known.report_dir, rest)
