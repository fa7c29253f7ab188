"""Does the trainer break the plateau? The plan's verification list, arm by arm, on a real model.

    python experiments/learning_proof.py --model /tmp/qc --arms base sft easy mixed --seeds 0 1 2   # the main line
    python experiments/learning_proof.py --model /tmp/qc --arms ng4 no-penalty no-fewshot --seed 0
    python experiments/learning_proof.py --model /tmp/qc --arms mixed-only no-sft --seed 0
    python experiments/learning_proof.py --model /tmp/qc --arms sft-habit easy-habit no-penalty-habit --seed 8
    python experiments/learning_proof.py --report-only          # redraw docs/learning_proof.md from the results
    python experiments/learning_proof.py --quick                # CPU smoke test: SmolLM2, built-in data, 1 step

Every arm is the project's own commands, run in this process (``train.py``, ``python -m eval``):
- ``base``: the model as fetched, evaluated;
- ``sft``: the supervised warm-up on the oracle's episodes of the training part (LoRA, ``--phase sft``);
- ``easy``: ``--phase easy`` from the warm-up (6 generations, penalty 0.1, relaxed verifier, few-shot
  examples in the prompt until the curriculum's first epoch ends); ``mixed``: ``--phase mixed`` from it;
- ablations, each against ``easy`` from the same warm-up and the same number of steps: ``ng4`` (4
  generations), ``no-penalty``, ``no-fewshot``, ``no-sft`` (from the base model), and ``mixed-only``
  (easy+medium from the warm-up for the curriculum's easy+mixed steps together);
- the penalty's own line: ``sft-habit``, a warm-up that keeps calling tools after answering in 60% of its
  oracle episodes (``--sft_never_stop_share``), ``easy-habit`` from it and ``no-penalty-habit`` (the same
  without the penalty): after the plain warm-up no model calls a tool once the episode is over, so the
  penalty has nothing to act on there.
After each arm, ``python -m eval`` runs on the held-out databases (all their questions) and on the
training part's easy questions. Data: real Spider (``--data-dir``, default ../shared/spider) split by
database: the databases in experiments/heldout_databases.txt are held out of every phase and warm-up.
Without it, the built-in data (its dev split is other databases already).

Results accumulate in ``--results`` (default docs/learning_proof/results.json, committed): one entry per
arm and seed, with the exact commands, wall time, eval summaries and per-step curves, so the arms can be
run across device calls and sessions. Arms that start from another arm's adapter find it under
``--work`` (keep it between calls). The report (docs/learning_proof.md) is regenerated after every arm.
With several ``--seeds``, arms run one after another, arm by arm (every seed's warm-up, then every
seed's easy phase, ...), one GPU process at a time: on the H200, three warm-ups' held-out evals side by side
(614 questions) played 0.9-1.4 questions a second each; one eval alone played 4.5 a second. Invocations
that do run side by side (each with its own ``--results`` file, sharing ``--work``) are gathered with
``--merge results-*.json`` (an arm measured again replaces its entry; the earlier one moves to
``superseded``). When a seed's warm-up (``sft`` or ``sft-habit``) made no tool call in any held-out episode,
the arms grown from it are not run for that seed: GRPO from it would see only zero rewards.

Each entry records a digest of its adapter's weights and of the warm-up it descends from; two arms of a seed
are compared (question by question, as an ablation, as a gain over the warm-up) only when their warm-up digests
match, since a warm-up trained again need not come out the same. ``--train-only ARM...`` skips the evals of arms
that only start later ones (for example ``--arms sft easy mixed mixed-only --train-only sft easy``: the
curriculum against mixed-only in one session, from one warm-up).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_DIR))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # every model here is a local folder
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from proof_arms import ABLATIONS, ARMS, HABIT_SHARE, MAIN_LINE, Arm, warm_up_of  # noqa: E402

import train  # noqa: E402  (imports unsloth before transformers and trl, as the trainer must)
from eval.__main__ import run as run_eval  # noqa: E402

DEFAULT_RESULTS = REPO_DIR / "docs" / "learning_proof" / "results.json"
DEFAULT_REPORT = REPO_DIR / "docs" / "learning_proof.md"
HELD_OUT_LIST = REPO_DIR / "experiments" / "heldout_databases.txt"
HARDNESS = ["easy", "medium", "hard", "extra", "overall"]

# ---------------------------------------------------------------------------------------------- scale


@dataclass(frozen=True)
class Scale:
    """How big every arm is: ``gpu`` for the H200 (about 20 minutes a call), ``quick`` for the CPU smoke test."""

    name: str
    sft_questions: int
    sft_epochs: float
    sft_batch_size: int
    sft_learning_rate: float
    easy_steps: int
    mixed_steps: int
    # train.py's default GRPO learning rate is 1e-5; the gpu scale takes 2e-5 because its runs are short
    # (tens of steps, not an L4 user's 3 epochs). A choice for the budget, not a tuned value.
    grpo_learning_rate: float
    # Prompt groups per optimizer step (--per_device_train_batch_size; the accumulation is the group size).
    # train.py's default is 1, for the L4's memory; on the H200 a 0.5B's decoding costs about the same for
    # 4 groups as for 1 (launch-bound), so 4 give four times the reward signal per step for little time.
    grpo_prompts_per_step: int
    max_completion_length: int
    eval_train_easy_limit: int | None
    eval_heldout_limit: int | None
    eval_max_new_tokens: int
    # python -m eval's --generation: padded (one call a turn, every measured run so far) or rounds.
    eval_generation: str = "padded"
    # Questions a GRPO phase draws from the training part (--max_questions; None: all of them).
    easy_questions: int | None = None
    mixed_questions: int | None = None


SCALES = {
    "gpu": Scale(name="gpu", sft_questions=600, sft_epochs=1, sft_batch_size=8, sft_learning_rate=1e-3,
                 easy_steps=100, mixed_steps=100, grpo_learning_rate=2e-5, grpo_prompts_per_step=4,
                 max_completion_length=512, eval_train_easy_limit=200, eval_heldout_limit=None,
                 eval_max_new_tokens=256),
    # The plan's epochs: 1 epoch of 435 easy questions, then 2 of 467 easy+medium, 16 prompt groups (96 episodes) a
    # step: 28 + 59 steps, 8,352 episodes. Its runs are kept apart from the gpu scale's (their key names the scale).
    "epoch": Scale(name="epoch", sft_questions=600, sft_epochs=1, sft_batch_size=8, sft_learning_rate=1e-3,
                   easy_steps=28, mixed_steps=59, grpo_learning_rate=2e-5, grpo_prompts_per_step=16,
                   max_completion_length=512, eval_train_easy_limit=200, eval_heldout_limit=None,
                   eval_max_new_tokens=256, eval_generation="rounds", easy_questions=435, mixed_questions=467),
    "quick": Scale(name="quick", sft_questions=4, sft_epochs=1, sft_batch_size=2, sft_learning_rate=1e-3,
                   easy_steps=1, mixed_steps=1, grpo_learning_rate=1e-5, grpo_prompts_per_step=1,
                   max_completion_length=96, eval_train_easy_limit=2, eval_heldout_limit=2, eval_max_new_tokens=48),
}

# ----------------------------------------------------------------------------------------------- data


def held_out_databases(path: Path = HELD_OUT_LIST) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines()
            if line.strip() and not line.startswith("#")]


def split_by_database(spider_dir: Path, work: Path, held_out: list[str]) -> Path:
    """A Spider-format folder in WORK/data: train_spider.json without the held-out databases, dev.json
    with exactly them; tables.json and database/ are links to the original."""
    questions = json.loads((spider_dir / "train_spider.json").read_text(encoding="utf-8"))
    unknown = set(held_out) - {question["db_id"] for question in questions}
    if unknown:
        raise ValueError(f"held-out databases not in {spider_dir}: {sorted(unknown)}")
    data = work / "data"
    data.mkdir(parents=True, exist_ok=True)
    chosen = set(held_out)
    for name, keep in (("train_spider.json", False), ("dev.json", True)):
        part = json.dumps([question for question in questions if (question["db_id"] in chosen) == keep], indent=1)
        target = data / name
        if not target.is_file() or target.read_text(encoding="utf-8") != part:
            # Several invocations may share one --work (arms side by side on one GPU): a reader never sees
            # half a file.
            temporary = target.with_suffix(f".{os.getpid()}.tmp")
            temporary.write_text(part, encoding="utf-8")
            os.replace(temporary, target)
    for name in ("tables.json", "database"):
        link = data / name
        if not link.exists() and (spider_dir / name).exists():
            try:
                link.symlink_to((spider_dir / name).resolve())
            except FileExistsError:  # made by an invocation running beside this one
                pass
    return data


# -------------------------------------------------------------------------------------------- the arms


def steps_for(arm: Arm, scale: Scale) -> int:
    if arm.steps_of == "mixed_only_steps":
        return scale.easy_steps + scale.mixed_steps  # the curriculum's two phases together: the same total
    return getattr(scale, arm.steps_of)


def adapter_of(work: Path, arm: str, seed: int) -> Path:
    phase = ARMS[arm].phase
    return work / f"{arm}-seed{seed}" / str(phase) / "adapter"


def adapter_digest(adapter: Path) -> str:
    """A digest of an adapter's weights (every safetensors file: the LoRA and the warm-up's tool-tag rows). Two
    arms start from the same warm-up only if their warm-up digests match: a warm-up trained again with the same
    command and seed need not be the same one (GPU kernels may add in another order)."""
    digest = hashlib.sha256()
    for path in sorted(adapter.glob("*.safetensors")):
        digest.update(path.name.encode("utf-8") + b"\0")
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


def group_argv(arm: Arm, scale: Scale) -> list[str]:
    """Batch flags that make each optimizer step hold the scale's prompt groups, whole (the accumulation is
    the group size, one group per micro-batch row). Empty for train.py's own settings: 1 group of 6."""
    generations = arm.flags[arm.flags.index("--num_generations") + 1] if "--num_generations" in arm.flags else None
    if scale.grpo_prompts_per_step == 1 and generations is None:
        return []  # on CPU, train.py's embedded run then picks its own smaller groups
    return ["--per_device_train_batch_size", str(scale.grpo_prompts_per_step),
            "--gradient_accumulation_steps", generations or "6"]


