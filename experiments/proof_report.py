"""The learning proof's report: docs/learning_proof.md and its figures, drawn from the results file alone.

    python experiments/learning_proof.py --report-only   # the entry point; this module runs nothing itself

Runs pair up by seed, scale and warm-up digest; the statistics (exact McNemar tests on the questions two evals
disagree on, seeds pooled; Welch and Fisher tests between an ablation and its full setting; reward slopes) feed the
tables and the plan's verification list. The runner (learning_proof.py) writes the results and calls
``write_report``; this module imports neither train.py nor torch, so redrawing the report takes no training stack.
"""

from __future__ import annotations

import functools
import os
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from proof_arms import ABLATIONS, ARMS, HABIT_SHARE, one_pass_of, trains_its_own_warm_up, warm_up_of

# The groups every eval is summarized by (the runner keeps these of each eval report): the table's columns.
HARDNESS = ["easy", "medium", "hard", "extra", "overall"]
HARDNESS_LETTERS = {"easy": "e", "medium": "m", "hard": "h", "extra": "x"}  # a question's class in a results file

# ------------------------------------------------------------------------------------------------ runs


def measured(run: dict[str, Any], eval_name: str, *keys: str) -> float | None:
    """One number of one eval of a run; None where that eval was not run (a run cut short keeps the rest)."""
    value: Any = run.get("evals", {}).get(eval_name)
    for key in keys:
        if value is None:
            return None
        value = value.get(key)
    return value


# Each step's share of groups with no reward spread, read from each group's own rewards where the run logged it
# (training_logs.ZERO_ADVANTAGE), else TRL's frac_reward_zero_std: the same number under scale_rewards='group', but
# under 'batch' TRL's tests the whole batch's spread and reads 0.
ZERO_SHARE = "zero-advantage share"
ZERO_ADVANTAGE = "episode/zero_advantage_groups"


def curve(run: dict[str, Any], key: str) -> list[float]:
    """A logged value of each step of a run (the steps that logged it); ZERO_SHARE from whichever key it has."""
    steps = run.get("curves", [])
    if key == ZERO_SHARE:
        key = ZERO_ADVANTAGE if any(ZERO_ADVANTAGE in step for step in steps) else "frac_reward_zero_std"
    return [float(step[key]) for step in steps if key in step]


def optimizer_steps(run: dict[str, Any]) -> int:
    """A GRPO run's optimizer steps: an entry of its curves is a generation batch, which may have trained several."""
    return sum(int(batch.get("optimizer_steps", 1)) for batch in run.get("curves", []))


def line_of(run: dict[str, Any]) -> str:
    """The report's name for a run's arm: the arm for the gpu scale (every line before the plan's epochs), else
    ``arm@scale``, so that runs of different scales never pool into one row."""
    scale = run.get("scale") or "gpu"
    return run["arm"] if scale == "gpu" else f"{run['arm']}@{scale}"


def report_lines(results: dict[str, Any]) -> list[str]:
    """Every arm of the registry, then the arms of other scales that have runs."""
    others = sorted({line_of(run) for run in results["runs"].values()} - set(ARMS))
    return [*ARMS, *others]


def runs_of(results: dict[str, Any], arm: str) -> list[dict[str, Any]]:
    return [run for run in results["runs"].values() if line_of(run) == arm]


def runs_by_seed(results: dict[str, Any], arm: str) -> dict[tuple[int, str | None], dict[str, Any]]:
    """An arm's runs by (seed, scale): the runs of two arms that pair up (one continues the other)."""
    return {(run["seed"], run.get("scale")): run for run in runs_of(results, arm)}


def same_warm_up(run: dict[str, Any], other: dict[str, Any]) -> bool:
    """Whether two runs of one seed started from the same warm-up. Runs from before the digests were recorded
    count as the same: each seed's arms then ran from one warm-up in one session."""
    digests = run.get("warm_up_digest"), other.get("warm_up_digest")
    return None in digests or digests[0] == digests[1]


def pairs_by_seed(results: dict[str, Any], arm: str, other_arm: str, *, same_warm_up_only: bool = True,
                  ) -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(seed, run of arm, run of other_arm) for every seed and scale where both ran (from the same warm-up, unless
    ``same_warm_up_only`` is off: arms whose warm-ups differ by design).

    A run of ``arm`` measured again since ``other_arm``'s run grew from it (a warm-up trained anew at a later
    commit) is paired through the run it replaced, kept under ``superseded``: a GRPO phase is compared with the
    warm-up it started from, not with a later one."""
    runs, other_runs = runs_by_seed(results, arm), runs_by_seed(results, other_arm)
    earlier = [run for run in results.get("superseded", {}).values() if line_of(run) == arm]
    pairs = []
    for (seed, scale), other in sorted(other_runs.items(), key=str):
        candidates = [runs[(seed, scale)]] if (seed, scale) in runs else []
        if same_warm_up_only:
            candidates += [run for run in earlier if (run["seed"], run.get("scale")) == (seed, scale)]
            candidates = [run for run in candidates if same_warm_up(run, other)]
        if candidates:
            pairs.append((seed, candidates[0], other))
    return pairs


def ablation_pairs(results: dict[str, Any], ablation: str) -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(seed, full-setting run, ablation run) for every seed and scale where an ablation and the arm it ablates both
    ran from the same warm-up: the only fair comparison, since warm-ups of different seeds differ by about as much
    as GRPO adds."""
    full = str(ARMS[ablation].ablates)
    lines = sorted({line_of(run) for run in results["runs"].values() if run["arm"] == ablation})
    # A line is the arm and its scale ("easy-lr1e-4@epoch"): the full setting is paired at the same scale.
    return [pair for line in lines for pair in pairs_by_seed(
        results, full + line[len(ablation):], line, same_warm_up_only=not trains_its_own_warm_up(ARMS[ablation]))]


def against_warm_up(results: dict[str, Any], arm: str) -> list[tuple[int, float, float]]:
    """(seed, the warm-up's held-out overall accuracy, the arm's) for every seed where both were measured. ``arm`` is
    a report line ("mixed-informative@epoch"): the warm-up is its own arm's (proof_arms.warm_up_of), at its scale,
    from the same warm-up weights; none for GRPO from the base model."""
    name, at, scale = arm.partition("@")
    warm_up_arm = warm_up_of(ARMS[name])
    if warm_up_arm is None:
        return []
    return [(seed, warm_up, overall) for seed, sft, run in pairs_by_seed(results, f"{warm_up_arm}{at}{scale}", arm)
            if (overall := measured(run, "heldout", "accuracy", "overall")) is not None
            and (warm_up := measured(sft, "heldout", "accuracy", "overall")) is not None]


def gains_over_warm_up(results: dict[str, Any], arm: str) -> list[float]:
    """Held-out overall accuracy of ``arm`` minus that of the warm-up it grew from (same seed and scale), per seed."""
    return [overall - warm_up for _, warm_up, overall in against_warm_up(results, arm)]


# ------------------------------------------------------------------------------------------ statistics


def mcnemar_p(gained: int, lost: int) -> float:
    """Exact two-sided McNemar test on the discordant pairs (questions one arm got right and the other wrong)."""
    if gained + lost == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(gained, gained + lost, 0.5).pvalue)


def fit_slope(values: list[float]) -> tuple[float, float, float] | None:
    """OLS slope of values over steps, its standard error and p-value (None when too few points)."""
    if len(values) < 3 or len(set(values)) < 2:
        return None
    from scipy.stats import linregress

    fit = linregress(range(1, len(values) + 1), values)
    return float(fit.slope), float(fit.stderr), float(fit.pvalue)


def per_step_difference_p(key: str, steps: slice = slice(None)) -> Callable[[dict[str, Any], dict[str, Any]],
                                                                         float | None]:
    """Welch's t-test between two runs' per-step values of one curve. Unpaired: an ablation's step k need not
    train on the same questions (without few-shot examples the two example questions stay in the data, so the
    sampler's order differs)."""
    def test(full_run: dict[str, Any], ablated_run: dict[str, Any]) -> float | None:
        full, ablated = curve(full_run, key)[steps], curve(ablated_run, key)[steps]
        if len(full) < 2 or len(ablated) < 2 or len(set(full)) == len(set(ablated)) == 1:
            return None  # no spread to judge a difference by
        from scipy.stats import ttest_ind

        return float(ttest_ind(full, ablated, equal_var=False).pvalue)

    return test


def held_out_group_p(group: str) -> Callable[[dict[str, Any], dict[str, Any]], float | None]:
    """Fisher's exact test on two runs' correct counts of one hardness group of the held-out questions. Unpaired,
    so conservative: the per-question outcomes that the results keep carry no hardness."""
    def test(full_run: dict[str, Any], ablated_run: dict[str, Any]) -> float | None:
        table = []
        for run in (full_run, ablated_run):
            accuracy, count = measured(run, "heldout", "accuracy", group), measured(run, "heldout", "n", group)
            if accuracy is None or not count:
                return None
            correct = round(accuracy * count)
            table.append([correct, count - correct])
        from scipy.stats import fisher_exact

        return float(fisher_exact(table).pvalue)

    return test


@dataclass(frozen=True)
class QuestionChanges:
    """Two evals of one held-out split, question by question."""

    questions: int
    correct_before: int
    correct_after: int
    gained: int  # wrong before, right after
    lost: int

    @property
    def p(self) -> float:
        return mcnemar_p(self.gained, self.lost)


