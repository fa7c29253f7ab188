"""Scripted policies played through the real environment, and the oracle on real Spider."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from tqdm import tqdm

from agent_env import DEFAULT_STEP_BUDGET, POST_EPISODE_PENALTY, SQLEnv
from policies import (NEVER_STOP_EXTRA_CALLS, UNTRAINED_TURN, OraclePolicy, make_policy, play_episode,
                      query_with_a_wrong_column)
from prompt import system_prompt
from spider_data import BUILTIN_DATA_DIR, load_split, to_grpo_rows
from tests.helpers import make_shop_database, shop_row

JOIN_SQL = 'SELECT c.name, sum(o.amount) FROM customer AS c JOIN "order" AS o ON o.customer_id = c.id GROUP BY c.name'


@pytest.fixture()
def row(tmp_path: Path) -> dict:
    return shop_row(make_shop_database(tmp_path / "shop.sqlite"), "Total spent per customer?", JOIN_SQL)


def test_oracle_describes_gold_tables_queries_and_answers_correctly(row: dict) -> None:
    transcript = play_episode(SQLEnv(), row, make_policy("oracle"))
    episode = transcript.episode
    assert episode.is_correct and episode.post_episode_calls == 0 and episode.tool_errors == 0
    assert [step.tool for step in episode.steps] == ["describe", "describe", "query", "answer"]
    roles = [message["role"] for message in transcript.messages]
    assert roles == ["system", "user"] + ["assistant", "tool"] * 4
    assert "Tables in this database: customer, order" in transcript.messages[1]["content"]


def test_wrapped_answers_are_accepted_by_the_relaxed_verifier(row: dict) -> None:
    policy = make_policy("wrapped")
    for _ in range(4):  # every wrapper in the rotation
        transcript = play_episode(SQLEnv(), row, policy)
        assert transcript.episode.answer != transcript.episode.steps[-2].output
        assert transcript.episode.is_correct, transcript.episode.answer


def test_never_stopping_policy_pays_the_post_episode_penalty(row: dict) -> None:
    env = SQLEnv()
    transcript = play_episode(env, row, make_policy("never_stop"))
    assert transcript.episode.post_episode_calls == NEVER_STOP_EXTRA_CALLS
    assert "Episode is over" in transcript.messages[-1]["content"]
    assert transcript.episode.reward_parts()["post_episode_penalty"] == pytest.approx(
        -POST_EPISODE_PENALTY * NEVER_STOP_EXTRA_CALLS
    )


def test_the_retry_policy_reads_sqlites_error_then_runs_the_gold_query(row: dict) -> None:
    digest = hashlib.sha256(Path(row["db_path"]).read_bytes()).hexdigest()
    transcript = play_episode(SQLEnv(), row, make_policy("retry"))
    episode = transcript.episode
    assert [step.tool for step in episode.steps] == ["describe", "describe", "query", "query", "answer"]
    broken = transcript.messages[-6]["tool_calls"][0]["function"]["arguments"]["sql"]
    # In a join the mistake is a column under the other table's alias, and the error names the table that has it.
    assert broken in {JOIN_SQL.replace("c.name", "o.name", 1), JOIN_SQL.replace("o.amount", "c.amount"),
                      JOIN_SQL.replace("o.customer_id", "c.customer_id")}
    assert "no such column" in transcript.messages[-5]["content"] and "is a column of" in transcript.messages[-5][
        "content"] and episode.tool_errors == 1
    untrained = [message for message in transcript.messages if message.get(UNTRAINED_TURN)]
    assert untrained == [transcript.messages[-6]]  # the mistake is shown, not imitated; the recovery is
    assert episode.is_correct and episode.post_episode_calls == 0
    assert query_with_a_wrong_column(row["db_path"], JOIN_SQL, row["question"]) == broken  # the same on every run
    assert hashlib.sha256(Path(row["db_path"]).read_bytes()).hexdigest() == digest


def test_the_retry_policy_reads_another_tables_column_into_a_one_table_query(tmp_path: Path) -> None:
    database = make_shop_database(tmp_path / "shop.sqlite")
    one_table = "SELECT name FROM customer WHERE city = 'London'"
    broken = query_with_a_wrong_column(str(database), one_table, "Who lives in London?")
    assert broken is not None and broken != one_table and any(other in broken for other in ("customer_id", "amount",
                                                                                           "note"))


def test_the_retry_policy_plays_the_oracle_where_no_wrong_column_exists(tmp_path: Path) -> None:
    database = tmp_path / "one.sqlite"
    with sqlite3.connect(database) as connection:  # one table: no other table's column to get wrong
        connection.execute("CREATE TABLE customer (id INTEGER PRIMARY KEY, name TEXT)")
        connection.execute("INSERT INTO customer VALUES (1, 'Ada')")
    row = shop_row(database, "How many customers?", "SELECT count(*) FROM customer")
    assert query_with_a_wrong_column(row["db_path"], row["gold_sql"], row["question"]) is None
    steps = play_episode(SQLEnv(), row, make_policy("retry")).episode.steps
    assert [step.tool for step in steps] == ["describe", "query", "answer"]


def test_random_policy_is_rarely_right() -> None:
    """One random policy (its generator runs on from episode to episode) over 40 different questions."""
    rows = to_grpo_rows(load_split(BUILTIN_DATA_DIR, "dev", progress=False).usable()[:40],
                        system_prompt(DEFAULT_STEP_BUDGET))
    policy, env = make_policy("random"), SQLEnv()
    answers = [play_episode(env, row, policy).episode for row in rows]
    assert len({episode.answer for episode in answers}) > 10  # the episodes really differ
    assert sum(episode.is_correct for episode in answers) <= 4


def test_unknown_policy_lists_the_choices() -> None:
    with pytest.raises(ValueError, match="oracle, wrapped, never_stop, retry, random"):
        make_policy("greedy")


def test_oracle_is_correct_on_every_builtin_question(builtin_data_dir: Path) -> None:
    for split_name in ("train", "dev"):
        rows = to_grpo_rows(load_split(builtin_data_dir, split_name, progress=False).examples,
                            system_prompt(DEFAULT_STEP_BUDGET))
        wrong = [r["question"] for r in rows if not play_episode(SQLEnv(), r, OraclePolicy()).episode.is_correct]
        assert not wrong


@pytest.mark.spider
@pytest.mark.slow
def test_oracle_is_correct_on_every_usable_real_spider_question(spider_path: Path) -> None:
    rows = to_grpo_rows(load_split(spider_path, "train", progress=False).examples,
                        system_prompt(DEFAULT_STEP_BUDGET))
    env, oracle = SQLEnv(), OraclePolicy()
    wrong = []
    for row in tqdm(rows, desc="oracle on Spider train", mininterval=5):
        episode = play_episode(env, row, oracle).episode
        if not episode.is_correct:
            wrong.append((row["db_id"], row["gold_sql"], episode.answer[:200] if episode.answer else None))
    print(f"oracle: {len(rows) - len(wrong)}/{len(rows)} correct")
    assert not wrong, wrong[:5]


@pytest.mark.spider
def test_the_retry_policy_fails_first_and_then_answers_right_on_real_spider(spider_path: Path) -> None:
    rows = to_grpo_rows(load_split(spider_path, "train", progress=False).usable()[::20],
                        system_prompt(DEFAULT_STEP_BUDGET))
    env, policy = SQLEnv(), make_policy("retry")
    episodes = [play_episode(env, row, policy).episode for row in rows]
    assert all(episode.is_correct for episode in episodes)
    retried = [episode for episode in episodes if episode.tool_errors]
    assert all([step.tool for step in episode.steps].count("query") == 2 and episode.tool_errors == 1
               for episode in retried)
    print(f"retry policy on {len(rows)} Spider train questions: {len(retried)} ran a wrong-column query first")
    assert len(retried) >= 0.75 * len(rows)
