"""What episodes did, in numbers: one definition of each quantity that training logs and the eval reports.

    outcome = episode_outcome(env.episode, messages)   # one episode: right or not, answered, calls, failed calls
    stats = episode_stats(outcomes)                     # shares and means over episodes (None: no episode)
    wrong_answer_kind(outcome)                          # why a wrong episode was wrong (None: it was right)
    wrong_sql_kind(episode)                             # for SQL that never returned the gold result: how it missed

Training logs them every step (training_logs.py, metrics.jsonl) and the eval reports them per hardness class
(eval/metrics.py, the report's JSON), each under the names its stored results already use:

    here                 training log                    eval report
    accuracy             episode/accuracy                accuracy
    exact_text_accuracy  episode/accuracy_exact_text     exact_text_accuracy
    answered             episode/answered                answered
    tool_calls           episode/tool_calls              mean_steps
    post_episode_calls   episode/post_episode_calls      post_episode_calls
    tool_error_rate      episode/tool_error_rate         tool_error_rate
    gold_seen_wrong      episode/gold_seen_wrong         wrong_answer_kinds' first two, as counts
    unreadable_call_end  episode/unreadable_call_end     stop_reasons' malformed_tool_call (and truncated calls)
    requery_after_refusal  episode/requery_after_refusal  requery_after_refusal
    resend_after_refusal   episode/resend_after_refusal   resend_after_refusal
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agent_env import EpisodeRecord, query_words, returned_no_rows, unknown_tool_calls
from chat_format import TOOL_CALL_START
from sql_structure import SQLStructureError, tables_used


@dataclass(frozen=True)
class EpisodeOutcome:
    """What one episode did, in the numbers its statistics read."""

    is_correct: bool
    is_exact_text: bool  # right by the exact text the prompt asks for, without the verifier's relaxations
    answered: bool  # it called answer
    tool_calls: int  # in-episode calls of the environment's tools: the ones that spend the step budget
    post_episode_calls: int  # calls after the episode ended
    failed_calls: int  # in-episode calls that failed, calls of unknown tools included
    unknown_tool_calls: int  # calls of tools the environment does not have: they never reach it
    saw_gold_result: bool = False  # one of its queries returned the gold result (agent_env's check, first 20 rows)
    executed_queries: int = 0  # queries that ran without an error
    # its last turn opened a tool call the parser could not read (malformed, or cut at the budget): a format defect
    ended_on_unreadable_call: bool = False
    refused_query: bool = False  # SQLite (or the environment) refused one of its in-episode queries
    queried_after_refusal: bool = False  # and it sent another query after the first refusal
    resent_refused_query: bool = False  # and that next query was the refused one again (the same words)

    @property
    def calls(self) -> int:
        """In-episode calls, unknown tools included: the tool error rate's base."""
        return self.tool_calls + self.unknown_tool_calls


def episode_outcome(episode: EpisodeRecord, messages: list[dict[str, Any]]) -> EpisodeOutcome:
    """One episode's outcome from its environment's record and its messages (only they show unknown tools)."""
    unknown = unknown_tool_calls(messages)
    return EpisodeOutcome(
        is_correct=episode.is_correct,
        is_exact_text=episode.is_exact_text,
        answered=episode.answer is not None,
        tool_calls=episode.in_episode_steps,
        post_episode_calls=episode.post_episode_calls,
        failed_calls=episode.tool_errors + unknown,
        unknown_tool_calls=unknown,
        saw_gold_result=episode.saw_gold_result,
        executed_queries=episode.executed_queries,
        ended_on_unreadable_call=ended_on_unreadable_call(messages),
        **refusal_and_requery((step.tool, step.error is not None, step.arguments.get("sql", ""))
                              for step in episode.steps if not step.after_episode),
    )


def refusal_and_requery(calls: Iterable[tuple[str, bool, object]]) -> dict[str, bool]:
    """Whether an episode's query was refused, whether it queried again after the first refusal, and whether that
    next query was the refused one again, from its in-episode calls in order as (tool, failed, SQL argument). A small
    model, refused, tends to answer with the error instead (seed 29: every held-out episode with a refused query
    did), and GRPO cannot reinforce a retry it never tries; a warm-up that taught retrying taught resending the
    same query as well (117 of 138 retries, seed 29)."""
    refused: list[str] | None = None  # the first refused query's words, once there is one
    for tool, failed, sql in calls:
        if tool != "query":
            continue
        if refused is not None:
            return {"refused_query": True, "queried_after_refusal": True,
                    "resent_refused_query": query_words(sql) == refused}
        if failed:
            refused = query_words(sql)
    return {"refused_query": refused is not None, "queried_after_refusal": False, "resent_refused_query": False}


def ended_on_unreadable_call(messages: list[dict[str, Any]]) -> bool:
    """The last assistant turn holds ``<tool_call>`` but no call was read from it: TRL's tool loop then ends the
    episode there, without an answer (seed 27's easy adapter ended 6% of held-out episodes so)."""
    turns = [message for message in messages if message.get("role") == "assistant"]
    if not turns or turns[-1].get("tool_calls"):
        return False
    content = turns[-1].get("content")
    return isinstance(content, str) and TOOL_CALL_START in content


