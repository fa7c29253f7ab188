"""Per-hardness numbers from hand-made records: what counts, what is a rate of what, empty groups."""

from __future__ import annotations

import pytest

from eval import metrics
from eval.runner import QuestionRecord


def record(hardness: str = "easy", **fields) -> QuestionRecord:
    return QuestionRecord(db_id="db", question="q", hardness=hardness, gold_sql="SELECT 1", **fields)


def test_rates_are_per_scored_episode() -> None:
    records = [
        record(correct=True, steps=3, answer="1", reward=1.05),
        record(correct=False, steps=5, answer="2", post_episode_calls=2, tool_errors=1, reward=-0.2),
        record(steps=10, tool_errors=2, unknown_tool_calls=1, stop_reason="call_cap"),
        record(skip_reason="gold query returns no rows"),
    ]
    stats = metrics.group_stats(records)
    assert stats.n == 3 and stats.correct == 1
    assert stats.accuracy == pytest.approx(1 / 3)
    assert stats.mean_steps == 6 and stats.mean_steps_correct == 3
    assert stats.post_episode_calls == pytest.approx(2 / 3)
    assert stats.answered == pytest.approx(2 / 3)
    assert stats.tool_error_rate == pytest.approx(3 / (3 + 5 + 10 + 1))  # unknown tools are calls, and errors
    assert stats.mean_reward == pytest.approx(0.85 / 3)


def test_a_group_without_questions_measures_nothing() -> None:
    stats = metrics.group_stats([record(skip_reason="database file missing")])
    assert stats.n == 0 and stats.correct == 0
    assert stats.accuracy is stats.mean_steps is stats.tool_error_rate is stats.answered is None


def test_no_calls_means_no_tool_error_rate() -> None:
    assert metrics.group_stats([record(steps=0)]).tool_error_rate is None


def test_by_hardness_groups_in_spider_order_with_overall_last() -> None:
    records = [record("hard", correct=True, steps=4), record("easy", steps=2), record("easy", correct=True, steps=3)]
    stats = metrics.by_hardness(records)
    assert list(stats) == ["easy", "medium", "hard", "extra", "overall"]
    assert [stats[group].n for group in stats] == [2, 0, 1, 0, 3]
    assert stats["easy"].accuracy == 0.5 and stats["hard"].accuracy == 1.0
    assert stats["overall"].accuracy == pytest.approx(2 / 3)


def test_skips_and_stops_are_counted_by_reason() -> None:
    records = [
        record(skip_reason="database file missing"),
        record(skip_reason="database file missing"),
        record(skip_reason="gold query fails"),
        record(stop_reason="no_tool_call"),
        record(stop_reason="call_cap"),
        record(stop_reason="no_tool_call"),
    ]
    assert metrics.skipped_by_reason(records) == {"database file missing": 2, "gold query fails": 1}
    assert metrics.stop_reasons(records) == {"no_tool_call": 2, "call_cap": 1}


def test_wrong_answers_are_told_apart_by_what_their_queries_returned() -> None:
    records = [
        QuestionRecord("d", "q", "easy", "S", correct=True, answer="1", saw_gold_result=True, executed_queries=1),
        QuestionRecord("d", "q", "easy", "S", answer="1.0 apples", saw_gold_result=True, executed_queries=2),
        QuestionRecord("d", "q", "hard", "S", saw_gold_result=True, executed_queries=1),  # found it, never answered
        QuestionRecord("d", "q", "hard", "S", answer="3", executed_queries=3),
        QuestionRecord("d", "q", "hard", "S", answer="4", executed_queries=1),
        QuestionRecord("d", "q", "medium", "S", answer="5", tool_errors=2),  # every query failed
        QuestionRecord("d", "q", None, "S", skip_reason="gold query fails"),  # not scored: not counted
    ]
    assert metrics.wrong_answer_kinds(records) == {
        "gold result seen, answer wrong": 1, "gold result seen, no answer": 1, "no query ran": 1,
        "no query returned the gold result": 2}
    assert metrics.wrong_answer_kinds(records[:1]) == {}



def test_what_followed_a_refused_query_counts_refused_episodes_only_by_their_next_query() -> None:
    def call(tool: str, error: str | None = None, after_episode: bool = False, sql: str = "SELECT 1") -> dict:
        return {"tool": tool, "arguments": {"sql": sql} if tool == "query" else {"value": "1"}, "output": "",
                "error": error, "after_episode": after_episode}

    refused = call("query", "SQLite error: no such column: nme", sql="SELECT nme FROM t")
    records = [record(tool_calls=[refused, call("query"), call("answer")]),  # a changed query (wrong)
               record(tool_calls=[refused, call("query"), call("answer")], correct=True),  # a changed query, right
               record(tool_calls=[refused, call("query", "refused again", sql="SELECT  nme\nFROM t"),
                                  call("answer")]),  # the same words again
               record(tool_calls=[refused, call("answer"), call("query", after_episode=True)]),  # too late
               record(tool_calls=[call("query"), call("answer")]),  # nothing refused: not counted
               record(tool_calls=[{"tool": "lookup", "arguments": "not an object", "output": "", "error": "no tool",
                                   "after_episode": False, "unknown_tool": True}])]
    stats = metrics.group_stats(records)
    assert stats.requery_after_refusal == pytest.approx(3 / 4) and stats.resend_after_refusal == pytest.approx(1 / 4)
    assert metrics.group_stats(records[4:]).requery_after_refusal is None
    assert metrics.after_refused_query(records) == {"no query after it": 1, "the refused query again": 1,
                                                    "a changed query, still wrong": 1,
                                                    "a changed query, then right": 1}
    assert metrics.after_refused_query(records[4:]) == {}