def train_argv(arm: Arm, scale: Scale, model: Path, data: Path, work: Path, seed: int) -> list[str]:
    """The train.py command line of an arm."""
    out = work / f"{arm.name}-seed{seed}"
    common = ["--model", str(model), "--data_dir", str(data), "--output_dir", str(out), "--seed", str(seed),
              "--report_to", "none"]
    if arm.phase == "sft":
        return ["--phase", "sft", *common, "--max_questions", str(scale.sft_questions),
                "--sft_epochs", str(scale.sft_epochs), "--sft_batch_size", str(scale.sft_batch_size),
                "--sft_hardness", "easy", "medium", "--learning_rate", str(scale.sft_learning_rate),
                "--warmup_steps", "5", "--per_device_train_batch_size", "4", *arm.flags]
    argv = ["--phase", str(arm.phase), *common, "--max_steps", str(steps_for(arm, scale)),
            "--learning_rate", str(scale.grpo_learning_rate), "--warmup_steps", "5",
            "--max_completion_length", str(scale.max_completion_length), "--save_steps", "50"]
    questions = scale.mixed_questions if arm.phase == "mixed" else scale.easy_questions
    if questions is not None:
        argv += ["--max_questions", str(questions)]
    argv += [*arm.flags, *group_argv(arm, scale)]
    if arm.start_from is not None:
        start = adapter_of(work, arm.start_from, seed)
        if not (start / "adapter_model.safetensors").is_file():
            raise FileNotFoundError(f"arm {arm.name} starts from arm {arm.start_from}'s adapter, not at {start}: "
                                    f"run --arms {arm.start_from} first with the same --work and --seed")
        argv += ["--start_adapter", str(start)]
    return argv