def question_changes(before_run: dict[str, Any], after_run: dict[str, Any], hardness: str | None = None, *,
                     before_eval: str = "heldout", after_eval: str = "heldout") -> QuestionChanges | None:
    """The held-out evals of two runs compared question by question (``hardness``: only that Spider class's
    questions; ``before_eval``, ``after_eval``: another eval of the held-out part, a checkpoint's); None unless both
    kept their outcomes over the same questions (same digest), and, for a class, unless one of them kept which class
    each question is."""
    before = before_run.get("evals", {}).get(before_eval, {})
    after = after_run.get("evals", {}).get(after_eval, {})
    if not (before.get("outcomes") and before.get("questions_digest") == after.get("questions_digest")):
        return None
    pairs = list(zip(before["outcomes"], after["outcomes"], strict=True))
    if hardness is not None:
        classes = before.get("hardness_by_question") or after.get("hardness_by_question")
        if not classes:
            return None
        pairs = [pair for pair, letter in zip(pairs, classes, strict=True) if letter == HARDNESS_LETTERS[hardness]]
    return QuestionChanges(len(pairs), [before for before, _ in pairs].count("1"),
                           [after for _, after in pairs].count("1"), pairs.count(("0", "1")), pairs.count(("1", "0")))


def seed_changes(results: dict[str, Any], before_arm: str, after_arm: str,
                 hardness: str | None = None) -> list[tuple[Any, QuestionChanges]]:
    """(seed, changes) for every seed and scale where both arms ran from the same warm-up and their held-out evals
    pair up question by question (``hardness``: over that class's questions only)."""
    pairs = [(seed, question_changes(before, after, hardness))
             for seed, before, after in pairs_by_seed(results, before_arm, after_arm)]
    return [(seed, changes) for seed, changes in pairs if changes is not None]


def changes_row(seed: Any, arms: str, changes: QuestionChanges) -> str:
    """One markdown row of a question-by-question table: | seed | arms | questions | correct | gained | lost | p |."""
    return (f"| {seed} | {arms} | {changes.questions} | {changes.correct_before} -> {changes.correct_after} | "
            f"{changes.gained} | {changes.lost} | {changes.p:.2g} |")


# A checkpoint's eval of the held-out part (--eval-at-step N): "heldout_stepN".
CHECKPOINT_EVAL = r"heldout_step(\d+)"


def checkpoint_rows(results: dict[str, Any]) -> list[str]:
    """Markdown rows for the checkpoints a run evaluated on the held-out part (``heldout_stepN``, --eval-at-step),
    question by question: the checkpoint against the run's final adapter (what its later steps changed), and, for a
    run of several passes whose one-pass twin (proof_arms.one_pass_of) ran N steps from the same warm-up, the twin
    against the checkpoint: one setting trained twice, which is how far two runs of it land apart."""
    rows = []
    for _, run in sorted(results["runs"].items()):
        checkpoints = sorted((int(match[1]), name) for name in run.get("evals", {})
                             if (match := re.fullmatch(CHECKPOINT_EVAL, name)))
        twin = one_pass_of(ARMS[run["arm"]]) if run["arm"] in ARMS else None
        twins = []
        if twin is not None:
            scale = line_of(run).removeprefix(run["arm"])  # "@epoch", or "" at the gpu scale
            twins = [twin_run for _, twin_run, paired in pairs_by_seed(results, twin + scale, line_of(run))
                     if paired is run]
        for step, name in checkpoints:
            changes = question_changes(run, run, before_eval=name)
            if changes:
                rows.append(changes_row(run["seed"], f"{line_of(run)}: step {step} -> step {optimizer_steps(run)}",
                                        changes))
            for twin_run in twins:
                changes = question_changes(twin_run, run, after_eval=name)
                if changes and optimizer_steps(twin_run) == step:
                    rows.append(changes_row(run["seed"], f"{line_of(twin_run)} -> {line_of(run)} at step {step}",
                                            changes))
    return rows


# A warm-up's GRPO adapters agree on some held-out questions and scatter on the rest: one setting trained twice from
# one warm-up landed 11 questions apart on the 1.5B (docs/gpu.md, 2026-12-06h). A question most of them gain (or lose)
# is the training's doing; one that one run gains and the next loses is not.
STEADY_MIN_ADAPTERS = 3


def held_out_adapters(results: dict[str, Any], warm_up: dict[str, Any]) -> list[str]:
    """The held-out outcomes ("0"/"1" a question) of every GRPO adapter that grew from ``warm_up``'s adapter (by its
    recorded digest), finals and checkpoints (heldout_stepN), over the warm-up's own questions."""
    digest = warm_up["evals"]["heldout"].get("questions_digest")
    return [summary["outcomes"] for run in [*results["runs"].values(), *results.get("superseded", {}).values()]
            if run is not warm_up and run.get("warm_up_digest") == warm_up.get("adapter_digest")
            for name, summary in sorted(run.get("evals", {}).items())
            if (name == "heldout" or re.fullmatch(CHECKPOINT_EVAL, name)) and summary.get("outcomes")
            and summary.get("questions_digest") == digest]


def steady_rows(results: dict[str, Any]) -> list[str]:
    """Markdown rows, one per warm-up with at least STEADY_MIN_ADAPTERS GRPO adapters evaluated on the held-out part:
    of the questions the warm-up misses, how many more than half of its adapters answer (and how many all of them do);
    of those it answers, how many more than half miss (all of them); the difference is the steady change. A warm-up
    trained again since (kept under ``superseded``) keeps its row: the adapters that grew from it still ran."""
    rows = []
    for key, warm_up in [*sorted(results["runs"].items()), *sorted(results.get("superseded", {}).items())]:
        if not (warm_up.get("adapter_digest") and warm_up.get("adapter_digest") == warm_up.get("warm_up_digest")
                and warm_up.get("evals", {}).get("heldout", {}).get("outcomes")):
            continue  # not a warm-up, or one whose questions were not kept
        adapters = held_out_adapters(results, warm_up)
        if len(adapters) < STEADY_MIN_ADAPTERS:
            continue
        before = warm_up["evals"]["heldout"]["outcomes"]
        right = [sum(outcomes[index] == "1" for outcomes in adapters) for index in range(len(before))]
        missed = [count for count, outcome in zip(right, before, strict=True) if outcome == "0"]
        answered = [len(adapters) - count for count, outcome in zip(right, before, strict=True) if outcome == "1"]
        gained = sum(2 * count > len(adapters) for count in missed)
        lost = sum(2 * count > len(adapters) for count in answered)
        label = line_of(warm_up) if key in results["runs"] else f"{line_of(warm_up)}, trained again since"
        rows.append(f"| {warm_up['seed']} | {label} | {len(adapters)} | {len(before)} | "
                    f"{gained} ({missed.count(len(adapters))}) of {len(missed)} | "
                    f"{lost} ({answered.count(len(adapters))}) of {len(answered)} | {gained - lost:+d} "
                    f"({100 * (gained - lost) / len(before):+.1f} points) |")
    return rows


def pooled_changes(seeds: list[QuestionChanges]) -> QuestionChanges:
    """Seeds together: under "this phase changes nothing", every changed question of every seed is as likely gained
    as lost, so the seeds' discordant questions add up into one exact test (a single seed's few dozen cannot
    separate a one- or two-point gain from noise)."""
    return QuestionChanges(*(sum(getattr(changes, name) for changes in seeds) for name in
                             ("questions", "correct_before", "correct_after", "gained", "lost")))


# ------------------------------------------------------------------------------- the verification list


def _mean_spread(values: list[float | None]) -> tuple[float | None, float | None]:
    measured = [value for value in values if value is not None]
    if not measured:
        return None, None
    return statistics.fmean(measured), (statistics.stdev(measured) if len(measured) > 1 else None)


def _cell(values: list[float | None], *, percent: bool = True) -> str:
    mean, spread = _mean_spread(values)
    if mean is None:
        return "not run"
    count = sum(value is not None for value in values)
    scale = 100 if percent else 1
    text = f"{mean * scale:.1f}{'%' if percent else ''}" if percent else f"{mean:.3f}"
    return text + (f" ± {spread * scale:.1f}" if spread is not None else "") + f" (n={count})"


def _pair(full: float | None, ablated: float | None, *, percent: bool) -> str:
    def text(value: float | None) -> str:
        return "-" if value is None else (f"{value * 100:.1f}%" if percent else f"{value:.3f}")

    return f"{text(full)} vs {text(ablated)}"


def _mean_of(run: dict[str, Any], key: str, steps: slice = slice(None)) -> float | None:
    values = curve(run, key)[steps]
    return statistics.fmean(values) if values else None


TRAINED_ZERO_SHARE = "oversample/trained_zero_advantage_share"  # logged by --oversample_groups only


def trained_zero_share(run: dict[str, Any], steps: slice = slice(None)) -> float | None:
    """The mean share of a step's trained groups with no reward spread: what oversampling logs where it ran (it drops
    such groups after generating them), else the share of the groups generated, which were all trained on."""
    trained = _mean_of(run, TRAINED_ZERO_SHARE, steps)
    return trained if trained is not None else _mean_of(run, ZERO_SHARE, steps)


