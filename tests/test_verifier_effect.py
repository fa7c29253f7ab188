"""experiments/verifier_effect.py: an eval report's answers checked again, by the exact text asked for and by the
relaxed verifier, on the built-in data (a report of the real 0.5B's warm-up is committed and re-scored too)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
import verifier_effect  # noqa: E402
from agent_env import load_gold  # noqa: E402
from spider_data import BUILTIN_DATA_DIR, database_path, load_split  # noqa: E402
from verifier import format_answer  # noqa: E402

COMMITTED_REPORT = (Path(__file__).resolve().parents[1] / "docs" / "gpu_measurements"
                    / "builtin_dev_eval_sft_seed2_2026-12-01f.json")


def _question(example, answer: str | None, correct: bool) -> dict:
    return {"db_id": example.db_id, "question": example.question, "hardness": "easy", "gold_sql": example.gold_sql,
            "answer": answer, "correct": correct, "skip_reason": None}


def _multi_row_example():
    """A built-in dev question whose gold result is a list of at least two values, in no particular order."""
    for example in load_split(BUILTIN_DATA_DIR, "dev", progress=False).usable():
        gold = load_gold(str(database_path(BUILTIN_DATA_DIR, example.db_id)), example.gold_sql)
        if len(gold.rows) >= 2 and len(gold.rows[0]) == 1 and not gold.ordered:
            return example, gold
    raise AssertionError("the built-in dev split has no unordered one-column list")


def test_a_reordered_list_is_right_only_by_the_relaxed_reading(tmp_path: Path, capsys) -> None:
    example, gold = _multi_row_example()
    exact = format_answer(gold.rows)
    reordered = format_answer(list(reversed(gold.rows)))
    report = {"settings": {"data_dir": str(BUILTIN_DATA_DIR)},
              "questions": [_question(example, exact, True), _question(example, reordered, True),
                            _question(example, None, False), _question(example, "x", False) | {"skip_reason": "s"}]}
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report))
    assert verifier_effect.main([str(path), "--json", str(tmp_path / "out.json")]) == 0
    table = json.loads((tmp_path / "out.json").read_text())["by_hardness"]
    assert table["overall"] == {"n": 3, "relaxed": pytest.approx(2 / 3), "exact_text": pytest.approx(1 / 3)}
    assert "1 of 2 right answers are right only by the relaxed reading" in capsys.readouterr().out


def test_a_report_scored_by_another_verifier_or_data_is_refused(tmp_path: Path) -> None:
    example, gold = _multi_row_example()
    report = {"settings": {}, "questions": [_question(example, "certainly wrong", True)]}
    with pytest.raises(ValueError, match="not from this verifier or this data"):
        verifier_effect.rescore(report, BUILTIN_DATA_DIR)
    with pytest.raises(FileNotFoundError, match="pass the report's --data-dir"):
        verifier_effect.rescore(report, tmp_path)


def test_the_committed_warm_up_report_rescores_as_recorded() -> None:
    report = json.loads(COMMITTED_REPORT.read_text())
    table = verifier_effect.by_hardness(verifier_effect.rescore(report, BUILTIN_DATA_DIR))
    assert table["overall"]["n"] == 123 and table["overall"]["relaxed"] == pytest.approx(45 / 123)
    assert table["overall"]["exact_text"] == pytest.approx(44 / 123)  # one reordered list (docs/learning_proof.md)
