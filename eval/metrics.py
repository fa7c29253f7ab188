"""Per-hardness numbers from question records: accuracy, step efficiency, stopping, tool errors.

Pure functions of the records. Only scored questions count; skipped ones are counted apart, by
reason. A group with no questions has ``None`` for every rate (not 0: nothing was measured).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from episode_stats import (WRONG_ANSWER_KINDS, WRONG_SQL_KINDS, EpisodeOutcome, episode_stats, mean,
                           wrong_answer_kind)
from eval.runner import QuestionRecord
from spider_data import HARDNESS_ORDER

OVERALL = "overall"
GROUPS = [hardness.value for hardness in HARDNESS_ORDER] + [OVERALL]


@dataclass(frozen=True)
class GroupStats:
    """What one hardness class (or all questions) scored; rates are per episode unless named otherwise."""

    n: int
    correct: int
    accuracy: float | None
    # Accuracy by the exact text the prompt asks for (no relaxed matching): accuracy minus this is what the
    # relaxed, type-aware verifier adds.
    exact_text_accuracy: float | None
    mean_steps: float | None  # in-episode tool calls per episode
    mean_steps_correct: float | None  # the same, over correctly answered episodes only
    post_episode_calls: float | None  # tool calls after the episode ended, per episode
    answered: float | None  # share of episodes that called answer
    tool_error_rate: float | None  # failed in-episode calls / in-episode calls
    mean_reward: float | None
    # of the episodes with a refused query, the share that queried again after it (None: no query was refused)
    requery_after_refusal: float | None = None
    # of the same episodes, the share whose next query was the refused one again
    resend_after_refusal: float | None = None

    def to_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


def group_stats(records: Iterable[QuestionRecord]) -> GroupStats:
    """The episode quantities as training logs them too (episode_stats.py), under the report's names."""
    records = [record for record in records if record.is_scored]
    outcomes = [record.outcome for record in records]
    stats = episode_stats(outcomes)
    return GroupStats(
        n=len(records),
        correct=sum(record.correct for record in records),
        accuracy=stats.accuracy,
        exact_text_accuracy=stats.exact_text_accuracy,
        mean_steps=stats.tool_calls,
        mean_steps_correct=episode_stats([outcome for outcome in outcomes if outcome.is_correct]).tool_calls,
        post_episode_calls=stats.post_episode_calls,
        answered=stats.answered,
        tool_error_rate=stats.tool_error_rate,
        mean_reward=mean([record.reward for record in records]),
        requery_after_refusal=stats.requery_after_refusal,
        resend_after_refusal=stats.resend_after_refusal,
    )


def by_hardness(records: list[QuestionRecord]) -> dict[str, GroupStats]:
    """Stats for easy, medium, hard, extra and overall, in that order."""
    stats = {group: group_stats(record for record in records if record.hardness == group) for group in GROUPS[:-1]}
    stats[OVERALL] = group_stats(records)
    return stats


def skipped_by_reason(records: list[QuestionRecord]) -> dict[str, int]:
    return dict(Counter(record.skip_reason for record in records if record.skip_reason is not None).most_common())


def stop_reasons(records: list[QuestionRecord]) -> dict[str, int]:
    """How scored episodes ended on the agent's side (no tool call, malformed call, call cap, ...)."""
    reasons = Counter(record.stop_reason for record in records if record.is_scored and record.stop_reason)
    return dict(reasons.most_common())


def wrong_answer_kinds(records: list[QuestionRecord]) -> dict[str, int]:
    """The scored, wrong questions by why they were wrong (episode_stats.WRONG_ANSWER_KINDS, in that order)."""
    kinds = Counter(wrong_answer_kind(record.outcome) for record in records if record.is_scored and not record.correct)
    return {kind: kinds[kind] for kind in WRONG_ANSWER_KINDS if kinds[kind]}


NO_QUERY_AFTER = "no query after it"
RESENT = "the refused query again"
CHANGED_WRONG = "a changed query, still wrong"
CHANGED_RIGHT = "a changed query, then right"


def after_refused_query(records: list[QuestionRecord]) -> dict[str, int]:
    """The scored episodes with a refused query, by what their next query was: none (a model that never queries
    again cannot recover from its own SQL mistakes, and GRPO cannot reinforce a retry its groups never try), the
    refused query again, or a changed one, by whether the episode then ended right."""
    def kind(outcome: EpisodeOutcome) -> str:
        if not outcome.queried_after_refusal:
            return NO_QUERY_AFTER
        if outcome.resent_refused_query:
            return RESENT
        return CHANGED_RIGHT if outcome.is_correct else CHANGED_WRONG

    counts = Counter(kind(record.outcome) for record in records if record.is_scored and record.outcome.refused_query)
    return {name: counts[name] for name in (NO_QUERY_AFTER, RESENT, CHANGED_WRONG, CHANGED_RIGHT) if counts[name]}


def wrong_sql_kinds(records: list[QuestionRecord]) -> dict[str, int]:
    """The scored questions whose SQL never returned the gold result, by how it missed (episode_stats.WRONG_SQL_KINDS,
    in that order)."""
    kinds = Counter(record.wrong_sql_kind for record in records if record.is_scored and record.wrong_sql_kind)
    return {kind: kinds[kind] for kind in WRONG_SQL_KINDS if kinds[kind]}
