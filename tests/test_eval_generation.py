"""benchmarks/eval_generation.py on CPU: the generation modes side by side with the tiny model."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import eval_generation


def test_the_modes_play_the_same_episodes_and_rounds_report_their_decode_work(tiny_model_dir: Path,
                                                                              tmp_path: Path) -> None:
    out = tmp_path / "modes.json"
    eval_generation.main(["--checkpoint", str(tiny_model_dir), "--limit", "4", "--batch-size", "4",
                          "--max-new-tokens", "8", "--first-round-tokens", "3", "--backend", "transformers",
                          "--modes", "padded", "rounds", "--out", str(out)])
    modes = json.loads(out.read_text())["modes"]
    assert set(modes) == {"padded", "rounds"}
    assert all(row["played_as_first_mode"] and row["questions"] == 4 for row in modes.values())
    assert modes["rounds"]["episodes_played_otherwise"] == modes["rounds"]["scored_otherwise"] == 0
    # Rounds split each turn's call in two, and never decode more row-steps than one call a turn.
    assert modes["rounds"]["calls"] > modes["padded"]["calls"]
    assert 0 < modes["rounds"]["row_steps"] <= modes["padded"]["row_steps"]


def test_continuous_batching_with_unsloth_is_refused_before_loading(tiny_model_dir: Path,
                                                                   capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit):
        eval_generation.main(["--checkpoint", str(tiny_model_dir), "--backend", "unsloth", "--modes", "continuous"])
    assert "add --backend transformers" in capsys.readouterr().err


def test_differences_count_episodes_played_otherwise_and_those_scored_otherwise() -> None:
    def question(answer: str, correct: bool) -> dict:
        return {"tool_calls": 2, "answer": answer, "stop_reason": "answered", "correct": correct, "turns": 3,
                "generated_tokens": 40}

    reference = {"questions": [question("3", True), question("4", False), question("5", True)]}
    report = {"questions": [question("3", True), question("four", False), question("6", False)]}
    assert eval_generation.differences(report, reference) == {"episodes_played_otherwise": 2, "scored_otherwise": 1}
    assert eval_generation.differences(reference, reference) == {"episodes_played_otherwise": 0, "scored_otherwise": 0}
