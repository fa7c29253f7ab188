"""What a training run records: per-step episode metrics, sampled rollouts, metric history, curves.

``RolloutLogger`` plugs into TRL's GRPOTrainer twice: its ``episode_metrics`` method is a reward
function of weight 0 (TRL hands reward functions the environments and a ``log_metric`` hook, so
it is the one place that sees every finished episode), and it is a ``TrainerCallback`` that
appends every log line to ``metrics.jsonl`` as it happens, so nothing is lost on a crash.
Under --oversample_groups (dynamic_sampling.py) it sees every generated episode, those of the groups
dropped before training included: episode/*, accuracy/*, rollout/episodes_per_s and the run's totals count
generated episodes, and oversample/* says what was trained on. Likewise under --guide_unsolved
(oracle_guidance.py): episode/* count the generated episodes, guide/* the groups given the oracle's episode.

It also times the trainer's generation calls (``time_generation``): every logged step says how many
generation calls its rollouts made (the first turn and each tool-loop turn), how long they took, their
share of the step and the longest turn generated, so a real run shows where a multi-turn step's time goes.

With several processes (DDP), each one's reward function sees only its own environments: the episodes
are gathered from all of them first, so episode/* and accuracy/* cover the whole batch on every rank,
and only the main process writes the files.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import statistics
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from accelerate.utils import gather_object
from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments

from agent_env import EpisodeRecord
from batching import optimizer_steps_per_generation
from episode_stats import EpisodeOutcome, episode_outcome, episode_stats
from prompt import FEWSHOT_HEADER
from sampling import SPREAD_EPSILON, InformativeSampler
from spider_data import question_key

# Curves worth looking at, by the key TRL or episode_metrics logs them under.
PLOTTED_METRICS = {
    "reward": "reward (mean)",
    "reward_std": "reward spread (std)",
    # Not TRL's frac_reward_zero_std: under scale_rewards='batch' that tests the batch's spread, not each group's.
    "episode/zero_advantage_groups": "groups with zero advantage (generated)",
    "episode/shaping_only_advantage": "advantage weight on groups all right or all wrong",
    "oversample/trained_zero_advantage_share": "groups with zero advantage (trained on)",  # --oversample_groups only
    "guide/guided_share": "all-wrong groups given the oracle's episode",  # --guide_unsolved only
    "episode/post_episode_calls": "calls after the episode, per episode",
    "episode/accuracy": "training accuracy",
    "episode/answered": "episodes that answered",
    "episode/tool_calls": "tool calls per episode",
    "episode/requery_after_refusal": "queried again after a refused query",  # steps that had a refused query
    "episode/resend_after_refusal": "sent the refused query again",  # the same steps
    "rollout/episodes_per_s": "episodes per second",
}


def _mean(values: list[float]) -> float:
    return statistics.fmean(values) if values else 0.0


def _prompt_groups(values: list[Any], group_size: int) -> list[list[Any]]:
    """Consecutive runs of group_size values: TRL orders a batch's completions prompt group by prompt group."""
    return [values[start : start + group_size] for start in range(0, len(values), group_size)]


# Each group's own spread, whatever scale_rewards is (TRL's frac_reward_zero_std, under 'batch', is the batch's).
ZERO_ADVANTAGE = "episode/zero_advantage_groups"


def zero_advantage_share(rewards: list[float], group_size: int) -> float:
    """Share of prompt groups whose completions all got the same reward (no gradient signal)."""
    return _mean([float(max(group) - min(group) < SPREAD_EPSILON) for group in _prompt_groups(rewards, group_size)])


@dataclass(frozen=True)
class ShapingOnlyShares:
    """How much of a step's signal answers to the shaped reward alone: groups whose episodes were all right or all
    wrong but whose rewards still differ (shaping, the post-episode penalty). TRL's default ``scale_rewards='group'``
    divides each group by its own spread, so such a group's advantages are as large as those of a group where some
    episodes answered right and some did not (real 0.5B runs: 17-59% of the groups with reward spread)."""

    groups: float  # share of the step's groups
    advantage: float  # share of the step's summed |advantage|, as TRL computes it under ``scale_rewards``


