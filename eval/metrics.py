"""Per-hardness numbers from question records: accuracy, step efficiency, stopping, tool errors.

Pure functions of the records. Only scored questions count; skipped ones are counted apart, by
reason. A group with no questions has ``None`` for every rate (not 0: nothing was measured).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from agent_env import tool_error_rate
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

    def to_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def group_stats(records: Iterable[QuestionRecord]) -> GroupStats:
    records = [record for record in records if record.is_scored]
    calls = sum(record.calls_in_episode for record in records)
    return GroupStats(
        n=len(records),
        correct=sum(record.correct for record in records),
        accuracy=_mean([float(record.correct) for record in records]),
        exact_text_accuracy=_mean([float(record.correct_exact_text) for record in records]),
        mean_steps=_mean([record.steps for record in records]),
        mean_steps_correct=_mean([record.steps for record in records if record.correct]),
        post_episode_calls=_mean([record.post_episode_calls for record in records]),
        answered=_mean([float(record.answered) for record in records]),
        tool_error_rate=tool_error_rate(sum(record.tool_errors for record in records), calls),
        mean_reward=_mean([record.reward for record in records]),
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
