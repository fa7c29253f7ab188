"""question_screen.py: the phase's questions written as a split for the eval, the eval's report read back as each
question's outcome and the sampler's ranks, a failed eval reported with its own words, a report reused."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from datasets import Dataset

import question_screen
from question_screen import (
    RANK_RIGHT,
    RANK_WRONG,
    ScreenError,
    describe_screen,
    phase_questions,
    read_screen,
    run_screen,
    screen_ranks,
    write_screen_data,
)
from spider_data import BUILTIN_DATA_DIR, load_split, question_key

ITEMS = [{"db_id": "town_library", "question": "What is the total number of books?", "query": "SELECT count(*) FROM book"},
         {"db_id": "town_library", "question": "How many authors are there?", "query": "SELECT count(*) FROM author"}]


def _report(folder: Path, records: list[dict]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "report.json").write_text(json.dumps({"questions": records}), encoding="utf-8")
    return folder / "report.json"


def test_the_phase_s_rows_become_a_split_the_eval_reads_with_the_databases_linked(tmp_path: Path) -> None:
    rows = Dataset.from_list([{"db_id": item["db_id"], "question": item["question"], "gold_sql": item["query"],
                               "prompt": "p"} for item in ITEMS])
    assert phase_questions(rows) == ITEMS
    data = write_screen_data(ITEMS, BUILTIN_DATA_DIR, tmp_path)
    split = load_split(data, "dev", progress=False)
    assert [(example.db_id, example.question) for example in split.examples] == \
        [(item["db_id"], item["question"]) for item in ITEMS]
    assert all(example.is_usable for example in split.examples)  # the gold queries ran on the linked database


def test_the_report_gives_each_played_question_s_outcome_and_the_ranks_put_the_wrong_ones_first(
        tmp_path: Path) -> None:
    report = _report(tmp_path, [{"db_id": "a", "question": "q1", "correct": True},
                                {"db_id": "a", "question": "q2", "correct": False},
                                {"db_id": "a", "question": "q3", "correct": False, "skip_reason": "gold_failed"}])
    outcomes = read_screen(report)
    assert outcomes == {question_key("a", "q1"): True, question_key("a", "q2"): False}
    assert screen_ranks(outcomes) == {question_key("a", "q1"): RANK_RIGHT, question_key("a", "q2"): RANK_WRONG}
    line = describe_screen(outcomes, 3, 12.4)
    assert line == ("[train] screen: 2 of 3 questions played once by the start model in 12 s; 1 answered wrong, "
                    "served first in each pass, 1 right, served last")
    assert "read from the report a run before left" in describe_screen(outcomes, 3, None)


def test_a_report_already_there_is_read_without_playing_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _report(tmp_path, [{"db_id": "a", "question": "q1", "correct": False}])
    monkeypatch.setattr(question_screen.subprocess, "Popen", lambda *args, **kwargs: pytest.fail("played again"))
    assert run_screen(tmp_path / "missing", "base", ITEMS, BUILTIN_DATA_DIR, tmp_path, backend="transformers",
                      step_budget=10, max_new_tokens=64) == {question_key("a", "q1"): False}


def test_an_eval_that_fails_is_reported_with_its_own_last_words(tmp_path: Path) -> None:
    shown = io.StringIO()
    with pytest.raises(ScreenError) as error:
        run_screen(tmp_path / "no-such-adapter", "base", ITEMS, BUILTIN_DATA_DIR, tmp_path / "screen",
                   backend="transformers", step_budget=10, max_new_tokens=64, echo=shown)
    assert "the screen's eval" in str(error.value) and "exit code 2" in str(error.value)
    assert "no-such-adapter" in str(error.value.args[0].split("its last output:")[1])
    log = (tmp_path / "screen" / "eval.log").read_text(encoding="utf-8")
    # What the eval said went to the log and, as it came, to the echo, each line marked as the screen's.
    assert "no-such-adapter" in log
    assert shown.getvalue() == "".join(f"[screen] {line}" for line in log.splitlines(keepends=True))
    _report(tmp_path / "empty", [{"db_id": "a", "question": "q", "correct": False, "skip_reason": "gold_failed"}])
    with pytest.raises(ScreenError, match="played none of the phase's 2 questions"):
        run_screen(tmp_path, "base", ITEMS, BUILTIN_DATA_DIR, tmp_path / "empty", backend="transformers",
                   step_budget=10, max_new_tokens=64)