def shaping_only_shares(rewards: list[float], correct: list[bool], group_size: int,
                        scale_rewards: str) -> ShapingOnlyShares:
    """The shares above, with TRL 1.15's advantages (``trl_advantages``)."""
    advantages = trl_advantages(rewards, group_size, scale_rewards)
    groups = list(zip(_prompt_groups(rewards, group_size), _prompt_groups(correct, group_size),
                      _prompt_groups(advantages, group_size), strict=True))
    weight_all = weight_shaping_only = 0.0
    shaping_only = 0
    for group_rewards, group_correct, group_advantages in groups:
        if max(group_rewards) - min(group_rewards) < SPREAD_EPSILON:
            continue  # no spread, no advantage
        weight = sum(abs(advantage) for advantage in group_advantages)
        weight_all += weight
        if all(group_correct) or not any(group_correct):
            shaping_only += 1
            weight_shaping_only += weight
    return ShapingOnlyShares(shaping_only / len(groups) if groups else 0.0,
                             weight_shaping_only / weight_all if weight_all else 0.0)


def trl_advantages(rewards: Sequence[float], group_size: int, scale_rewards: str) -> list[float]:
    """TRL 1.15's advantage of each reward (GRPOTrainer._generate_and_score_completions, every reward scorable): the
    reward minus its group's mean, divided by the group's standard deviation plus 1e-4 ('group'), the whole
    batch's plus 1e-4 ('batch'), or not divided ('none')."""
    if scale_rewards not in ("group", "batch", "none"):
        raise ValueError(f"scale_rewards must be 'group', 'batch' or 'none', got {scale_rewards!r}")
    rewards = list(rewards)
    batch_std = _stdev(rewards)
    advantages: list[float] = []
    for group in _prompt_groups(rewards, group_size):
        centre = statistics.fmean(group)
        divisor = (1.0 if scale_rewards == "none"
                   else (batch_std if scale_rewards == "batch" else _stdev(group)) + 1e-4)
        advantages += [(reward - centre) / divisor for reward in group]
    return advantages


def _stdev(values: list[float]) -> float:
    """The sample standard deviation (n - 1), as TRL's nanstd; 0 for fewer than two values."""
    return statistics.stdev(values) if len(values) > 1 else 0.0


def solved_group_shares(correct: list[bool], group_size: int) -> tuple[float, float]:
    """Shares of prompt groups that every completion solved and that none did: the two ways a group loses its
    reward variance (too easy for the model now, or out of its reach), which call for different fixes."""
    groups = _prompt_groups(correct, group_size)
    return _mean([float(all(group)) for group in groups]), _mean([float(not any(group)) for group in groups])


@dataclass
class RunTotals:
    """What the whole run's episodes did, for the line train.py prints at the end."""

    episodes: int = 0
    tool_calls: int = 0  # every call the model made, after the episode and unknown tools included
    episodes_with_a_call: int = 0
    answered: int = 0
    correct: int = 0

    def add(self, outcomes: list[EpisodeOutcome]) -> None:
        self.episodes += len(outcomes)
        self.tool_calls += sum(outcome.calls + outcome.post_episode_calls for outcome in outcomes)
        self.episodes_with_a_call += sum(outcome.tool_calls + outcome.post_episode_calls > 0 for outcome in outcomes)
        self.answered += sum(outcome.answered for outcome in outcomes)
        self.correct += sum(outcome.is_correct for outcome in outcomes)

    def summary(self) -> str:
        return (f"the model made {self.tool_calls} tool calls in {self.episodes} episodes "
                f"({self.episodes_with_a_call} with at least one call, {self.answered} answered, "
                f"{self.correct} correct)")