# --------------------------------------------------------------------------------------------- evals


def eval_argv(checkpoint: Path, data: Path, split: str, out: Path, scale: Scale, *, hardness: list[str] | None,
              limit: int | None) -> list[str]:
    argv = ["--checkpoint", str(checkpoint), "--data-dir", str(data), "--split", split, "--out", str(out),
            "--max-new-tokens", str(scale.eval_max_new_tokens), "--no-progress"]
    # Always named: python -m eval's own default is rounds since 2026-12-01f, and every line so far (seeds 0-2)
    # was evaluated padded; a run's saved command reproduces its eval either way.
    argv += ["--generation", scale.eval_generation]
    if hardness:
        argv += ["--hardness", *hardness]
    if limit is not None:
        argv += ["--limit", str(limit)]
    return argv


def summarize(report: dict[str, Any]) -> dict[str, Any]:
    """What the report shows of one eval: accuracy by hardness and the protocol numbers, overall, and each scored
    question's outcome (a "1"/"0" string in the split's order, with a digest of which questions those are), so that
    two arms can be compared question by question after the GPU machine and its eval folders are gone. Whether each
    episode answered, and how many calls it made after the episode (one digit, 9 for 9 or more), are kept the same
    way: a change in answering or in the habit can then be traced to the questions it happened on."""
    overall = report["by_hardness"]["overall"]
    scored = [question for question in report["questions"] if question["skip_reason"] is None]
    return {
        "outcomes": "".join("1" if question["correct"] else "0" for question in scored),
        "answered_outcomes": "".join("1" if question["answered"] else "0" for question in scored),
        "post_episode_calls_by_question": "".join(str(min(question["post_episode_calls"], 9)) for question in scored),
        "questions_digest": questions_digest(scored),
        "accuracy": {group: report["by_hardness"][group]["accuracy"] for group in HARDNESS},
        # by the exact text asked for, without the relaxed matching (None in reports from before it was measured)
        "exact_text_accuracy": {group: report["by_hardness"][group].get("exact_text_accuracy") for group in HARDNESS},
        "n": {group: report["by_hardness"][group]["n"] for group in HARDNESS},
        "answered": overall["answered"], "post_episode_calls": overall["post_episode_calls"],
        "tool_error_rate": overall["tool_error_rate"], "mean_steps": overall["mean_steps"],
        "stop_reasons": report.get("stop_reasons", {}), "seconds": report["timing"]["elapsed_s"],
        "generation": report["timing"].get("generation", {}),
    }


def questions_digest(questions: list[dict[str, Any]]) -> str:
    """Which questions, in which order: outcomes pair up only between evals with the same digest."""
    listing = "\n".join(f"{question['db_id']}\t{question['question']}" for question in questions)
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()[:16]


CURVE_KEYS = ("reward", "reward_std", "frac_reward_zero_std", "episode/post_episode_calls", "episode/accuracy",
              "episode/accuracy_exact_text",
              "episode/answered", "episode/tool_calls", "step_time", "gpu/peak_reserved_gib", "rollout/generation_s",
              "rollout/generation_calls", "rollout/generation_share", "rollout/longest_turn_tokens",
              "episode/groups_all_correct", "episode/groups_none_correct")


