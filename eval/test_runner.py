"""The suite's own machinery on scripted policies: what the oracle, wrapped, never-stopping and random
policies must score, skipped questions, the batched driver, the call cap and unknown tools."""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from eval import metrics
from eval.runner import EpisodeEnd, QuestionRecord, StopReason, last_sql, play_split
from agent_env import EXTRA_CALLS_AFTER_BUDGET
from policies import NEVER_STOP_EXTRA_CALLS, OraclePolicy, ToolCall, make_policy
from spider_data import SkipReason, SpiderSplit, load_split
from sql_structure import tables_used


@pytest.fixture(scope="module")
def builtin_dev(builtin_data_dir: Path) -> SpiderSplit:
    return load_split(builtin_data_dir, "dev", progress=False)


def play(split: SpiderSplit, policy_name: str, **options: Any) -> list[QuestionRecord]:
    return play_split(split, make_policy(policy_name), progress=False, **options)


def oracle_steps(record: QuestionRecord) -> int:
    """The oracle's plan: describe each table the gold query reads, run it once, answer once."""
    return len(tables_used(record.gold_sql)) + 2


# --- scripted policies on the built-in data -------------------------------------------------------


def test_oracle_scores_every_question_with_the_fewest_steps(builtin_dev: SpiderSplit) -> None:
    records = play(builtin_dev, "oracle")
    assert len(records) == len(builtin_dev.examples)
    for record in records:
        assert record.correct, (record.question, record.answer)
        assert record.steps == oracle_steps(record)
        assert record.post_episode_calls == record.tool_errors == 0
        assert record.pred_sql == record.gold_sql
        assert record.stop_reason == StopReason.POLICY_STOPPED.value
    stats = metrics.by_hardness(records)
    assert all(stats[group].accuracy == 1.0 for group in metrics.GROUPS if stats[group].n)
    assert stats[metrics.OVERALL].mean_steps == pytest.approx(sum(map(oracle_steps, records)) / len(records))
    assert stats[metrics.OVERALL].answered == 1.0


def test_wrapped_answers_are_scored_correct_by_the_relaxed_verifier(builtin_dev: SpiderSplit) -> None:
    oracle, wrapped = play(builtin_dev, "oracle"), play(builtin_dev, "wrapped")
    assert all(record.correct for record in wrapped)
    assert sum(mine.answer != theirs.answer for mine, theirs in zip(wrapped, oracle, strict=True)) > len(oracle) / 2


def test_never_stopping_policy_shows_the_post_episode_penalty_and_its_rate(builtin_dev: SpiderSplit) -> None:
    oracle, never_stop = play(builtin_dev, "oracle"), play(builtin_dev, "never_stop")
    stats = metrics.by_hardness(never_stop)[metrics.OVERALL]
    assert stats.accuracy == 1.0 and stats.post_episode_calls == NEVER_STOP_EXTRA_CALLS
    assert stats.mean_steps == metrics.by_hardness(oracle)[metrics.OVERALL].mean_steps  # late calls are not steps
    for mine, theirs in zip(never_stop, oracle, strict=True):
        assert mine.reward == pytest.approx(theirs.reward - 0.1 * NEVER_STOP_EXTRA_CALLS)
        assert [call["after_episode"] for call in mine.tool_calls[-NEVER_STOP_EXTRA_CALLS:]] == [True, True]


def test_random_policy_scores_near_zero(builtin_dev: SpiderSplit) -> None:
    stats = metrics.by_hardness(play(builtin_dev, "random"))[metrics.OVERALL]
    assert stats.accuracy is not None and stats.accuracy < 0.1
    assert stats.answered == 1.0 and stats.mean_steps == 2


def test_skipped_questions_are_recorded_with_their_reason_and_never_played(tmp_path: Path) -> None:
    (tmp_path / "database" / "shop").mkdir(parents=True)
    connection = sqlite3.connect(tmp_path / "database" / "shop" / "shop.sqlite")
    connection.executescript("CREATE TABLE item (id INTEGER, name TEXT); INSERT INTO item VALUES (1, 'pen');")
    connection.close()
    questions = [
        {"db_id": "shop", "question": "How many items?", "query": "SELECT count(*) FROM item"},
        {"db_id": "shop", "question": "Items called ink?", "query": "SELECT name FROM item WHERE name = 'ink'"},
        {"db_id": "gone", "question": "Anything?", "query": "SELECT 1 FROM thing"},
        {"db_id": "shop", "question": "Broken?", "query": "SELECT nothing FROM item"},
    ]
    (tmp_path / "dev.json").write_text(json.dumps(questions))
    records = play(load_split(tmp_path, "dev", progress=False), "oracle")
    assert [record.skip_reason for record in records] == [
        None, SkipReason.GOLD_EMPTY.value, SkipReason.MISSING_DATABASE.value, SkipReason.GOLD_FAILS.value
    ]
    assert records[0].correct and not any(record.tool_calls for record in records[1:])
    assert metrics.by_hardness(records)[metrics.OVERALL].n == 1
    assert metrics.skipped_by_reason(records) == {reason.value: 1 for reason in (
        SkipReason.GOLD_EMPTY, SkipReason.MISSING_DATABASE, SkipReason.GOLD_FAILS)}