@dataclass
class GenerationTimes:
    """This process's generation calls, and the optimizer steps they fed, since their figures were last logged."""

    calls: int = 0
    seconds: float = 0.0
    tokens: int = 0
    row_steps: int = 0  # rows x decode steps of each call: a row that ended its turn still rides along
    longest_turn: int = 0
    episodes: int = 0
    steps: int = 0
    step_seconds: float | None = 0.0  # None once a step came without its time

    def add(self, seconds: float, turn_lengths: list[int]) -> None:
        self.calls += 1
        self.seconds += seconds
        self.tokens += sum(turn_lengths)
        self.row_steps += len(turn_lengths) * max(turn_lengths, default=0)
        self.longest_turn = max(self.longest_turn, max(turn_lengths, default=0))

    def add_steps(self, steps: int, step_time: float | None) -> None:
        """``steps`` optimizer steps of a log line, ``step_time`` seconds each on average (TRL's step_time)."""
        self.steps += steps
        if self.step_seconds is not None:
            self.step_seconds = self.step_seconds + steps * step_time if step_time else None

    def per_step(self) -> dict[str, float]:
        """Averages per optimizer step (a log line may cover several, and a generation batch may train several),
        the share of the steps' time spent generating, the share of decode row-steps spent on rows that had
        already ended their turn, and episodes per second."""
        metrics: dict[str, float] = {}
        steps = max(1, self.steps)
        step_time = self.step_seconds / steps if self.step_seconds else None
        if self.calls:
            metrics = {"rollout/generation_calls": self.calls / steps, "rollout/generation_s": self.seconds / steps,
                       "rollout/generated_tokens": self.tokens / steps, "rollout/longest_turn_tokens": self.longest_turn,
                       "rollout/ended_row_share": 1 - self.tokens / self.row_steps if self.row_steps else 0.0}
            if step_time:
                metrics["rollout/generation_share"] = min(1.0, self.seconds / steps / step_time)
        if step_time and self.episodes:
            metrics["rollout/episodes_per_s"] = self.episodes / steps / step_time
        return metrics