def step_curves(phase_dir: Path) -> list[dict[str, float]]:
    """The per-step log lines of a GRPO phase (the ones with a reward), keeping the plotted keys."""
    lines = (phase_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [{key: entry[key] for key in ("step", *CURVE_KEYS) if key in entry}
            for entry in map(json.loads, lines) if "reward" in entry]


# ------------------------------------------------------------------------------------------- results


def load_results(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"runs": {}}


def save_results(path: Path, results: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(results, indent=1, sort_keys=True), encoding="utf-8")
    os.replace(temporary, path)  # a crash mid-write never leaves half a results file


def record_run(results: dict[str, Any], key: str, run: dict[str, Any]) -> None:
    """``run`` as ``results["runs"][key]``; a different run already there moves to ``superseded`` (under
    ``key@commit``), so a run measured again never erases what was measured before."""
    earlier = results["runs"].get(key)
    if earlier is not None and earlier != run:
        superseded = results.setdefault("superseded", {})
        name, suffix = f"{key}@{earlier.get('commit', 'unknown')}", 2
        while name in superseded and superseded[name] != earlier:
            name, suffix = f"{key}@{earlier.get('commit', 'unknown')}-{suffix}", suffix + 1
        superseded[name] = earlier
    results["runs"][key] = run


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              cwd=REPO_DIR, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def run_arm(arm: Arm, scale: Scale, model: Path, data: Path, work: Path, seed: int, *,
            evaluate: bool = True) -> dict[str, Any]:
    """Train (unless base) and evaluate one arm (``evaluate=False``: train only, for an arm that is only the start
    of a later one); returns its results entry."""
    started = time.perf_counter()
    entry: dict[str, Any] = {"arm": arm.name, "seed": seed, "scale": scale.name, "model": str(model),
                             "commit": git_commit(), "commands": []}
    checkpoint = model
    if arm.phase is not None:
        argv = train_argv(arm, scale, model, data, work, seed)
        entry["commands"].append("python train.py " + " ".join(argv))
        print(f"[proof] python train.py {' '.join(argv)}", flush=True)
        checkpoint = Path(train.main(argv))
        entry["adapter_digest"] = adapter_digest(checkpoint)
        warm_up = warm_up_of(arm)
        if warm_up is not None:  # the warm-up this arm grew from (training writes only its own folder)
            entry["warm_up_digest"] = (entry["adapter_digest"] if arm.name == warm_up
                                       else adapter_digest(adapter_of(work, warm_up, seed)))
        if arm.phase != "sft":
            entry["curves"] = step_curves(checkpoint.parent)
    entry["train_seconds"] = round(time.perf_counter() - started, 1)
    entry["evals"] = {}
    if not evaluate:
        entry["seconds"] = entry["train_seconds"]
        return entry
    policy = None  # the checkpoint loads once for both evals (the same settings but the split)
    for name, split, hardness, limit in (("heldout", "dev", None, scale.eval_heldout_limit),
                                         ("train_easy", "train", ["easy"], scale.eval_train_easy_limit)):
        out = work / f"{arm.name}-seed{seed}" / f"eval-{name}"
        argv = eval_argv(checkpoint, data, split, out, scale, hardness=hardness, limit=limit)
        entry["commands"].append("python -m eval " + " ".join(argv))
        print(f"[proof] python -m eval {' '.join(argv)}", flush=True)
        policy = run_eval(argv, policy=policy)
        entry["evals"][name] = summarize(json.loads((out / "report.json").read_text(encoding="utf-8")))
    entry["seconds"] = round(time.perf_counter() - started, 1)
    return entry


# ---------------------------------------------------------------------------------------------- report


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


def measured(run: dict[str, Any], eval_name: str, *keys: str) -> float | None:
    """One number of one eval of a run; None where that eval was not run (a run cut short keeps the rest)."""
    value: Any = run.get("evals", {}).get(eval_name)
    for key in keys:
        if value is None:
            return None
        value = value.get(key)
    return value


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


def pairs_by_seed(results: dict[str, Any], arm: str, other_arm: str,
                  ) -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(seed, run of arm, run of other_arm) for every seed and scale where both ran from the same warm-up."""
    runs, other_runs = runs_by_seed(results, arm), runs_by_seed(results, other_arm)
    return [(seed, runs[(seed, scale)], other) for (seed, scale), other in sorted(other_runs.items(), key=str)
            if (seed, scale) in runs and same_warm_up(runs[(seed, scale)], other)]


def fit_slope(values: list[float]) -> tuple[float, float, float] | None:
    """OLS slope of values over steps, its standard error and p-value (None when too few points)."""
    if len(values) < 3 or len(set(values)) < 2:
        return None
    from scipy.stats import linregress

    fit = linregress(range(1, len(values) + 1), values)
    return float(fit.slope), float(fit.stderr), float(fit.pvalue)


def curve(run: dict[str, Any], key: str) -> list[float]:
    return [float(step[key]) for step in run.get("curves", []) if key in step]


def verification_rows(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The plan's verification list: (check, measured, verdict)."""
    rows = []
    grpo_runs = [run for run in results["runs"].values() if run.get("curves")]
    # Runs made before train.py restarted the peak counter per phase logged the peak of the whole process, evals
    # of earlier arms included (their entries say so): not a measurement of the phase.
    own_peak = [run for run in grpo_runs if run.get("peak_memory_is_the_phases", True)]
    peaks = [max(curve(run, "gpu/peak_reserved_gib") or [0.0]) for run in own_peak]
    peak = max(peaks) if peaks else None
    excluded = len(grpo_runs) - len(own_peak)
    rows.append(("no OOM with 6 generations (peak reserved GPU memory, all GRPO arms)",
                 (f"{peak:.2f} GiB" if peak else "not run")
                 + (f" ({excluded} run(s) left out: their counter included earlier evals)" if excluded else ""),
                 "pass" if peak and peak < 22.5 else ("not run" if not peak else "fail")))

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
                             lambda run: _mean_of(run, "frac_reward_zero_std"),
                             percent=True, better="lower", verdicts=("fewer with 6", "not fewer with 6"),
                             test=per_step_difference_p("frac_reward_zero_std")))
    train_easy = [value for run in runs_of(results, "easy")
                  if (value := measured(run, "train_easy", "accuracy", "easy")) is not None]
    rows.append(("easy above 50% before mixed (train-part easy questions, after the easy phase)", _cell(train_easy),
                 "pass" if train_easy and min(train_easy) > 0.5 else ("not run" if not train_easy else "fail")))
    rows += curriculum_target_rows(results)
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


