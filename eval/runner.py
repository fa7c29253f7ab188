"""Play every question of a split through ``SQLEnv`` and keep one record per question.

    records = play_split(split, make_policy("oracle"))                       # scripted, one at a time
    records = play_split(split, ModelPolicy(model, tokenizer), batch_size=16) # a model, batched

Both paths use the environment, verifier and message format that training uses. A scripted
``policies.Policy`` plays each question through ``policies.play_episode``. A ``BatchPolicy`` (a
language model) plays up to ``batch_size`` episodes at once: every round it is asked for the next
call of every running episode, so it can generate for all of them together, and a finished
episode's slot is refilled with the next question at once, so one long episode holds no one back.

Questions that cannot be scored (spider_data's ``SkipReason``) get a record too, with the reason.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Protocol, runtime_checkable

from tqdm.auto import tqdm

from agent_env import (
    DEFAULT_STEP_BUDGET,
    TOOL_NAMES,
    EpisodeRecord,
    SQLEnv,
    StepRecord,
    max_tool_calls,
)
from episode_stats import EpisodeOutcome, episode_outcome, refusal_and_requery, wrong_sql_kind
from policies import (
    Policy,
    ToolCall,
    assistant_tool_call_message,
    initial_messages,
    play_episode,
    run_tool,
)
from prompt import system_prompt
from spider_data import SpiderExample, SpiderSplit, to_grpo_rows

# Tool outputs are cut to this many characters in the records (a report over 7,000 questions
# stays a few megabytes); the model saw the whole output.
RECORDED_OUTPUT_CHARS = 300


class StopReason(str, Enum):
    """Why an episode stopped before the environment ended it, or why the agent stopped acting."""

    POLICY_STOPPED = "policy_stopped"  # a scripted policy came to the end of its plan
    NO_TOOL_CALL = "no_tool_call"  # the model ended its turn without calling a tool
    MALFORMED_TOOL_CALL = "malformed_tool_call"  # a <tool_call> block that is not {"name", "arguments"} JSON
    TRUNCATED = "truncated"  # the turn hit max_new_tokens before its tool call was complete
    CONTEXT_FULL = "context_full"  # the conversation no longer fits the model's context window
    CALL_CAP = "call_cap"  # agent_env.max_tool_calls(step budget) calls were made


@dataclass
class EpisodeEnd:
    """How a batch policy's episode ended: its stop reason (None: it never stopped), its last text."""

    stop_reason: StopReason | None = None
    final_text: str = ""
    turns: int = 0
    generated_tokens: int = 0


@runtime_checkable
class BatchPolicy(Protocol):
    """A policy that decides for many episodes at once (a language model generating in batches).

    Episodes are told apart by an integer key: ``start`` opens one, ``next_calls`` asks for the
    next call of each given episode (None: it stops), ``finish`` closes one and says how it ended.
    """

    name: str

    def start(self, key: int, row: dict[str, Any]) -> None: ...

    def next_calls(self, conversations: dict[int, list[dict[str, Any]]]) -> dict[int, ToolCall | None]: ...

    def finish(self, key: int) -> EpisodeEnd: ...


@dataclass
class QuestionRecord:
    """One question: what the agent did and how it scored, or why the question was skipped."""

    db_id: str
    question: str
    hardness: str | None
    gold_sql: str
    correct: bool = False
    correct_exact_text: bool = False  # right by the exact text asked for, without the verifier's relaxations
    steps: int = 0  # tool calls inside the episode (the ones that spend the step budget)
    post_episode_calls: int = 0
    tool_errors: int = 0  # in-episode calls that failed, calls of unknown tools included
    unknown_tool_calls: int = 0
    saw_gold_result: bool = False  # one of its queries returned the gold result
    executed_queries: int = 0  # queries that ran without an error
    wrong_sql_kind: str | None = None  # how SQL that never returned the gold result missed it (episode_stats)
    answer: str | None = None
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    pred_sql: str | None = None  # the last SQL the agent ran: what Spider's official scripts score
    stop_reason: str | None = None
    final_text: str = ""
    turns: int = 0
    generated_tokens: int = 0
    reward: float = 0.0
    skip_reason: str | None = None
    skip_detail: str = ""

    @property
    def is_scored(self) -> bool:
        return self.skip_reason is None

    @property
    def answered(self) -> bool:
        return self.answer is not None

    @property
    def outcome(self) -> EpisodeOutcome:
        """The numbers episode_stats reads, from the fields above (whose names the report keeps)."""
        return EpisodeOutcome(is_correct=self.correct, is_exact_text=self.correct_exact_text, answered=self.answered,
                              tool_calls=self.steps, post_episode_calls=self.post_episode_calls,
                              failed_calls=self.tool_errors, unknown_tool_calls=self.unknown_tool_calls,
                              saw_gold_result=self.saw_gold_result, executed_queries=self.executed_queries,
                              **refusal_and_requery((call["tool"], call["error"] is not None, sql_argument(call))
                                                    for call in self.tool_calls if not call["after_episode"]))

    @property
    def calls_in_episode(self) -> int:
        """Tool calls made while the episode ran, unknown tools included (the tool error rate's base)."""
        return self.outcome.calls