# Why wrong episodes were wrong, in the order a report lists them. The first two lost a result their own query had
# found: the answer's transcription or format (the verifier's side); the last two never got there: the model's SQL.
GOLD_SEEN_ANSWERED_WRONG = "gold result seen, answer wrong"
GOLD_SEEN_NO_ANSWER = "gold result seen, no answer"
NO_QUERY_RAN = "no query ran"
GOLD_NOT_SEEN = "no query returned the gold result"
WRONG_ANSWER_KINDS = (GOLD_SEEN_ANSWERED_WRONG, GOLD_SEEN_NO_ANSWER, NO_QUERY_RAN, GOLD_NOT_SEEN)
LOST_IN_THE_ANSWER = (GOLD_SEEN_ANSWERED_WRONG, GOLD_SEEN_NO_ANSWER)


def wrong_answer_kind(outcome: EpisodeOutcome) -> str | None:
    """Why a wrong episode was wrong, one of WRONG_ANSWER_KINDS; None for a right one. A query whose result was cut
    to its first 20 rows never counts as the gold result, so a right query for a long result reads as not seen."""
    if outcome.is_correct:
        return None
    if outcome.saw_gold_result:
        return GOLD_SEEN_ANSWERED_WRONG if outcome.answered else GOLD_SEEN_NO_ANSWER
    return NO_QUERY_RAN if outcome.executed_queries == 0 else GOLD_NOT_SEEN


# The wrong episodes whose SQL never returned the gold result (GOLD_NOT_SEEN), by what their last query that ran did:
# it read other tables than the gold query (which tables the question needs: schema linking), or the gold query's
# tables and returned no rows (a value or a filter) or another result (the query's logic).
SQL_OTHER_TABLES = "last query read other tables than the gold query"
SQL_NO_ROWS = "gold tables, no rows"
SQL_OTHER_RESULT = "gold tables, another result"
SQL_UNPARSED = "last query not parseable here"  # SQLite ran it; sqlglot cannot read it
WRONG_SQL_KINDS = (SQL_OTHER_TABLES, SQL_NO_ROWS, SQL_OTHER_RESULT, SQL_UNPARSED)


def wrong_sql_kind(episode: EpisodeRecord) -> str | None:
    """How an episode's SQL missed the gold result, one of WRONG_SQL_KINDS, read off its last query that ran inside
    the episode; None unless the episode was wrong with queries that ran and none returned the gold result."""
    if episode.is_correct or episode.saw_gold_result:
        return None
    ran = [step for step in episode.steps if step.tool == "query" and step.error is None and not step.after_episode]
    if not ran or not isinstance(sql := ran[-1].arguments.get("sql"), str):
        return None
    try:
        tables = {name.lower() for name in tables_used(sql)}
        gold_tables = {name.lower() for name in tables_used(episode.gold_sql)}
    except SQLStructureError:
        return SQL_UNPARSED
    if tables != gold_tables:
        return SQL_OTHER_TABLES
    return SQL_NO_ROWS if returned_no_rows(ran[-1].output) else SQL_OTHER_RESULT


@dataclass(frozen=True)
class EpisodeStats:
    """Shares and means over episodes; None where there was no episode (nothing was measured)."""

    accuracy: float | None
    exact_text_accuracy: float | None
    answered: float | None  # share of episodes that called answer
    tool_calls: float | None  # in-episode calls per episode
    post_episode_calls: float | None  # calls after the episode, per episode
    tool_error_rate: float | None  # see tool_error_rate
    # share of episodes that were wrong although one of their queries returned the gold result: lost in the answer
    gold_seen_wrong: float | None = None
    # share of episodes that ended on a tool call the parser could not read (ended_on_unreadable_call)
    unreadable_call_end: float | None = None
    # of the episodes with a refused query, the share that queried again after it; None where none was refused
    requery_after_refusal: float | None = None
    # of the episodes with a refused query, the share whose next query was the refused one again
    resend_after_refusal: float | None = None


def episode_stats(outcomes: Sequence[EpisodeOutcome]) -> EpisodeStats:
    return EpisodeStats(
        accuracy=mean([float(outcome.is_correct) for outcome in outcomes]),
        exact_text_accuracy=mean([float(outcome.is_exact_text) for outcome in outcomes]),
        answered=mean([float(outcome.answered) for outcome in outcomes]),
        tool_calls=mean([outcome.tool_calls for outcome in outcomes]),
        post_episode_calls=mean([outcome.post_episode_calls for outcome in outcomes]),
        tool_error_rate=tool_error_rate(sum(outcome.failed_calls for outcome in outcomes),
                                        sum(outcome.calls for outcome in outcomes)),
        gold_seen_wrong=mean([float(wrong_answer_kind(outcome) in LOST_IN_THE_ANSWER) for outcome in outcomes]),
        unreadable_call_end=mean([float(outcome.ended_on_unreadable_call) for outcome in outcomes]),
        requery_after_refusal=mean([float(outcome.queried_after_refusal) for outcome in outcomes
                                    if outcome.refused_query]),
        resend_after_refusal=mean([float(outcome.resent_refused_query) for outcome in outcomes
                                   if outcome.refused_query]),
    )


def tool_error_rate(failed_calls: int, calls: int) -> float | None:
    """Failed in-episode calls (unknown tools included) over in-episode calls (unknown tools included), pooled over
    episodes; None when there was no call."""
    return failed_calls / calls if calls else None


def mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None