def gains_over_warm_up(results: dict[str, Any], arm: str) -> list[float]:
    """Held-out overall accuracy of ``arm`` minus that of the warm-up it started from (same seed and scale), per
    seed."""
    return [overall - warm_up for _, sft, run in pairs_by_seed(results, "sft", arm)
            if (overall := measured(run, "heldout", "accuracy", "overall")) is not None
            and (warm_up := measured(sft, "heldout", "accuracy", "overall")) is not None]


def mcnemar_p(gained: int, lost: int) -> float:
    """Exact two-sided McNemar test on the discordant pairs (questions one arm got right and the other wrong)."""
    if gained + lost == 0:
        return 1.0
    from scipy.stats import binomtest

    return float(binomtest(gained, gained + lost, 0.5).pvalue)


PAIRED_ARMS = (("sft", "easy"), ("easy", "mixed"), ("sft", "mixed"))


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


def question_changes(before_run: dict[str, Any], after_run: dict[str, Any]) -> QuestionChanges | None:
    """The held-out evals of two runs compared question by question; None unless both kept their outcomes over
    the same questions (same digest)."""
    before = before_run.get("evals", {}).get("heldout", {})
    after = after_run.get("evals", {}).get("heldout", {})
    if not (before.get("outcomes") and before.get("questions_digest") == after.get("questions_digest")):
        return None
    pairs = list(zip(before["outcomes"], after["outcomes"], strict=True))
    return QuestionChanges(len(pairs), before["outcomes"].count("1"), after["outcomes"].count("1"),
                           pairs.count(("0", "1")), pairs.count(("1", "0")))


def seed_changes(results: dict[str, Any], before_arm: str, after_arm: str) -> list[tuple[Any, QuestionChanges]]:
    """(seed, changes) for every seed and scale where both arms ran from the same warm-up and their held-out evals
    pair up question by question."""
    pairs = [(seed, question_changes(before, after)) for seed, before, after in pairs_by_seed(results, before_arm,
                                                                                              after_arm)]
    return [(seed, changes) for seed, changes in pairs if changes is not None]


def pooled_changes(seeds: list[QuestionChanges]) -> QuestionChanges:
    """Seeds together: under "this phase changes nothing", every changed question of every seed is as likely gained
    as lost, so the seeds' discordant questions add up into one exact test (a single seed's few dozen cannot
    separate a one- or two-point gain from noise)."""
    return QuestionChanges(*(sum(getattr(changes, name) for changes in seeds) for name in
                             ("questions", "correct_before", "correct_after", "gained", "lost")))


def paired_rows(results: dict[str, Any]) -> list[str]:
    """Markdown rows comparing consecutive main-line arms of one seed question by question on the held-out split,
    where both evals kept their outcomes over the same questions; then each pair of arms over its seeds pooled."""
    def row(seed: str, arms: str, changes: QuestionChanges) -> tuple[str, str]:
        return seed, (f"| {seed} | {arms} | {changes.questions} | {changes.correct_before} -> "
                      f"{changes.correct_after} | {changes.gained} | {changes.lost} | {changes.p:.2g} |")

    per_seed, pooled = [], []
    scales = sorted({f"@{run['scale']}" for run in results["runs"].values() if run.get("scale") not in (None, "gpu")})
    for before_arm, after_arm in [(before + suffix, after + suffix) for suffix in ["", *scales]
                                  for before, after in PAIRED_ARMS]:
        seeds = seed_changes(results, before_arm, after_arm)
        per_seed += [row(str(seed), f"{before_arm} -> {after_arm}", changes) for seed, changes in seeds]
        if len(seeds) > 1:
            pooled.append(row(f"all {len(seeds)}", f"{before_arm} -> {after_arm}",
                              pooled_changes([changes for _, changes in seeds]))[1])
    return [text for _, text in sorted(per_seed, key=lambda item: item[0])] + pooled


def ablation_pairs(results: dict[str, Any], ablation: str) -> list[tuple[int, dict[str, Any], dict[str, Any]]]:
    """(seed, full-setting run, ablation run) for every seed and scale where an ablation and the arm it ablates both
    ran from the same warm-up: the only fair comparison, since warm-ups of different seeds differ by about as much
    as GRPO adds."""
    return pairs_by_seed(results, str(ARMS[ablation].ablates), ablation)


def _mean_of(run: dict[str, Any], key: str, steps: slice = slice(None)) -> float | None:
    values = curve(run, key)[steps]
    return statistics.fmean(values) if values else None