class RolloutLogger(TrainerCallback):
    """Logs episode metrics each step, writes sampled rollouts and every log line to JSONL files."""

    def __init__(self, out_dir: Path, group_size: int, rollouts_per_step: int = 2,
                 sampler: InformativeSampler | None = None, scale_rewards: str = "group") -> None:
        self.out_dir = Path(out_dir)
        self.scale_rewards = scale_rewards  # GRPOConfig's: how TRL scales the advantages these rewards become
        self.last_answers: list[bool] = []  # whether each episode of the batch scored last answered right
        self.last_rewards: list[float] = []  # and its reward (the environment's, TRL's only weighted one)
        self.last_episodes: list[EpisodeRecord] = []  # and what it did (oracle guidance's recovery rows read it)
        self.sampler = sampler  # told every scored group, so it can defer questions that taught nothing
        self.group_size = group_size
        self.rollouts_per_step = rollouts_per_step
        self.rollouts_path = self.out_dir / "rollouts.jsonl"
        self.metrics_path = self.out_dir / "metrics.jsonl"
        self.totals = RunTotals()
        self._generation = GenerationTimes()
        self._last_logged_step = 0

    def episode_metrics(
        self,
        prompts: list[Any],
        completions: list[Any],
        environments: list[Any],
        log_metric: Callable[[str, float], None],
        trainer_state: TrainerState | None = None,
        hardness: list[str] | None = None,
        **kwargs: Any,
    ) -> list[float]:
        """A reward function of weight 0: logs what the episodes of every process did, returns zeros.

        Every rank gathers all ranks' episodes (in rank order, the order TRL scores the global batch in) and
        logs the same whole-batch values; TRL's log_metric then averages across ranks, which leaves them as
        they are. TRL calls reward functions on every rank for every batch, so the gather cannot hang.
        """
        local_levels = hardness or [""] * len(environments)
        local_keys = [question_key(db_id, question) for db_id, question in
                      zip(kwargs.get("db_id") or [""] * len(environments),
                          kwargs.get("question") or [""] * len(environments), strict=True)]
        local = [(prompt, completion, environment.episode, environment.get_reward(), level, key)
                 for prompt, completion, environment, level, key in
                 zip(prompts, completions, environments, local_levels, local_keys, strict=True)]
        prompts, completions, episodes, rewards, levels, keys = (list(column) for column in zip(*gather_object(local)))
        self.last_answers = [episode.is_correct for episode in episodes]
        self.last_rewards = list(rewards)
        self.last_episodes = list(episodes)
        if self.sampler is not None:
            self.sampler.record(keys, rewards, self.last_answers)
        outcomes = [episode_outcome(episode, completion if isinstance(completion, list) else [])
                    for episode, completion in zip(episodes, completions, strict=True)]
        self.totals.add(outcomes)
        self._generation.episodes += len(episodes)
        stats = episode_stats(outcomes)  # the quantities the eval reports, under the names metrics.jsonl keeps
        log_metric("episode/accuracy", stats.accuracy or 0.0)  # or 0.0: None only when there was no episode
        log_metric("episode/accuracy_exact_text", stats.exact_text_accuracy or 0.0)
        log_metric("episode/answered", stats.answered or 0.0)
        log_metric("episode/tool_calls", stats.tool_calls or 0.0)
        log_metric("episode/post_episode_calls", stats.post_episode_calls or 0.0)
        log_metric("episode/tool_error_rate", stats.tool_error_rate or 0.0)
        log_metric("episode/gold_seen_wrong", stats.gold_seen_wrong or 0.0)
        log_metric("episode/unreadable_call_end", stats.unreadable_call_end or 0.0)
        if stats.requery_after_refusal is not None:  # only steps with a refused query measure these
            log_metric("episode/requery_after_refusal", stats.requery_after_refusal)
            log_metric("episode/resend_after_refusal", stats.resend_after_refusal or 0.0)
        log_metric(ZERO_ADVANTAGE, zero_advantage_share(rewards, self.group_size))
        all_solved, none_solved = solved_group_shares(self.last_answers, self.group_size)
        log_metric("episode/groups_all_correct", all_solved)
        log_metric("episode/groups_none_correct", none_solved)
        shaping_only = shaping_only_shares(rewards, self.last_answers, self.group_size, self.scale_rewards)
        log_metric("episode/shaping_only_groups", shaping_only.groups)
        log_metric("episode/shaping_only_advantage", shaping_only.advantage)
        by_hardness: dict[str, list[float]] = defaultdict(list)
        for episode, level in zip(episodes, levels, strict=True):
            by_hardness[level or "unknown"].append(float(episode.is_correct))
        for level, correct in by_hardness.items():
            log_metric(f"accuracy/{level}", _mean(correct))
        if trainer_state is None or trainer_state.is_world_process_zero:
            step = trainer_state.global_step if trainer_state is not None else 0
            self._write_rollouts(step, prompts, completions, episodes, rewards, levels)
        return [0.0] * len(local)

    def _write_rollouts(
        self, step: int, prompts: list[Any], completions: list[Any], episodes: list[Any], rewards: list[float],
        hardness: list[str],
    ) -> None:
        """The best and worst episode of the first group (and so on, up to rollouts_per_step)."""
        group = range(min(self.group_size, len(episodes)))
        ranked = sorted(group, key=lambda index: rewards[index], reverse=True)
        picked = [ranked[0], ranked[-1]] if len(ranked) > 1 else ranked
        picked = list(dict.fromkeys(picked + ranked))[: self.rollouts_per_step]
        self.out_dir.mkdir(parents=True, exist_ok=True)
        with self.rollouts_path.open("a", encoding="utf-8") as handle:
            for index in picked:
                system, *conversation = prompts[index]
                record = {
                    "step": step,
                    "hardness": hardness[index],
                    "fewshot_in_prompt": FEWSHOT_HEADER in system["content"],
                    "prompt": conversation,
                    "completion": completions[index],
                    **episodes[index].to_dict(),
                }
                handle.write(json.dumps(record, default=str) + "\n")

    def time_generation(self, generate_turn: Callable[..., Any]) -> Callable[..., Any]:
        """The trainer's one generation method (first turn and tool-loop turns alike), timed call by call
        (generation.wrap_trainer installs it outermost)."""

        @functools.wraps(generate_turn)
        def timed_turn(*args: Any, **kwargs: Any) -> tuple[list[list[int]], Any]:
            started = time.perf_counter()
            completion_ids, logprobs = generate_turn(*args, **kwargs)  # token lists: the GPU has finished
            self._generation.add(time.perf_counter() - started, [len(ids) for ids in completion_ids])
            return completion_ids, logprobs

        return timed_turn

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, float] | None = None,
        **kwargs: Any,
    ) -> None:
        if logs and "loss" in logs:  # a training step's log line (not the final summary)
            steps = max(1, state.global_step - self._last_logged_step)
            self._last_logged_step = state.global_step
            self._generation.add_steps(steps, logs.get("step_time"))
            # Where one generation batch trains several optimizer steps, its figures wait for the last of them:
            # episodes/s over the steps it took, not the first step's alone.
            if self._generation.steps >= optimizer_steps_per_generation(args):
                logs.update(self._generation.per_step())
                self._generation = GenerationTimes()
            if self.sampler is not None:
                logs.update(self.sampler.take_counts())
        if logs and state.is_world_process_zero:  # every rank gets on_log; one writes
            logs.update(gpu_memory_gib())
            self.out_dir.mkdir(parents=True, exist_ok=True)
            with self.metrics_path.open("a", encoding="utf-8") as handle:
                handle.write(json.dumps({"step": state.global_step, **logs}) + "\n")


