"""Does the trainer learn? The plan's verification list, run at a scale that fits one CPU hour.

    python experiments/learning_proof.py                        # built-in data, 3 seeds: ~30 min on 2 CPU cores
    python experiments/learning_proof.py --quick --out /tmp/lp  # smoke version (tiny model, a few steps): ~1 min
    python experiments/learning_proof.py --data-dir ../shared/spider --out runs/lp-spider \
        --docs runs/lp-spider/learning_proof.md --max-questions 300 --eval-limit 150      # real Spider
    python experiments/learning_proof.py --report-only          # redraw figures and report from results.json

Every stage is one of the project's own commands, run in this process:
1. a small random-weight Qwen3 (``tiny_model.py --size small``) learns the tool protocol by
   supervised fine-tuning on the oracle's episodes of the train split
   (``train.py --phase sft --sft_full_finetune``);
2. for each seed, ``train.py --phase easy`` then ``--phase mixed`` from that model (GRPO, LoRA);
3. ``python -m eval`` on the held-out split (other databases) and on the train split, after SFT,
   after easy and after mixed;
4. short ablations from the same start: 4 against 6 generations, few-shot examples against none,
   and the post-episode penalty against none (from a warm start that has the habit of calling
   tools after answering, the first run's failure).

Writes OUT/results.json (every number) and a report, by default docs/learning_proof.md with its
figures and a copy of results.json in docs/learning_proof/ (``--quick`` keeps both in OUT). A
hand-written discussion at the end of the report is kept when the report is regenerated.
A Spider folder without dev.json (the shared copy holds the train split only) is split by
database: every tenth database is held out.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import statistics
import sys
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_DIR))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # every model here is built locally
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import train  # noqa: E402  (imports unsloth before transformers and trl, as the trainer must)
from eval.__main__ import main as eval_main  # noqa: E402
from spider_data import BUILTIN_DATA_DIR  # noqa: E402
from tiny_model import build_small_qwen3, build_tiny_qwen3  # noqa: E402

DEFAULT_OUT = REPO_DIR / "runs" / "learning_proof"
DEFAULT_DOCS = REPO_DIR / "docs" / "learning_proof.md"
HARDNESS = ["easy", "medium", "hard", "extra", "overall"]
HELD_OUT_EVERY = 10  # a Spider folder without dev.json: every 10th database (sorted) is held out

# ---------------------------------------------------------------------------------------------- scale


@dataclass(frozen=True)
class Scale:
    """How big every stage is. ``cpu`` fits one hour on 2 cores; ``quick`` is the smoke test."""

    name: str
    model_size: str  # tiny_model: "small" (hidden 128) or "tiny" (hidden 64)
    seeds: tuple[int, ...]
    sft_epochs: float
    sft_learning_rate: float
    sft_batch_size: int
    sft_questions: int | None  # None: every usable easy and medium training question
    habit_questions: int  # episodes of the "keeps calling after answering" warm-up
    grpo_questions: int | None
    easy_steps: int
    mixed_steps: int
    ablation_steps: int
    grpo_learning_rate: float
    max_completion_length: int
    eval_limit: int | None  # questions per eval split (None: all)
    eval_max_new_tokens: int


SCALES = {
    "cpu": Scale(
        name="cpu", model_size="small", seeds=(0, 1, 2), sft_epochs=5, sft_learning_rate=3e-3, sft_batch_size=2,
        sft_questions=None,
        habit_questions=48, grpo_questions=None, easy_steps=16, mixed_steps=16, ablation_steps=10,
        grpo_learning_rate=1e-3, max_completion_length=384, eval_limit=None, eval_max_new_tokens=96,
    ),
    "quick": Scale(
        name="quick", model_size="tiny", seeds=(0,), sft_epochs=1, sft_learning_rate=3e-3, sft_batch_size=4,
        sft_questions=12,
        habit_questions=6, grpo_questions=8, easy_steps=2, mixed_steps=2, ablation_steps=2,
        grpo_learning_rate=1e-3, max_completion_length=64, eval_limit=4, eval_max_new_tokens=32,
    ),
}

# ----------------------------------------------------------------------------------------------- data


def prepare_data(data_dir: Path, out: Path) -> Path:
    """The data folder to use: as given when it has dev.json, else a by-database split written to OUT/data."""
    if (data_dir / "dev.json").is_file():
        return data_dir
    questions = json.loads((data_dir / "train_spider.json").read_text(encoding="utf-8"))
    databases = sorted({question["db_id"] for question in questions})
    held_out = set(databases[::HELD_OUT_EVERY])
    split_dir = out / "data"
    split_dir.mkdir(parents=True, exist_ok=True)
    for name, keep in (("train_spider.json", False), ("dev.json", True)):
        chosen = [question for question in questions if (question["db_id"] in held_out) == keep]
        (split_dir / name).write_text(json.dumps(chosen, indent=1), encoding="utf-8")
    for name in ("tables.json", "database"):
        link = split_dir / name
        if not link.exists() and (data_dir / name).exists():
            link.symlink_to((data_dir / name).resolve())
    print(f"[proof] {data_dir} has no dev.json: held out {len(held_out)} of {len(databases)} databases "
          f"in {split_dir}", flush=True)
    return split_dir


# ------------------------------------------------------------------------------ the project's commands


def run_train(*argv: str) -> Path | None:
    """``python train.py ARGV`` in this process; returns what it saved."""
    print(f"[proof] python train.py {' '.join(argv)}", flush=True)
    return train.main(list(argv))


def run_eval(checkpoint: Path, data_dir: Path, split: str, out: Path, scale: Scale,
             hardness: list[str] | None = None) -> dict[str, Any]:
    """``python -m eval`` in this process; returns report.json."""
    argv = ["--checkpoint", str(checkpoint), "--data-dir", str(data_dir), "--split", split, "--out", str(out),
            "--max-new-tokens", str(scale.eval_max_new_tokens), "--batch-size", "32", "--no-progress"]
    if scale.eval_limit is not None:
        argv += ["--limit", str(scale.eval_limit)]
    if hardness:
        argv += ["--hardness", *hardness]
    print(f"[proof] python -m eval {' '.join(argv)}", flush=True)
    eval_main(argv)
    return json.loads((out / "report.json").read_text(encoding="utf-8"))


def grpo_flags(scale: Scale, data_dir: Path, model: Path, output_dir: Path, seed: int, steps: int) -> list[str]:
    flags = ["--model", str(model), "--data_dir", str(data_dir), "--output_dir", str(output_dir),
             "--seed", str(seed), "--max_steps", str(steps), "--learning_rate", str(scale.grpo_learning_rate),
             "--warmup_steps", "2", "--max_completion_length", str(scale.max_completion_length),
             "--save_steps", "100000", "--report_to", "none"]
    if scale.grpo_questions is not None:
        flags += ["--max_questions", str(scale.grpo_questions)]
    return flags


def sft_flags(scale: Scale, data_dir: Path, model: Path, output_dir: Path, questions: int | None,
              epochs: float) -> list[str]:
    # The curriculum's classes only: the warm-up's minutes go where GRPO will train.
    flags = ["--phase", "sft", "--sft_full_finetune", "--model", str(model), "--data_dir", str(data_dir),
             "--output_dir", str(output_dir), "--sft_hardness", "easy", "medium", "--sft_epochs", str(epochs),
             "--learning_rate",
             str(scale.sft_learning_rate), "--warmup_steps", "10", "--sft_batch_size", str(scale.sft_batch_size),
             "--per_device_train_batch_size", "2", "--report_to", "none"]
    # The embedded mode trains on 8 questions unless told otherwise.
    flags += ["--max_questions", str(questions if questions is not None else 1_000_000)]
    return flags


# --------------------------------------------------------------------------------------- measurements


@dataclass
class EvalResult:
    """One checkpoint on one split: accuracy and protocol numbers by hardness."""

    accuracy: dict[str, float | None]
    answered: float | None
    post_episode_calls: float | None
    tool_error_rate: float | None
    mean_steps: float | None
    valid_call_rate: float | None  # model turns that parsed as tool calls, over turns meant to call one
    n: dict[str, int]


def summarize_report(report: dict[str, Any]) -> EvalResult:
    by_hardness = report["by_hardness"]
    overall = by_hardness["overall"]
    calls = invalid = 0
    for question in report["questions"]:
        if question["skip_reason"] is None:
            calls += len(question["tool_calls"])
            invalid += question["stop_reason"] in ("malformed_tool_call", "truncated")
    return EvalResult(
        accuracy={group: by_hardness[group]["accuracy"] for group in HARDNESS},
        answered=overall["answered"],
        post_episode_calls=overall["post_episode_calls"],
        tool_error_rate=overall["tool_error_rate"],
        mean_steps=overall["mean_steps"],
        valid_call_rate=calls / (calls + invalid) if calls + invalid else None,
        n={group: by_hardness[group]["n"] for group in HARDNESS},
    )


def read_step_metrics(phase_dir: Path) -> list[dict[str, float]]:
    """The per-step log lines of a GRPO phase (the ones with a reward), in step order."""
    lines = (phase_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [entry for entry in map(json.loads, lines) if "reward" in entry]


def series(steps: list[dict[str, float]], key: str) -> list[float]:
    return [float(entry[key]) for entry in steps if key in entry]


@dataclass
class Slope:
    """An ordinary least-squares line through (step, value), with the slope's standard error and p-value."""

    slope: float
    stderr: float
    p_value: float
    n: int


