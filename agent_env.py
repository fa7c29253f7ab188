"""The SQL tool environment the agent acts in, for TRL's ``environment_factory``.

``SQLEnv``'s public methods are exactly the tools the model may call: ``describe``, ``sample``,
``query`` and ``answer``. TRL turns their type hints and Google-style docstrings into the tool
schema, so the docstrings are written for the model. ``reset`` starts an episode from one dataset
row and ``get_reward`` scores it.

Episode rules:
- the model starts with the question and the table names (``reset``'s observation; the words the model
  reads besides tool outputs are in prompt.py);
- each tool call is one step; the episode ends on ``answer`` or when the step budget is spent;
- every call after the end raises ``ValueError("Episode is over ...")`` and costs
  ``POST_EPISODE_PENALTY`` (the first run's models kept calling tools after answering).

Reward = correctness (1 or 0) + shaping (small, capped far below a correct answer) + the
post-episode penalty. Each part is one small function below; the episode record keeps them all.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, TypeVar

from prompt import first_observation
from sql_structure import SQLStructureError, orders_result, table_references, tables_used
from sqlite_readonly import DEFAULT_TIMEOUT_S, DatabaseError, QueryResult, ReadOnlyDatabase
from verifier import format_answer, format_cell, matches_exact_text, verify_answer

DEFAULT_STEP_BUDGET = 10
# Tool calls allowed past the budget (training's tool loop and eval alike), so that calls after
# the episode can happen, be seen, and be penalised, while a policy that never stops is cut off.
EXTRA_CALLS_AFTER_BUDGET = 2
MAX_RESULT_ROWS = 20
MAX_RESULT_CHARS = 1_200
SAMPLE_ROWS = 3
MAX_ANSWER_CHARS = 20_000
MAX_HINT_COLUMNS = 40  # of one table, in a refused query's error
MAX_HINT_CHARS = 1_200  # of all it adds to the error, as a query's result is cut

CORRECT_ANSWER_REWARD = 1.0
POST_EPISODE_PENALTY = 0.1
# Off by default (the plan's reward): with it 0, an episode that ends without answer() earns what a wrong answer
# earns, and GRPO taught the 0.5B to stop with "Done." after a query that returned no rows (docs/results.md).
NO_ANSWER_PENALTY = 0.0
EXECUTED_QUERY_BONUS = 0.02
MAX_EXECUTED_QUERY_BONUSES = 3
GOLD_TABLE_INSPECTED_BONUS = 0.01
GOLD_RESULT_SEEN_BONUS = 0.05
# The whole shaped part is capped here, so no amount of exploring comes close to answering right.
SHAPING_CAP = 0.15

EPISODE_OVER_MESSAGE = (
    "Episode is over: the question was already answered or the step budget is spent. "
    "Do not call any more tools."
)
NO_EPISODE_MESSAGE = "No episode has started: call reset() with a dataset row first."
# Methods of SQLEnv that are not tools (TRL's environment_factory exposes every other public method).
NOT_TOOLS = frozenset({"reset", "get_reward"})
NO_ROWS_NOTE = "no rows"  # what a query's output ends with when it returned no rows


# SQLite's "no such column" error: the qualifier the query wrote (if any) and the column.
MISSING_COLUMN = re.compile(r"no such column: (?:(\w+)\.)?(\w+)")


def columns_read(sql: str, database: ReadOnlyDatabase) -> dict[str, list[str]]:
    """The columns of each real table ``sql`` reads, as the database stores them, by the table's name as written
    (tables the database lacks left out).

    Raises:
        SQLStructureError: the text is not a single parseable query.
    """
    stored = {table.lower(): table for table in database.table_names()}
    return {table: [name for name, _ in database.columns(stored[table.lower()])]
            for table in tables_used(sql) if table.lower() in stored}


def references_with_column(column: str, references: dict[str, str], columns: dict[str, list[str]], *,
                           other_than: str | None) -> list[str]:
    """The names a query reads its tables by (``table_references``) whose table has ``column`` (``columns``: as
    ``columns_read`` gives them), all but ``other_than``: where a column SQLite found missing under one alias is."""
    column_sets = {table.lower(): {name.lower() for name in names} for table, names in columns.items()}
    return [reference for reference, table in references.items()
            if column.lower() in column_sets.get(table.lower(), set())
            and reference.lower() != (other_than or "").lower()]


def schema_hint(error: str, sql: str, database: ReadOnlyDatabase) -> str:
    """What a refused query's error needs for the next query to be fixed from it alone ("" where nothing helps).

    After SQLite's "no such column: T1.name", which table of the query has ``name`` where T1's has not, then the
    columns of every table the query reads; after "no such table", the database's tables. The 0.5B's recovering
    warm-up, refused, resent the same query in 117 of 138 retries (seed 29), and 80 of its 128 missing columns were
    a column of another table qualified by the wrong alias."""
    if "no such table" in error:
        return f"; tables are: {', '.join(database.table_names())}"
    missing = MISSING_COLUMN.search(error)
    if missing is None:
        return ""
    try:
        references, columns = table_references(sql), columns_read(sql, database)
    except SQLStructureError:
        return ""
    if not columns:
        return ""
    qualifier, column = missing.groups()
    owners = references_with_column(column, references, columns, other_than=qualifier)
    hint = ""
    if qualifier and owners:
        named = [owner if owner == references[owner] else f"{owner} ({references[owner]})" for owner in owners]
        hint = f"; {column} is a column of {', '.join(named)}, not of {qualifier}"
    described = [f"{table}({', '.join(names[:MAX_HINT_COLUMNS])}{', ...' if len(names) > MAX_HINT_COLUMNS else ''})"
                 for table, names in columns.items()]
    text = f"{hint}; the tables it reads have these columns: {'; '.join(described)}"
    return text if len(text) <= MAX_HINT_CHARS else text[:MAX_HINT_CHARS] + " ..."


def query_words(sql: object) -> list[str]:
    """A query as its words: two queries with the same words (any spacing) are the same query, to the environment's
    refusal of a resent one and to the statistics of what episodes did after a refusal alike."""
    return str(sql).split()


def returned_no_rows(output: str) -> bool:
    """Whether a query's output (SQLEnv's result format) says the query returned no rows."""
    return output.endswith(f"{NO_ROWS_NOTE})")


@dataclass
class StepRecord:
    """One tool call: what was asked, what came back, and whether it came after the episode ended."""

    tool: str
    arguments: dict[str, Any]
    output: str = ""
    error: str | None = None
    after_episode: bool = False


@dataclass
class EpisodeRecord:
    """Everything one episode did, for the reward, logs and the evaluation report."""

    question: str = ""
    db_path: str = ""
    gold_sql: str = ""
    steps: list[StepRecord] = field(default_factory=list)
    answer: str | None = None
    is_correct: bool = False
    # Right by the exact text the prompt asks for (verifier.matches_exact_text): what the relaxed matching adds
    # is is_correct without it. Logged and reported, never rewarded.
    is_exact_text: bool = False
    is_over: bool = False
    gold_tables_inspected: set[str] = field(default_factory=set)
    executed_queries: int = 0
    saw_gold_result: bool = False
    penalty_per_post_episode_call: float = POST_EPISODE_PENALTY
    penalty_for_no_answer: float = NO_ANSWER_PENALTY

    @property
    def post_episode_calls(self) -> int:
        return sum(step.after_episode for step in self.steps)

    @property
    def tool_errors(self) -> int:
        return sum(step.error is not None and not step.after_episode for step in self.steps)

    @property
    def in_episode_steps(self) -> int:
        return sum(not step.after_episode for step in self.steps)


    def reward_parts(self) -> dict[str, float]:
        return {
            "correctness": correctness_reward(self),
            "shaping": shaping_reward(self),
            "post_episode_penalty": post_episode_penalty(self),
            "no_answer_penalty": no_answer_penalty(self),
        }

    def to_dict(self) -> dict[str, Any]:
        record = asdict(self)
        record["gold_tables_inspected"] = sorted(self.gold_tables_inspected)
        record.update(
            post_episode_calls=self.post_episode_calls,
            tool_errors=self.tool_errors,
            reward_parts=self.reward_parts(),
            reward=sum(self.reward_parts().values()),
        )
        return record


# --- reward parts ----------------------------------------------------------------------------


def correctness_reward(episode: EpisodeRecord) -> float:
    """1 for an answer the verifier accepts, else 0 (no answer, or a wrong one)."""
    return CORRECT_ANSWER_REWARD if episode.is_correct else 0.0


def executed_query_bonus(episode: EpisodeRecord) -> float:
    """A little for each query that ran without error (the first few only): it teaches valid SQL."""
    return EXECUTED_QUERY_BONUS * min(episode.executed_queries, MAX_EXECUTED_QUERY_BONUSES)


def gold_table_bonus(episode: EpisodeRecord) -> float:
    """A little for each table the gold query needs that was described or sampled: useful information."""
    return GOLD_TABLE_INSPECTED_BONUS * len(episode.gold_tables_inspected)


def gold_result_bonus(episode: EpisodeRecord) -> float:
    """More for running a query whose result is the gold result: real progress toward the answer."""
    return GOLD_RESULT_SEEN_BONUS if episode.saw_gold_result else 0.0


def shaping_reward(episode: EpisodeRecord) -> float:
    """The shaped parts together, capped at SHAPING_CAP."""
    total = executed_query_bonus(episode) + gold_table_bonus(episode) + gold_result_bonus(episode)
    return min(total, SHAPING_CAP)


def post_episode_penalty(episode: EpisodeRecord) -> float:
    """-POST_EPISODE_PENALTY (or the environment's own setting) for every tool call after the episode was over."""
    return -episode.penalty_per_post_episode_call * episode.post_episode_calls


def no_answer_penalty(episode: EpisodeRecord) -> float:
    """-the environment's no-answer penalty for an episode that never called answer(): giving up then costs more than
    a wrong answer, which may still be right."""
    return -episode.penalty_for_no_answer if episode.answer is None else 0.0


# --- gold results ----------------------------------------------------------------------------


@dataclass(frozen=True)
class GoldResult:
    rows: list[tuple]
    ordered: bool
    tables: frozenset[str]


@functools.lru_cache(maxsize=4096)
def load_gold(db_path: str, gold_sql: str, timeout_s: float = DEFAULT_TIMEOUT_S) -> GoldResult:
    """Run a gold query once per (database, query) and remember its rows, order and tables."""
    with ReadOnlyDatabase(db_path, timeout_s=timeout_s) as database:
        rows = database.run_select(gold_sql).rows
    try:
        ordered = orders_result(gold_sql)
        tables = frozenset(name.lower() for name in tables_used(gold_sql))
    except SQLStructureError:
        ordered, tables = False, frozenset()
    return GoldResult(rows=rows, ordered=ordered, tables=tables)


def judge_answer(value: str, gold: GoldResult) -> tuple[bool, bool]:
    """Whether an answer is right (the relaxed verifier: what the reward counts) and whether it is right by the
    exact text asked for (measured beside it, never rewarded). The answer tool and re-scoring share it."""
    return verify_answer(value, gold.rows, ordered=gold.ordered), matches_exact_text(value, gold.rows)


# --- the environment -------------------------------------------------------------------------

ToolMethod = TypeVar("ToolMethod", bound=Callable[..., str])


def _episode_step(tool: ToolMethod) -> ToolMethod:
    """Wrap a tool: refuse and penalise calls after the episode, record the step, spend the budget."""

    signature = inspect.signature(tool)
    parameter_names = ", ".join(list(signature.parameters)[1:])

    @functools.wraps(tool)
    def run_step(self: SQLEnv, /, *args: Any, **kwargs: Any) -> str:
        # `self` is positional-only, so a model's argument named "self" reaches the check below.
        if not self._started:  # a programming error, not the model's: nothing to record or penalise
            raise ValueError(NO_EPISODE_MESSAGE)
        step = StepRecord(tool=tool.__name__, arguments=dict(kwargs))
        self.episode.steps.append(step)
        if self.episode.is_over:
            step.after_episode = True
            step.error = EPISODE_OVER_MESSAGE
            raise ValueError(EPISODE_OVER_MESSAGE)
        try:
            try:
                bound = signature.bind(self, *args, **kwargs)
            except TypeError:
                given = ", ".join(kwargs) or "none"
                raise ValueError(
                    f"{tool.__name__} takes exactly these arguments: {parameter_names} (got: {given})"
                ) from None
            step.arguments = dict(list(bound.arguments.items())[1:])
            step.output = tool(*bound.args, **bound.kwargs)
            return step.output
        except ValueError as error:
            step.error = str(error)
            raise
        finally:
            if self.episode.in_episode_steps >= self.step_budget:
                self.episode.is_over = True

    return run_step  # type: ignore[return-value]


class SQLEnv:
    """A SQLite database and a question; the model explores with tools and answers once."""

    def __init__(
        self,
        *,
        step_budget: int = DEFAULT_STEP_BUDGET,
        query_timeout_s: float = DEFAULT_TIMEOUT_S,
        max_result_rows: int = MAX_RESULT_ROWS,
        max_result_chars: int = MAX_RESULT_CHARS,
        post_episode_penalty: float = POST_EPISODE_PENALTY,
        no_answer_penalty: float = NO_ANSWER_PENALTY,
    ) -> None:
        if step_budget < 1:
            raise ValueError(f"step_budget must be at least 1, got {step_budget}")
        if post_episode_penalty < 0:
            raise ValueError(f"post_episode_penalty is subtracted per call: give 0 or more, got {post_episode_penalty}")
        if no_answer_penalty < 0:
            raise ValueError(f"no_answer_penalty is subtracted: give 0 or more, got {no_answer_penalty}")
        self.step_budget = step_budget
        self.post_episode_penalty = post_episode_penalty
        self.no_answer_penalty = no_answer_penalty
        self.query_timeout_s = query_timeout_s
        self.max_result_rows = max_result_rows
        self.max_result_chars = max_result_chars
        self.episode = EpisodeRecord(is_over=True)
        self._started = False
        self._database: ReadOnlyDatabase | None = None
        self._gold: GoldResult | None = None

    def reset(self, *, db_path: str, question: str, gold_sql: str, **row: Any) -> str:
        """Start an episode on one dataset row; returns what the model sees first (tables)."""
        self._close_database()
        self._database = ReadOnlyDatabase(db_path, timeout_s=self.query_timeout_s)
        self._gold = load_gold(str(db_path), gold_sql, self.query_timeout_s)
        self.episode = EpisodeRecord(question=question, db_path=str(db_path), gold_sql=gold_sql,
                                     penalty_per_post_episode_call=self.post_episode_penalty,
                                     penalty_for_no_answer=self.no_answer_penalty)
        self._started = True
        return first_observation(self._database.table_names())

    def get_reward(self) -> float:
        """The episode's total reward: correctness + capped shaping + post-episode penalty."""
        return sum(self.episode.reward_parts().values())

    def _close_database(self) -> None:
        if self._database is not None:
            self._database.close()
            self._database = None

    def _require_database(self) -> ReadOnlyDatabase:
        if self._database is None or self._gold is None:
            raise ValueError(NO_EPISODE_MESSAGE)
        return self._database

    def _error_of_an_identical_query(self, sql: str) -> str | None:
        """The error that the same query (same words, any spacing) earned earlier in this episode, if it did."""
        words = query_words(sql)
        for step in self.episode.steps[:-1]:  # the last step is this call
            if step.tool == "query" and step.error is not None and query_words(step.arguments.get("sql", "")) == words:
                return step.error
        return None

    def _note_inspected(self, table: str) -> None:
        assert self._gold is not None
        if table.lower() in self._gold.tables:
            self.episode.gold_tables_inspected.add(table.lower())

    def _format_result(self, result: QueryResult) -> str:
        lines = [" | ".join(result.columns)]
        lines += [" | ".join(format_cell(value) for value in row) for row in result.rows]
        text = "\n".join(lines)
        notes = []
        if result.truncated:
            notes.append(f"only the first {len(result.rows)} rows are shown")
        if len(text) > self.max_result_chars:
            text = text[: self.max_result_chars]
            notes.append(f"output cut at {self.max_result_chars} characters")
        if not result.rows:
            notes.append(NO_ROWS_NOTE)  # last: returned_no_rows reads it there
        return text + (f"\n({'; '.join(notes)})" if notes else "")

    @_episode_step
    def describe(self, table: str) -> str:
        """
        Show the columns of a table with their types, its foreign keys and its number of rows.

        Args:
            table: Name of a table in the database.
        """
        database = self._require_database()
        name = database.resolve_table(table)
        lines = [f"Table {name} ({database.row_count(name)} rows)", "Columns:"]
        lines += [f"- {column} {column_type}".rstrip() for column, column_type in database.columns(name)]
        foreign_keys = database.foreign_keys(name)
        if foreign_keys:
            lines.append("Foreign keys:")
            lines += [f"- {column} -> {target}.{target_column}" for column, target, target_column in foreign_keys]
        self._note_inspected(name)
        return "\n".join(lines)

    @_episode_step
    def sample(self, table: str) -> str:
        """
        Show the first few rows of a table, to see what its values look like.

        Args:
            table: Name of a table in the database.
        """
        database = self._require_database()
        name = database.resolve_table(table)
        self._note_inspected(name)
        return self._format_result(database.sample_rows(name, SAMPLE_ROWS))

    @_episode_step
    def query(self, sql: str) -> str:
        """
        Run one read-only SQLite SELECT statement and show its result.

        Args:
            sql: A single SELECT (or WITH ... SELECT) statement in SQLite syntax; up to 20 rows are shown.
        """
        database = self._require_database()
        if not isinstance(sql, str):
            raise ValueError("sql must be a string holding one SELECT statement")
        earlier_error = self._error_of_an_identical_query(sql)
        if earlier_error is not None:  # a small model, refused, tends to send the same query until its turns run out
            raise ValueError(f"this exact query was refused before ({earlier_error}); sending it again changes "
                             "nothing: change it first (describe(table) lists a table's columns)")
        try:
            result = database.run_select(sql, max_rows=self.max_result_rows)
        except DatabaseError as error:
            raise DatabaseError(f"{error}{schema_hint(str(error), sql, database)}") from None
        self.episode.executed_queries += 1
        assert self._gold is not None
        if not result.truncated and verify_answer(format_answer(result.rows), self._gold.rows, self._gold.ordered):
            self.episode.saw_gold_result = True
        return self._format_result(result)

    @_episode_step
    def answer(self, value: str) -> str:
        """
        Give the final answer to the question. This ends the episode: call no tools after it.

        Args:
            value: The answer: one value, values separated by commas, or rows as lines with cells separated by " | ".
        """
        self._require_database()
        if not isinstance(value, str):
            value = str(value)
        if len(value) > MAX_ANSWER_CHARS:
            raise ValueError(f"the answer is {len(value)} characters long; the limit is {MAX_ANSWER_CHARS}")
        assert self._gold is not None
        self.episode.answer = value
        self.episode.is_correct, self.episode.is_exact_text = judge_answer(value, self._gold)
        self.episode.is_over = True
        self._close_database()
        return "Answer recorded. The episode is over; do not call any more tools."



# The tools, in the order TRL's environment_factory lists them (inspect.getmembers on the class), which is
# the order of the tool schemas in the prompt. Training, the warm-up, eval and the policies all use these.
TOOL_NAMES: tuple[str, ...] = tuple(
    name for name, _ in inspect.getmembers(SQLEnv, inspect.isfunction)
    if not name.startswith("_") and name not in NOT_TOOLS
)


def tool_methods(env: SQLEnv) -> list[Callable[..., str]]:
    """The environment's bound tool methods (transformers builds the tool schemas from them)."""
    return [getattr(env, name) for name in TOOL_NAMES]


def max_tool_calls(step_budget: int) -> int:
    """The call cap of an episode: the budget, plus a few calls after it so post-episode calls show and cost."""
    return step_budget + EXTRA_CALLS_AFTER_BUDGET


def unknown_tool_calls(messages: list[dict[str, Any]]) -> int:
    """Calls of tools the environment does not have: they never reach it, so only the messages show them."""
    return sum(call["function"]["name"] not in TOOL_NAMES
               for message in messages if message.get("role") == "assistant"
               for call in message.get("tool_calls") or [] if isinstance(call.get("function"), dict))
