"""benchmarks/decode_step.py's summary, from rows as a GPU run writes them (the measurement itself needs CUDA)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import decode_step  # noqa: E402


def test_the_summary_says_what_the_lora_adds_to_a_step_and_how_the_step_grows_with_the_batch(
        capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"lora": lora, "core": "grouped", "padding": "padded", "batch": batch, "decode_ms": ms, "replays": 40}
            for lora, batch, ms in [("attached", 6, 5.4), ("attached", 96, 7.6), ("disabled", 6, 3.0),
                                    ("disabled", 96, 4.0)]]
    rows.append({"core": "unsloth", "padding": "equal", "batch": 6, "decode_ms": 9.0, "replays": 40})  # before --lora
    decode_step.print_table(rows)
    printed = capsys.readouterr().out
    assert "LoRA attached, grouped, padded: 96 rows / 6 rows = 1.41x the step" in printed
    assert "LoRA disabled, grouped, padded: 96 rows / 6 rows = 1.33x the step" in printed
    assert "grouped, padded, 6 rows: the LoRA adds 2.40 ms to a 3.00 ms step (1.80x)" in printed
    assert "grouped, padded, 96 rows: the LoRA adds 3.60 ms to a 4.00 ms step (1.90x)" in printed
    assert "| attached | grouped | padded | 6 | 5.4 |" in printed and "|  | unsloth | equal | 6 | 9.0 |" in printed
    assert "WARNING" not in printed


def test_an_eager_run_is_called_so(capsys: pytest.CaptureFixture[str]) -> None:
    rows = [{"lora": "attached", "core": "grouped", "padding": "padded", "batch": 6, "decode_ms": 36.0, "replays": 0}]
    decode_step.print_table(rows)
    printed = capsys.readouterr().out
    assert "WARNING: no decode step replayed a CUDA graph" in printed and "the LoRA adds" not in printed


def test_a_steps_gpu_busy_share_is_its_kernels_milliseconds_over_its_wall_milliseconds() -> None:
    assert decode_step.busy_summary(24, busy_ms=192.0, wall_ms=576.0, steps=96) == {
        "batch": 24, "step_wall_ms": 6.0, "step_gpu_busy_ms": 2.0, "gpu_busy_share": 0.333}
    assert decode_step.busy_summary(6, busy_ms=1.0, wall_ms=0.0, steps=96)["gpu_busy_share"] is None