def start_gpu_memory_accounting() -> None:
    """Make the peak memory logged from here on this run's own: return what earlier work in this process left
    cached (the learning proof runs evals and phases in one process) and restart the peak counters. Without
    it, a phase after a wide eval logged that eval's 60 GiB as its own peak."""
    import gc

    import torch

    if not torch.cuda.is_available():
        return
    gc.collect()  # models an earlier run dropped still hold their memory until their reference cycles go
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()


def gpu_memory_gib() -> dict[str, float]:
    """Peak GPU memory so far (allocated by tensors, reserved by the allocator) of this process's GPU (under
    DDP, metrics.jsonl holds the main process's); empty without CUDA."""
    import torch

    if not torch.cuda.is_available():
        return {}
    return {
        "gpu/peak_allocated_gib": round(torch.cuda.max_memory_allocated() / 2**30, 3),
        "gpu/peak_reserved_gib": round(torch.cuda.max_memory_reserved() / 2**30, 3),
    }


def run_summary(log_history: list[dict[str, Any]], skip_first: int = 1) -> str:
    """One line for the end of a run: median step time and episodes per second after warm-up, reward, peak GPU
    memory."""
    all_step_times = [entry["step_time"] for entry in log_history if "step_time" in entry]
    step_times = all_step_times[skip_first:]
    speeds = [entry["rollout/episodes_per_s"] for entry in log_history if "rollout/episodes_per_s" in entry]
    rewards = [entry["reward"] for entry in log_history if "reward" in entry]
    parts = [f"{len(all_step_times)} steps"]
    if step_times:
        parts.append(f"median step time {statistics.median(step_times):.2f} s (after {skip_first} warm-up)")
    if speeds[skip_first:]:
        parts.append(f"{statistics.median(speeds[skip_first:]):.2f} episodes/s")
    if rewards:
        parts.append(f"mean reward {statistics.fmean(rewards):.3f}")
    parts += [f"{name.split('/')[-1]} {value:.2f} GiB" for name, value in gpu_memory_gib().items()]
    return ", ".join(parts)


def report_run(out_dir: Path, log_history: list[dict[str, Any]], totals: RunTotals) -> Path:
    """The end of a phase: its training curves drawn to out_dir/training_curves.png (returned), its summary line,
    what its episodes did and the warnings of a run that could not have learned, printed."""
    curves = out_dir / "training_curves.png"
    plot_training_curves(log_history, curves)
    print(f"[train] {run_summary(log_history)}", flush=True)
    print(f"[train] {totals.summary()}", flush=True)
    for line in [guidance_summary(log_history), *learned_nothing_warnings(log_history, totals),
                 vllm_alignment_warning(log_history), alike_groups_note(log_history),
                 shaping_weight_note(log_history), unreadable_calls_note(log_history)]:  # the warnings, then the notes
        if line:
            print(f"[train] {line}", flush=True)
    return curves


def guidance_summary(log_history: list[dict[str, Any]]) -> str | None:
    """How many groups --guide_unsolved gave the oracle's episode, and how many it could not, their oracle episode
    longer than --max_completion_length (a WARNING where it guided none for that reason); None for a run without
    it. The generated episodes above count the model's own episodes only."""
    guided = [entry["guide/guided_groups"] for entry in log_history if "guide/guided_groups" in entry]
    shares = [entry["guide/guided_share"] for entry in log_history if "guide/guided_share" in entry]
    too_long = sum(entry.get("guide/too_long_groups", 0.0) for entry in log_history)
    if not guided:
        return None
    line = (f"oracle guidance: {sum(guided):.0f} all-wrong groups trained on the oracle's episode in one row, "
            f"{statistics.fmean(shares):.0%} of the groups of a step on average")
    recovered = [entry["guide/recovery_groups"] for entry in log_history if "guide/recovery_groups" in entry]
    if recovered:
        line += f" ({sum(recovered):.0f} of them on a recovery from one of their refused queries, --guide_recovery)"
    if round(too_long):
        line += f"; {too_long:.0f} all-wrong groups left unguided, their oracle episode longer than --max_completion_length"
        if not round(sum(guided)):
            line = "WARNING: " + line + " (raise it to guide them)"
    return line