# --- records ---------------------------------------------------------------------------------


def tool_call_entries(messages: list[dict[str, Any]], steps: list[StepRecord]) -> list[dict[str, Any]]:
    """Every tool call in a conversation, matched to the environment's step records.

    Calls of known tools each made one ``StepRecord`` (in order). Calls of unknown tools never
    reached the environment, so they come from the messages alone, with the error the model saw.
    """
    step_iterator = iter(steps)
    entries = []
    for position, message in enumerate(messages):
        for index, tool_call in enumerate(message.get("tool_calls") or []):
            function = tool_call["function"]
            if function["name"] in TOOL_NAMES:
                step = next(step_iterator)
                entries.append(
                    {
                        "tool": step.tool,
                        "arguments": step.arguments,
                        "output": (step.output or "")[:RECORDED_OUTPUT_CHARS],
                        "error": step.error,
                        "after_episode": step.after_episode,
                    }
                )
            else:
                reply = messages[position + 1 + index]["content"]  # tool replies follow their calls in order
                entries.append(
                    {
                        "tool": function["name"],
                        "arguments": function["arguments"],
                        "output": "",
                        "error": reply,
                        "after_episode": False,
                        "unknown_tool": True,
                    }
                )
    return entries


def sql_argument(entry: dict[str, Any]) -> object:
    """The SQL a query call sent ("" for any other call: an unknown tool's arguments need not even be an object)."""
    return entry["arguments"].get("sql", "") if entry["tool"] == "query" else ""


def last_sql(entries: list[dict[str, Any]]) -> str | None:
    """The last query the agent ran inside the episode: the last one that ran cleanly, else the last tried."""
    queries = [entry for entry in entries if entry["tool"] == "query" and not entry["after_episode"]]
    candidates = [entry for entry in queries if entry["error"] is None] or queries
    if not candidates:
        return None
    sql = candidates[-1]["arguments"].get("sql")
    return sql if isinstance(sql, str) else None


def episode_record(
    example: SpiderExample, messages: list[dict[str, Any]], episode: EpisodeRecord, end: EpisodeEnd
) -> QuestionRecord:
    entries = tool_call_entries(messages, episode.steps)
    outcome = episode_outcome(episode, messages)  # what training logs of an episode, too
    return QuestionRecord(
        db_id=example.db_id,
        question=example.question,
        hardness=example.hardness.value if example.hardness else None,
        gold_sql=example.gold_sql,
        correct=outcome.is_correct,
        correct_exact_text=outcome.is_exact_text,
        steps=outcome.tool_calls,
        post_episode_calls=outcome.post_episode_calls,
        tool_errors=outcome.failed_calls,
        unknown_tool_calls=outcome.unknown_tool_calls,
        saw_gold_result=outcome.saw_gold_result,
        executed_queries=outcome.executed_queries,
        wrong_sql_kind=wrong_sql_kind(episode),
        answer=episode.answer,
        tool_calls=entries,
        pred_sql=last_sql(entries),
        stop_reason=end.stop_reason.value if end.stop_reason else None,
        final_text=end.final_text,
        turns=end.turns,
        generated_tokens=end.generated_tokens,
        reward=sum(episode.reward_parts().values()),
    )


def skipped_record(example: SpiderExample) -> QuestionRecord:
    assert example.skip_reason is not None
    return QuestionRecord(
        db_id=example.db_id,
        question=example.question,
        hardness=example.hardness.value if example.hardness else None,
        gold_sql=example.gold_sql,
        skip_reason=example.skip_reason.value,
        skip_detail=example.skip_detail,
    )


# --- playing ---------------------------------------------------------------------------------

Played = tuple[int, list[dict[str, Any]], EpisodeRecord, EpisodeEnd]


def play_scripted(rows: list[dict[str, Any]], policy: Policy, *, step_budget: int) -> Iterator[Played]:
    """One episode at a time through policies.play_episode, the path the project's tests trust."""
    env = SQLEnv(step_budget=step_budget)
    max_calls = max_tool_calls(step_budget)
    for index, row in enumerate(rows):
        transcript = play_episode(env, row, policy, max_calls=max_calls)
        calls = sum(message["role"] == "assistant" for message in transcript.messages)
        stop = StopReason.CALL_CAP if calls >= max_calls else StopReason.POLICY_STOPPED
        yield index, transcript.messages, transcript.episode, EpisodeEnd(stop_reason=stop)


