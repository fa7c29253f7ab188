"""benchmarks/class_deferral.py: the priors' simulated phases, the exact screen table, and real held-out pass rates
read from a learning proof's results (with the real Spider data)."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import class_deferral  # noqa: E402
from class_deferral import PRIORS, Question, all_right_by_screen, heldout_questions, simulate  # noqa: E402


def test_a_phase_of_questions_always_right_is_all_right_groups_and_always_wrong_none() -> None:
    """Under guidance only an all-right group taught nothing, whatever the prior."""
    for prior in PRIORS.values():
        assert simulate([Question(1.0, "easy")] * 20, prior, 0, 0.75, draw=True) == (1.0, 1.0)
        assert simulate([Question(0.0, "extra")] * 20, prior, 0, 0.75, draw=True) == (0.0, 0.0)


def test_a_screen_under_the_class_prior_still_serves_its_wrong_questions_first() -> None:
    """Half the questions always right, half always wrong: screened, a phase of fewer groups than wrong questions
    trains almost only wrong ones, with the class prior or without; the prior alone cannot tell them apart so well."""
    questions = [Question(1.0, "easy")] * 10 + [Question(0.0, "extra")] * 10
    by_class = PRIORS["class (--defer_by_class)"]
    screened, screened_by_class, by_class_alone = (
        simulate(questions, prior, 0, 0.75, draw=True, screened=screen)[0]
        for prior, screen in ((None, True), (by_class, True), (by_class, False)))
    assert screened < 0.1 and screened_by_class < 0.1 < by_class_alone


def test_a_screen_sorts_questions_by_what_their_groups_will_be() -> None:
    rows = all_right_by_screen([Question(1.0, "easy"), Question(0.0, "hard")], 1)
    assert rows == [(0, 0.5, 0.0), (1, 0.5, 1.0)]
    # Half-right questions: a group of six is all right 1 time in 64, whatever one episode showed.
    (_, share_wrong, alike_wrong), (_, _, alike_right) = all_right_by_screen([Question(0.5, "medium")], 1)
    assert share_wrong == 0.5 and alike_wrong == alike_right == pytest.approx(0.5 ** 6)


def test_accuracy_by_bucket_is_the_runs_share_right_over_its_questions() -> None:
    questions = [Question(0.9, "easy", share_right=1.0), Question(0.5, "easy", share_right=0.5),
                 Question(0.1, "hard", share_right=0.0)]
    assert class_deferral.accuracy_by(questions, lambda question: question.hardness) == {"easy": 0.75, "hard": 0.0}


def test_the_class_prior_keys_its_windows_on_the_class_and_a_screen_on_the_episodes_it_played() -> None:
    question = Question(1.0, "hard", tables=5, database="concert_singer")
    rng = random.Random(0)
    assert PRIORS["class (--defer_by_class)"](question, rng) == "hard"
    assert PRIORS["class x tables"](question, rng) == "hard, 3"
    assert PRIORS["database"](question, rng) == "concert_singer"
    assert PRIORS["screen, 2 episodes"](question, rng) == "2"


@pytest.mark.spider
def test_held_out_pass_rates_are_the_share_of_runs_right_on_each_question(spider_path: Path, tmp_path: Path) -> None:
    questions = 614  # the held-out databases' usable questions (experiments/heldout_databases.txt)
    runs = {f"arm/seed{seed}/epoch": {"arm": "arm", "evals": {"heldout": {"outcomes": outcomes}}}
            for seed, outcomes in ((1, "1" * questions), (2, "0" + "1" * (questions - 1)))}
    runs["other/seed1/epoch"] = {"arm": "other", "evals": {"heldout": {"outcomes": "0" * questions}}}
    results = tmp_path / "results.json"
    results.write_text(json.dumps({"runs": runs}), encoding="utf-8")
    read = heldout_questions(results, ["arm"], spider_path)
    assert len(read) == questions
    assert read[0].pass_rate == pytest.approx(1.5 / 3) and read[1].pass_rate == pytest.approx(2.5 / 3)
    assert (read[0].share_right, read[1].share_right) == (0.5, 1.0)
    assert {question.hardness for question in read} == {"easy", "medium", "hard", "extra"}
    with pytest.raises(ValueError, match="no held-out eval of missing"):
        heldout_questions(results, ["missing"], spider_path)


def test_a_results_file_that_is_not_there_is_refused_in_one_line(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        class_deferral.main(["--heldout-results", str(tmp_path / "nowhere.json"), "--runs", "1"])
    assert "nowhere.json" in capsys.readouterr().err