def _pair(full: float | None, ablated: float | None, *, percent: bool) -> str:
    def text(value: float | None) -> str:
        return "-" if value is None else (f"{value * 100:.1f}%" if percent else f"{value:.3f}")

    return f"{text(full)} vs {text(ablated)}"


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
            cells = [ablation, full["arm"], str(seed),
                     f"{len(full.get('curves', []))} / {len(ablated.get('curves', []))}",
                     both(lambda run: heldout(run, "overall"), percent=True), change,
                     f"{changes.gained} / {changes.lost} (p={changes.p:.2g})" if changes else "-",
                     both(lambda run: heldout(run, "hard"), percent=True),
                     both(lambda run: _mean_of(run, "frac_reward_zero_std"), percent=True),
                     both(lambda run: _mean_of(run, "reward", slice(0, 20)), percent=False),
                     both(lambda run: _mean_of(run, "episode/post_episode_calls"), percent=False)]
            rows.append("| " + " | ".join(cells) + " |")
    return rows


def pooled_lengths(results: dict[str, Any]) -> list[str]:
    """For each arm whose evaluated runs differ in GRPO steps: which seeds ran how many (the accuracy table pools
    them, so that a shorter line counts as a line)."""
    texts = []
    for arm in ARMS:
        seeds_by_steps: dict[int, list[str]] = {}
        for run in runs_of(results, arm):
            if run.get("evals") and run.get("curves"):
                seeds_by_steps.setdefault(len(run["curves"]), []).append(str(run["seed"]))
        if len(seeds_by_steps) > 1:
            texts.append(f"{arm}: " + ", ".join(f"{steps} (seed{'s' if len(seeds) > 1 else ''} {', '.join(seeds)})"
                                                for steps, seeds in sorted(seeds_by_steps.items(), reverse=True)))
    return texts


def _verdict_lower(before: list[float | None], after: list[float | None], *, target: float) -> str:
    before_mean, _ = _mean_spread(before)
    after_mean, _ = _mean_spread(after)
    if before_mean is None or after_mean is None:
        return "not run"
    if after_mean < target:
        return f"pass (< {target})"
    return "fewer, above target" if after_mean < before_mean else "not fewer"


def write_report(results: dict[str, Any], report_path: Path, figures_dir: Path, results_path: Path) -> None:
    figures = plot_figures(results, figures_dir)
    link = os.path.relpath(results_path, report_path.parent)
    lines = ["# Does the trainer break the plateau? (measured)", "",
             f"Generated by `python experiments/learning_proof.py` from [{link}]({link}); every number below "
             "comes from the runs listed at the end, with their commands. Arms that were not run say so.", "",
             "## Accuracy by hardness on the held-out databases", "",
             "| arm | " + " | ".join(HARDNESS) + " | answered | post-episode calls | train-part easy |",
             "|---" * (len(HARDNESS) + 4) + "|"]
    for arm in report_lines(results):
        runs = runs_of(results, arm)
        if not runs:
            lines.append(f"| {arm} | " + " | ".join(["not run"] * (len(HARDNESS) + 3)) + " |")
            continue
        cells = [_cell([measured(run, "heldout", "accuracy", group) for run in runs]) for group in HARDNESS]
        cells.append(_cell([measured(run, "heldout", "answered") for run in runs]))
        cells.append(_cell([measured(run, "heldout", "post_episode_calls") for run in runs], percent=False))
        cells.append(_cell([measured(run, "train_easy", "accuracy", "easy") for run in runs]))
        lines.append(f"| {arm} | " + " | ".join(cells) + " |")
    lengths = pooled_lengths(results)
    if lengths:
        lines += ["", "Pooled runs of different lengths (GRPO steps): " + "; ".join(lengths) + "."]
    partial = [(key, name, summary) for key, run in sorted(results["runs"].items())
               for name, summary in run.get("evals", {}).items() if name not in ("heldout", "train_easy")]
    if partial:  # evals of part of a split, from runs cut short: not comparable with the table above
        lines += ["", "Evals of part of a split (runs cut short; see the run's note):", "",
                  "| run | eval | questions | " + " | ".join(HARDNESS) + " |", "|---" * (len(HARDNESS) + 3) + "|"]
        for key, name, summary in partial:
            cells = [_cell([summary["accuracy"][group]]).removesuffix(" (n=1)") for group in HARDNESS]
            lines.append(f"| {key} | {name} | {summary['n']['overall']} | " + " | ".join(cells) + " |")
    paired = paired_rows(results)
    if paired:
        lines += ["", ("Question by question on the held-out databases (same seed; exact McNemar test on the "
                       "questions that changed):"), "", "| seed | arms | questions | correct | gained | lost | p |",
                  "|---|---|---|---|---|---|---|", *paired]
    ablations = ablation_rows(results)
    lines += ["", "## Ablations against the full setting (same seed, same warm-up)", ""]
    lines += ([("Each ablation against the arm it changes one thing of, both from the same warm-up; 'full vs "
                "ablation' in every cell. Held-out accuracy; gained / lost: questions the ablation got right that "
                "the full setting got wrong, and the reverse (exact McNemar p); zero-advantage share, reward and "
                "post-episode calls: means over the training steps (reward over the first 20)."), "",
               ("| ablation | full arm | seed | steps | held-out overall | change (points) | gained / lost | "
                "held-out hard | zero-advantage share | reward, first 20 steps | post-episode calls |"),
               "|---|---|---|---|---|---|---|---|---|---|---|", *ablations]
              if ablations else ["No ablation has run beside its full setting yet."])
    lines += ["", "## The plan's verification list", "", "| check | measured | verdict |", "|---|---|---|"]
    lines += [f"| {check} | {measured} | {verdict} |" for check, measured, verdict in verification_rows(results)]
    lines += ["", "## Figures", ""] + [f"![{path.stem}]({path.relative_to(report_path.parent)})" for path in figures]
    lines += ["", "## Runs", "", ("| arm | seed | scale | steps | median step (generation) | train+eval wall time "
                                   "| commit |"), "|---|---|---|---|---|---|---|"]
    for key in sorted(results["runs"]):
        run = results["runs"][key]
        step, generation = curve(run, "step_time"), curve(run, "rollout/generation_s")
        timing = (f"{statistics.median(step):.2f} s ({statistics.median(generation):.2f} s)"
                  if step and generation else "-")
        wall = f"{run['seconds']:.0f} s" + ("" if run.get("evals") or run["arm"] == "base" else " (trained only)")
        lines.append(f"| {run['arm']} | {run['seed']} | {run['scale']} | {len(run.get('curves', []))} | {timing} | "
                     f"{wall} | {run['commit']} |")
    lines += ["", "Commands of each run:", ""]
    for key in sorted(results["runs"]):
        lines += [f"- `{key}`:"] + [f"  - `{command}`" for command in results["runs"][key]["commands"]]
    notes = results.get("notes")
    if notes:
        lines += ["", "## Notes", "", notes]
    report_path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def moving_average(values: list[float], window: int = 10) -> tuple[range, list[float]]:
    """Steps 1..n and the mean of each step's last ``window`` values (fewer at the start)."""
    averaged = [statistics.fmean(values[max(0, i - window + 1): i + 1]) for i in range(len(values))]
    return range(1, len(values) + 1), averaged


