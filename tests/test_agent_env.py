"""SQLEnv: the tool surface, episode rules, rewards, and safety against bad input."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from transformers.utils import get_json_schema

from agent_env import (
    CORRECT_ANSWER_REWARD,
    DEFAULT_STEP_BUDGET,
    EpisodeRecord,
    MAX_HINT_CHARS,
    MAX_HINT_COLUMNS,
    POST_EPISODE_PENALTY,
    SHAPING_CAP,
    SQLEnv,
    shaping_reward,
)
from tests.helpers import make_shop_database, shop_row

COUNT_SQL = "SELECT count(*) FROM customer"


@pytest.fixture()
def shop(tmp_path: Path) -> Path:
    return make_shop_database(tmp_path / "shop.sqlite")


@pytest.fixture()
def env(shop: Path) -> SQLEnv:
    environment = SQLEnv()
    environment.reset(**shop_row(shop, "How many customers are there?", COUNT_SQL))
    return environment


def test_constructible_without_arguments_and_tools_are_exactly_the_public_methods() -> None:
    public = sorted(name for name in dir(SQLEnv) if not name.startswith("_") and callable(getattr(SQLEnv, name)))
    assert public == ["answer", "describe", "get_reward", "query", "reset", "sample"]
    SQLEnv()


@pytest.mark.parametrize("tool", ["describe", "sample", "query", "answer"])
def test_tool_schemas_build_from_docstrings(tool: str) -> None:
    # TRL builds the tool schema the model sees with this transformers function.
    schema = get_json_schema(getattr(SQLEnv, tool))["function"]
    assert schema["name"] == tool
    assert schema["description"]
    (argument,) = schema["parameters"]["properties"].values()
    assert argument["type"] == "string" and argument["description"]


def test_reset_shows_the_tables(shop: Path) -> None:
    observation = SQLEnv().reset(**shop_row(shop, "q", COUNT_SQL))
    assert "customer, order" in observation


def test_describe_sample_query_show_the_database(env: SQLEnv) -> None:
    description = env.describe("order")
    assert "amount REAL" in description and "customer_id -> customer.id" in description and "3 rows" in description
    assert env.sample("customer").splitlines()[0] == "id | name | city"
    assert env.query("SELECT name FROM customer WHERE id = 2") == "name\nGrace"
    assert "NULL" in env.query('SELECT note FROM "order" WHERE id = 1')


def test_query_results_are_truncated_with_a_note(shop: Path) -> None:
    env = SQLEnv(max_result_rows=2, max_result_chars=30)
    env.reset(**shop_row(shop, "q", COUNT_SQL))
    output = env.query("SELECT * FROM customer")
    assert "only the first 2 rows" in output
    assert "cut at 30 characters" in output


def test_correct_answer_scores_one_and_ends_the_episode(env: SQLEnv) -> None:
    env.query(COUNT_SQL)
    env.answer("3")
    assert env.episode.is_correct and env.episode.is_over
    assert env.get_reward() == pytest.approx(CORRECT_ANSWER_REWARD + shaping_reward(env.episode))


def test_an_answer_in_another_format_is_right_but_not_by_exact_text(env: SQLEnv) -> None:
    env.answer("Answer: 3.0")
    assert env.episode.is_correct and not env.episode.is_exact_text
    assert env.get_reward() == pytest.approx(CORRECT_ANSWER_REWARD + shaping_reward(env.episode))  # rewarded alike


def test_the_exact_text_asked_for_is_right_both_ways(env: SQLEnv) -> None:
    env.answer(" 3\n")
    assert env.episode.is_correct and env.episode.is_exact_text


def test_wrong_or_missing_answer_scores_no_correctness(env: SQLEnv) -> None:
    assert env.episode.reward_parts()["correctness"] == 0.0
    env.answer("4")
    assert not env.episode.is_correct
    assert env.episode.reward_parts()["correctness"] == 0.0


def test_no_answer_costs_nothing_by_default_and_the_penalty_when_set(shop: Path) -> None:
    def episode_reward(env: SQLEnv, answer: str | None) -> float:
        env.reset(**shop_row(shop, "How many customers are there?", COUNT_SQL))
        env.query(COUNT_SQL)
        if answer is not None:
            env.answer(answer)
        return env.get_reward()

    plain, strict = SQLEnv(), SQLEnv(no_answer_penalty=0.1)
    assert episode_reward(plain, None) == pytest.approx(episode_reward(plain, "4"))  # the plan's reward: alike
    assert episode_reward(strict, None) == pytest.approx(episode_reward(strict, "4") - 0.1)
    assert strict.episode.reward_parts()["no_answer_penalty"] == 0.0  # the last episode answered (wrong)
    assert episode_reward(strict, "3") == pytest.approx(episode_reward(plain, "3"))  # a right answer: unchanged
    with pytest.raises(ValueError, match="no_answer_penalty is subtracted: give 0 or more, got -0.1"):
        SQLEnv(no_answer_penalty=-0.1)


@pytest.mark.parametrize("tool, argument", [("describe", "customer"), ("sample", "customer"), ("query", COUNT_SQL), ("answer", "3")])
def test_every_tool_after_the_episode_raises_and_costs_the_penalty(env: SQLEnv, tool: str, argument: str) -> None:
    env.answer("3")
    reward_before = env.get_reward()
    with pytest.raises(ValueError, match="Episode is over"):
        getattr(env, tool)(argument)
    with pytest.raises(ValueError, match="Episode is over"):
        getattr(env, tool)(argument)
    assert env.episode.post_episode_calls == 2
    assert env.get_reward() == pytest.approx(reward_before - 2 * POST_EPISODE_PENALTY)


def test_step_budget_ends_the_episode(shop: Path) -> None:
    env = SQLEnv(step_budget=2)
    env.reset(**shop_row(shop, "q", COUNT_SQL))
    env.describe("customer")
    env.query(COUNT_SQL)
    assert env.episode.is_over
    with pytest.raises(ValueError, match="Episode is over"):
        env.answer("3")
    assert env.get_reward() < CORRECT_ANSWER_REWARD and env.episode.post_episode_calls == 1


def test_default_budget_is_ten_calls(env: SQLEnv) -> None:
    assert DEFAULT_STEP_BUDGET == 10
    for _ in range(10):
        env.sample("customer")
    with pytest.raises(ValueError, match="Episode is over"):
        env.sample("customer")


def test_shaping_is_capped_far_below_a_correct_answer(env: SQLEnv) -> None:
    for _ in range(9):
        env.query(COUNT_SQL)
    env.describe("customer")
    # Query bonuses stop after the first few; one gold table; the gold result was seen.
    assert env.get_reward() == pytest.approx(3 * 0.02 + 0.01 + 0.05)
    busy = EpisodeRecord(executed_queries=50, gold_tables_inspected={f"t{i}" for i in range(20)}, saw_gold_result=True)
    assert shaping_reward(busy) == SHAPING_CAP < CORRECT_ANSWER_REWARD / 5


def test_shaping_rewards_gold_table_and_gold_result(env: SQLEnv) -> None:
    env.describe("order")
    assert shaping_reward(env.episode) == 0.0
    env.describe("customer")
    first = shaping_reward(env.episode)
    env.query(COUNT_SQL)
    assert env.episode.saw_gold_result
    assert shaping_reward(env.episode) > first > 0


@pytest.mark.parametrize(
    ("tool", "argument", "message"),
    [
        ("describe", "customers", "tables are: customer, order"),
        ("sample", "", "tables are"),
        ("describe", "x" * 100_000, "no table"),
        ("query", "", "empty"),
        ("query", "DROP TABLE customer", "only reading"),
        ("query", "SELECT * FROM nope", "no such table"),
        ("query", "SELECT 1 " + "x" * 100_000, "limit"),
        ("answer", "9" * 100_000, "limit"),
    ],
)
def test_bad_tool_input_raises_value_error_and_counts_as_a_step(
    env: SQLEnv, shop: Path, tool: str, argument: str, message: str
) -> None:
    before = hashlib.sha256(shop.read_bytes()).hexdigest()
    with pytest.raises(ValueError, match=message):
        getattr(env, tool)(argument)
    assert env.episode.tool_errors == 1 and env.episode.in_episode_steps == 1
    assert hashlib.sha256(shop.read_bytes()).hexdigest() == before


def test_a_refused_query_sent_again_unchanged_is_refused_with_what_to_change(env: SQLEnv) -> None:
    with pytest.raises(ValueError, match="no such column") as first:
        env.query("SELECT nickname FROM customer")
    for resent in ["SELECT nickname FROM customer", "SELECT  nickname\nFROM customer"]:
        with pytest.raises(ValueError, match="this exact query was refused before") as again:
            env.query(resent)
        assert str(first.value) in str(again.value) and "describe(table)" in str(again.value)
    assert env.episode.tool_errors == 3 and env.episode.executed_queries == 0
    env.query("SELECT name FROM customer")  # a changed query runs; so does an identical one that had succeeded
    env.query("SELECT name FROM customer")
    assert env.episode.executed_queries == 2 and env.episode.tool_errors == 3


def test_a_query_with_an_unknown_column_is_refused_with_the_columns_of_the_tables_it_reads(env: SQLEnv) -> None:
    with pytest.raises(ValueError) as refused:
        env.query('SELECT T1.nick FROM customer AS T1 JOIN "order" AS T2 ON T1.id = T2.customer_id')
    assert str(refused.value) == ("SQLite error: no such column: T1.nick; the tables it reads have these columns: "
                                  "customer(id, name, city); order(id, customer_id, amount, note)")
    with pytest.raises(ValueError, match="this exact query was refused before .*customer\\(id, name, city\\)"):
        env.query('SELECT T1.nick FROM customer AS T1 JOIN "order" AS T2 ON T1.id = T2.customer_id')


@pytest.mark.parametrize(("sql", "owner"), [
    ('SELECT T1.amount FROM customer AS T1 JOIN "order" AS T2 ON T1.id = T2.customer_id', "T2 (order), not of T1"),
    ('SELECT customer.AMOUNT FROM customer JOIN "order" ON customer.id = "order".customer_id', "order, not of customer"),
])
def test_a_column_qualified_by_the_wrong_table_is_refused_with_the_table_that_has_it(
        env: SQLEnv, sql: str, owner: str) -> None:
    with pytest.raises(ValueError) as refused:
        env.query(sql)
    column = sql.split()[1].split(".")[1]
    assert str(refused.value).startswith(f"SQLite error: no such column: {sql.split()[1]}; {column} is a column of "
                                         f"{owner}; the tables it reads have these columns: customer(id, name, city)")


@pytest.mark.parametrize(("sql", "message"), [
    ("SELECT name FROM client", "SQLite error: no such table: client; tables are: customer, order"),
    ("SELECT name FROM customer WHERE", "SQLite error: incomplete input"),  # nothing the schema could fix
    ("SELECT nick FROM (SELECT 1)", "SQLite error: no such column: nick"),  # reads no stored table
])
def test_other_refused_queries_get_the_schema_only_where_it_helps(env: SQLEnv, sql: str, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        env.query(sql)
    assert str(refused.value) == message


def test_a_wide_tables_columns_are_cut_in_a_refused_querys_error(tmp_path: Path) -> None:
    database = tmp_path / "wide.sqlite"
    with sqlite3.connect(database) as connection:
        connection.execute(f"CREATE TABLE wide ({', '.join(f'c{number} INTEGER' for number in range(50))})")
    environment = SQLEnv()
    environment.reset(**shop_row(database, "How many rows?", "SELECT count(*) FROM wide"))
    with pytest.raises(ValueError) as refused:
        environment.query("SELECT missing FROM wide")
    shown = str(refused.value).split("wide(")[1]
    assert shown.count(",") == MAX_HINT_COLUMNS and shown.endswith("c39, ...)")


def test_a_refused_query_over_many_tables_gets_a_bounded_error(tmp_path: Path) -> None:
    database = tmp_path / "many.sqlite"
    with sqlite3.connect(database) as connection:
        for table in range(12):
            connection.execute(f"CREATE TABLE t{table} ({', '.join(f'column_{n} INTEGER' for n in range(30))})")
    environment = SQLEnv()
    environment.reset(**shop_row(database, "How many rows?", "SELECT count(*) FROM t0"))
    with pytest.raises(ValueError) as refused:
        environment.query(f"SELECT missing FROM {', '.join(f't{table}' for table in range(12))}")
    error = str(refused.value)
    assert error.endswith(" ...") and len(error) <= len("SQLite error: no such column: missing") + MAX_HINT_CHARS + 4


def test_wrong_argument_names_get_an_actionable_error(env: SQLEnv) -> None:
    with pytest.raises(ValueError, match="describe takes exactly these arguments: table"):
        env.describe(table_name="customer")  # type: ignore[call-arg]


def test_episode_record_serialises_its_steps_and_reward_parts(env: SQLEnv) -> None:
    env.describe("customer")
    env.answer("3")
    with pytest.raises(ValueError):
        env.query(COUNT_SQL)
    record = env.episode.to_dict()
    assert [step["tool"] for step in record["steps"]] == ["describe", "answer", "query"]
    assert record["steps"][-1]["after_episode"] is True
    assert set(record["reward_parts"]) == {"correctness", "shaping", "post_episode_penalty", "no_answer_penalty"}
    assert record["reward"] == pytest.approx(env.get_reward())


def test_a_new_reset_starts_a_clean_episode(env: SQLEnv, shop: Path) -> None:
    env.answer("3")
    env.reset(**shop_row(shop, "Who lives in London?", "SELECT name FROM customer WHERE city = 'London'"))
    assert env.episode.steps == [] and not env.episode.is_over
    env.answer("ada")
    assert env.episode.is_correct


def test_an_argument_named_self_gets_an_actionable_error(env: SQLEnv) -> None:
    with pytest.raises(ValueError, match="describe takes exactly these arguments: table"):
        env.describe(self="x", table="customer")  # type: ignore[call-arg]


def test_tools_before_reset_say_no_episode_has_started_and_record_nothing() -> None:
    env = SQLEnv()
    for tool in (env.describe, env.sample, env.query, env.answer):
        with pytest.raises(ValueError, match="No episode has started: call reset"):
            tool("x")
    assert env.episode.steps == [] and env.get_reward() == 0.0