def fit_slope(values: list[float]) -> Slope | None:
    if len(values) < 3 or len(set(values)) < 2:
        return None
    from scipy.stats import linregress

    fit = linregress(range(1, len(values) + 1), values)
    return Slope(slope=float(fit.slope), stderr=float(fit.stderr), p_value=float(fit.pvalue), n=len(values))


def mean_and_spread(values: list[float | None]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation over seeds (None where nothing was measured, or one seed)."""
    measured = [value for value in values if value is not None]
    if not measured:
        return None, None
    return statistics.fmean(measured), statistics.stdev(measured) if len(measured) > 1 else None


# ------------------------------------------------------------------------------------------ experiment


@dataclass
class Results:
    """Everything the report shows; saved as results.json."""

    scale: dict[str, Any]
    data_dir: str
    evals: dict[str, dict[str, list[dict[str, Any]]]] = field(default_factory=dict)  # stage -> split -> per seed
    curves: dict[str, dict[str, list[dict[str, float]]]] = field(default_factory=dict)  # run -> phase -> steps
    sft_loss: dict[str, list[float]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    peak_rss_gib: float = 0.0


class Stopwatch:
    def __init__(self, results: Results, name: str) -> None:
        self.results, self.name = results, name

    def __enter__(self) -> None:
        self.started = time.perf_counter()
        print(f"[proof] --- {self.name}", flush=True)

    def __exit__(self, *exc: Any) -> None:
        self.results.seconds[self.name] = round(time.perf_counter() - self.started, 1)


def sft_losses(output_dir: Path) -> list[float]:
    lines = (output_dir / "sft" / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["loss"] for line in lines]


def evaluate_stage(results: Results, stage: str, checkpoint: Path, data_dir: Path, out: Path, scale: Scale) -> None:
    """Held-out split (all classes) and the train split's easy questions (the curriculum's gate) for one checkpoint."""
    for split, hardness in (("dev", None), ("train", ["easy"])):
        report = run_eval(checkpoint, data_dir, split, out / "evals" / f"{stage}-{split}", scale, hardness)
        results.evals.setdefault(stage.split("/")[0], {}).setdefault(split, []).append(
            asdict(summarize_report(report)))


def run_experiment(scale: Scale, data_dir: Path, out: Path) -> Results:
    results = Results(scale=asdict(scale), data_dir=str(data_dir))
    with Stopwatch(results, "build model"):
        builder = build_small_qwen3 if scale.model_size == "small" else build_tiny_qwen3
        base_model = builder(out / f"{scale.model_size}-qwen3")

    with Stopwatch(results, "sft"):
        run_train(*sft_flags(scale, data_dir, base_model, out / "warmup", scale.sft_questions, scale.sft_epochs))
        sft_model = out / "warmup" / "sft" / "model"
        results.sft_loss["warmup"] = sft_losses(out / "warmup")
    with Stopwatch(results, "eval after sft"):
        evaluate_stage(results, "sft", sft_model, data_dir, out, scale)

    for seed in scale.seeds:
        seed_dir = out / f"seed{seed}"
        with Stopwatch(results, f"seed {seed}: easy + mixed"):
            run_train("--phase", "easy", *grpo_flags(scale, data_dir, sft_model, seed_dir, seed, scale.easy_steps))
            run_train("--phase", "mixed", *grpo_flags(scale, data_dir, sft_model, seed_dir, seed, scale.mixed_steps))
        results.curves[f"seed{seed}"] = {phase: read_step_metrics(seed_dir / phase) for phase in ("easy", "mixed")}
        with Stopwatch(results, f"seed {seed}: evals"):
            evaluate_stage(results, f"easy/seed{seed}", seed_dir / "easy" / "adapter", data_dir, out, scale)
            evaluate_stage(results, f"mixed/seed{seed}", seed_dir / "mixed" / "adapter", data_dir, out, scale)

    seed = scale.seeds[0]
    ablations = out / "ablations"
    with Stopwatch(results, "ablation: 4 generations, no few-shot"):
        run_train("--phase", "easy", *grpo_flags(scale, data_dir, sft_model, ablations / "ng4", seed,
                                                 scale.ablation_steps),
                  "--num_generations", "4", "--gradient_accumulation_steps", "4")
        run_train("--phase", "easy", *grpo_flags(scale, data_dir, sft_model, ablations / "no-fewshot", seed,
                                                 scale.ablation_steps), "--fewshot_examples", "0")
    for name in ("ng4", "no-fewshot"):
        results.curves[name] = {"easy": read_step_metrics(ablations / name / "easy")}

    with Stopwatch(results, "ablation: post-episode penalty"):
        # A warm start with the first run's habit: the SFT model, taught briefly on episodes that keep querying.
        run_train(*sft_flags(scale, data_dir, sft_model, ablations / "habit", scale.habit_questions, 1),
                  "--sft_never_stop_share", "1.0")
        habit_model = ablations / "habit" / "sft" / "model"
        results.sft_loss["habit"] = sft_losses(ablations / "habit")
        for name, penalty in (("penalty", "0.1"), ("no-penalty", "0.0")):
            run_train("--phase", "easy", *grpo_flags(scale, data_dir, habit_model, ablations / name, seed,
                                                     scale.ablation_steps), "--post_episode_penalty", penalty)
            results.curves[name] = {"easy": read_step_metrics(ablations / name / "easy")}
    results.peak_rss_gib = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, 2)
    return results


# ---------------------------------------------------------------------------------------------- figures


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


PROTOCOL_BARS = {"answered": "answered", "valid_call_rate": "valid tool calls", "tool_error_rate": "tool errors"}


def plot_accuracy(results: Results, path: Path) -> Path:
    """Accuracy by hardness after each stage, and the protocol numbers on the held-out split: mean over
    seeds with the spread (std) as error bars."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, 3, figsize=(15, 3.8), sharey=True)
    stages = [stage for stage in ("sft", "easy", "mixed") if stage in results.evals]
    width = 0.8 / len(stages)
    for offset, stage in enumerate(stages):
        runs = results.evals[stage].get("dev", [])
        means, spreads = zip(*(mean_and_spread([run[key] for run in runs]) for key in PROTOCOL_BARS))
        axes[2].bar([index + offset * width for index in range(len(PROTOCOL_BARS))], [mean or 0 for mean in means],
                    width, yerr=[spread or 0 for spread in spreads], capsize=3)
    axes[2].set_xticks([index + width * (len(stages) - 1) / 2 for index in range(len(PROTOCOL_BARS))],
                       list(PROTOCOL_BARS.values()))
    axes[2].set_title("protocol, held-out databases")
    axes[2].grid(axis="y", alpha=0.3)
    for axis, (split, title) in zip(axes, (("dev", "accuracy, held-out databases (dev)"),
                                           ("train", "accuracy, train split easy questions"))):
        groups = [group for group in HARDNESS if any(
            run["n"][group] for stage in stages for run in results.evals[stage].get(split, []))]
        for offset, stage in enumerate(stages):
            runs = results.evals[stage].get(split, [])
            means, spreads = zip(*(mean_and_spread([run["accuracy"][group] for run in runs]) for group in groups))
            axis.bar([index + offset * width for index in range(len(groups))], [mean or 0 for mean in means], width,
                     yerr=[spread or 0 for spread in spreads], capsize=3, label=f"after {stage} ({len(runs)} run(s))")
        axis.set_xticks([index + width * (len(stages) - 1) / 2 for index in range(len(groups))], groups)
        axis.set_title(title)
        axis.grid(axis="y", alpha=0.3)
    axes[0].set_ylim(0, 1.05)
    axes[0].set_ylabel("share")
    axes[0].legend(fontsize=8)
    return _save(figure, path)