def mean_over_runs(curves: list[list[float]]) -> list[float]:
    """Step by step, the mean of the curves that reach that step (a run cut short leaves the later means)."""
    length = max((len(values) for values in curves), default=0)
    return [statistics.fmean(values[step] for values in curves if len(values) > step) for step in range(length)]


def plot_figures(results: dict[str, Any], folder: Path) -> list[Path]:
    """Reward, zero-advantage share and post-episode calls over steps: one colour per arm, each seed a thin line,
    the arm's mean over its seeds a thick one."""
    runs = [run for _, run in sorted(results["runs"].items()) if run.get("curves")]
    if not runs:
        return []
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    by_arm: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        by_arm.setdefault(line_of(run), []).append(run)
    # More arms than tab10 has colours: the cycle gives the last ones the colours of base and sft, which have no
    # curves to draw.
    palette = plt.get_cmap("tab10").colors
    colours = {arm: palette[index % len(palette)] for index, arm in enumerate(ARMS)}
    # Lines of other scales take colours tab10 does not have, so none shares one with a gpu-scale arm.
    other_scales = [line for line in report_lines(results) if line not in ARMS]
    extra = ("black", "saddlebrown", "darkcyan", "magenta", "olive", "navy")
    colours |= {line: extra[index % len(extra)] for index, line in enumerate(other_scales)}
    folder.mkdir(parents=True, exist_ok=True)
    figure, axes = plt.subplots(1, 3, figsize=(16, 4))
    for axis, key, title in ((axes[0], "reward", "reward (group mean)"),
                             (axes[1], "frac_reward_zero_std", "groups with no reward variance"),
                             (axes[2], "episode/post_episode_calls", "calls after the episode, per episode")):
        for arm, arm_runs in by_arm.items():
            colour = colours.get(arm, "black")
            smoothed = [moving_average(curve(run, key))[1] for run in arm_runs]
            for values in smoothed:
                axis.plot(range(1, len(values) + 1), values, color=colour, alpha=0.3, linewidth=0.8)
            mean = mean_over_runs(smoothed)
            seeds = ", ".join(str(run["seed"]) for run in arm_runs)
            axis.plot(range(1, len(mean) + 1), mean, color=colour, linewidth=2.2,
                      label=f"{arm}: mean of seeds {seeds}" if len(arm_runs) > 1 else f"{arm}: seed {seeds}")
            if key == "frac_reward_zero_std" and all(curve(run, "episode/groups_all_correct") for run in arm_runs):
                # Which of the two kinds of no-variance group: every completion right (dashed) or none (dotted).
                for kind, style in (("episode/groups_all_correct", "--"), ("episode/groups_none_correct", ":")):
                    kind_mean = mean_over_runs([moving_average(curve(run, kind))[1] for run in arm_runs])
                    axis.plot(range(1, len(kind_mean) + 1), kind_mean, color=colour, linestyle=style, linewidth=1.2)
                axis.set_ylabel("share (dashed: all right, dotted: none)")
        axis.set_title(title)
        axis.set_xlabel("GRPO step")
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    figure.suptitle("10-step moving averages: thin lines one seed each, thick lines the arm's mean over its seeds")
    figure.tight_layout()
    path = folder / "curves.png"
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return [path]