def write_run_config(out_dir: Path, agent: Any, grpo: Any, **parts: Any) -> Path:
    """train_config.json, one format for every phase, the warm-up's included: the run's own settings (``agent``,
    a dataclass), TRL's (``grpo``), then ``parts`` (the curriculum phase, the warm-up's settings, the processes)."""
    record = {"agent": dataclasses.asdict(agent), "grpo": grpo.to_dict(), **parts}
    path = out_dir / "train_config.json"
    path.write_text(json.dumps(record, indent=2, default=str))
    return path


def learned_nothing_warnings(log_history: list[dict[str, Any]], totals: RunTotals) -> list[str]:
    """Lines for a run that could not have learned: no tool call in any episode, or a gradient of 0 in every step
    (every group scored alike, so every advantage was 0). Empty for a run that may have learned."""
    warnings = []
    if totals.episodes and totals.tool_calls == 0:
        warnings.append(f"WARNING: the model made no tool call in any of {totals.episodes} episodes, so no answer "
                        "could be right; warm it up first (python train.py --phase sft, then this phase with "
                        "--start_adapter OUTPUT_DIR/sft/adapter)")
    grad_norms = [entry["grad_norm"] for entry in log_history if "grad_norm" in entry]
    if grad_norms and not any(grad_norms):
        zero_std = [entry[ZERO_ADVANTAGE] for entry in log_history if ZERO_ADVANTAGE in entry]
        why = (f" (every group's episodes scored alike in every step: {ZERO_ADVANTAGE} 1.0)"
               if zero_std and all(share == 1 for share in zero_std) else "")
        warnings.append(f"WARNING: the gradient was 0 in all {len(grad_norms)} steps{why}, so the LoRA did not move")
    return warnings


# Groups whose episodes all scored alike give no gradient. Issue 29 asks for at most this share over the last tenth
# of a phase; on the real 0.5B, plain sampling left 31-65% there, --oversample_groups 8 17% (docs/gpu.md, 2026-12-04).
ALIKE_GROUPS_TARGET = 0.20
NOTE_AFTER_STEPS = 10  # a shorter run's last tenth is one step: too few groups to say anything


@dataclass(frozen=True)
class LastTenth:
    """A logged share's mean over the last tenth of a run's steps."""

    share: float
    steps: int  # steps in the last tenth
    of_steps: int  # steps that logged the share


