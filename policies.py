"""Playing episodes through ``SQLEnv``, and the scripted policies that need no model.

A policy decides the next tool call from the conversation so far. ``play_episode`` runs any
policy (scripted, or a language model in the eval suite) through the real environment and
returns the chat transcript together with the environment's episode record, so training,
few-shot examples and evaluation all see episodes the same way.

Scripted policies:
- ``oracle``: describes the tables the gold query reads, runs the gold query, answers with the
  gold result in the documented format. It must be scored correct on every usable question.
- ``wrapped``: the oracle, but it wraps its answer the way models do (fences, "Answer:",
  quotes). The relaxed verifier must accept it.
- ``never_stop``: the oracle, then keeps querying after answering: shows the post-episode penalty.
- ``retry``: the oracle, with a first query that SQLite refuses for a wrong column (in a join, one qualified by
  another table's alias); it reads the error, then runs the gold query: the recovery the warm-up never showed (a
  quarter of the 0.5B's wrong held-out answers followed a failed query with an answer, no retry).
- ``random``: looks at a random table and answers with a random value from it: near zero accuracy.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from agent_env import TOOL_NAMES, SQLEnv, load_gold, max_tool_calls, tool_methods
from prompt import TABLES_LABEL
from sql_structure import SQLStructureError, table_references, tables_used
from sqlite_readonly import DatabaseError, ReadOnlyDatabase
from verifier import format_answer

NEVER_STOP_EXTRA_CALLS = 2


# A message key the warm-up reads (sft.encode_conversation): this assistant turn is shown but not trained, as
# a deliberate mistake that the episode then recovers from. Chat templates ignore keys they do not know.
UNTRAINED_TURN = "untrained"


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    # False for a deliberate mistake: a warm-up shows the call and the error it earns, and trains only the recovery.
    imitated: bool = True


@dataclass
class Transcript:
    """The chat messages of one episode (TRL's tool-calling message format) and its record."""

    messages: list[dict[str, Any]]
    episode: Any  # agent_env.EpisodeRecord
    final_text: str = ""


class Policy(Protocol):
    name: str

    def start(self, row: dict[str, Any]) -> None:
        """Called once per episode with the dataset row (scripted policies may read the gold)."""

    def next_call(self, messages: list[dict[str, Any]]) -> ToolCall | None:
        """The next tool call, or None to stop."""


def assistant_tool_call_message(call: ToolCall) -> dict[str, Any]:
    message = {
        "role": "assistant",
        "content": "",
        "tool_calls": [{"type": "function", "function": {"name": call.name, "arguments": call.arguments}}],
    }
    return message if call.imitated else {**message, UNTRAINED_TURN: True}


def tool_error(message: str) -> str:
    """A tool error as TRL's tool loop shows it to the model during training."""
    return str({"error": message})


def run_tool(env: SQLEnv, call: ToolCall) -> str:
    """Call one tool on the environment; any error becomes the text the model would see in training."""
    tools: dict[str, Callable[..., str]] = dict(zip(TOOL_NAMES, tool_methods(env), strict=True))
    if call.name not in tools:
        return tool_error(f"unknown tool {call.name!r}; tools are: {', '.join(tools)}")
    try:
        return tools[call.name](**call.arguments)
    except Exception as error:  # TRL's loop hands every tool exception back to the model, so does this
        return tool_error(str(error))


def initial_messages(env: SQLEnv, row: dict[str, Any]) -> list[dict[str, Any]]:
    """Reset the environment on a row and return the prompt with its first observation appended."""
    observation = env.reset(**row)
    prompt = [dict(message) for message in row["prompt"]]
    prompt[-1]["content"] = prompt[-1]["content"] + observation
    return prompt


def play_episode(env: SQLEnv, row: dict[str, Any], policy: Policy, *, max_calls: int | None = None) -> Transcript:
    """Run one policy on one row through the environment until it stops or hits the call cap."""
    messages = initial_messages(env, row)
    policy.start(row)
    cap = max_calls if max_calls is not None else max_tool_calls(env.step_budget)
    for _ in range(cap):
        call = policy.next_call(messages)
        if call is None:
            break
        messages.append(assistant_tool_call_message(call))
        messages.append({"role": "tool", "name": call.name, "content": run_tool(env, call)})
    return Transcript(messages=messages, episode=env.episode)


# --- scripted policies -----------------------------------------------------------------------


@dataclass
class OraclePolicy:
    """Plays the gold SQL: describe the gold tables, query the gold SQL, answer the gold result."""

    name: str = "oracle"
    _plan: list[ToolCall] = field(default_factory=list)

    def plan(self, row: dict[str, Any]) -> list[ToolCall]:
        gold = load_gold(str(row["db_path"]), row["gold_sql"])
        try:
            tables = tables_used(row["gold_sql"])
        except SQLStructureError:
            tables = []
        return (
            [ToolCall("describe", {"table": table}) for table in tables]
            + [ToolCall("query", {"sql": row["gold_sql"]})]
            + [ToolCall("answer", {"value": self.format(format_answer(gold.rows))})]
        )

    def format(self, answer: str) -> str:
        return answer

    def start(self, row: dict[str, Any]) -> None:
        self._plan = self.plan(row)

    def next_call(self, messages: list[dict[str, Any]]) -> ToolCall | None:
        return self._plan.pop(0) if self._plan else None


@dataclass
class WrappedAnswerPolicy(OraclePolicy):
    """The oracle, wrapping its answer in one of the ways models do (rotating through them)."""

    name: str = "wrapped"
    _count: int = 0

    def format(self, answer: str) -> str:
        wrappers = [
            lambda text: f"```\n{text}\n```",
            lambda text: f"Answer: {text}",
            lambda text: f'"{text}"' if "\n" not in text else f"```text\n{text}\n```",
            lambda text: f"  Final answer: {text}.  " if "\n" not in text and not text.endswith(".") else text,
        ]
        self._count += 1
        return wrappers[self._count % len(wrappers)](answer)


@dataclass
class NeverStopPolicy(OraclePolicy):
    """The oracle, then more queries after answering: the habit the post-episode penalty fights."""

    name: str = "never_stop"

    def plan(self, row: dict[str, Any]) -> list[ToolCall]:
        extra = [ToolCall("query", {"sql": row["gold_sql"]})] * NEVER_STOP_EXTRA_CALLS
        return super().plan(row) + extra


def query_with_a_wrong_column(db_path: str, gold_sql: str, seed: str) -> str | None:
    """The gold query with one column made wrong, chosen with ``seed``, such that SQLite refuses it (``no such
    column``): the mistakes small models make most. In a join, a column qualified by another table's alias
    (``T2.Season`` where ``Season`` is T1's: 80 of the 0.5B's 128 refused held-out queries, seed 29); elsewhere, a
    column of a table the query does not read. None where neither makes the query fail."""
    try:
        references = table_references(gold_sql)
        gold_tables = {table.lower() for table in tables_used(gold_sql)}
    except SQLStructureError:
        return None
    chooser = random.Random(seed)
    with ReadOnlyDatabase(db_path) as database:
        columns = {table.lower(): [name for name, _ in database.columns(table)] for table in database.table_names()}
        for broken in _alias_swaps(gold_sql, references, columns, chooser) + _foreign_columns(gold_sql, gold_tables,
                                                                                             columns, chooser):
            try:
                database.run_select(broken, max_rows=1)
            except DatabaseError as error:
                if "no such column" in str(error):
                    return broken
    return None


def _alias_swaps(gold_sql: str, references: dict[str, str], columns: dict[str, list[str]],
                 chooser: random.Random) -> list[str]:
    """The gold query with one qualified column moved to another table of the query that lacks it, each such swap
    once, in ``chooser``'s order."""
    columns_of = {reference: {name.lower() for name in columns.get(table.lower(), [])}
                  for reference, table in references.items()}
    swaps = []
    for reference in references:
        for match in re.finditer(rf"(?<![\w.\"']){re.escape(reference)}\.(\w+)", gold_sql, re.IGNORECASE):
            swaps += [gold_sql[:match.start()] + other + gold_sql[match.start() + len(reference):]
                      for other in references
                      if other.lower() != reference.lower() and match.group(1).lower() not in columns_of[other]]
    chooser.shuffle(swaps)
    return swaps


def _foreign_columns(gold_sql: str, gold_tables: set[str], columns: dict[str, list[str]],
                     chooser: random.Random) -> list[str]:
    """The gold query with one of its columns swapped for a column of a table it does not read (three tries a
    column), in ``chooser``'s order."""
    gold_columns = {name.lower() for table in gold_tables for name in columns.get(table, [])}
    # A column written as a word of the SQL, with no quote right beside it (a literal such as "name" is left alone).
    patterns = {name: re.compile(rf"(?<![\w'\"]){re.escape(name)}(?![\w'\"])", re.IGNORECASE)
                for name in sorted(gold_columns)}
    used = [name for name, pattern in patterns.items() if pattern.search(gold_sql)]
    others = sorted({name for table, names in columns.items() if table not in gold_tables for name in names
                     if name.lower() not in gold_columns and re.fullmatch(r"\w+", name)})
    chooser.shuffle(used)
    return [patterns[column].sub(other, gold_sql, count=1)
            for column in used for other in chooser.sample(others, min(3, len(others)))]


@dataclass
class RetryPolicy(OraclePolicy):
    """The oracle, whose first query has a wrong column (query_with_a_wrong_column); after the error, which names
    what fixes it, it runs the gold query.

    The wrong query is marked as not imitated: a warm-up on these episodes trained on it taught the 0.5B to write
    wrong columns more often (first queries refused on 129 of 614 held-out questions, against 91 without them).
    """

    name: str = "retry"

    def plan(self, row: dict[str, Any]) -> list[ToolCall]:
        calls = super().plan(row)
        broken = query_with_a_wrong_column(str(row["db_path"]), row["gold_sql"], row["question"])
        if broken is None:
            return calls
        first_query = next(index for index, call in enumerate(calls) if call.name == "query")
        return calls[:first_query] + [ToolCall("query", {"sql": broken}, imitated=False)] + calls[first_query:]


@dataclass
class RecoveryPolicy(OraclePolicy):
    """The model's own calls up to a query SQLite refused, replayed as they were (context, not imitated), then the
    oracle's gold query and answer: how that episode should have gone on (oracle_guidance.py's recovery rows)."""

    name: str = "recovery"
    prefix: tuple[ToolCall, ...] = ()

    def plan(self, row: dict[str, Any]) -> list[ToolCall]:
        return [*self.prefix, *(call for call in super().plan(row) if call.name != "describe")]


@dataclass
class RandomPolicy:
    """Samples a random table and answers with one random cell from what it saw."""

    seed: int = 0
    name: str = "random"
    _rng: random.Random = field(init=False)
    _step: int = 0

    def __post_init__(self) -> None:
        self._rng = random.Random(self.seed)

    def start(self, row: dict[str, Any]) -> None:
        self._step = 0

    def next_call(self, messages: list[dict[str, Any]]) -> ToolCall | None:
        self._step += 1
        if self._step == 1:
            tables = messages[-1]["content"].rsplit(TABLES_LABEL, 1)[-1].split(",")
            return ToolCall("sample", {"table": self._rng.choice(tables).strip()})
        if self._step == 2:
            lines = [line for line in str(messages[-1]["content"]).splitlines()[1:] if " | " in line or line]
            cells = [cell.strip() for line in lines for cell in line.split(" | ") if cell.strip()]
            return ToolCall("answer", {"value": self._rng.choice(cells) if cells else "0"})
        return None


SCRIPTED_POLICIES: dict[str, Callable[[], Policy]] = {
    "oracle": OraclePolicy,
    "wrapped": WrappedAnswerPolicy,
    "never_stop": NeverStopPolicy,
    "retry": RetryPolicy,
    "random": RandomPolicy,
}


def make_policy(name: str) -> Policy:
    if name not in SCRIPTED_POLICIES:
        raise ValueError(f"unknown policy {name!r}; built-in policies are: {', '.join(SCRIPTED_POLICIES)}")
    return SCRIPTED_POLICIES[name]()

