"""The real SmolLM2-135M-Instruct on CPU: its own tokens drive the tool loop (marked `smollm2`; deselect with
`-m "not smollm2"`). The warmed-up model is the embedded mode's (embedded.embedded_warmup_model), built once
and cached, so these tests and `python train.py` share it; they skip, saying why, where pip cannot fetch
SmolLM2."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import train  # noqa: E402  (imports unsloth first, as train.py must)
import embedded  # noqa: E402, I001  (after train: it loads transformers)
from spider_data import BUILTIN_DATA_DIR  # noqa: E402

pytestmark = [pytest.mark.smollm2, pytest.mark.slow]


@pytest.fixture(scope="module")
def warmed_smollm2(smollm2_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    agent, grpo, explicit = train.parse_config(["--model", str(smollm2_dir), "--output_dir",
                                                str(tmp_path_factory.mktemp("warmup")), "--report_to", "none"])
    embedded.apply_embedded_mode(agent, grpo, explicit)
    return embedded.embedded_warmup_model(agent, grpo, explicit, train.load_model)


def test_the_warm_up_lowers_the_loss_on_real_weights(warmed_smollm2: Path) -> None:
    losses = [json.loads(line)["loss"] for line in (warmed_smollm2.parent / "metrics.jsonl").read_text().splitlines()]
    assert len(losses) >= 4 and losses[-1] < 0.6 * losses[0]


def test_a_grpo_step_runs_the_models_own_tool_calls_through_sqlenv(warmed_smollm2: Path, tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def keep(trainer: Any) -> None:
        seen["trainer"] = trainer

    adapter = train.main(["--model", str(warmed_smollm2), "--output_dir", str(tmp_path), "--max_steps", "1",
                          "--report_to", "none", "--save_strategy", "no"], before_train=keep)
    assert adapter is not None and (adapter / "adapter_model.safetensors").is_file()
    rollouts = [json.loads(line) for line in (tmp_path / "easy" / "rollouts.jsonl").read_text().splitlines()]
    steps = [step for rollout in rollouts for step in rollout["steps"]]
    assert steps, "no tool call of the model's own reached SQLEnv"
    assert {step["tool"] for step in steps} <= {"describe", "sample", "query", "answer"}
    totals = seen["trainer"].callback_handler.callbacks
    logger = next(callback for callback in totals if hasattr(callback, "totals"))
    assert logger.totals.tool_calls >= len(steps) and logger.totals.episodes == 4


def test_eval_of_a_few_questions_writes_its_report(warmed_smollm2: Path, tmp_path: Path) -> None:
    from eval.__main__ import main as eval_main

    assert eval_main(["--checkpoint", str(warmed_smollm2), "--data-dir", str(BUILTIN_DATA_DIR), "--limit", "2",
                      "--max-new-tokens", "64", "--out", str(tmp_path), "--no-progress"]) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["by_hardness"]["overall"]["n"] == 2
    assert any(question["tool_calls"] for question in report["questions"])  # it calls tools, not only talks