# --- the batched driver ---------------------------------------------------------------------------


@dataclass
class ScriptedBatch:
    """A BatchPolicy made of one scripted policy per episode, to check the batched driver against play_episode."""

    make: Any = OraclePolicy
    name: str = "scripted batch"
    rounds: list[int] = field(default_factory=list)
    _policies: dict[int, Any] = field(default_factory=dict)
    _stopped: set[int] = field(default_factory=set)

    def start(self, key: int, row: dict[str, Any]) -> None:
        self._policies[key] = self.make()
        self._policies[key].start(row)

    def next_calls(self, conversations: dict[int, list[dict[str, Any]]]) -> dict[int, ToolCall | None]:
        self.rounds.append(len(conversations))
        calls = {key: self._policies[key].next_call(messages) for key, messages in conversations.items()}
        self._stopped |= {key for key, call in calls.items() if call is None}
        return calls

    def finish(self, key: int) -> EpisodeEnd:
        del self._policies[key]
        return EpisodeEnd(stop_reason=StopReason.POLICY_STOPPED if key in self._stopped else None)


def test_batched_driver_plays_exactly_as_play_episode(builtin_dev: SpiderSplit) -> None:
    batch = ScriptedBatch()
    batched = play_split(builtin_dev, batch, batch_size=7, progress=False)
    one_by_one = play(builtin_dev, "oracle")
    assert batched == one_by_one
    assert max(batch.rounds) == 7 and sum(batch.rounds) == sum(record.steps + 1 for record in batched)


def test_call_cap_stops_a_policy_that_never_stops(builtin_dev: SpiderSplit) -> None:
    class Forever:
        def next_call(self, messages: list[dict[str, Any]]) -> ToolCall:
            return ToolCall("sample", {"table": messages[1]["content"].rsplit(": ", 1)[-1].split(",")[0]})

        def start(self, row: dict[str, Any]) -> None:
            pass

    records = play_split(builtin_dev, ScriptedBatch(make=Forever), step_budget=4, batch_size=5, progress=False)
    for record in records:
        assert record.stop_reason == StopReason.CALL_CAP.value
        assert record.steps == 4 and record.post_episode_calls == EXTRA_CALLS_AFTER_BUDGET
        assert not record.answered and not record.correct


def test_an_episode_that_found_the_gold_result_and_answered_otherwise_says_so(builtin_dev: SpiderSplit) -> None:
    class LosesTheResult(OraclePolicy):  # runs the gold query, then answers something else
        def format(self, answer: str) -> str:
            return "no idea"

    class NeverQueries(OraclePolicy):
        def plan(self, row: dict[str, Any]) -> list[ToolCall]:
            return [ToolCall("answer", {"value": "no idea"})]

    lost = play_split(builtin_dev, ScriptedBatch(make=LosesTheResult), progress=False)[0]
    assert not lost.correct and lost.saw_gold_result and lost.executed_queries == 1
    guessed = play_split(builtin_dev, ScriptedBatch(make=NeverQueries), progress=False)[0]
    assert not guessed.saw_gold_result and guessed.executed_queries == 0
    assert metrics.wrong_answer_kinds([lost, guessed]) == {"gold result seen, answer wrong": 1, "no query ran": 1}
    assert lost.wrong_sql_kind is None and guessed.wrong_sql_kind is None

    class FiltersEverythingOut(OraclePolicy):  # the gold query's tables, a filter no row passes
        def plan(self, row: dict[str, Any]) -> list[ToolCall]:
            table = tables_used(row["gold_sql"])[0]
            return [ToolCall("query", {"sql": f'SELECT * FROM "{table}" WHERE 1 = 0'}),
                    ToolCall("answer", {"value": "no idea"})]

    emptied = [record for record in play_split(builtin_dev, ScriptedBatch(make=FiltersEverythingOut), progress=False)
               if record.is_scored and not record.correct]
    single_table = sum(len(tables_used(record.gold_sql)) == 1 for record in emptied)
    assert 0 < single_table < len(emptied)  # both kinds are met
    assert metrics.wrong_sql_kinds([lost, guessed, *emptied]) == {
        "last query read other tables than the gold query": len(emptied) - single_table,
        "gold tables, no rows": single_table}