def _moving_average(values: list[float], window: int = 5) -> list[float]:
    return [statistics.fmean(values[max(0, index - window + 1) : index + 1]) for index in range(len(values))]


def plot_training_curves(results: Results, path: Path) -> Path:
    """Reward and zero-advantage share per step for every seed, easy then mixed, with moving averages."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, 2, figsize=(11, 3.8))
    seeds = [name for name in results.curves if name.startswith("seed")]
    for axis, key, title in ((axes[0], "reward", "reward (mean of the group)"),
                             (axes[1], "frac_reward_zero_std", "groups with zero advantage")):
        for name in seeds:
            easy, mixed = (series(results.curves[name][phase], key) for phase in ("easy", "mixed"))
            values = easy + mixed
            line = axis.plot(range(1, len(values) + 1), values, alpha=0.25)[0]
            axis.plot(range(1, len(values) + 1), _moving_average(values), color=line.get_color(), label=name)
        if seeds:
            boundary = len(series(results.curves[seeds[0]]["easy"], key))
            axis.axvline(boundary + 0.5, color="grey", linestyle="--", linewidth=1)
            axis.text(boundary + 0.7, axis.get_ylim()[1], "mixed", va="top", fontsize=8, color="grey")
        axis.set_title(title)
        axis.set_xlabel("GRPO step (easy, then mixed)")
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=8)
    return _save(figure, path)


def plot_ablation(results: Results, runs: dict[str, str], metrics: dict[str, str], path: Path) -> Path:
    """Metrics (key -> title) per step for the runs of an ablation, raw and as a 4-step moving average."""
    plt = _pyplot()
    figure, axes = plt.subplots(1, len(metrics), figsize=(5.5 * len(metrics), 3.6), squeeze=False)
    for axis, (key, title) in zip(axes[0], metrics.items()):
        for label, run in runs.items():
            values = series(results.curves[run]["easy"], key)[: results.scale["ablation_steps"]]
            line = axis.plot(range(1, len(values) + 1), values, alpha=0.25)[0]
            axis.plot(range(1, len(values) + 1), _moving_average(values, 4), color=line.get_color(), label=label)
        axis.set_title(title)
        axis.set_xlabel("GRPO step")
        axis.grid(alpha=0.3)
        axis.legend(fontsize=8)
    return _save(figure, path)


def _save(figure: Any, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    _pyplot().close(figure)
    return path


def draw_figures(results: Results, figures_dir: Path) -> dict[str, Path]:
    return {
        "accuracy": plot_accuracy(results, figures_dir / "accuracy_by_hardness.png"),
        "curves": plot_training_curves(results, figures_dir / "reward_and_zero_advantage.png"),
        "penalty": plot_ablation(results, {"penalty 0.1": "penalty", "no penalty": "no-penalty"},
                                 {"episode/post_episode_calls": "tool calls after the episode, per episode",
                                  "episode/answered": "episodes that answered"},
                                 figures_dir / "post_episode_calls.png"),
        "generations": plot_ablation(results, {"6 generations": "seed0", "4 generations": "ng4"},
                                     {"frac_reward_zero_std": "groups with zero advantage"},
                                     figures_dir / "zero_advantage_4_vs_6.png"),
        "fewshot": plot_ablation(results, {"2 few-shot examples": "seed0", "no examples": "no-fewshot"},
                                 {"reward": "reward, first steps of the easy phase",
                                  "episode/answered": "episodes that answered"}, figures_dir / "fewshot_reward.png"),
    }


# ---------------------------------------------------------------------------------------------- report


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _mean_spread(values: list[float | None], as_percent: bool = True, digits: int = 2) -> str:
    mean, spread = mean_and_spread(values)
    if mean is None:
        return "–"
    show = (lambda value: f"{100 * value:.1f}") if as_percent else (lambda value: f"{value:.{digits}f}")
    text = show(mean) + (f" ± {show(spread)}" if spread is not None else "")
    return text + ("%" if as_percent else "")


@dataclass
class Comparison:
    """Two runs' values of one metric over the same steps: means and the difference with its standard error."""

    mean_a: float
    mean_b: float
    difference: float  # a - b
    stderr: float

    @property
    def is_clear(self) -> bool:
        return abs(self.difference) > 2 * self.stderr