def last_tenth(run: dict[str, Any]) -> slice:
    """The steps of a phase's last tenth (at least one): where issue 29's zero-advantage target is read."""
    return slice(-max(1, len(run.get("curves", [])) // 10), None)


def _verdict_lower(before: list[float | None], after: list[float | None], *, target: float) -> str:
    before_mean, _ = _mean_spread(before)
    after_mean, _ = _mean_spread(after)
    if before_mean is None or after_mean is None:
        return "not run"
    if after_mean < target:
        return f"pass (< {target})"
    return "fewer, above target" if after_mean < before_mean else "not fewer"


def verification_rows(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The plan's verification list: (check, measured, verdict)."""
    rows = []
    grpo_runs = [run for run in results["runs"].values() if run.get("curves")]
    # Runs made before train.py restarted the peak counter per phase logged the peak of the whole process, evals
    # of earlier arms included (their entries say so): not a measurement of the phase.
    own_peak = [run for run in grpo_runs if run.get("peak_memory_is_the_phases", True)]
    peaks = [max(curve(run, "gpu/peak_reserved_gib") or [0.0]) for run in own_peak]
    peak = max(peaks) if peaks else None
    # Reserved memory climbs through a phase while the allocated peak stays flat: Unsloth captures a decode graph
    # again every generate call and the dropped graphs' pools stay cached until an allocation needs them back
    # (docs/gpu.md, 2026-12-06f). The allocated peak, where logged, is what the steps needed.
    allocated = [max(values) for run in own_peak if (values := curve(run, "gpu/peak_allocated_gib"))]
    allocated_peak = max(allocated) if allocated else None
    excluded = len(grpo_runs) - len(own_peak)
    if peak and peak < 22.5:
        verdict = "pass"
    elif peak and allocated_peak is not None and allocated_peak < 22.5:
        verdict = "pass by the allocated peak (the reserved one holds cached graph pools, released before a failure)"
    else:
        verdict = "not run" if not peak else "fail"
    rows.append(("no OOM with 6 generations (peak reserved GPU memory, all GRPO arms)",
                 (f"{peak:.2f} GiB" if peak else "not run")
                 + (f" ({allocated_peak:.2f} GiB allocated, {len(allocated)} of {len(own_peak)} run(s) logged it)"
                    if allocated_peak is not None else "")
                 + (f" ({excluded} run(s) left out: their counter included earlier evals)" if excluded else ""),
                 verdict))

    def heldout(arm: str, key: str) -> list[float | None]:
        return [measured(run, "heldout", key) for run in runs_of(results, arm)]

    base_post, easy_post = heldout("base", "post_episode_calls"), heldout("easy", "post_episode_calls")
    mixed_post = heldout("mixed", "post_episode_calls")
    rows.append(("fewer 'Episode is over' calls (held-out, per episode: base -> easy -> mixed)",
                 f"{_cell(base_post, percent=False)} -> {_cell(easy_post, percent=False)} -> "
                 f"{_cell(mixed_post, percent=False)}",
                 _verdict_lower(base_post, mixed_post or easy_post, target=0.05)))
    rows += penalty_rows(results)
    rows.append(reward_slope_row([fit_slope(curve(run, "reward")) for run in runs_of(results, "easy")]))
    rows.append(paired_check(results, "ng4", ("zero-advantage groups, mean share over the phase (6 vs 4 "
                                              "generations, same warm-up; Welch t-test over steps)"),
                             lambda run: _mean_of(run, ZERO_SHARE),
                             percent=True, better="lower", verdicts=("fewer with 6", "not fewer with 6"),
                             test=per_step_difference_p(ZERO_SHARE)))
    train_easy = [value for run in runs_of(results, "easy")
                  if (value := measured(run, "train_easy", "accuracy", "easy")) is not None]
    rows.append(("easy above 50% before mixed (train-part easy questions, after the easy phase)", _cell(train_easy),
                 "pass" if train_easy and min(train_easy) > 0.5 else ("not run" if not train_easy else "fail")))
    rows += curriculum_target_rows(results)
    rows += plan_scale_rows(results)
    rows.append(relaxed_matching_row(results))
    few_shot_verdicts = ("higher with examples", "not higher with examples")
    rows.append(paired_check(results, "no-fewshot", ("few-shot: mean reward of the first 20 steps, with vs without "
                                                     "examples (same warm-up; Welch t-test over steps)"),
                             lambda run: _mean_of(run, "reward", slice(0, 20)), percent=False, better="higher",
                             verdicts=few_shot_verdicts, test=per_step_difference_p("reward", slice(0, 20))))
    rows.append(paired_check(results, "no-fewshot", ("few-shot: held-out hard accuracy, with vs without examples "
                                                     "(same warm-up; Fisher exact test)"),
                             lambda run: measured(run, "heldout", "accuracy", "hard"), percent=True, better="higher",
                             verdicts=few_shot_verdicts, test=held_out_group_p("hard")))
    return rows


def penalty_rows(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The post-episode penalty against none, from the warm-up that keeps calling after a share of its answers:
    the calls during training (the last 20 steps, where a learned difference would show) and on held-out."""
    verdicts = ("fewer with the penalty", "not fewer with the penalty")
    habit = f"from a warm-up with the habit in {HABIT_SHARE:.0%} of its episodes"
    last = slice(-20, None)
    return [paired_check(results, "no-penalty-habit",
                         (f"the post-episode penalty: calls after the episode per training episode, last 20 steps, "
                          f"with vs without it ({habit}; Welch t-test over steps)"),
                         lambda run: _mean_of(run, "episode/post_episode_calls", last), percent=False,
                         better="lower", verdicts=verdicts,
                         test=per_step_difference_p("episode/post_episode_calls", last)),
            paired_check(results, "no-penalty-habit",
                         f"the post-episode penalty: held-out calls after the episode, with vs without it ({habit})",
                         lambda run: measured(run, "heldout", "post_episode_calls"), percent=False, better="lower",
                         verdicts=verdicts)]


def relaxed_matching_row(results: dict[str, Any]) -> tuple[str, str, str]:
    """What the relaxed, type-aware verifier adds to held-out accuracy over the exact text asked for, arm by arm
    (evals from before 2026-12-02 did not record the exact-text verdict; experiments/verifier_effect.py re-scores
    any report)."""
    check = "relaxed, type-aware matching: held-out accuracy, relaxed vs exact text"
    cells, added = [], []
    for arm in ARMS:
        pairs = [(relaxed, exact) for run in runs_of(results, arm)
                 if (relaxed := measured(run, "heldout", "accuracy", "overall")) is not None
                 and (exact := measured(run, "heldout", "exact_text_accuracy", "overall")) is not None]
        if pairs:
            cells.append(f"{arm} {_cell([relaxed for relaxed, _ in pairs])} vs {_cell([exact for _, exact in pairs])}")
            added += [relaxed - exact for relaxed, exact in pairs]
    if not added:
        return check, ("not recorded by these evals (before 2026-12-02; experiments/verifier_effect.py re-scores "
                       "a report)"), "not run"
    return check, "; ".join(cells), f"adds {statistics.fmean(added) * 100:.1f} points (mean of {len(added)} evals)"


def paired_check(results: dict[str, Any], ablation: str, check: str, metric: Callable[[dict[str, Any]], float | None],
                 *, percent: bool, better: str, verdicts: tuple[str, str],
                 test: Callable[[dict[str, Any], dict[str, Any]], float | None] | None = None) -> tuple[str, str, str]:
    """A verification row comparing the full setting with one ablation seed by seed (same warm-up); the first
    verdict only where the full setting is better in every seed, and said to be within the noise where ``test``
    (a p-value of one seed's two runs) cannot separate a seed's difference from none."""
    pairs = [(seed, full_run, metric(full_run), metric(ablated_run), test(full_run, ablated_run) if test else None)
             for seed, full_run, ablated_run in ablation_pairs(results, ablation)]
    pairs = [pair for pair in pairs if pair[2] is not None and pair[3] is not None]
    if not pairs:
        return check, "not run", "not run"
    text = "; ".join(f"seed {seed}: {_pair(full, ablated, percent=percent)}" + ("" if p is None else f" (p={p:.2g})")
                     for seed, _, full, ablated, p in pairs)
    wins = all((full < ablated) if better == "lower" else (full > ablated) for _, _, full, ablated, _ in pairs)
    verdict = verdicts[0] if wins else verdicts[1]
    if wins and any(p is not None and p >= 0.05 for *_, p in pairs):
        verdict += ", within the noise"
    return check, text, verdict + (" (one seed)" if len(pairs) == 1 else "")


def reward_slope_row(fits: list[tuple[float, float, float] | None]) -> tuple[str, str, str]:
    """The easy phase's reward slope, seed by seed and across seeds: one 40-step run is too short for its own slope
    to stand out from the noise, but independent seeds whose slopes agree in sign and size are evidence together
    (one-sample t-test of the per-seed slopes against 0)."""
    check = "reward slope over the easy phase (per step, OLS ± s.e., p; then across seeds)"
    slopes = [fit for fit in fits if fit is not None]
    if not slopes:
        return check, "not run", "not run"
    text = "; ".join(f"{s:+.4f} ± {e:.4f} (p={p:.2g})" for s, e, p in slopes)
    if all(s - 2 * e > 0 for s, e, _ in slopes):
        return check, text, "rising in every seed"
    if len(slopes) < 3:
        return check, text, "not distinguishable from flat"
    from scipy.stats import ttest_1samp

    values = [s for s, _, _ in slopes]
    p_value = float(ttest_1samp(values, 0.0).pvalue)
    text += (f"; across seeds {statistics.fmean(values):+.4f} ± {statistics.stdev(values):.4f} (n={len(values)}, "
             f"t-test p={p_value:.2g})")
    rising = p_value < 0.05 and statistics.fmean(values) > 0
    return check, text, ("rising across seeds, not within one" if rising else "not distinguishable from flat")


def curriculum_target_rows(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The issue's targets for the curriculum: held-out accuracy and answered share after it, and what GRPO adds
    over the warm-up it started from (per seed, against the warm-up's spread across seeds)."""
    mixed_overall = [measured(run, "heldout", "accuracy", "overall") for run in runs_of(results, "mixed")]
    mixed_answered = [measured(run, "heldout", "answered") for run in runs_of(results, "mixed")]
    mean_overall, _ = _mean_spread(mixed_overall)
    mean_answered, _ = _mean_spread(mixed_answered)
    rows = [("held-out accuracy after the curriculum >= 40% (mixed, overall)", _cell(mixed_overall),
             "not run" if mean_overall is None else ("pass" if mean_overall >= 0.40 else "fail")),
            ("answered >= 95% (held-out, after the curriculum)", _cell(mixed_answered),
             "not run" if mean_answered is None else ("pass" if mean_answered >= 0.95 else "fail"))]
    gains = gains_over_warm_up(results, "mixed")
    _, sft_spread = _mean_spread([measured(run, "heldout", "accuracy", "overall") for run in runs_of(results, "sft")])
    if not gains:
        verdict = "not run"
    elif statistics.fmean(gains) < 0.05:
        verdict = "fail"
    elif sft_spread is None:
        verdict = "5 points or more; the seed spread is not measured yet (one warm-up)"
    else:
        verdict = "pass" if statistics.fmean(gains) > sft_spread else "within the warm-ups' seed spread"
    spread_text = f"; warm-ups' spread across seeds ± {sft_spread * 100:.1f}" if sft_spread is not None else ""
    rows.append((("GRPO (easy + mixed) adds >= 5 points over its warm-up, beyond the seed spread (held-out overall, "
                  "mixed - sft of the same seed)"),
                 (_cell(gains).replace("%", " points", 1) + spread_text) if gains else "not run", verdict))
    # The easy phase has more seeds than the whole line: what it adds by itself, on the same footing.
    easy_gains = gains_over_warm_up(results, "easy")
    if not easy_gains:
        easy_verdict = "not run"
    elif sft_spread is None:
        easy_verdict = "see numbers (one warm-up: no seed spread yet)"
    else:
        easy_verdict = ("more than the warm-ups' seed spread" if statistics.fmean(easy_gains) > sft_spread
                        else "within the warm-ups' seed spread")
    question_text = ""
    if len(easy_seeds := seed_changes(results, "sft", "easy")) > 1:
        pooled = pooled_changes([changes for _, changes in easy_seeds])
        question_text = (f"; question by question over {len(easy_seeds)} seeds: {pooled.gained} gained, "
                         f"{pooled.lost} lost (p={pooled.p:.2g})")
        if easy_gains and pooled.gained > pooled.lost and pooled.p < 0.05:
            # Smaller than what one warm-up differs from another, yet not noise: say both.
            easy_verdict = f"a gain (question by question), {easy_verdict}"
    rows.append(("the easy phase alone over its warm-up (held-out overall, easy - sft of the same seed)",
                 (_cell(easy_gains).replace("%", " points", 1) + spread_text + question_text)
                 if easy_gains else "not run",
                 easy_verdict))
    return rows


def warm_up_fits(results: dict[str, Any], finals: list[str]) -> dict[str, tuple[list[tuple[int, float, float]], Any]]:
    """Per warm-up arm, the (seed, warm-up, final) points of every final line grown from it and their least-squares
    fit of final on warm-up; only where there are three points over two warm-ups at least."""
    from scipy.stats import linregress

    by_warm_up: dict[str, list[tuple[int, float, float]]] = {}
    for line in finals:
        by_warm_up.setdefault(str(warm_up_of(ARMS[line.partition("@")[0]])), []).extend(against_warm_up(results, line))
    return {warm_up: (points, linregress([warm for _, warm, _ in points], [final for _, _, final in points]))
            for warm_up, points in sorted(by_warm_up.items())
            if len(points) >= 3 and len({warm for _, warm, _ in points}) >= 2}


def warm_up_dependence_row(results: dict[str, Any], finals: list[str]) -> tuple[str, str, str]:
    """How the final adapters follow their warm-ups: per warm-up arm, the least-squares slope of every mixed-phase
    final's held-out accuracy on its own warm-up's. Near 1, GRPO adds the same whatever the warm-up; well below 1, it
    lifts the weaker warm-ups more, towards a level of its own."""
    cells, slopes = [], []
    for warm_up, (points, fit) in warm_up_fits(results, finals).items():
        seeds = len({seed for seed, _, _ in points})
        cells.append(f"from {warm_up}: {fit.slope:.2f} +- {fit.stderr:.2f} ({len(points)} finals, {seeds} seeds; "
                     f"finals {100 * min(p[2] for p in points):.1f}-{100 * max(p[2] for p in points):.1f}% from "
                     f"warm-ups {100 * min(p[1] for p in points):.1f}-{100 * max(p[1] for p in points):.1f}%)")
        slopes.append((warm_up, float(fit.slope), float(fit.stderr)))
    if not slopes:
        return (WARM_UP_DEPENDENCE, "too few seeds", "not run")
    below = [warm_up for warm_up, slope, stderr in slopes if slope + 2 * stderr < 1]
    verdict = (f"below 1 from {', '.join(below)}: GRPO lifts the weaker warm-ups more" if below
               else "within the noise of 1: GRPO adds about the same whatever the warm-up")
    return (WARM_UP_DEPENDENCE, "; ".join(cells), verdict)


PLAN_SCALE = "epoch"
SEEDS_ASKED = 3  # issue 29: the gain beyond the seed spread, on three seeds
ZERO_SHARE_TARGET = 0.20  # issue 29: groups trained on with no reward spread, over the last tenth of a phase
FINAL_ACCURACY_TARGET = 0.48  # issue 29: the final adapter on the held-out databases
WARM_UP_DEPENDENCE = (f"the plan's scale ({PLAN_SCALE}): how the final follows its warm-up (least-squares slope of the "
                      "final adapter's held-out overall on its warm-up's; the finals of one seed share a warm-up)")


def plan_scale_rows(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Issue 29's targets at the plan's scale (--scale epoch), line by line: what each final mixed arm adds over the
    warm-up of its own seed, and the share of trained groups with no reward spread over each phase's last tenth."""
    suffix = f"@{PLAN_SCALE}"
    lines = [line for line in report_lines(results) if line.endswith(suffix) and runs_of(results, line)]
    finals = [line for line in lines if ARMS[line.removesuffix(suffix)].phase == "mixed"]
    gains = {line: values for line in finals if (values := gains_over_warm_up(results, line))}
    if gains:
        gain_text = "; ".join(f"{line}: {_cell(values).replace('%', ' points', 1)}" for line, values in gains.items())
        best_line, best = max(gains.items(), key=lambda item: statistics.fmean(item[1]))
        if statistics.fmean(best) < 0.05:
            gain_verdict = "fail"
        elif len(best) < SEEDS_ASKED:
            gain_verdict = f"5 points or more on {best_line}, {len(best)} of the {SEEDS_ASKED} seeds asked"
        else:
            gain_verdict = f"pass ({best_line})"
    else:
        gain_text, gain_verdict = "not run", "not run"
    rows = [(f"the plan's scale ({PLAN_SCALE}: an easy epoch, then mixed): GRPO adds >= 5 points over its warm-up "
             "(held-out overall, final arm - the warm-up it grew from, same seed)", gain_text, gain_verdict)]
    rows.append(warm_up_dependence_row(results, finals))
    finals_measured = {line: values for line in finals
                       if (values := [overall for run in runs_of(results, line)
                                      if (overall := measured(run, "heldout", "accuracy", "overall")) is not None])}
    if finals_measured:
        best_line, best = max(finals_measured.items(), key=lambda item: statistics.fmean(item[1]))
        final_verdict = ("fail" if statistics.fmean(best) < FINAL_ACCURACY_TARGET
                         else f"pass ({best_line})" if len(best) >= SEEDS_ASKED
                         else f"reached by {best_line}, {len(best)} of the {SEEDS_ASKED} seeds asked")
    else:
        final_verdict = "not run"
    final_text = "; ".join(f"{line}: {_cell(values)}" for line, values in finals_measured.items()) or "not run"
    rows.append((f"the plan's scale ({PLAN_SCALE}): the final adapter >= {FINAL_ACCURACY_TARGET:.0%} held-out "
                 "(overall)", final_text, final_verdict))
    shares = {line: [share for run in runs_of(results, line)
                     if (share := trained_zero_share(run, last_tenth(run))) is not None] for line in lines}
    shares = {line: values for line, values in shares.items() if values}
    met = [line for line, values in shares.items() if max(values) <= ZERO_SHARE_TARGET]
    share_verdict = ("not run" if not shares else "pass" if len(met) == len(shares)
                     else f"met by {', '.join(met)}" if met else "fail")
    rows.append((f"the plan's scale ({PLAN_SCALE}): zero-advantage groups trained on <= {ZERO_SHARE_TARGET:.0%} over "
                 "the last tenth of each phase",
                 "; ".join(f"{line}: {_cell(values)}" for line, values in shares.items()) or "not run", share_verdict))
    # The same target read by answers: a group whose episodes all answered alike can still have reward spread (the
    # shaped part), but teaches nothing about answering right. Generated groups (oversampling logs no split of its
    # own before 2026-12-05h).
    alike = {line: [1 - statistics.fmean(values[last_tenth(run)]) for run in runs_of(results, line)
                    if (values := answers_differ_curve(run))] for line in lines}
    alike = {line: values for line, values in alike.items() if values}
    met = [line for line, values in alike.items() if max(values) <= ZERO_SHARE_TARGET]
    rows.append((f"the plan's scale ({PLAN_SCALE}), read by answers: groups whose episodes all answered alike (all "
                 f"right or all wrong, whatever their shaped rewards) <= {ZERO_SHARE_TARGET:.0%} over the last tenth "
                 "of each phase (generated groups)",
                 "; ".join(f"{line}: {_cell(values)}" for line, values in alike.items()) or "not run",
                 "not run" if not alike else f"met by {', '.join(met)}" if met else "fail"))
    return rows


# ---------------------------------------------------------------------------------------------- tables


# The main line's consecutive arms and the whole line; the same for the lines whose mixed phase samples otherwise,
# and for the lines grown from the four-times warm-up.
PAIRED_ARMS = (("sft", "easy"), ("easy", "mixed"), ("sft", "mixed"), ("easy", "mixed-informative"),
               ("sft", "mixed-informative"), ("easy", "mixed-oversample"), ("sft", "mixed-oversample"),
               ("sft-4x", "easy-sft4x"), ("easy-sft4x", "mixed-sft4x"), ("sft-4x", "mixed-sft4x"),
               ("easy-sft4x", "mixed-informative-sft4x"), ("sft-4x", "mixed-informative-sft4x"),
               ("sft-4x", "mixed-informative-sft4x-lr5e-5"), ("sft-4x", "mixed-informative-sft4x-3steps"),
               ("sft-4x-recover", "mixed-informative-sft4x-recover-3steps"),
               ("sft-4x-recover", "easy-sft4x-recover"), ("easy-sft4x-recover", "mixed-informative-sft4x-recover"),
               ("sft-4x-recover", "mixed-informative-sft4x-recover"), ("sft-4x", "easy-sft4x-fresh"),
               ("easy-sft4x-fresh", "mixed-informative-sft4x-fresh"), ("sft-4x", "mixed-informative-sft4x-fresh"),
               # the 1.5B's mixed-phase arms against its warm-up and against the recipe, class by class too
               ("sft-4x", "mixed-all-informative-sft4x-lr5e-5"), ("sft-4x", "mixed-informative-sft4x-lr5e-5-direct"),
               ("mixed-informative-sft4x-lr5e-5", "mixed-all-informative-sft4x-lr5e-5"),
               ("mixed-informative-sft4x-lr5e-5", "mixed-informative-sft4x-lr5e-5-direct"),
               ("sft-4x", "mixed-all-answers-sft4x-lr5e-5"),
               ("mixed-informative-sft4x-lr5e-5", "mixed-all-answers-sft4x-lr5e-5"),
               ("mixed-all-informative-sft4x-lr5e-5", "mixed-all-answers-sft4x-lr5e-5"),
               ("sft-4x", "mixed-informative-sft4x-lr5e-5-direct-2epochs"),
               ("mixed-informative-sft4x-lr5e-5-direct", "mixed-informative-sft4x-lr5e-5-direct-2epochs"),
               ("sft-4x", "mixed-informative-sft4x-lr5e-5-direct-fresh"),
               ("mixed-informative-sft4x-lr5e-5-direct", "mixed-informative-sft4x-lr5e-5-direct-fresh"),
               ("sft-4x", "mixed-informative-sft4x-lr5e-5-direct-fresh-2x"),
               ("mixed-informative-sft4x-lr5e-5-direct-2epochs", "mixed-informative-sft4x-lr5e-5-direct-fresh-2x"),
               ("sft-4x", "mixed-all-answers-sft4x-lr5e-5-direct-fresh-2x"),
               ("mixed-informative-sft4x-lr5e-5-direct-fresh-2x", "mixed-all-answers-sft4x-lr5e-5-direct-fresh-2x"),
               ("sft-4x", "mixed-all-answers-guided-sft4x-lr5e-5-direct-fresh-2x"),
               ("mixed-all-answers-sft4x-lr5e-5-direct-fresh-2x",
                "mixed-all-answers-guided-sft4x-lr5e-5-direct-fresh-2x"),
               ("sft-4x", "mixed-all-answers-guided-oversampled-sft4x-lr5e-5-direct-fresh-2x"),
               ("mixed-all-answers-guided-sft4x-lr5e-5-direct-fresh-2x",
                "mixed-all-answers-guided-oversampled-sft4x-lr5e-5-direct-fresh-2x"),
               # the warm-up on all four classes, and the all-classes phase unguided, guided and oversampled from it
               ("sft-4x-all", "mixed-all-answers-sft4xall-lr5e-5-direct-fresh-2x"),
               ("sft-4x-all", "mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x"),
               ("mixed-all-answers-sft4xall-lr5e-5-direct-fresh-2x",
                "mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x"),
               ("sft-4x-all", "mixed-all-answers-guided-oversampled-sft4xall-lr5e-5-direct-fresh-2x"),
               ("mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x",
                "mixed-all-answers-guided-oversampled-sft4xall-lr5e-5-direct-fresh-2x"),
               ("sft-4x-all", "mixed-all-answers-guided-byclass-sft4xall-lr5e-5-direct-fresh-2x"),
               ("mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x",
                "mixed-all-answers-guided-byclass-sft4xall-lr5e-5-direct-fresh-2x"),
               ("sft-4x-all", "mixed-all-answers-guided-recovery-sft4xall-lr5e-5-direct-fresh-2x"),
               ("mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x",
                "mixed-all-answers-guided-recovery-sft4xall-lr5e-5-direct-fresh-2x"),
               ("sft-4x-all", "mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x-plan"),
               ("mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x",
                "mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x-plan"),
               # the README's easy and mixed phases under train.py's defaults, and against the config's phase
               ("sft-4x-all", "easy-sft4xall"), ("easy-sft4xall", "mixed-sft4xall"), ("sft-4x-all", "mixed-sft4xall"),
               ("mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x", "mixed-sft4xall"))


def _arm_pairs(results: dict[str, Any]) -> list[tuple[str, str]]:
    """PAIRED_ARMS at the default scale and at every other scale the results hold (``arm@scale``)."""
    scales = sorted({f"@{run['scale']}" for run in results["runs"].values() if run.get("scale") not in (None, "gpu")})
    return [(before + suffix, after + suffix) for suffix in ["", *scales] for before, after in PAIRED_ARMS]


def paired_rows(results: dict[str, Any]) -> list[str]:
    """Markdown rows comparing consecutive main-line arms of one seed question by question on the held-out split,
    where both evals kept their outcomes over the same questions; then each pair of arms over its seeds pooled."""
    def row(seed: str, arms: str, changes: QuestionChanges) -> tuple[str, str]:
        return seed, changes_row(seed, arms, changes)

    per_seed, pooled = [], []
    for before_arm, after_arm in _arm_pairs(results):
        seeds = seed_changes(results, before_arm, after_arm)
        per_seed += [row(str(seed), f"{before_arm} -> {after_arm}", changes) for seed, changes in seeds]
        if len(seeds) > 1:
            pooled.append(row(f"all {len(seeds)}", f"{before_arm} -> {after_arm}",
                              pooled_changes([changes for _, changes in seeds]))[1])
    return [text for _, text in sorted(per_seed, key=lambda item: item[0])] + pooled


def paired_hardness_rows(results: dict[str, Any]) -> list[str]:
    """The pairs of paired_rows class by class, where the evals kept each question's class: questions gained /
    lost and the exact McNemar p in each class; each pair of arms over its seeds pooled last. Where a phase's gain
    lies shows here (the 1.5B's mixed phase, seed 30: medium 15 gained and 3 lost, the other classes even)."""
    classes = HARDNESS[:-1]

    def row(seed: str, arms: str, changes: list[QuestionChanges]) -> str:
        cells = [f"{change.gained} / {change.lost} ({change.p:.2g})" for change in changes]
        return f"| {seed} | {arms} | " + " | ".join(cells) + " |"

    per_seed, pooled = [], []
    for before_arm, after_arm in _arm_pairs(results):
        # The same pairs of runs in the same order for every class: a pair that kept no classes is in none of them.
        pairs = list(zip(*(seed_changes(results, before_arm, after_arm, hardness) for hardness in classes)))
        arms = f"{before_arm} -> {after_arm}"
        per_seed += [(str(seeds[0][0]), row(str(seeds[0][0]), arms, [changes for _, changes in seeds]))
                     for seeds in pairs]
        if len(pairs) > 1:
            pooled.append(row(f"all {len(pairs)}", arms,
                              [pooled_changes([seeds[index][1] for seeds in pairs]) for index in range(len(classes))]))
    return [text for _, text in sorted(per_seed, key=lambda item: item[0])] + pooled


def ablation_rows(results: dict[str, Any]) -> list[str]:
    """Markdown rows: each ablation against its full setting from the same warm-up, seed by seed."""
    def heldout(run: dict[str, Any], group: str) -> float | None:
        return measured(run, "heldout", "accuracy", group)

    rows = []
    for ablation in ABLATIONS:
        for seed, full, ablated in ablation_pairs(results, ablation):
            def both(metric: Callable[[dict[str, Any]], float | None], *, percent: bool,
                     runs: tuple[dict, dict] = (full, ablated)) -> str:
                return _pair(metric(runs[0]), metric(runs[1]), percent=percent)

            overall_full, overall_ablated = heldout(full, "overall"), heldout(ablated, "overall")
            change = ("-" if overall_full is None or overall_ablated is None
                      else f"{(overall_ablated - overall_full) * 100:+.1f}")
            changes = question_changes(full, ablated)
            cells = [line_of(ablated), line_of(full), str(seed),
                     f"{optimizer_steps(full)} / {optimizer_steps(ablated)}",
                     both(lambda run: heldout(run, "overall"), percent=True), change,
                     f"{changes.gained} / {changes.lost} (p={changes.p:.2g})" if changes else "-",
                     both(lambda run: heldout(run, "hard"), percent=True),
                     both(trained_zero_share, percent=True),
                     both(lambda run: _mean_of(run, "reward", slice(0, 20)), percent=False),
                     both(lambda run: _mean_of(run, "episode/post_episode_calls"), percent=False)]
            rows.append("| " + " | ".join(cells) + " |")
    return rows


def flag_settings(flags: tuple[str, ...]) -> set[str]:
    """A command line's flags as settings, each flag with its values ("--learning_rate 5e-5", "--sft_hardness easy
    medium") or alone."""
    settings, tokens = set(), list(flags)
    while tokens:
        flag = tokens.pop(0)
        while tokens and not tokens[0].startswith("--"):
            flag += " " + tokens.pop(0)
        settings.add(flag)
    return settings


def lever_of(ablation: str) -> str | None:
    """What an ablation changes in its own phase alone, from the start adapter of the full setting it is compared
    with: the settings it adds ("--learning_rate 5e-5"), drops, or its optimizer steps a generation batch. None for
    one that also changes an earlier phase or the warm-up, or whose recorded runs meant something else (retired):
    only the same change, made the same way, pools across lines."""
    arm = ARMS[ablation]
    full = ARMS[str(arm.ablates)]
    if arm.retired or (arm.phase, arm.start_from) != (full.phase, full.start_from):
        return None
    ours, theirs = flag_settings(arm.flags), flag_settings(full.flags)
    parts = sorted(ours - theirs) + [f"without {setting}" for setting in sorted(theirs - ours)]
    if arm.optimizer_steps_per_generation != full.optimizer_steps_per_generation:
        parts.append(f"{arm.optimizer_steps_per_generation} optimizer steps a generation batch")
    return ", ".join(parts) or None


def lever_rows(results: dict[str, Any]) -> list[str]:
    """Markdown rows: each lever measured in two pairs or more (several seeds, or several lines that made the same
    change to their own full setting), its held-out changes and their questions pooled into one exact test."""
    by_lever: dict[str, list[tuple[str, float, QuestionChanges | None]]] = {}
    for ablation in ABLATIONS:
        if (lever := lever_of(ablation)) is None:
            continue
        for seed, full, ablated in ablation_pairs(results, ablation):
            before, after = (measured(run, "heldout", "accuracy", "overall") for run in (full, ablated))
            if before is not None and after is not None:
                pair = f"{line_of(ablated)} vs {line_of(full)}, seed {seed}"
                by_lever.setdefault(lever, []).append((pair, after - before, question_changes(full, ablated)))
    rows = []
    for lever, pairs in by_lever.items():
        if len(pairs) < 2:
            continue
        changes = [change * 100 for _, change, _ in pairs]
        spread = f" ± {statistics.stdev(changes):.1f}"
        compared = [questions for _, _, questions in pairs if questions is not None]
        pooled = pooled_changes(compared)
        cells = [f"`{lever}`", "; ".join(f"{pair}: {change:+.1f}" for (pair, _, _), change in zip(pairs, changes)),
                 f"{statistics.mean(changes):+.1f}{spread} (n={len(pairs)})",
                 f"{pooled.gained} / {pooled.lost} (p={pooled.p:.2g}, {len(compared)} pair(s))" if compared else "-"]
        rows.append("| " + " | ".join(cells) + " |")
    return rows


def held_out_counts_table(results: dict[str, Any], key: str, order: tuple[str, ...] = ()
                          ) -> tuple[list[str], list[str]]:
    """Per arm, a held-out eval's counts under ``key`` (wrong_answer_kinds, stop_reasons) pooled over the arm's runs
    that recorded them, as shares of their total: the columns (``order``'s first, then in the order first met), and
    a table row an arm."""
    recorded = {arm: [counts for run in runs_of(results, arm)
                      if (counts := run.get("evals", {}).get("heldout", {}).get(key)) is not None]
                for arm in report_lines(results)}
    met = list(dict.fromkeys(column for runs in recorded.values() for counts in runs for column in counts))
    columns = [column for column in order if column in met] + [column for column in met if column not in order]
    rows = []
    for arm, runs in recorded.items():
        total = sum(sum(counts.values()) for counts in runs)
        if total:
            shares = [sum(counts.get(column, 0) for counts in runs) / total for column in columns]
            rows.append(f"| {arm} | {len(runs)} | {total} | " + " | ".join(f"{share:.1%}" for share in shares) + " |")
    return columns, rows


def wrong_answer_table(results: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Per arm, the held-out wrong answers by why (eval's wrong_answer_kinds)."""
    return held_out_counts_table(results, "wrong_answer_kinds")


def wrong_sql_table(results: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Per arm, the held-out SQL that never returned the gold result, by how it missed (eval's wrong_sql_kinds)."""
    return held_out_counts_table(results, "wrong_sql_kinds")


# eval/metrics.py's kinds of after_refused_query, in its order (this report imports nothing of the eval's)
AFTER_REFUSED_QUERY_KINDS = ("no query after it", "the refused query again", "a changed query, still wrong",
                             "a changed query, then right")


def refused_query_table(results: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Per arm, the held-out episodes with a refused query by their next query (eval's after_refused_query): none,
    the refused one again, or a changed one, then right or still wrong: what a recovering warm-up is meant to
    change."""
    return held_out_counts_table(results, "after_refused_query", AFTER_REFUSED_QUERY_KINDS)


def stop_reason_table(results: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Per arm, how the held-out episodes ended (eval's stop_reasons): a rise of malformed_tool_call is a format
    defect, which a seed's adapters can carry from phase to phase."""
    return held_out_counts_table(results, "stop_reasons")


def unreadable_call_lines(results: dict[str, Any]) -> list[str]:
    """One unreadable tool call as the model wrote it, per run that kept some (newest evals keep a few): what the
    format defect is, read off the report instead of a GPU machine that is gone."""
    lines = []
    for key in sorted(results["runs"]):
        examples = results["runs"][key].get("evals", {}).get("heldout", {}).get("unreadable_call_examples")
        if examples:
            written = examples[0].replace("`", "'").replace("\n", "\\n")
            lines.append(f"- {key}: `{written}`")
    return lines


ACCURACY = "episode/accuracy"
NONE_CORRECT = "episode/groups_none_correct"
ALL_CORRECT = "episode/groups_all_correct"


def ends_of_phase(run: dict[str, Any]) -> tuple[slice, slice]:
    """The steps of a phase's first and last fifth (at least one each): long enough to pool a few steps' groups."""
    length = max(1, len(run.get("curves", [])) // 5)
    return slice(0, length), slice(-length, None)


def sharpening_rows(results: dict[str, Any]) -> list[str]:
    """Per GRPO arm, pooled over its runs, on its own training questions at the start and the end of the phase: the
    share of episodes right (pass@1) and of groups with at least one right episode (pass@k, k the group's size).
    GRPO can only reinforce an answer some episode of the group found, so pass@k is the ceiling of what it can move
    pass@1 to, and whether that ceiling rises says whether the phase finds new answers or sharpens known ones."""
    rows = []
    for arm in report_lines(results):
        runs = [run for run in runs_of(results, arm) if curve(run, ACCURACY) and curve(run, NONE_CORRECT)]
        if not runs:
            continue
        cells = []
        for end in (0, 1):
            accuracy = [_mean_of(run, ACCURACY, ends_of_phase(run)[end]) for run in runs]
            any_right = [1 - none for run in runs
                         if (none := _mean_of(run, NONE_CORRECT, ends_of_phase(run)[end])) is not None]
            cells += [_cell(accuracy).split(" (n=")[0], _cell(any_right).split(" (n=")[0]]
        steps = sorted({optimizer_steps(run) for run in runs})
        lengths = f"{steps[0]}-{steps[-1]}" if len(steps) > 1 else str(steps[0])
        rows.append(f"| {arm} | {len(runs)} | {lengths} | {cells[0]} -> {cells[2]} | {cells[1]} -> {cells[3]} |")
    return rows


SHAPING_ONLY_GROUPS = "episode/shaping_only_groups"
SHAPING_ONLY_ADVANTAGE = "episode/shaping_only_advantage"


def answers_differ_curve(run: dict[str, Any]) -> list[float]:
    """Each step's share of groups where some episodes answered right and some did not."""
    return [1 - every - none for every, none in zip(curve(run, ALL_CORRECT), curve(run, NONE_CORRECT), strict=True)]


def shaping_only_curve(run: dict[str, Any]) -> list[float]:
    """Each step's share of groups whose rewards differ although their episodes were all right or all wrong: logged
    since 2026-12-05h, else what the step's three logged shares leave (all right + none right - no reward spread)."""
    if logged := curve(run, SHAPING_ONLY_GROUPS):
        return logged
    alike_answers = [1 - differ for differ in answers_differ_curve(run)]
    zero = curve(run, ZERO_SHARE)
    if not alike_answers or len(zero) != len(alike_answers):
        return []
    return [max(0.0, alike - no_spread) for alike, no_spread in zip(alike_answers, zero, strict=True)]


def phase_and_last_tenth(runs: list[dict[str, Any]], series: Any) -> tuple[list[float], list[float]]:
    """Each run's mean of ``series`` (a run's per-step values) over its phase and over its last tenth, for the runs
    that logged it."""
    logged = [(run, values) for run in runs if (values := series(run))]
    return ([statistics.fmean(values) for _, values in logged],
            [statistics.fmean(values[last_tenth(run)]) for run, values in logged])


def signal_rows(results: dict[str, Any]) -> list[str]:
    """Per GRPO arm, pooled over its runs: what its generated groups' reward spread answered to, over the phase and
    its last tenth. A group where some episodes answered right and some not; one whose episodes all answered alike
    but whose shaped rewards differ; one with no spread at all. Under TRL's scale_rewards='group' the second kind
    gets advantages as large as the first's; the last column says what share of the summed |advantage| they got
    (logged since 2026-12-05h); then how many questions a step the informative sampler passed over, its last group
    having taught nothing (0 under plain sampling, and in a first pass over questions it has no history of), and
    under --defer_by_class how many it passed over by their class's recent groups."""
    rows = []
    for arm in report_lines(results):
        runs = [run for run in runs_of(results, arm) if shaping_only_curve(run)]
        if not runs:
            continue
        cells = []
        for series in (answers_differ_curve, shaping_only_curve, functools.partial(curve, key=ZERO_SHARE),
                       functools.partial(curve, key=SHAPING_ONLY_ADVANTAGE)):
            whole, tail = phase_and_last_tenth(runs, series)
            cells.append(f"{_cell(whole).split(' (n=')[0]} ({_cell(tail).split(' (n=')[0]})" if whole else "not logged")
        whole, tail = phase_and_last_tenth(runs, functools.partial(curve, key="sampler/deferred"))
        deferred = f"{statistics.fmean(whole):.1f} ({statistics.fmean(tail):.1f})" if whole else "not logged"
        whole, tail = phase_and_last_tenth(runs, functools.partial(curve, key="sampler/deferred_by_class"))
        if whole:
            deferred += f" + {statistics.fmean(whole):.1f} ({statistics.fmean(tail):.1f}) by class"
        cells.append(deferred)
        rows.append(f"| {arm} | {len(runs)} | " + " | ".join(cells) + " |")
    return rows


def pooled_lengths(results: dict[str, Any]) -> list[str]:
    """For each arm whose evaluated runs differ in GRPO steps: which seeds ran how many (the accuracy table pools
    them, so that a shorter line counts as a line)."""
    texts = []
    for arm in report_lines(results):
        seeds_by_steps: dict[int, list[str]] = {}
        for run in runs_of(results, arm):
            if run.get("evals") and run.get("curves"):
                seeds_by_steps.setdefault(optimizer_steps(run), []).append(str(run["seed"]))
        if len(seeds_by_steps) > 1:
            texts.append(f"{arm}: " + ", ".join(f"{steps} (seed{'s' if len(seeds) > 1 else ''} {', '.join(seeds)})"
                                                for steps, seeds in sorted(seeds_by_steps.items(), reverse=True)))
    return texts


# --------------------------------------------------------------------------------------------- figures


def moving_average(values: list[float], window: int = 10) -> tuple[range, list[float]]:
    """Steps 1..n and the mean of each step's last ``window`` values (fewer at the start)."""
    averaged = [statistics.fmean(values[max(0, i - window + 1): i + 1]) for i in range(len(values))]
    return range(1, len(values) + 1), averaged


def mean_over_runs(curves: list[list[float]]) -> list[float]:
    """Step by step, the mean of the curves that reach that step (a run cut short leaves the later means)."""
    length = max((len(values) for values in curves), default=0)
    return [statistics.fmean(values[step] for values in curves if len(values) > step) for step in range(length)]


def plot_figures(results: dict[str, Any], folder: Path) -> list[Path]:
    """Reward, zero-advantage share and post-episode calls over steps, a row of panels per scale (their steps
    differ in size): one colour per arm, each seed a thin line, the arm's mean over its seeds a thick one."""
    runs = [run for _, run in sorted(results["runs"].items()) if run.get("curves")]
    if not runs:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_scale: dict[str, dict[str, list[dict[str, Any]]]] = {}
    for run in runs:
        by_scale.setdefault(run.get("scale", "gpu"), {}).setdefault(line_of(run), []).append(run)
    # One colour per line across every row: tab20's ten strong colours first, then their light twins.
    palette = plt.get_cmap("tab20").colors[0::2] + plt.get_cmap("tab20").colors[1::2]
    lines = sorted({line for arms in by_scale.values() for line in arms})
    colours = {line: palette[index % len(palette)] for index, line in enumerate(lines)}
    folder.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(len(by_scale), 3, figsize=(16, 4 * len(by_scale)), squeeze=False)
    for row, (scale, by_arm) in zip(axes, sorted(by_scale.items())):
        for axis, key, title in ((row[0], "reward", "reward (group mean)"),
                                 (row[1], ZERO_SHARE, "groups with no reward variance"),
                                 (row[2], "episode/post_episode_calls", "calls after the episode, per episode")):
            for arm, arm_runs in by_arm.items():
                plot_arm(axis, key, arm, arm_runs, colours[arm])
            axis.set_title(f"{title}, {scale} scale")
            axis.set_xlabel("GRPO step")
            axis.grid(alpha=0.3)
        row[0].legend(fontsize=7)
        oversampled = any(curve(run, TRAINED_ZERO_SHARE) for arm_runs in by_arm.values() for run in arm_runs)
        row[1].set_ylabel("share (dashed: all right, dotted: none"
                          + (";\ndash-dot: trained on, --oversample_groups)" if oversampled else ")"))
    figure.suptitle("10-step moving averages: thin lines one seed each, thick lines the arm's mean over its seeds")
    figure.tight_layout()
    path = folder / "curves.png"
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return [path]


def plot_final_against_warm_up(results: dict[str, Any], folder: Path) -> list[Path]:
    """Each curriculum's final adapter (a mixed-phase arm) against the warm-up it grew from, held-out overall, one
    point a seed: points on a horizontal band whatever the warm-up are a plateau; the diagonal is "GRPO added
    nothing", the dashed line the 48% target."""
    finals = {line: points for line in report_lines(results)
              if ARMS[line.partition("@")[0]].phase == "mixed" and (points := against_warm_up(results, line))}
    if not finals:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axis = plt.subplots(figsize=(7, 6))
    palette = plt.get_cmap("tab10").colors
    for index, (line, points) in enumerate(sorted(finals.items())):
        axis.scatter([100 * warm_up for _, warm_up, _ in points], [100 * final for _, _, final in points],
                     color=palette[index % len(palette)], marker="o" if "@" in line else "x", label=line)
    values = [100 * value for points in finals.values() for _, *pair in points for value in pair]
    # The target stays in view on either side of the points (the 1.5B's start above it).
    low, high = min(min(values), 100 * FINAL_ACCURACY_TARGET) - 2, max(max(values), 100 * FINAL_ACCURACY_TARGET) + 2
    axis.plot([low, high], [low, high], color="grey", linewidth=0.8, label="final = warm-up")
    # How the plan scale's finals follow each warm-up: the verification table's slopes.
    plan_finals = [line for line in finals if line.endswith(f"@{PLAN_SCALE}")]
    for warm_up, (points, fit) in warm_up_fits(results, plan_finals).items():
        xs = [100 * min(warm for _, warm, _ in points), 100 * max(warm for _, warm, _ in points)]
        axis.plot(xs, [fit.intercept * 100 + fit.slope * x for x in xs], color="black", linestyle=":", linewidth=1.2,
                  label=f"fit of the {PLAN_SCALE} finals from {warm_up}: slope {fit.slope:.2f} ± {fit.stderr:.2f}")
    axis.axhline(100 * FINAL_ACCURACY_TARGET, color="black", linestyle="--", linewidth=0.8,
                 label=f"the {FINAL_ACCURACY_TARGET:.0%} target")
    axis.set_xlim(low, high)
    axis.set_ylim(low, high)
    axis.set_xlabel("warm-up, held-out accuracy (%)")
    axis.set_ylabel("final adapter, held-out accuracy (%)")
    axis.set_title("Final adapter against its own warm-up (one point a seed)")
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7)
    figure.tight_layout()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "final_against_warm_up.png"
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return [path]


def plot_arm(axis: Any, key: str, arm: str, arm_runs: list[dict[str, Any]], colour: Any) -> None:
    """One arm's curves of ``key`` on ``axis``: a thin line per seed, a thick one for their mean."""
    smoothed = [moving_average(curve(run, key))[1] for run in arm_runs]
    for values in smoothed:
        axis.plot(range(1, len(values) + 1), values, color=colour, alpha=0.3, linewidth=0.8)
    mean = mean_over_runs(smoothed)
    seeds = ", ".join(str(run["seed"]) for run in arm_runs)
    axis.plot(range(1, len(mean) + 1), mean, color=colour, linewidth=2.2,
              label=f"{arm}: mean of seeds {seeds}" if len(arm_runs) > 1 else f"{arm}: seed {seeds}")
    if key == ZERO_SHARE and all(curve(run, ALL_CORRECT) for run in arm_runs):
        # Which of the two kinds of no-variance group: every completion right (dashed) or none (dotted).
        for kind, style in ((ALL_CORRECT, "--"), (NONE_CORRECT, ":")):
            kind_mean = mean_over_runs([moving_average(curve(run, kind))[1] for run in arm_runs])
            axis.plot(range(1, len(kind_mean) + 1), kind_mean, color=colour, linestyle=style, linewidth=1.2)
    if key == ZERO_SHARE and all(curve(run, TRAINED_ZERO_SHARE) for run in arm_runs):
        # Oversampling drops alike groups after generating them: what it trained on is the share that matters.
        trained_mean = mean_over_runs([moving_average(curve(run, TRAINED_ZERO_SHARE))[1] for run in arm_runs])
        axis.plot(range(1, len(trained_mean) + 1), trained_mean, color=colour, linestyle="-.", linewidth=2.2)


# ------------------------------------------------------------------------------------------ the report


def short_device(name: str | None) -> str:
    """A run's accelerator as the Runs table shows it ("H100 80GB HBM3"); "-" where the run did not record it."""
    return name.removeprefix("NVIDIA ") if name else "-"


def write_report(results: dict[str, Any], report_path: Path, figures_dir: Path, results_path: Path) -> None:
    figures = plot_figures(results, figures_dir) + plot_final_against_warm_up(results, figures_dir)
    link = os.path.relpath(results_path, report_path.parent)
    lines = ["# Does the trainer break the plateau? (measured)", "",
             f"Generated by `python experiments/learning_proof.py` from [{link}]({link}); every number below "
             "comes from the runs listed at the end, with their commands. Arms that were not run say so.", "",
             "## Accuracy by hardness on the held-out databases", "",
             "| arm | " + " | ".join(HARDNESS) + " | answered | post-episode calls | train-part easy |",
             "|---" * (len(HARDNESS) + 4) + "|"]
    lines_run = {line_of(run) for run in results["runs"].values()}
    # an arm with runs at another scale only ("sft-4x@epoch") has its row there
    never_run = [arm for arm in report_lines(results)
                 if arm not in lines_run and not any(line.startswith(f"{arm}@") for line in lines_run)]
    for arm in report_lines(results):
        runs = runs_of(results, arm)
        if not runs:
            continue
        cells = [_cell([measured(run, "heldout", "accuracy", group) for run in runs]) for group in HARDNESS]
        cells.append(_cell([measured(run, "heldout", "answered") for run in runs]))
        cells.append(_cell([measured(run, "heldout", "post_episode_calls") for run in runs], percent=False))
        cells.append(_cell([measured(run, "train_easy", "accuracy", "easy") for run in runs]))
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    if never_run:  # a row each would bury the arms that ran (a new model's results hold a few of them)
        lines += ["", "Not run in these results: " + ", ".join(never_run) + "."]
    elsewhere = [f"{key} {summary['accuracy']['overall']:.1%} ({summary['source']})"
                 for key, run in sorted(results["runs"].items())
                 for summary in [run.get("evals", {}).get("heldout") or {}] if "source" in summary]
    if elsewhere:  # an arm the proof only trained, evaluated afterwards by another script
        lines += ["", "Held-out figures not from the proof's own eval (pooled above; those from before 2026-12-04c "
                  "are overall only): " + "; ".join(elsewhere) + "."]
    lengths = pooled_lengths(results)
    if lengths:
        lines += ["", "Pooled runs of different lengths (GRPO steps): " + "; ".join(lengths) + "."]
    partial = [(key, name, summary) for key, run in sorted(results["runs"].items())
               for name, summary in run.get("evals", {}).items() if name not in ("heldout", "train_easy")]
    if partial:  # a checkpoint inside a run (heldout_stepN), or part of a split from a run cut short
        lines += ["", ("Other evals: `heldout_stepN` is the run's checkpoint of step N on the whole held-out part "
                       "(--eval-at-step); any other is part of a split, from a run cut short (see the run's note):"),
                  "",
                  "| run | eval | questions | " + " | ".join(HARDNESS) + " |", "|---" * (len(HARDNESS) + 3) + "|"]
        for key, name, summary in partial:
            cells = [_cell([summary["accuracy"][group]]).removesuffix(" (n=1)") for group in HARDNESS]
            lines.append(f"| {key} | {name} | {summary['n']['overall']} | " + " | ".join(cells) + " |")
    checkpoints = checkpoint_rows(results)
    if checkpoints:
        lines += ["", ("A run's checkpoint question by question: against the run's final adapter (what the later steps "
                       "changed), and the run's one-pass twin against it (the same setting trained twice):"), "",
                  "| seed | runs | questions | correct | gained | lost | p |", "|---|---|---|---|---|---|---|",
                  *checkpoints]
    steady = steady_rows(results)
    if steady:
        lines += ["", ("What a warm-up's GRPO adapters agree on: every adapter that grew from one warm-up (any arm, "
                       "final or checkpoint), question by question on the held-out part; the questions more than half "
                       "of them gain, or lose, against the warm-up (in brackets: all of them). The rest flip from run "
                       "to run. Adapters that grew from one another (a checkpoint and its final, an easy phase and the "
                       "mixed phase after it) agree more than separate runs do:"), "",
                  "| seed | warm-up | adapters | questions | gained by most (all) | lost by most (all) | steady change |",
                  "|---|---|---|---|---|---|---|", *steady]
    paired = paired_rows(results)
    if paired:
        lines += ["", ("Question by question on the held-out databases (same seed; exact McNemar test on the "
                       "questions that changed):"), "", "| seed | arms | questions | correct | gained | lost | p |",
                  "|---|---|---|---|---|---|---|", *paired]
    by_class = paired_hardness_rows(results)
    if by_class:
        lines += ["", ("The same pairs class by class: questions gained / lost in each Spider class (exact McNemar p), "
                       "where the evals kept each question's class:"), "",
                  "| seed | arms | " + " | ".join(HARDNESS[:-1]) + " |", "|---" * (len(HARDNESS) + 1) + "|",
                  *by_class]
    counts_tables = [
        (wrong_answer_table(results), "wrong answers",
         "Why the held-out answers were wrong, as shares of the wrong ones: the kinds that begin 'gold result seen' "
         "lost a result the episode's own query had found (the answer's side), the others never ran SQL that returned "
         "it (the model's SQL; a result longer than 20 rows never counts as found):"),
        (wrong_sql_table(results), "episodes",
         "How the SQL that never returned the gold result missed it, read off each episode's last query that ran, as "
         "shares of those episodes: other tables than the gold query's (which tables the question needs), or the gold "
         "query's tables with no rows (a value or a filter) or with another result (the query's logic):"),
        (stop_reason_table(results), "episodes",
         "How the held-out episodes ended, as shares of the episodes: no_tool_call is a turn without a call (the "
         "answer, or giving up), malformed_tool_call a call block the parser could not read, truncated a turn cut at "
         "the token budget:"),
        (refused_query_table(results), "episodes",
         "What the held-out episodes did after SQLite (or the environment) refused one of their queries, as shares of "
         "those episodes, by their next query: none (an answer, or a stop), the refused query again (the same words), "
         "or a changed query, and whether the episode then ended right:"),
    ]
    for (columns, rows), counted, intro in counts_tables:
        if rows:
            lines += ["", intro, "", f"| arm | runs | {counted} | " + " | ".join(columns) + " |",
                      "|---" * (len(columns) + 3) + "|", *rows]
    sharpening = sharpening_rows(results)
    if sharpening:
        lines += ["", ("What each GRPO phase did on its own training questions, first fifth of its steps -> last fifth "
                       "(mean ± spread over runs): the share of episodes right (pass@1) and of groups with at least "
                       "one right episode (pass@k). GRPO only reinforces answers its groups found, so pass@k bounds "
                       "what it can lift pass@1 to; a flat pass@k means the phase sharpened what the model could "
                       "already do rather than finding new answers:"), "",
                  "| arm | runs | steps | pass@1 | pass@k |", "|---|---|---|---|---|", *sharpening]
    signal = signal_rows(results)
    if signal:
        lines += ["", ("What each GRPO phase's groups had to learn from, as shares of its generated groups, mean over "
                       "its steps (over the last tenth): some episodes right and some wrong; all right or all wrong "
                       "but with different shaped rewards (shaping only); no reward spread. TRL's default "
                       "scale_rewards='group' divides each group by its own spread, so a shaping-only group's "
                       "advantages are as large as those of a group whose answers differ; the fifth column is their "
                       "share of the advantages' summed absolute values (logged from 2026-12-05h on); the last, the "
                       "questions a step the informative sampler passed over because their last group taught "
                       "nothing (a first pass over questions it has no history of defers none), and under "
                       "--defer_by_class those it passed over by their class's recent groups:"), "",
                  "| arm | runs | answers differ | shaping only | no spread | advantage weight on shaping only | "
                  "questions deferred a step |",
                  "|---|---|---|---|---|---|---|", *signal]
    unreadable = unreadable_call_lines(results)
    if unreadable:
        lines += ["", "An unreadable tool call as the model wrote it (the first an eval kept; line breaks as \\n):", "",
                  *unreadable]
    ablations = ablation_rows(results)
    lines += ["", "## Ablations against the full setting (same seed, same warm-up)", ""]
    lines += ([("Each ablation against the arm it changes one thing of, both from the same warm-up (the warm-up-size "
                 "arms, sft-4x and the arms grown from it, against the same seed's line of the scale's own warm-up); "
                 "'full vs ablation' in every cell. Held-out accuracy; gained / lost: questions the ablation got "
                 "right that the full setting got wrong, and the reverse (exact McNemar p); zero-advantage share, "
                 "reward and post-episode calls: means over the training steps (reward over the first 20); the "
                 "zero-advantage share counts the groups trained on (with --oversample_groups, after the alike ones "
                 "were dropped)."),
               "",
               ("| ablation | full arm | seed | steps | held-out overall | change (points) | gained / lost | "
                "held-out hard | zero-advantage share | reward, first 20 steps | post-episode calls |"),
               "|---|---|---|---|---|---|---|---|---|---|---|", *ablations]
              if ablations else ["No ablation has run beside its full setting yet."])
    if levers := lever_rows(results):
        lines += ["", ("The same change measured more than once (several seeds, or several lines that each "
                       "changed only this in one phase, from the full setting's own start adapter), pooled: the "
                       "held-out change of each pair in points, and the questions gained / lost of all pairs in one "
                       "exact McNemar test."),
                  "", "| change | pairs | mean change (points) | gained / lost, pooled |", "|---|---|---|---|", *levers]
    lines += ["", "## The plan's verification list", "", "| check | measured | verdict |", "|---|---|---|"]
    lines += [f"| {check} | {measured} | {verdict} |" for check, measured, verdict in verification_rows(results)]
    lines += ["", "## Figures", ""] + [f"![{path.stem}]({path.relative_to(report_path.parent)})" for path in figures]
    lines += ["", "## Runs", "", ("| arm | seed | scale | steps | median step (generation) | episodes/s | "
                                   "train+eval wall time | device | commit | adapter digest |"),
              "|---|---|---|---|---|---|---|---|---|---|"]
    for key in sorted(results["runs"]):
        run = results["runs"][key]
        # An optimizer step's share of its generation batch (one entry covers a batch that trained several steps)
        step_times = [batch["step_time"] / batch.get("optimizer_steps", 1) for batch in run.get("curves", [])
                      if "step_time" in batch]
        generation = curve(run, "rollout/generation_s")
        timing = (f"{statistics.median(step_times):.2f} s ({statistics.median(generation):.2f} s)"
                  if step_times and generation else "-")
        # Per generation batch, over every step it trained: the one speed that compares runs whose batches train
        # one optimizer step and runs whose batches train several.
        speeds = curve(run, "rollout/episodes_per_s")[1:]  # after the first, which warms up
        speed = f"{statistics.median(speeds):.1f}" if speeds else "-"
        proof_evaluated = any("source" not in summary for summary in run.get("evals", {}).values())
        wall = f"{run['seconds']:.0f} s" + ("" if proof_evaluated or run["arm"] == "base" else " (trained only)")
        lines.append(f"| {run['arm']} | {run['seed']} | {run['scale']} | {optimizer_steps(run)} | {timing} | "
                     f"{speed} | {wall} | {short_device(run.get('device'))} | {run['commit']} | "
                     f"{run.get('adapter_digest', '-')} |")
    lines += ["", "Commands of each run:", ""]
    for key in sorted(results["runs"]):
        lines += [f"- `{key}`:"] + [f"  - `{command}`" for command in results["runs"][key]["commands"]]
    notes = results.get("notes")
    if notes:
        lines += ["", "## Notes", "", notes]
    report_path.write_text("\n".join(lines) + "\n", encoding="utf-8")