@dataclass
class _Slot:
    """One running episode of a batch: its environment, conversation and calls so far."""

    env: SQLEnv
    messages: list[dict[str, Any]]
    calls: int = 0


def play_batched(
    rows: list[dict[str, Any]], policy: BatchPolicy, *, step_budget: int, batch_size: int
) -> Iterator[Played]:
    """Up to batch_size episodes at once; each round asks the policy for every running episode's next call.

    The loop is play_episode's, widened: the same first messages, the same tool-call and tool
    messages, the same call cap. Episodes finish in any order; each is yielded as it finishes.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    max_calls = max_tool_calls(step_budget)
    waiting = iter(enumerate(rows))
    idle_envs = [SQLEnv(step_budget=step_budget) for _ in range(min(batch_size, len(rows)))]
    running: dict[int, _Slot] = {}

    def fill() -> None:
        while idle_envs and (item := next(waiting, None)) is not None:
            key, row = item
            env = idle_envs.pop()
            running[key] = _Slot(env=env, messages=initial_messages(env, row))
            policy.start(key, row)

    fill()
    while running:
        decisions = policy.next_calls({key: slot.messages for key, slot in running.items()})
        for key, call in decisions.items():
            slot = running[key]
            if call is not None:
                slot.messages.append(assistant_tool_call_message(call))
                slot.messages.append({"role": "tool", "name": call.name, "content": run_tool(slot.env, call)})
                slot.calls += 1
            if call is None or slot.calls >= max_calls:
                end = policy.finish(key)
                if end.stop_reason is None:
                    end.stop_reason = StopReason.CALL_CAP
                del running[key]
                idle_envs.append(slot.env)
                yield key, slot.messages, slot.env.episode, end
        fill()


class ProgressLines:
    """Progress as plain lines for a log, on a timer: every ``every`` seconds ``<what>: done/total questions, K
    generate calls, T s`` (``done`` and ``calls`` read then; the calls where there is a count), so that a log tells a
    slow eval from a stuck one even while no question finishes; and a last line when the block ends."""

    def __init__(self, what: str, total: int, every: float, done: Callable[[], int],
                 calls: Callable[[], int] | None = None) -> None:
        self.what, self.total, self.every, self.done, self.calls = what, total, every, done, calls
        self.started = time.monotonic()
        self._stop = threading.Event()
        self._timer = threading.Thread(target=self._beat, name="eval-progress", daemon=True)

    def __enter__(self) -> ProgressLines:
        self._timer.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._timer.join()
        self._print()

    def _beat(self) -> None:
        while not self._stop.wait(self.every):
            self._print()

    def _print(self) -> None:
        calls = f", {self.calls()} generate calls" if self.calls is not None else ""
        print(f"{self.what}: {self.done()}/{self.total} questions{calls}, {time.monotonic() - self.started:.0f} s",
              file=sys.stderr, flush=True)


def play_split(
    split: SpiderSplit,
    policy: Policy | BatchPolicy,
    *,
    step_budget: int = DEFAULT_STEP_BUDGET,
    batch_size: int = 16,
    progress: bool = True,
    log_every: float | None = None,
) -> list[QuestionRecord]:
    """Play every usable question of a split; returns one record per question, in the split's order.

    ``log_every``: with the bar off, a plain progress line to stderr every this many seconds (and one at the end),
    so a log read while the eval runs, or after it was cut off, shows how far it got."""
    usable = split.usable()
    rows = to_grpo_rows(usable, system_prompt(step_budget))  # the prompt states the budget the episodes have
    records: list[QuestionRecord | None] = [None] * len(usable)
    if isinstance(policy, BatchPolicy):
        played = play_batched(rows, policy, step_budget=step_budget, batch_size=batch_size)
    else:
        played = play_scripted(rows, policy, step_budget=step_budget)
    lines: contextlib.AbstractContextManager[Any] = contextlib.nullcontext()
    if log_every and not progress:
        calls = getattr(policy, "generation_calls", None)  # a model policy's generate calls
        lines = ProgressLines(f"eval {policy.name}", len(rows), log_every, lambda: len(records) - records.count(None),
                              None if calls is None else lambda: len(calls))
    with lines, tqdm(total=len(rows), desc=f"eval {policy.name}", unit="q", disable=not progress) as bar:
        for index, messages, episode, end in played:
            records[index] = episode_record(usable[index], messages, episode, end)
            bar.update()
    by_question = iter(records)
    return [next(by_question) if example.is_usable else skipped_record(example) for example in split.examples]