def compare(values_a: list[float], values_b: list[float]) -> Comparison | None:
    if len(values_a) < 2 or len(values_b) < 2:
        return None
    mean_a, mean_b = statistics.fmean(values_a), statistics.fmean(values_b)
    stderr = math.sqrt(statistics.variance(values_a) / len(values_a) + statistics.variance(values_b) / len(values_b))
    return Comparison(mean_a, mean_b, mean_a - mean_b, stderr)


def accuracy_table(results: Results, split: str) -> list[str]:
    lines = ["| after | runs | " + " | ".join(HARDNESS) + " |", "| --- | ---: |" + " ---: |" * len(HARDNESS)]
    for stage in ("sft", "easy", "mixed"):
        runs = results.evals.get(stage, {}).get(split, [])
        if runs:
            cells = [_mean_spread([run["accuracy"][group] for run in runs]) for group in HARDNESS]
            lines.append(f"| {stage} | {len(runs)} | " + " | ".join(cells) + " |")
    runs = next((results.evals[stage][split] for stage in results.evals if split in results.evals[stage]), [])
    if runs:
        lines.append("| questions | | " + " | ".join(str(runs[0]["n"][group]) for group in HARDNESS) + " |")
    return lines


def protocol_table(results: Results) -> list[str]:
    keys = [("answered", "answered", True), ("valid_call_rate", "valid tool calls", True),
            ("tool_error_rate", "tool error rate", True), ("post_episode_calls", "post-episode calls / episode", False),
            ("mean_steps", "tool calls / episode", False)]
    lines = ["| after | split | " + " | ".join(label for _, label, _ in keys) + " |",
             "| --- | --- |" + " ---: |" * len(keys)]
    for stage in ("sft", "easy", "mixed"):
        for split in ("dev", "train"):
            runs = results.evals.get(stage, {}).get(split, [])
            if runs:
                cells = [_mean_spread([run[key] for run in runs], as_percent) for key, _, as_percent in keys]
                lines.append(f"| {stage} | {split} | " + " | ".join(cells) + " |")
    return lines