def last_tenth(log_history: list[dict[str, Any]], key: str) -> LastTenth | None:
    """``key``'s mean over the last tenth of the steps that logged it; None for a run too short to say anything."""
    shares = [entry[key] for entry in log_history if key in entry]
    if len(shares) < NOTE_AFTER_STEPS:
        return None
    last = shares[-(len(shares) // 10):]
    return LastTenth(statistics.fmean(last), len(last), len(shares))


# All-wrong groups held at about 20% of every real 1.5B mixed phase's groups, first step to last (docs/gpu.md,
# 2026-12-06i): the questions a phase misses, which no reward spread teaches.
UNSOLVED_GROUPS_NOTE_SHARE = 0.10


def alike_groups_note(log_history: list[dict[str, Any]]) -> str | None:
    """A line for a run that trained mostly on groups with no reward spread near its end, with what to try; None
    for a short run or one under the target. Counts the groups trained on (oversampling drops alike ones)."""
    trained = "oversample/trained_zero_advantage_share"
    key = trained if any(trained in entry for entry in log_history) else ZERO_ADVANTAGE
    tail = last_tenth(log_history, key)
    if tail is None or tail.share <= ALIKE_GROUPS_TARGET:
        return None
    advice = ("more extra groups (--oversample_groups) or --sampling informative" if key == trained
              else "--oversample_groups 8 (DAPO's dynamic sampling) trains on groups with spread first")
    guided = any("guide/guided_share" in entry for entry in log_history)
    solved = last_tenth(log_history, "episode/groups_all_correct")
    if solved is not None and solved.share > ALIKE_GROUPS_TARGET:
        advice += (f". {solved.share:.0%} were all right: the model has fitted questions of this kind, and more steps "
                   "on them add little (on the real 1.5B, 30 more mixed steps moved held-out by 1 to 5 questions of "
                   "614, whether they went over the same questions again or over ones the warm-up never saw, "
                   "docs/gpu.md 2026-12-06i)")
        all_classes = any(f"accuracy/{level}" in entry for entry in log_history for level in ("hard", "extra"))
        if not (all_classes and guided):  # else the phase already had what the advice below names
            advice += ("; questions it still misses may teach more: a phase with Spider's hard and extra classes "
                       "too, their all-wrong groups guided (configs/mixed_guided.yaml: on the real 1.5B, 67.3% "
                       "held-out against 58.0% unguided from one warm-up, one seed, docs/gpu.md 2026-12-07c)")
    unsolved = last_tenth(log_history, "episode/groups_none_correct")
    if unsolved is not None and unsolved.share > UNSOLVED_GROUPS_NOTE_SHARE and not guided:
        advice += (f". {unsolved.share:.0%} were all wrong: --guide_unsolved (on by default where the settings "
                   "allow) trains such a group on the oracle's episode in one of its rows (oracle_guidance.py; on the "
                   "real 1.5B's all-classes mixed phase, 67.3% held-out against 58.0% unguided from one warm-up, one "
                   "seed, docs/gpu.md 2026-12-07c)")
    return (f"NOTE: {tail.share:.0%} of the groups trained on in the last {tail.steps} of {tail.of_steps} steps scored "
            f"alike (all right or all wrong), so they gave no gradient; {advice}")


# Under scale_rewards='group' a group whose episodes all answered alike but whose shaped rewards differ gets advantages
# as large as one whose answers differ: about 30% of the groups with any spread in the real 0.5B's mixed phases
# (docs/results.md, 2026-12-05h).
SHAPING_WEIGHT_NOTE_SHARE = 0.20


def shaping_weight_note(log_history: list[dict[str, Any]]) -> str | None:
    """A line for a run whose advantages near its end went largely to groups that differed in shaped rewards only;
    None otherwise or for a short run."""
    tail = last_tenth(log_history, "episode/shaping_only_advantage")
    if tail is None or tail.share <= SHAPING_WEIGHT_NOTE_SHARE:
        return None
    return (f"NOTE: {tail.share:.0%} of the advantage weight in the last {tail.steps} of {tail.of_steps} steps went to "
            "groups whose episodes all answered alike (all right or all wrong) and differed only in shaped rewards "
            "(at most 0.15); TRL's default scale_rewards 'group' makes those advantages as large as a right answer's. "
            "--scale_rewards batch divides by the batch's spread instead, so the shaping stays a nudge")


# Episodes that end on a tool call the parser cannot read get no answer and reward 0. Every plain mixed run of the
# real 0.5B ended 0.2-0.8% of its held-out episodes so; one seed's adapters 6% (docs/gpu.md, 2026-12-04c).
UNREADABLE_CALLS_NOTE_SHARE = 0.03


def unreadable_calls_note(log_history: list[dict[str, Any]]) -> str | None:
    """A line for a run whose episodes near its end often stopped on a tool call the parser could not read (a format
    defect, which the accuracy alone does not tell apart from wrong SQL); None otherwise or for a short run."""
    tail = last_tenth(log_history, "episode/unreadable_call_end")
    if tail is None or tail.share <= UNREADABLE_CALLS_NOTE_SHARE:
        return None
    return (f"NOTE: {tail.share:.0%} of the episodes in the last {tail.steps} of {tail.of_steps} steps ended on a tool "
            "call the parser could not read (no answer, reward 0); rollouts.jsonl shows how they were written. On the "
            "real 0.5B, --learning_rate 5e-5 unlearned such a defect within one mixed epoch where 2e-5 kept it "
            "(docs/results.md)")


# Under vLLM (--fast_inference), TRL compares each token's log-probability in vLLM's sampling with the trainer's own.
# Aligned rollouts differ by numerics (at most 0.3-0.5 nats a token on vLLM's CPU build in float32); a token several
# nats off is another token, or other weights, than the ones trained on.
LOGP_DIFFERENCE_WARN_NATS = 5.0


def sampling_alignment(log_history: list[dict[str, Any]]) -> dict[str, float] | None:
    """How closely vLLM's rollouts line up with what the trainer scores, over a run's steps: the median of TRL's
    per-step largest and mean log-probability differences (nats a token) and the mean importance-sampling ratio;
    None for a run without vLLM (TRL logs none of them)."""
    largest = [entry["sampling/sampling_logp_difference/max"] for entry in log_history
               if "sampling/sampling_logp_difference/max" in entry]
    if not largest:
        return None
    means = [entry["sampling/sampling_logp_difference/mean"] for entry in log_history
             if "sampling/sampling_logp_difference/mean" in entry]
    ratios = [entry["sampling/importance_sampling_ratio/mean"] for entry in log_history
              if "sampling/importance_sampling_ratio/mean" in entry]
    alignment = {"logp_difference_max": round(statistics.median(largest), 3), "steps": len(largest)}
    if means:
        alignment["logp_difference_mean"] = round(statistics.median(means), 4)
    if ratios:
        alignment["importance_sampling_ratio"] = round(statistics.fmean(ratios), 4)
    return alignment


def vllm_alignment_warning(log_history: list[dict[str, Any]]) -> str | None:
    """A warning for a run whose vLLM rollouts do not line up with what the trainer scores (TRL's
    sampling/sampling_logp_difference/max, median over the steps above LOGP_DIFFERENCE_WARN_NATS); None otherwise
    or without vLLM."""
    alignment = sampling_alignment(log_history)
    if alignment is None or alignment["logp_difference_max"] <= LOGP_DIFFERENCE_WARN_NATS:
        return None
    ratio = (f", importance-sampling ratio {alignment['importance_sampling_ratio']:.2f} on average"
             if "importance_sampling_ratio" in alignment else "")
    return (f"WARNING: vLLM's sampling log-probabilities differ from the trainer's by up to "
            f"{alignment['logp_difference_max']:.1f} nats a token (median over {alignment['steps']} steps{ratio}): "
            "the rollouts' tokens or weights are not the ones trained on (a weight copy that missed some rows, or a "
            "token added to the rollouts with a made-up log-probability), so the gradient is off. Train without "
            "--fast_inference (docs/vllm.md, item 8).")


def model_card(base_model: str, phase: str, hardness: tuple[str, ...], start_adapter: Path | None) -> str:
    """The phase folder's README.md: what was trained, on which base model, and how to evaluate it (TRL's own card
    links the base model's hub page, and names none when it is a local folder)."""
    is_folder = Path(base_model).expanduser().is_dir()
    base = f"`{base_model}` (a local folder)" if is_folder else f"[{base_model}](https://huggingface.co/{base_model})"
    start = f", starting from the adapter `{start_adapter}`" if start_adapter is not None else ""
    return (f"---\nbase_model: {base_model}\nlibrary_name: peft\ntags: [grpo, trl, spider-grpo]\n---\n\n"
            f"# spider-grpo, phase {phase}\n\n"
            f"A LoRA adapter (`adapter/`) of {base}, trained with GRPO (TRL's GRPOTrainer) to answer Spider questions "
            f"({'+'.join(hardness)}) by calling SQL tools{start}. The settings it ran with are in `train_config.json`, "
            "its curves in `training_curves.png`, sampled episodes in `rollouts.jsonl`.\n\n"
            "    python -m eval --checkpoint <this folder>/adapter      # accuracy by hardness\n")


def plot_training_curves(log_history: list[dict[str, Any]], path: Path) -> Path | None:
    """A grid of the plotted metrics over steps; None when nothing was logged or matplotlib is absent."""
    try:
        import matplotlib
    except ImportError:
        print("[train] matplotlib is not installed: no training-curve plot (pip install matplotlib)")
        return None

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    series = {
        key: [(entry["step"], entry[key]) for entry in log_history if key in entry and "step" in entry]
        for key in PLOTTED_METRICS
    }
    series = {key: points for key, points in series.items() if points}
    if not series:
        return None
    columns = 2
    rows = (len(series) + 1) // columns
    figure, axes = plt.subplots(rows, columns, figsize=(10, 3 * rows), squeeze=False)
    for axis, (key, points) in zip(axes.flat, series.items()):
        steps, values = zip(*points)
        axis.plot(steps, values, marker="o", markersize=3)
        axis.set_title(PLOTTED_METRICS[key])
        axis.set_xlabel("step")
        axis.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole: no 0.25 ticks on a short run
        axis.grid(alpha=0.3)
    for axis in list(axes.flat)[len(series):]:
        axis.set_visible(False)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path
