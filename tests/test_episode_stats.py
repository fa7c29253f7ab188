"""episode_stats.py: the episode quantities training logs and the eval reports, and why a wrong episode was
wrong."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_env import EpisodeRecord, SQLEnv, StepRecord
from episode_stats import (GOLD_NOT_SEEN, GOLD_SEEN_ANSWERED_WRONG, GOLD_SEEN_NO_ANSWER, NO_QUERY_RAN,
                           SQL_NO_ROWS, SQL_OTHER_RESULT, SQL_OTHER_TABLES, SQL_UNPARSED, EpisodeOutcome,
                           ended_on_unreadable_call, episode_outcome, episode_stats, refusal_and_requery,
                           wrong_answer_kind, wrong_sql_kind)
from tests.helpers import make_shop_database, shop_row


def outcome(correct: bool = False, answered: bool = True, saw_gold: bool = False, queries: int = 1) -> EpisodeOutcome:
    return EpisodeOutcome(is_correct=correct, is_exact_text=correct, answered=answered, tool_calls=queries + 1,
                          post_episode_calls=0, failed_calls=0, unknown_tool_calls=0, saw_gold_result=saw_gold,
                          executed_queries=queries)


def test_a_wrong_episode_is_told_apart_by_what_its_queries_returned() -> None:
    assert wrong_answer_kind(outcome(correct=True, saw_gold=True)) is None
    assert wrong_answer_kind(outcome(saw_gold=True)) == GOLD_SEEN_ANSWERED_WRONG
    assert wrong_answer_kind(outcome(saw_gold=True, answered=False)) == GOLD_SEEN_NO_ANSWER
    assert wrong_answer_kind(outcome(queries=0)) == NO_QUERY_RAN
    assert wrong_answer_kind(outcome(queries=2)) == GOLD_NOT_SEEN


def test_the_share_that_lost_a_found_result_counts_wrong_episodes_only() -> None:
    outcomes = [outcome(correct=True, saw_gold=True), outcome(saw_gold=True), outcome(saw_gold=True, answered=False),
                outcome()]
    assert episode_stats(outcomes).gold_seen_wrong == pytest.approx(2 / 4)
    assert episode_stats([]).gold_seen_wrong is None


def test_an_episode_that_ended_on_a_call_the_parser_could_not_read_is_counted() -> None:
    read = {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "describe", "arguments": {"table": "singer"}}}]}
    reply = {"role": "tool", "name": "describe", "content": "CREATE TABLE singer (name TEXT)"}
    unreadable = {"role": "assistant", "content": '<tool_call>\n{"name": "query", "arguments": {"sql": "SELECT "a""}}'}
    assert ended_on_unreadable_call([read, reply, unreadable])
    assert not ended_on_unreadable_call([read, reply])  # the last turn's call was read
    assert not ended_on_unreadable_call([read, reply, {"role": "assistant", "content": "Done."}])
    assert not ended_on_unreadable_call([])
    outcomes = [episode_outcome(EpisodeRecord(), [read, reply, unreadable]), episode_outcome(EpisodeRecord(), [read])]
    assert [outcome.ended_on_unreadable_call for outcome in outcomes] == [True, False]
    assert episode_stats(outcomes).unreadable_call_end == pytest.approx(1 / 2)
    assert episode_stats([]).unreadable_call_end is None


LONDON = "SELECT name FROM customer WHERE city = 'London'"


def answered_after(shop: Path, *queries: str) -> SQLEnv:
    """An episode on the shop database that sent ``queries`` (a refused one raises, as TRL hands it to the model)
    and then answered."""
    env = SQLEnv()
    env.reset(**shop_row(shop, "Who lives in London?", LONDON))
    for sql in queries:
        try:
            env.query(sql=sql)
        except ValueError:
            pass
    env.answer(value="Ada")
    return env


def test_a_refused_query_counts_as_retried_only_when_another_query_follows_it(tmp_path: Path) -> None:
    wrong, fixed = "SELECT nme FROM customer", "SELECT name FROM customer"
    assert refusal_and_requery([("query", True, wrong), ("answer", False, "")]) == {
        "refused_query": True, "queried_after_refusal": False, "resent_refused_query": False}
    assert refusal_and_requery([("describe", True, ""), ("query", False, fixed), ("answer", False, "")]
                               )["refused_query"] is False
    assert refusal_and_requery([("query", True, wrong), ("describe", False, ""), ("query", True, fixed)]) == {
        "refused_query": True, "queried_after_refusal": True, "resent_refused_query": False}
    assert refusal_and_requery([("query", True, wrong), ("query", True, f" {wrong}\n"), ("query", False, fixed)]
                               )["resent_refused_query"]  # the next query decides, whatever came later
    assert refusal_and_requery([]) == {"refused_query": False, "queried_after_refusal": False,
                                       "resent_refused_query": False}
    assert refusal_and_requery([("query", True, None), ("answer", False, "")])["refused_query"]  # {"sql": null}
    shop = make_shop_database(tmp_path / "shop.sqlite")

    def episode(*queries: str) -> EpisodeRecord:
        env = answered_after(shop, *queries)
        with pytest.raises(ValueError, match="Episode is over"):
            env.query(sql=LONDON)  # after the episode: not a retry
        return env.episode

    outcomes = [episode_outcome(episode("SELECT nme FROM customer", LONDON), []),  # refused, then queried again
                episode_outcome(episode("SELECT nme FROM customer"), []),  # refused, then answered
                episode_outcome(episode("SELECT nme FROM customer", "SELECT nme  FROM customer"), []),  # resent
                episode_outcome(episode(LONDON), [])]  # never refused: not counted
    assert [(outcome.refused_query, outcome.queried_after_refusal, outcome.resent_refused_query)
            for outcome in outcomes] == [(True, True, False), (True, False, False), (True, True, True),
                                         (False, False, False)]
    assert episode_stats(outcomes).requery_after_refusal == pytest.approx(2 / 3)
    assert episode_stats(outcomes).resend_after_refusal == pytest.approx(1 / 3)
    assert episode_stats(outcomes[3:]).requery_after_refusal is None  # nothing was refused: nothing measured


def test_sql_that_missed_the_gold_result_is_told_apart_by_its_last_query_that_ran(tmp_path: Path) -> None:
    shop = make_shop_database(tmp_path / "shop.sqlite")
    gold = "SELECT name FROM customer WHERE city = 'London'"

    def episode(*queries: str, answer: str = "Ada?") -> EpisodeRecord:
        env = SQLEnv()
        env.reset(**shop_row(shop, "Who lives in London?", gold))
        for sql in queries:
            try:
                env.query(sql)
            except Exception:  # noqa: BLE001 - a failing query is recorded by the environment, as in an episode
                pass
        env.answer(answer)
        return env.episode

    assert wrong_sql_kind(episode('SELECT amount FROM "order"')) == SQL_OTHER_TABLES
    assert wrong_sql_kind(episode("SELECT name FROM customer WHERE city = 'london'")) == SQL_NO_ROWS
    assert wrong_sql_kind(episode("SELECT city FROM customer")) == SQL_OTHER_RESULT
    # The last query that ran is the one read: a later one that failed does not count, an earlier one neither.
    assert wrong_sql_kind(episode("SELECT city FROM customer", "SELECT amount FROM \"order\"",
                                  "SELECT nope FROM customer")) == SQL_OTHER_TABLES
    # Table names compare as SQLite compares them; aliases are not tables.
    assert wrong_sql_kind(episode("SELECT c.city FROM CUSTOMER AS c WHERE c.id = 9")) == SQL_NO_ROWS
    # Right, found the gold result, or no query that ran: not this question.
    assert wrong_sql_kind(episode(gold, answer="Ada")) is None
    assert wrong_sql_kind(episode(gold, answer="Grace")) is None
    assert wrong_sql_kind(episode("SELECT nope FROM customer")) is None
    assert wrong_sql_kind(episode()) is None
    unparsed = EpisodeRecord(gold_sql=gold, executed_queries=1)
    unparsed.steps.append(StepRecord("query", {"sql": "SELECT (((("}, output="x"))
    assert wrong_sql_kind(unparsed) == SQL_UNPARSED


def test_training_logs_the_requery_share_only_for_steps_that_had_a_refused_query(tmp_path: Path) -> None:
    from training_logs import RolloutLogger

    shop = make_shop_database(tmp_path / "shop.sqlite")

    def logged(*environments: SQLEnv) -> dict[str, float]:
        metrics: dict[str, float] = {}
        logger = RolloutLogger(tmp_path, group_size=len(environments), rollouts_per_step=0)
        logger.episode_metrics([[]] * len(environments), [[]] * len(environments), list(environments),
                               log_metric=metrics.__setitem__)
        return metrics

    refused = "SELECT nme FROM customer"
    step = logged(answered_after(shop, refused, LONDON), answered_after(shop, refused))
    assert step["episode/requery_after_refusal"] == pytest.approx(1 / 2)
    assert step["episode/resend_after_refusal"] == 0.0
    unrefused = logged(answered_after(shop, LONDON), answered_after(shop, LONDON))
    assert "episode/requery_after_refusal" not in unrefused and "episode/resend_after_refusal" not in unrefused