def slope_table(results: Results) -> list[str]:
    lines = ["| run | phase | steps | reward: mean | reward: slope per step ± s.e. | p | zero-advantage: mean "
             "| zero-advantage: slope ± s.e. |", "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for name in [name for name in results.curves if name.startswith("seed")]:
        for phase in ("easy", "mixed"):
            steps = results.curves[name][phase]
            reward, zero = series(steps, "reward"), series(steps, "frac_reward_zero_std")
            reward_fit, zero_fit = fit_slope(reward), fit_slope(zero)
            lines.append(
                f"| {name} | {phase} | {len(reward)} | {statistics.fmean(reward):.3f} | "
                + (f"{reward_fit.slope:+.1e} ± {reward_fit.stderr:.1e} | {reward_fit.p_value:.2f}" if reward_fit
                   else "– | –")
                + f" | {_percent(statistics.fmean(zero))} | "
                + (f"{100 * zero_fit.slope:+.2f} ± {100 * zero_fit.stderr:.2f} pts" if zero_fit else "–") + " |")
    return lines


def pooled_fit(runs: list[list[float]]) -> Slope | None:
    """One slope for several runs (the seeds), each with its own intercept: steps and values are centred
    per run, then fitted together; the standard error comes from the pooled residuals."""
    from scipy.stats import t as student_t

    steps_centred: list[float] = []
    values_centred: list[float] = []
    for values in runs:
        steps = range(1, len(values) + 1)
        steps_centred += [step - statistics.fmean(steps) for step in steps]
        values_centred += [value - statistics.fmean(values) for value in values]
    spread = sum(step * step for step in steps_centred)
    degrees = len(values_centred) - len(runs) - 1
    if spread == 0 or degrees < 1:
        return None
    slope = sum(step * value for step, value in zip(steps_centred, values_centred, strict=True)) / spread
    residual = sum((value - slope * step) ** 2 for step, value in zip(steps_centred, values_centred, strict=True))
    stderr = math.sqrt(residual / degrees / spread)
    p_value = 2 * student_t.sf(abs(slope / stderr), degrees) if stderr > 0 else 0.0
    return Slope(slope=slope, stderr=stderr, p_value=float(p_value), n=len(values_centred))


def seed_fit(results: Results, phase: str, key: str) -> Slope | None:
    return pooled_fit([series(results.curves[name][phase], key) for name in results.curves if name.startswith("seed")])


def calls_per_answered_episode(results: Results, run: str) -> float:
    """Post-episode calls over answered episodes, summed over the ablation's steps (equal-sized groups)."""
    steps = results.curves[run]["easy"][: results.scale["ablation_steps"]]
    answered = sum(series(steps, "episode/answered"))
    return sum(series(steps, "episode/post_episode_calls")) / answered if answered else float("nan")


def correct_episodes(results: Results) -> tuple[int, int]:
    """Episodes answered correctly during GRPO, over all runs and steps, and how many episodes there were."""
    correct = total = 0
    for name, phases in results.curves.items():
        group = 4 if name == "ng4" else 6
        for steps in phases.values():
            correct += sum(round(value * group) for value in series(steps, "episode/accuracy"))
            total += group * len(steps)
    return correct, total


def ablation_comparison(results: Results, run_a: str, run_b: str, key: str) -> Comparison | None:
    steps = results.scale["ablation_steps"]
    return compare(*(series(results.curves[run]["easy"], key)[:steps] for run in (run_a, run_b)))


def comparison_words(comparison: Comparison | None, label_a: str, label_b: str, as_percent: bool = False) -> str:
    if comparison is None:
        return "not enough steps to compare"
    show = (lambda value: f"{100 * value:.1f}%") if as_percent else (lambda value: f"{value:.3f}")
    verdict = ("a clear difference (more than 2 standard errors)" if comparison.is_clear
               else "no difference distinguishable from step-to-step noise")
    return (f"{label_a} {show(comparison.mean_a)}, {label_b} {show(comparison.mean_b)}: difference "
            f"{show(comparison.difference)} ± {show(comparison.stderr)} (s.e.), {verdict}")


def shown_path(path: str) -> str:
    """A path inside the repository relative to it (reports stay the same on every checkout)."""
    resolved = Path(path).resolve()
    return str(resolved.relative_to(REPO_DIR)) if resolved.is_relative_to(REPO_DIR) else path


def docs_relative_results(report: Path) -> str:
    return f"{report.stem}/results.json"


def write_markdown(results: Results, figures: dict[str, Path], path: Path, command: str) -> Path:
    """The report: commands, tables, figures, and what did and did not improve, in words from the numbers."""
    scale = results.scale
    relative = {name: os.path.relpath(figure, path.parent) for name, figure in figures.items()}
    seeds = [name for name in results.curves if name.startswith("seed")]
    total_minutes = sum(results.seconds.values()) / 60
    easy_train = [run["accuracy"]["easy"] for run in results.evals.get("easy", {}).get("train", [])]
    easy_train_mean, _ = mean_and_spread(easy_train)
    reward_easy, reward_mixed = seed_fit(results, "easy", "reward"), seed_fit(results, "mixed", "reward")
    zero_easy, zero_mixed = (seed_fit(results, phase, "frac_reward_zero_std") for phase in ("easy", "mixed"))
    penalty = ablation_comparison(results, "penalty", "no-penalty", "episode/post_episode_calls")
    penalty_answered = ablation_comparison(results, "penalty", "no-penalty", "episode/answered")
    per_answer = {run: calls_per_answered_episode(results, run) for run in ("penalty", "no-penalty")}
    generations = ablation_comparison(results, "ng4", "seed0", "frac_reward_zero_std")
    fewshot = ablation_comparison(results, "seed0", "no-fewshot", "reward")
    fewshot_answered = ablation_comparison(results, "seed0", "no-fewshot", "episode/answered")

    def slope_words(fit: Slope | None, scale_by: float = 1.0, unit: str = "") -> str:
        if fit is None:
            return "not measured"
        verdict = ("above 0 by more than 2 s.e." if fit.slope > 2 * fit.stderr else
                   "below 0 by more than 2 s.e." if fit.slope < -2 * fit.stderr else "not distinguishable from 0")
        digits = ".2f" if unit else ".1e"
        return (f"{scale_by * fit.slope:+{digits}}{unit} ± {scale_by * fit.stderr:{digits}}{unit} per step "
                f"(p = {fit.p_value:.2f}, {len(seeds)} seeds pooled), {verdict}")

    penalty_words = (
        f"post-episode calls per episode over {scale['ablation_steps']} steps, "
        f"{comparison_words(penalty, 'penalty', 'none')}; share of episodes that answered, "
        f"{comparison_words(penalty_answered, 'penalty', 'none', as_percent=True)}; calls per answered episode: "
        f"penalty {per_answer['penalty']:.2f}, none {per_answer['no-penalty']:.2f}")
    penalty_verdict = (
        NOT_SHOWN if not (penalty and penalty.is_clear and penalty.difference < 0) else
        "fewer calls, but partly by answering less (see below)" if penalty_answered and penalty_answered.difference < 0
        else "shown")

    lines = [
        "# Does the trainer learn? The plan's verification list at small scale",
        "",
        f"Generated by `{command}` ({scale['name']} scale, {total_minutes:.0f} minutes on this machine; "
        f"peak memory {results.peak_rss_gib:.1f} GiB). Data: `{shown_path(results.data_dir)}`. "
        f"Every number below is in `{docs_relative_results(path)}`.",
        "",
        "No Qwen3-1.7B weights can reach our machines, so this runs the whole pipeline on a small Qwen3 built "
        f"offline (`tiny_model.py --size {scale['model_size']}`: the real Qwen3 tokenizer and chat template, random "
        "weights). A random model never writes a tool call, so GRPO alone would see rewards of exactly 0 and "
        "learn nothing; a supervised warm-up on the oracle's episodes teaches it the protocol first.",
        "",
        "## What was run",
        "",
        "```bash",
        f"python tiny_model.py --out OUT/{scale['model_size']}-qwen3 --size {scale['model_size']}",
        f"python train.py --phase sft --sft_full_finetune --model OUT/{scale['model_size']}-qwen3 "
        f"--output_dir OUT/warmup --sft_hardness easy medium --sft_epochs {scale['sft_epochs']:g} "
        f"--learning_rate {scale['sft_learning_rate']:g} --sft_batch_size {scale['sft_batch_size']} "
        "--per_device_train_batch_size 2",
        "# for each seed S:",
        f"python train.py --phase easy  --model OUT/warmup/sft/model --output_dir OUT/seedS --seed S "
        f"--max_steps {scale['easy_steps']} --learning_rate {scale['grpo_learning_rate']:g} "
        f"--max_completion_length {scale['max_completion_length']}",
        f"python train.py --phase mixed --model OUT/warmup/sft/model --output_dir OUT/seedS --seed S "
        f"--max_steps {scale['mixed_steps']} --learning_rate {scale['grpo_learning_rate']:g} "
        f"--max_completion_length {scale['max_completion_length']}",
        "python -m eval --checkpoint OUT/warmup/sft/model --split dev --out OUT/evals/sft-dev   "
        "# and --split train --hardness easy; the same for OUT/seedS/{easy,mixed}/adapter",
        "# ablations, seed 0, from the same warm start, "
        f"{scale['ablation_steps']} steps each: --num_generations 4 --gradient_accumulation_steps 4; "
        "--fewshot_examples 0; and from a warm start taught to keep calling after answering "
        "(--phase sft --sft_never_stop_share 1.0, one epoch over "
        f"{scale['habit_questions']} questions): --post_episode_penalty 0.1 against 0.0",
        "```",
        "",
        "Other settings are the trainer's defaults: 6 generations, 1 x 6 completions per step (one question per "
        "step), temperature 1, LoRA rank 32 on all linear layers, 2 few-shot examples in the easy phase, the mixed "
        "phase starting from the easy adapter without examples. Evaluation is greedy, on the held-out split "
        "(databases never seen in training) and on the train split's easy questions. The warm-up is one "
        "run (seed 0) shared by the seeds, so the spread (± sample standard deviation over seeds) is GRPO's.",
        "",
        f"The warm-up brought the loss per generated token from {results.sft_loss['warmup'][0]:.1f} to "
        f"{statistics.fmean(results.sft_loss['warmup'][-20:]):.2f} (mean of its last 20 of "
        f"{len(results.sft_loss['warmup'])} steps). Of the {correct_episodes(results)[1]} episodes GRPO played in all "
        f"runs, {correct_episodes(results)[0]} ended with a correct answer.",
        "",
        "## The verification list",
        "",
        "| the plan expects | measured here | verdict |",
        "| --- | --- | --- |",
        "| no OOM with 6 generations | CPU run, peak resident memory "
        f"{results.peak_rss_gib:.1f} GiB; GPU memory is measured in README.md (random-weight Qwen3-1.7B, "
        "6 x 512 tokens: 5.4 GiB peak on an H200) | not testable on CPU; see README |",
        f"| fewer \"Episode is over\" loops | {penalty_words} | {penalty_verdict} |",
        f"| an upward reward trend | reward slope, easy phase: {slope_words(reward_easy)}; "
        f"mixed phase: {slope_words(reward_mixed)} | "
        f"{'shown' if reward_easy and reward_easy.slope > 2 * reward_easy.stderr else NOT_SHOWN} |",
        f"| fewer zero-advantage groups over training | zero-advantage share slope, easy phase: "
        f"{slope_words(zero_easy, 100, ' pts')}; mixed phase: {slope_words(zero_mixed, 100, ' pts')} | "
        f"{'shown' if zero_easy and zero_easy.slope < -2 * zero_easy.stderr else NOT_SHOWN} |",
        f"| more gradient signal with 6 generations | zero-advantage share, "
        f"{comparison_words(generations, '4 generations', '6', as_percent=True)} | "
        f"{'shown' if generations and generations.is_clear and generations.difference > 0 else NOT_SHOWN} |",
        f"| easy phase above 50% before medium | train-split easy accuracy after the easy phase: "
        f"{_mean_spread(easy_train)} | {'yes' if easy_train_mean is not None and easy_train_mean > 0.5 else 'no'} |",
        f"| few-shot guidance helps early training | reward over the first {scale['ablation_steps']} steps, "
        f"{comparison_words(fewshot, 'with examples', 'without')}; answered share: "
        f"{comparison_words(fewshot_answered, 'with', 'without', as_percent=True)} | "
        f"{'shown' if fewshot and fewshot.is_clear and fewshot.difference > 0 else NOT_SHOWN} |",
        "",
        "## Accuracy by hardness",
        "",
        "Held-out databases (the dev split), mean ± standard deviation over the runs:",
        "",
        *accuracy_table(results, "dev"),
        "",
        "Train split, easy questions (all seen in the warm-up; some in GRPO too):",
        "",
        *accuracy_table(results, "train"),
        "",
        f"![accuracy by hardness]({relative['accuracy']})",
        "",
        "What a small model can learn is the protocol; these are its numbers (valid tool calls: model turns "
        "that parsed as a tool call, over those that did plus turns that broke off malformed or truncated):",
        "",
        *protocol_table(results),
        "",
        "## Reward and zero-advantage share over steps",
        "",
        "One question (a group of 6 episodes) per step, so each step's zero-advantage value is 0 or 1 and the reward "
        "moves with the question's difficulty; the lines are 5-step moving averages. Least-squares slope per seed "
        f"and phase (p: two-sided test of slope 0); pooled over the seeds (one intercept each), the reward slope is "
        f"{slope_words(reward_easy)} in the easy phase and {slope_words(reward_mixed)} in the mixed phase:",
        "",
        *slope_table(results),
        "",
        f"![reward and zero-advantage share]({relative['curves']})",
        "",
        "## Post-episode calls, with the penalty and without",
        "",
        f"Both runs start from the same warm start, taught to call `query` again after answering; {penalty_words}.",
        "",
        f"![post-episode calls]({relative['penalty']})",
        "",
        "## Zero-advantage share, 4 generations against 6",
        "",
        "Same warm start, seed and questions in the same order; "
        f"{comparison_words(generations, '4 generations', '6', as_percent=True)}.",
        "",
        f"![zero advantage, 4 vs 6 generations]({relative['generations']})",
        "",
        "## Early reward with few-shot examples and without",
        "",
        f"{comparison_words(fewshot, 'with 2 examples', 'without', )}.",
        "",
        f"![few-shot reward]({relative['fewshot']})",
        "",
        "## Time",
        "",
        "| stage | seconds |",
        "| --- | ---: |",
        *[f"| {name} | {seconds:.0f} |" for name, seconds in results.seconds.items()],
        "",
    ]
    discussion = DISCUSSION_PLACEHOLDER
    if path.is_file() and DISCUSSION_HEADER in path.read_text(encoding="utf-8"):
        discussion = path.read_text(encoding="utf-8").split(DISCUSSION_HEADER, 1)[1]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n" + DISCUSSION_HEADER + discussion, encoding="utf-8")
    return path


# The discussion is written by a person who read the numbers; regenerating the report keeps it.
NOT_SHOWN = "not shown at this scale"
DISCUSSION_HEADER = "## Discussion (written by hand; kept when the report is regenerated)\n"
DISCUSSION_PLACEHOLDER = "\n(Read the numbers above and write what they do and do not show.)\n"


# ------------------------------------------------------------------------------------------------- main


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke version: tiny model, a few steps, one seed")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help=f"run folder (default {DEFAULT_OUT})")
    parser.add_argument("--data-dir", type=Path, default=BUILTIN_DATA_DIR, help="Spider-format data folder")
    parser.add_argument("--seeds", type=int, nargs="+", help="GRPO seeds (default: the scale's)")
    parser.add_argument("--max-questions", type=int,
                        help="train on at most this many questions per stage (real Spider: 300 keeps it near an hour)")
    parser.add_argument("--eval-limit", type=int, help="evaluate at most this many questions per split")
    parser.add_argument("--docs", type=Path,
                        help=f"report path (default {DEFAULT_DOCS.relative_to(REPO_DIR)}; "
                             "with --quick, OUT/learning_proof.md)")
    parser.add_argument("--report-only", action="store_true", help="redraw figures and report from OUT/results.json")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> Path:
    arguments = parse_args(argv)
    scale = SCALES["quick" if arguments.quick else "cpu"]
    if arguments.seeds:
        scale = replace(scale, seeds=tuple(arguments.seeds))
    if arguments.max_questions:
        scale = replace(scale, sft_questions=arguments.max_questions, grpo_questions=arguments.max_questions)
    if arguments.eval_limit:
        scale = replace(scale, eval_limit=arguments.eval_limit)
    out = arguments.out.resolve()
    docs = arguments.docs or (out / "learning_proof.md" if arguments.quick else DEFAULT_DOCS)
    results_path = out / "results.json"
    if arguments.report_only:
        results = Results(**json.loads(results_path.read_text(encoding="utf-8")))
    else:
        if (out / "warmup").exists():
            raise SystemExit(f"{out} holds an earlier run: choose another --out, or delete it first")
        out.mkdir(parents=True, exist_ok=True)
        data_dir = prepare_data(arguments.data_dir.resolve(), out)
        results = run_experiment(scale, data_dir, out)
        results_path.write_text(json.dumps(asdict(results), indent=1), encoding="utf-8")
    figures_dir = docs.parent / docs.stem  # docs/learning_proof/ beside docs/learning_proof.md
    figures = draw_figures(results, figures_dir)
    (figures_dir / "results.json").write_text(json.dumps(asdict(results), indent=1), encoding="utf-8")
    command = "python experiments/learning_proof.py" + (" --quick" if arguments.quick else "")
    if arguments.data_dir.resolve() != BUILTIN_DATA_DIR.resolve():
        command += f" --data-dir {arguments.data_dir}"
    report = write_markdown(results, figures, docs, command)
    print(f"[proof] report in {report}; figures in {figures_dir}; numbers in {results_path}", flush=True)
    return report


if __name__ == "__main__":
    main()
