"""experiments/question_outcomes.py: a phase's question history joined with its gold queries' facts, the share of
groups that taught nothing by bucket, and which bucket predicts a group's fate (built-in data, no model)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
import question_outcomes  # noqa: E402
from question_outcomes import Group, brier, gold_facts, read_groups, report  # noqa: E402
from spider_data import BUILTIN_DATA_DIR  # noqa: E402


def _group(right: int, hardness: str, key: str = "db\tq") -> Group:
    return Group(key, right, 6, hardness, 1, "plain")


def test_gold_facts_read_each_training_question_s_class_tables_and_clauses() -> None:
    facts = gold_facts(BUILTIN_DATA_DIR)
    assert facts["town_library\tWhat is the total number of books?"] == ("easy", 1, "plain")
    assert {hardness for hardness, _, _ in facts.values()} >= {"easy", "medium", "hard"}
    assert any(tables >= 2 for _, tables, _ in facts.values())


def test_groups_of_questions_the_data_lacks_are_counted_and_left_out() -> None:
    facts = {"db\tq": ("easy", 1, "plain")}
    groups, unknown = read_groups({"db\tq": [[6, 6, 0.0], [3, 6, 1.0]], "db\tother": [[0, 6, 0.0]]}, facts)
    assert [group.right for group in groups] == [6, 3]
    assert unknown == 1


def test_guidance_decides_whether_an_all_wrong_group_taught_nothing() -> None:
    all_wrong, all_right, split = _group(0, "hard"), _group(6, "easy"), _group(3, "medium")
    assert [group.taught_nothing(guided=True) for group in (all_wrong, all_right, split)] == [False, True, False]
    assert [group.taught_nothing(guided=False) for group in (all_wrong, all_right, split)] == [True, True, False]


def test_a_grouping_that_separates_the_fates_scores_lower_than_the_phase_s_share() -> None:
    groups = [_group(6, "easy")] * 20 + [_group(2, "hard")] * 20
    by_class, alone = brier(groups, True, lambda group: group.hardness), brier(groups, True, None)
    assert by_class < alone / 4
    # A grouping that knows nothing (each bucket holds both fates alike) does no better than the share alone.
    mixed = [_group(6, name) for name in ("a", "b")] * 10 + [_group(2, name) for name in ("a", "b")] * 10
    assert brier(mixed, True, lambda group: group.hardness) >= brier(mixed, True, None)


def test_report_prints_shares_by_class_and_the_predictors_scores() -> None:
    groups = [_group(6, "easy")] * 3 + [_group(1, "hard")]
    text = report(groups, guided=True)
    assert text.startswith("4 groups of 1 questions; 75.0% taught nothing (all right)")
    assert "| easy | 3 | 100.0% | 100.0% |" in text
    assert "| hard | 1 | 0.0% | 16.7% |" in text
    assert "| class x tables |" in text and "| database |" in text


def test_a_history_from_other_data_is_refused_with_what_to_check(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    history = tmp_path / "question_history.json"
    history.write_text(json.dumps({"nowhere\tnothing": [[6, 6, 0.0]]}), encoding="utf-8")
    with pytest.raises(SystemExit):
        question_outcomes.main([str(history), "--data-dir", str(BUILTIN_DATA_DIR)])
    assert "is --data-dir the Spider folder the phase trained on?" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        question_outcomes.main([str(tmp_path / "missing.json")])
    assert "no question history at" in capsys.readouterr().err


def test_a_screened_phase_splits_its_groups_by_what_the_screen_s_episode_did(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The phase's screen/report.json, beside its adapter's folder, is read by default; a phase without one gets no
    screen rows."""
    easy = "town_library\tWhat is the total number of books?"
    facts = gold_facts(BUILTIN_DATA_DIR)
    other = next(key for key in facts if key != easy)
    unplayed = next(key for key in facts if key not in (easy, other))
    adapter = tmp_path / "mixed" / "adapter"
    adapter.mkdir(parents=True)
    history = adapter / "question_history.json"
    history.write_text(json.dumps({easy: [[6, 6, 0.0], [6, 6, 0.0]], other: [[2, 6, 1.0]], unplayed: [[1, 6, 1.0]]}),
                       encoding="utf-8")
    question_outcomes.main([str(history), "--data-dir", str(BUILTIN_DATA_DIR)])
    assert "| screen |" not in capsys.readouterr().out
    (tmp_path / "mixed" / "screen").mkdir()
    played = [{"db_id": key.split("\t")[0], "question": key.split("\t")[1], "correct": right}
              for key, right in ((easy, True), (other, False))]
    (tmp_path / "mixed" / "screen" / "report.json").write_text(json.dumps({"questions": played}), encoding="utf-8")
    question_outcomes.main([str(history), "--data-dir", str(BUILTIN_DATA_DIR)])
    printed = capsys.readouterr().out
    assert "1 of 2 questions wrong" in printed
    assert "| screened right | 2 | 100.0% | 100.0% |" in printed
    assert "| screened wrong | 1 | 0.0% | 33.3% |" in printed and "| not played | 1 | 0.0% | 16.7% |" in printed
    assert "| screen | 0." in printed  # its Brier row
    with pytest.raises(SystemExit):
        question_outcomes.main([str(history), "--data-dir", str(BUILTIN_DATA_DIR), "--screen",
                                str(tmp_path / "missing.json")])
    assert "no screen report at" in capsys.readouterr().err