# ------------------------------------------------------------------------------------------------ main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="model folder (python models.py fetch qwen2.5-coder-0.5b-instruct)")
    parser.add_argument("--arms", nargs="+", choices=list(ARMS), default=list(MAIN_LINE))
    parser.add_argument("--seeds", "--seed", type=int, nargs="+", default=[0],
                        help="run every arm for each seed, arm by arm (all seeds' warm-ups first, then their easy "
                             "phases, ...): one GPU process at a time, which measured faster than side by side")
    parser.add_argument("--data-dir", type=Path, default=REPO_DIR.parent / "shared" / "spider",
                        help="real Spider (train_spider.json + database/); the built-in data when absent")
    parser.add_argument("--work", type=Path, default=REPO_DIR / "runs" / "learning_proof",
                        help="adapters and eval reports; keep it between calls (later arms start from earlier ones)")
    parser.add_argument("--results", type=Path, default=DEFAULT_RESULTS)
    parser.add_argument("--report", type=Path, default=DEFAULT_REPORT)
    parser.add_argument("--scale", choices=list(SCALES), default="gpu")
    parser.add_argument("--quick", action="store_true", help="CPU smoke test: --scale quick, SmolLM2, built-in data, "
                                                             "results and report in --work")
    parser.add_argument("--steps", type=int, default=None,
                        help="GRPO steps of every arm run now (default: the scale's; the report shows the number run)")
    parser.add_argument("--eval-generation", choices=("padded", "rounds"), default="padded",
                        help="how the evals generate a turn (python -m eval --generation; default padded, as every "
                             "line so far; rounds took 0.64x the time of padded on the H200 at the same accuracy)")
    parser.add_argument("--train-only", nargs="+", choices=list(ARMS), default=[], metavar="ARM",
                        help="arms to train without their evals (about 110-150 s of H200 time an arm): those that "
                             "only start a later arm, so that a comparison of later arms fits one session (a "
                             "warm-up trained only is not checked for tool calls before the arms after it)")
    parser.add_argument("--report-only", action="store_true", help="regenerate the report from the results file")
    parser.add_argument("--merge", type=Path, nargs="+", default=[], metavar="RESULTS",
                        help="add the runs of these results files (invocations run side by side) to --results, "
                             "then write the report")
    arguments = parser.parse_args(argv)

    if arguments.quick:
        import models

        arguments.scale = "quick"
        arguments.model = arguments.model or models.fetch_model("smollm2-135m-instruct", progress=False)
        arguments.data_dir = REPO_DIR / "data" / "builtin"
        arguments.results = arguments.work / "results.json"
        arguments.report = arguments.work / "learning_proof.md"
    figures_dir = arguments.report.parent / "learning_proof"
    results = load_results(arguments.results)
    if arguments.merge:
        for path in arguments.merge:
            if not path.is_file():
                parser.error(f"--merge: no results file at {path}")
            for key, run in load_results(path)["runs"].items():
                record_run(results, key, run)  # a run measured again replaces the older one, which is kept
        save_results(arguments.results, results)
        print(f"[proof] merged {len(arguments.merge)} results file(s) into {arguments.results}: "
              f"{len(results['runs'])} runs")
    if arguments.report_only or arguments.merge:
        write_report(results, arguments.report, figures_dir, arguments.results)
        print(f"[proof] report: {arguments.report}")
        return 0
    if arguments.model is None or not Path(arguments.model).is_dir():
        parser.error("--model DIR is required: a model folder (python models.py fetch qwen2.5-coder-0.5b-instruct "
                     "--out DIR)")
    scale = SCALES[arguments.scale]
    if arguments.steps is not None:
        scale = replace(scale, easy_steps=arguments.steps, mixed_steps=arguments.steps)
    scale = replace(scale, eval_generation=arguments.eval_generation)
    if (arguments.data_dir / "train_spider.json").is_file() and not (arguments.data_dir / "dev.json").is_file():
        data = split_by_database(arguments.data_dir, arguments.work, held_out_databases())
    else:
        data = arguments.data_dir
    # (seed, warm-up) pairs whose warm-up made no tool call: the GRPO arms grown from it would learn nothing.
    stopped: set[tuple[int, str]] = set()
    for index, name in enumerate(arguments.arms):
        arm = ARMS[name]
        for seed in arguments.seeds:
            if (seed, warm_up_of(arm)) in stopped:
                continue
            evaluate = name not in arguments.train_only
            entry = run_arm(arm, scale, arguments.model, data, arguments.work, seed, evaluate=evaluate)
            record_run(results, f"{name}/seed{seed}/{scale.name}", entry)
            save_results(arguments.results, results)  # after every arm: nothing measured is lost
            write_report(results, arguments.report, figures_dir, arguments.results)
            print(f"[proof] {name} seed {seed}: {entry['seconds']:.0f} s; held-out accuracy "
                  f"{measured(entry, 'heldout', 'accuracy', 'overall') if evaluate else 'not evaluated (--train-only)'}",
                  flush=True)
            grown = [later for later in arguments.arms[index + 1:] if warm_up_of(ARMS[later]) == name]
            if arm.phase == "sft" and grown and evaluate and not entry["evals"]["heldout"]["mean_steps"]:
                # GRPO from a model that never calls a tool sees the same zero reward in every group.
                print(f"[proof] seed {seed}: the warm-up's model made no tool call in any held-out episode; not "
                      f"running {' '.join(grown)} for it (see the [sft] tool-call tags line of its log)", flush=True)
                stopped.add((seed, name))
    return 1 if stopped else 0


if __name__ == "__main__":
    sys.exit(main())