def test_unknown_tools_are_tool_errors_the_model_was_told_about(builtin_dev: SpiderSplit) -> None:
    class CallsRunSql(OraclePolicy):
        def plan(self, row: dict[str, Any]) -> list[ToolCall]:
            return [ToolCall("run_sql", {"sql": row["gold_sql"]})] + super().plan(row)

    record = play_split(builtin_dev, ScriptedBatch(make=CallsRunSql), progress=False)[0]
    assert record.correct and record.unknown_tool_calls == 1 and record.tool_errors == 1
    assert record.tool_calls[0]["tool"] == "run_sql" and "unknown tool" in record.tool_calls[0]["error"]
    assert record.calls_in_episode == record.steps + 1
    assert metrics.group_stats([record]).tool_error_rate == pytest.approx(1 / (record.steps + 1))


@pytest.mark.parametrize(
    ("queries", "expected"),
    [
        ([], None),
        ([("SELECT 1", None, False)], "SELECT 1"),
        ([("SELECT 1", None, False), ("SELECT bad", "no such column", False)], "SELECT 1"),
        ([("SELECT bad", "no such column", False)], "SELECT bad"),
        ([("SELECT 1", None, False), ("SELECT 2", "Episode is over", True)], "SELECT 1"),
    ],
    ids=["no query", "one clean query", "clean before failing", "only failing", "after the episode"],
)
def test_pred_sql_is_the_last_query_that_ran(queries: list[tuple], expected: str | None) -> None:
    entries = [{"tool": "describe", "arguments": {"table": "t"}, "error": None, "after_episode": False}]
    entries += [{"tool": "query", "arguments": {"sql": sql}, "error": error, "after_episode": late}
                for sql, error, late in queries]
    assert last_sql(entries) == expected


# --- real Spider ----------------------------------------------------------------------------------


@pytest.mark.spider
def test_oracle_scores_every_usable_question_of_a_spider_sample(spider_sample: SpiderSplit) -> None:
    records = play(spider_sample, "oracle")
    stats = metrics.by_hardness(records)
    assert all(stats[group].n > 20 and stats[group].accuracy == 1.0 for group in metrics.GROUPS)
    assert all(record.steps == oracle_steps(record) for record in records if record.is_scored)
    skipped = metrics.skipped_by_reason(records)
    assert SkipReason.MISSING_DATABASE.value in skipped and SkipReason.GOLD_EMPTY.value in skipped


@pytest.mark.spider
def test_scripted_baselines_on_a_spider_sample(spider_sample: SpiderSplit) -> None:
    overall = {name: metrics.by_hardness(play(spider_sample, name))[metrics.OVERALL]
               for name in ("wrapped", "never_stop", "random")}
    assert overall["wrapped"].accuracy == 1.0
    assert overall["never_stop"].accuracy == 1.0 and overall["never_stop"].post_episode_calls == 2
    assert overall["random"].accuracy < 0.1



def test_progress_lines_tick_on_a_timer_while_no_question_finishes(builtin_dev: SpiderSplit,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    @dataclass
    class SlowBatch(ScriptedBatch):
        generation_calls: list[int] = field(default_factory=list)  # counted like a model policy's

        def next_calls(self, conversations: dict[int, list[dict[str, Any]]]) -> dict[int, ToolCall | None]:
            time.sleep(0.1)
            self.generation_calls.append(len(conversations))
            return super().next_calls(conversations)

    slow = SlowBatch(name="slow")
    records = play_split(builtin_dev, slow, batch_size=64, progress=False, log_every=0.02)
    lines = capsys.readouterr().err.splitlines()
    usable = len(builtin_dev.usable())
    assert len(records) == len(builtin_dev.examples)
    # every episode is in flight at once and none ends before the third round: the timer still reports
    assert lines[0].startswith(f"eval slow: 0/{usable} questions, ") and "generate calls" in lines[0]
    assert lines[-1].startswith(f"eval slow: {usable}/{usable} questions, {len(slow.generation_calls)} generate calls")
    assert len(lines) >= 3


def test_progress_lines_end_with_the_total_and_none_when_the_bar_shows(builtin_dev: SpiderSplit,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    play_split(builtin_dev, make_policy("oracle"), progress=False, log_every=3600)
    usable = len(builtin_dev.usable())
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"eval oracle: {usable}/{usable} questions, ") and line.endswith(" s")
    assert "generate calls" not in line  # a scripted policy generates nothing
    play_split(builtin_dev, make_policy("oracle"), progress=True, log_every=3600)
    assert "questions, " not in capsys.readouterr().err
