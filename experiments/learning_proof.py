"""Does the trainer break the plateau? The plan's verification list, arm by arm, on a real model.

    python experiments/learning_proof.py --model /tmp/qc --arms base sft easy mixed --seeds 0 1 2   # the main line
    python experiments/learning_proof.py --model /tmp/qc --arms ng4 no-penalty no-fewshot --seed 0
    python experiments/learning_proof.py --model /tmp/qc --arms mixed-only no-sft --seed 0
    python experiments/learning_proof.py --model /tmp/qc --arms sft-habit easy-habit no-penalty-habit --seed 8
    python experiments/learning_proof.py --report-only          # redraw docs/learning_proof.md from the results
    python experiments/learning_proof.py --estimate --scale epoch --arms sft-4x easy-sft4x --seeds 30 \
        --train-only easy-sft4x                                  # how long, from the recorded runs: what fits a session
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
  penalty has nothing to act on there;
- the warm-up's size: ``sft-4x`` (four times the scale's oracle episodes), ``easy-sft4x``, ``mixed-sft4x``
  and ``mixed-informative-sft4x`` from it, each compared with the scale's own line of the same seed (the
  warm-ups differ by design, so these pair by seed and scale, not by warm-up digest);
  ``mixed-informative-sft4x-lr5e-5`` is that mixed phase at 5e-5, from the same easy adapter;
  ``easy-sft4x-fresh`` and ``mixed-informative-sft4x-fresh`` train on questions the warm-up did not
  (``--skip_warmup_questions``); ``easy-sft4x-vllm`` and ``mixed-informative-sft4x-lr5e-5-vllm`` are the recipe's
  line with vLLM's rollouts (``--fast_inference``; needs vLLM; run each in its own process);
- recovery from a failed query: ``sft-4x-recover`` (a quarter of its episodes run a query with a wrong column
  first, shown but not trained, then the gold query), ``easy-sft4x-recover`` and
  ``mixed-informative-sft4x-recover``, against the four-times line of the same seed (``sft-4x-retry``, which
  trained the wrong query too, is retired: its runs were recorded at an earlier commit).
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
``superseded``); a merged run is credited to the commit here that holds the code it ran (each entry records
the git tree of the files it ran from: the GPU machine's checkout sits on the last commit that landed, whatever
its files). When a seed's warm-up (``sft`` or ``sft-habit``) made no tool call in any held-out episode,
the arms grown from it are not run for that seed: GRPO from it would see only zero rewards.

Each entry records a digest of its adapter's weights and of the warm-up it descends from; two arms of a seed
are compared (question by question, as an ablation, as a gain over the warm-up) only when their warm-up digests
match (the warm-up-size arms above excepted), since a warm-up trained again need not come out the same.
``--train-only ARM...`` skips the evals of arms that only start later ones (for example ``--arms sft easy mixed
mixed-only --train-only sft easy``: the curriculum against mixed-only in one session, from one warm-up). Such an
arm can still get its held-out eval afterwards from ``benchmarks/eval_generation.py`` (``bash
scripts/gpu_session.sh eval-modes ADAPTER`` on the GPU machine): ``--add-heldout sft/seed28/epoch
eval-generation-sft-seed28.json``, which keeps the outcomes question by question and says where the figure came
from.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import statistics
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_DIR))
os.environ.setdefault("HF_HUB_OFFLINE", "1")  # every model here is a local folder
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

# train.py and python -m eval are imported where an arm runs (run_arm), not here: the registry and the report import
# no trainer, so --report-only and --merge start without unsloth or torch.
from proof_arms import ARMS, MAIN_LINE, Arm, shorter_twin_of, start_chain, warm_up_of  # noqa: E402
from proof_report import HARDNESS, HARDNESS_LETTERS, measured, write_report  # noqa: E402
from spider_data import link_schemas_and_databases  # noqa: E402

DEFAULT_RESULTS = REPO_DIR / "docs" / "learning_proof" / "results.json"
DEFAULT_REPORT = REPO_DIR / "docs" / "learning_proof.md"
HELD_OUT_LIST = REPO_DIR / "experiments" / "heldout_databases.txt"

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
    # 2e-5, chosen for the budget when the runs were tens of steps; the measured lines made it train.py's default.
    grpo_learning_rate: float
    # Prompt groups per optimizer step (--per_device_train_batch_size; the accumulation is the group size). The
    # epoch scale's 16 became train.py's default step (generated there in rounds of 4, for an L4's memory).
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
    # Flags every warm-up of the scale adds to its arm's (the CPU smoke test's, SCALES["quick"]: a LoRA).
    warm_up_flags: tuple[str, ...] = ()


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
                   max_completion_length=96, eval_train_easy_limit=2, eval_heldout_limit=2, eval_max_new_tokens=48,
                   # On a CPU train.py's warm-up of SmolLM2 trains every weight (embedded mode); a LoRA, as on a GPU,
                   # is what the arms that start from a warm-up look for.
                   warm_up_flags=("--sft_full_finetune", "false")),
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
    link_schemas_and_databases(spider_dir, data)  # several invocations may share one --work
    return data


# -------------------------------------------------------------------------------------------- the arms


def steps_for(arm: Arm, scale: Scale) -> int:
    """The arm's optimizer steps: its scale's, times its passes over the questions (``steps_times``) and the steps
    each generation batch trains (the same episodes)."""
    if arm.steps_of == "mixed_only_steps":
        steps = scale.easy_steps + scale.mixed_steps  # the curriculum's two phases together: the same total
    else:
        steps = getattr(scale, arm.steps_of)
    return steps * arm.steps_times * arm.optimizer_steps_per_generation


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
    """Batch flags that make each generation batch hold the scale's prompt groups, whole (the accumulation is
    the group size, one group per micro-batch row), trained as one optimizer step or as the arm's several. Empty
    for train.py's own settings: 1 group of 6."""
    generations = arm.flags[arm.flags.index("--num_generations") + 1] if "--num_generations" in arm.flags else None
    if scale.grpo_prompts_per_step == 1 and generations is None and arm.optimizer_steps_per_generation == 1:
        return []  # on CPU, train.py's embedded run then picks its own smaller groups
    micro_batches = int(generations or "6")
    split = arm.optimizer_steps_per_generation
    if micro_batches % split:
        raise ValueError(f"arm {arm.name}: {split} optimizer steps a generation batch do not divide its "
                         f"{micro_batches} micro-batches")
    argv = ["--per_device_train_batch_size", str(scale.grpo_prompts_per_step),
            "--gradient_accumulation_steps", str(micro_batches // split)]
    return argv + (["--steps_per_generation", str(micro_batches)] if split > 1 else [])


def train_argv(arm: Arm, scale: Scale, model: Path, data: Path, work: Path, seed: int, *,
               save_steps: int = 50) -> list[str]:
    """The train.py command line of an arm (a GRPO arm saves a checkpoint every ``save_steps``)."""
    out = work / f"{arm.name}-seed{seed}"
    common = ["--model", str(model), "--data_dir", str(data), "--output_dir", str(out), "--seed", str(seed),
              "--report_to", "none"]
    if arm.phase == "sft":
        return ["--phase", "sft", *common, "--max_questions", str(scale.sft_questions * arm.warm_up_questions_times),
                "--sft_epochs", str(scale.sft_epochs), "--sft_batch_size", str(scale.sft_batch_size),
                "--sft_hardness", "easy", "medium", "--learning_rate", str(scale.sft_learning_rate),
                # Micro-batches of 4, as every warm-up measured (the warm-up takes no accumulation).
                "--warmup_steps", "5", "--per_device_train_batch_size", "4",
                *scale.warm_up_flags, *arm.flags]
    # Every GRPO arm names its learning rate, the scale's unless it sets its own: curriculum.yaml's phase rates
    # came after most arms were measured, and an arm's command must keep meaning what it meant.
    own_rate = "--learning_rate" in arm.flags
    argv = ["--phase", str(arm.phase), *common, "--max_steps", str(steps_for(arm, scale)),
            *([] if own_rate else ["--learning_rate", str(scale.grpo_learning_rate)]),
            "--warmup_steps", str(5 * arm.optimizer_steps_per_generation),  # the ramp: 5 generation batches, any arm
            "--max_completion_length", str(scale.max_completion_length), "--save_steps", str(save_steps)]
    questions = scale.mixed_questions if arm.phase == "mixed" else scale.easy_questions
    if questions is not None:
        argv += ["--max_questions", str(questions * arm.questions_times)]
    argv += [*arm.flags, *group_argv(arm, scale)]
    if "--sampling" not in arm.flags:  # the arms measured before train.py's default became informative sampling
        argv += ["--sampling", "plain"]
    if "--guide_unsolved" not in arm.flags:  # nor did they have oracle guidance, on by default since 2026-12-07c
        argv += ["--guide_unsolved", "false"]
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


UNREADABLE_EXAMPLES = 3
MAX_EXAMPLE_CHARS = 400


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
        # each question's Spider class as one letter (e, m, h, x): the report pairs arms class by class
        "hardness_by_question": "".join(HARDNESS_LETTERS[question["hardness"]] for question in scored),
        "questions_digest": questions_digest(scored),
        "accuracy": {group: report["by_hardness"][group]["accuracy"] for group in HARDNESS},
        # by the exact text asked for, without the relaxed matching (None in reports from before it was measured)
        "exact_text_accuracy": {group: report["by_hardness"][group].get("exact_text_accuracy") for group in HARDNESS},
        "n": {group: report["by_hardness"][group]["n"] for group in HARDNESS},
        "answered": overall["answered"], "post_episode_calls": overall["post_episode_calls"],
        "tool_error_rate": overall["tool_error_rate"], "mean_steps": overall["mean_steps"],
        "stop_reasons": report.get("stop_reasons", {}), "seconds": report["timing"]["elapsed_s"],
        # why the wrong answers were wrong (eval/metrics.py; absent from reports before 2026-12-04b)
        "wrong_answer_kinds": report.get("wrong_answer_kinds"),
        "wrong_sql_kinds": report.get("wrong_sql_kinds"),
        # the episodes with a refused query, by whether they queried again (absent from reports before 2026-12-05d)
        "after_refused_query": report.get("after_refused_query"),
        "generation": report["timing"].get("generation", {}),
        # what a format defect looks like: the last turn of the first few episodes that ended on a tool call the
        # parser could not read (seed 27's easy adapter ended 38 held-out episodes so, unseen in any other seed)
        "unreadable_call_examples": [question.get("final_text", "")[:MAX_EXAMPLE_CHARS] for question in scored
                                     if question.get("stop_reason") == "malformed_tool_call"][:UNREADABLE_EXAMPLES],
    }


def add_heldout(results: dict[str, Any], run_key: str, figures_path: Path) -> str:
    """Make an eval the held-out eval of a run that was trained only (``--train-only``), with a ``source`` naming
    how it ran: ``python -m eval``'s report.json (``gpu_session.sh veval``) or ``benchmarks/eval_generation.py``'s
    figures (its first mode's summary). Returns what it did; a ValueError says what does not fit (no such run, an
    eval the proof made itself, another split or budget)."""
    run = results["runs"].get(run_key)
    if run is None:
        known = ", ".join(sorted(results["runs"])) or "none"
        raise ValueError(f"no run {run_key!r} in the results (arm/seedN/scale; runs: {known})")
    figures = json.loads(figures_path.read_text(encoding="utf-8"))
    settings = figures.get("settings", {})
    if "by_hardness" in figures and "questions" in figures:  # python -m eval's report.json
        summary, how = summarize(figures), f"python -m eval --backend {settings.get('backend', 'unsloth')}"
    else:
        modes = figures.get("modes", {})
        mode = next((name for name, row in modes.items() if "summary" in row), None)
        if mode is None:
            raise ValueError(f"{figures_path} holds no eval summary (python -m eval's report.json, or "
                             "benchmarks/eval_generation.py's figures since 2026-12-04c)")
        summary, how = modes[mode]["summary"], f"benchmarks/eval_generation.py --modes {mode}"
    scale = SCALES[run.get("scale", "gpu")]
    asked = {"split": "dev", "max_new_tokens": scale.eval_max_new_tokens}
    if wrong := {key: settings.get(key) for key, value in asked.items() if settings.get(key) != value}:
        raise ValueError(f"{figures_path} evaluated {wrong}, the proof's held-out eval is {asked}")
    if settings.get("limit") is not None:
        raise ValueError(f"{figures_path} evaluated {settings['limit']} questions (--limit); held-out is all of dev")
    earlier = run.get("evals", {}).get("heldout")
    if earlier is not None and "source" not in earlier:
        raise ValueError(f"{run_key} has the proof's own held-out eval; it stays")
    run.setdefault("evals", {})["heldout"] = dict(summary, source=(
        f"{how} (split dev, --max-new-tokens {settings['max_new_tokens']}, checkpoint {settings.get('checkpoint')}), "
        "run after the proof, which trained this arm only"))
    return f"{run_key}: held-out {summary['accuracy']['overall']:.1%} from {figures_path} ({how})"


def questions_digest(questions: list[dict[str, Any]]) -> str:
    """Which questions, in which order: outcomes pair up only between evals with the same digest."""
    listing = "\n".join(f"{question['db_id']}\t{question['question']}" for question in questions)
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()[:16]


CURVE_KEYS = ("reward", "reward_std", "frac_reward_zero_std", "episode/post_episode_calls", "episode/accuracy",
              "episode/accuracy_exact_text", "episode/gold_seen_wrong", "episode/unreadable_call_end",
              "episode/requery_after_refusal", "episode/resend_after_refusal",
              "episode/answered", "episode/tool_calls", "step_time", "gpu/peak_reserved_gib", "gpu/peak_allocated_gib",
              "rollout/generation_s",
              "rollout/generation_calls", "rollout/generation_share", "rollout/longest_turn_tokens",
              "rollout/episodes_per_s",
              "episode/groups_all_correct", "episode/groups_none_correct", "episode/zero_advantage_groups",
              "episode/shaping_only_groups", "episode/shaping_only_advantage", "sampler/deferred",
              "sampler/deferred_by_class",
              "oversample/generated_groups", "oversample/trained_zero_advantage_share")


def step_curves(phase_dir: Path) -> list[dict[str, float]]:
    """A GRPO phase's log, one entry per generation batch, keeping the plotted keys: a step's line where each batch
    trains one optimizer step; where it trains several, their lines as one (the rewards come with the first, the
    rollout figures with the last; ``step_time`` the batch's whole time, ``optimizer_steps`` how many)."""
    curves: list[dict[str, float]] = []
    for entry in map(json.loads, (phase_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()):
        if "loss" not in entry:  # not a training step's line (the final summary)
            continue
        kept = {key: entry[key] for key in ("step", *CURVE_KEYS) if key in entry}
        if "reward" in entry or not curves:
            curves.append({**kept, "optimizer_steps": 1})
            continue
        batch = curves[-1]
        step_time = batch.get("step_time", 0.0) + kept.pop("step_time", 0.0)
        batch.update(kept, step_time=step_time, optimizer_steps=batch["optimizer_steps"] + 1)
    return curves


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


def model_name(folder: Path) -> str:
    """The name a fetched model's source.json records (``python models.py fetch``), else the folder's own name."""
    source = Path(folder) / "source.json"
    if source.is_file():
        return str(json.loads(source.read_text(encoding="utf-8")).get("name") or Path(folder).name)
    return Path(folder).name


def models_besides(results: dict[str, Any], runs: list[dict[str, Any]]) -> list[str]:
    """The models of ``runs`` and of the runs already in ``results``, when there are more than one: a report pools
    runs by arm and seed, so runs of two models in one results file would be averaged together."""
    models = {run.get("model_name") for run in [*results["runs"].values(), *runs]} - {None}
    return sorted(models) if len(models) > 1 else []


def git(*args: str, env: dict[str, str] | None = None) -> str:
    """A git command's output in this repository; "unknown" where git or the repository is missing."""
    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, cwd=REPO_DIR, check=True,
                              env=env).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def git_commit() -> str:
    return git("rev-parse", "--short", "HEAD")


def source_tree() -> str:
    """The git tree of the code as it is on disk (tracked files, and untracked ones git does not ignore), built in a
    scratch index: it names the code that ran even where HEAD lags behind the files, as on the GPU machine, whose
    copy of the working tree sits on the last commit that landed. ``commit_holding`` finds the commit here."""
    with tempfile.TemporaryDirectory() as folder:
        env = {**os.environ, "GIT_INDEX_FILE": str(Path(folder) / "index")}
        if git("add", "--all", env=env) == "unknown":
            return "unknown"
        return git("write-tree", env=env)


def commit_holding(tree: str) -> str | None:
    """The newest commit here whose files are exactly ``tree`` (None: none is, e.g. a run of uncommitted code)."""
    for line in git("log", "--all", "--format=%h %T").splitlines():
        commit, _, commit_tree = line.partition(" ")
        if commit_tree == tree:
            return commit
    return None


def attribute_to_commit(run: dict[str, Any]) -> str | None:
    """Set a merged run's ``commit`` to the commit holding the code that ran, where its recorded one (the GPU
    machine's HEAD) differs; returns what was done, for the log, or None where nothing needed doing."""
    tree = run.get("source_tree")
    if tree in (None, "unknown"):
        return None
    holder = commit_holding(tree)
    if holder is None:
        return f"its code (tree {tree[:12]}) is in no commit here; commit {run.get('commit')} kept"
    if holder == run.get("commit"):
        return None
    recorded, run["commit"] = run.get("commit"), holder
    return f"commit {recorded} -> {holder}, the commit holding the code that ran"


def step_evaluated_inside(arm: Arm, scale: Scale, eval_at_step: int | None) -> int | None:
    """The optimizer step whose checkpoint a GRPO arm also evaluates (--eval-at-step): after the same generation
    batches in every arm, so k x N where each batch trains k steps; None where the arm is no longer than that."""
    if not eval_at_step or arm.phase in (None, "sft"):
        return None
    step = eval_at_step * arm.optimizer_steps_per_generation
    return step if steps_for(arm, scale) > step else None


def device_name() -> str:
    """The accelerator a run trains on: its speeds compare only with runs on the same kind."""
    import torch

    return torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"


def run_arm(arm: Arm, scale: Scale, model: Path, data: Path, work: Path, seed: int, *,
            evaluate: bool = True, eval_at_step: int | None = None) -> dict[str, Any]:
    """Train (unless base) and evaluate one arm (``evaluate=False``: train only, for an arm that is only the start
    of a later one); returns its results entry. ``eval_at_step``: a GRPO arm longer than that many steps also has
    its checkpoint of that step evaluated on the held-out part (``evals["heldout_stepN"]``), e.g. the first of two
    epochs, so one run gives both lengths."""
    import train  # imports unsloth before transformers and trl, as the trainer must
    from eval.__main__ import run as run_eval

    started = time.perf_counter()
    entry: dict[str, Any] = {"arm": arm.name, "seed": seed, "scale": scale.name, "model": str(model),
                             "model_name": model_name(model), "commit": git_commit(), "source_tree": source_tree(),
                             "device": device_name(), "commands": []}
    checkpoint = model
    inside = step_evaluated_inside(arm, scale, eval_at_step) if evaluate else None
    if arm.phase is not None:
        argv = train_argv(arm, scale, model, data, work, seed, **({"save_steps": inside} if inside else {}))
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
    evals = [("heldout", checkpoint, "dev", None, scale.eval_heldout_limit),
             ("train_easy", checkpoint, "train", ["easy"], scale.eval_train_easy_limit)]
    if inside:
        step_checkpoint = checkpoint.parent / f"checkpoint-{inside}"
        if not (step_checkpoint / "adapter_config.json").is_file():
            raise FileNotFoundError(f"--eval-at-step {inside}: training saved no {step_checkpoint}")
        evals.append((f"heldout_step{inside}", step_checkpoint, "dev", None, scale.eval_heldout_limit))
    policy, loaded = None, None  # a checkpoint loads once for its evals (the same settings but the split)
    for name, folder, split, hardness, limit in evals:
        out = work / f"{arm.name}-seed{seed}" / f"eval-{name}"
        argv = eval_argv(folder, data, split, out, scale, hardness=hardness, limit=limit)
        entry["commands"].append("python -m eval " + " ".join(argv))
        print(f"[proof] python -m eval {' '.join(argv)}", flush=True)
        policy, loaded = run_eval(argv, policy=policy if folder == loaded else None), folder
        entry["evals"][name] = summarize(json.loads((out / "report.json").read_text(encoding="utf-8")))
    entry["seconds"] = round(time.perf_counter() - started, 1)
    return entry


def recorded_steps(run: dict[str, Any]) -> int | None:
    """The optimizer steps a recorded GRPO run trained (its train.py command's ``--max_steps``); None for others."""
    for command in run.get("commands", []):
        words = command.split()
        if words[:2] == ["python", "train.py"] and "--max_steps" in words[:-1]:
            return int(words[words.index("--max_steps") + 1])
    return None


def generation_share(run: dict[str, Any]) -> float:
    """The median share of a recorded GRPO run's step spent generating (its curves' ``rollout/generation_share``);
    1 where it logged none, so that whatever scales its generation scales all of its time."""
    shares = [point["rollout/generation_share"] for point in run.get("curves", [])
              if "rollout/generation_share" in point]
    return statistics.median(shares) if shares else 1.0


def extra_generation(arm: Arm, timed_as: Arm, scale: Scale) -> float:
    """The rows ``arm`` generates beyond ``timed_as``, as a share of its rows: --oversample_groups N adds N groups to
    each generation round of the scale's prompt groups."""
    def extra_groups(flags: tuple[str, ...]) -> int:
        return int(flags[flags.index("--oversample_groups") + 1]) if "--oversample_groups" in flags else 0

    return (extra_groups(arm.flags) - extra_groups(timed_as.flags)) / scale.grpo_prompts_per_step


def recorded_seconds(results: dict[str, Any], arm: str | frozenset[str], scale: str, model: str | None, *,
                     evaluate: bool, training_times: int = 1, steps: int | None = None, more_generation: float = 0.0,
                     per_step_only: bool = False) -> tuple[float, int, str] | None:
    """What one run of ``arm`` (or of any of a set of arms) took in the sessions recorded in ``results`` (runs and
    superseded ones of that scale and model, the model by its name or by its folder's path as the runs recorded
    them): the median training time, plus the median eval time where it is evaluated (the arm's own evaluated runs,
    else every evaluated run of the scale). Given ``steps``, a GRPO run's training time is scaled from the steps it
    ran to ``steps``; otherwise (or where a run's steps are not in its command) ``training_times`` over: an arm of
    that many passes timed from its one-pass twin. ``more_generation``: the share of rows more that the arm timed
    this way generates (an oversampled arm timed as its twin), which lengthens each run's generation, its logged
    share of the step. Returns (seconds, runs it is the median of, their devices), or None where the arm never ran
    at that scale. ``per_step_only``: only the runs whose command says their steps (an arm of another size, timed
    per step)."""
    every = [*results["runs"].values(), *results.get("superseded", {}).values()]
    alike = [run for run in every
             if run.get("scale") == scale and (model is None or model in (run.get("model_name"), run.get("model")))]
    arms = {arm} if isinstance(arm, str) else arm
    own = [run for run in alike if run["arm"] in arms and "train_seconds" in run
           if not per_step_only or (steps is not None and recorded_steps(run) is not None)]
    if not own:
        return None

    def training(run: dict[str, Any]) -> float:
        ran = recorded_steps(run)
        seconds = run["train_seconds"] * (steps / ran if steps and ran else training_times)
        return seconds * (1 + more_generation * generation_share(run))

    seconds = statistics.median(training(run) for run in own)
    if evaluate:
        evaluated = [run for run in own if run.get("evals")] or [run for run in alike
                                                                  if run.get("evals") and "train_seconds" in run]
        if evaluated:
            seconds += statistics.median(run["seconds"] - run["train_seconds"] for run in evaluated)
    return seconds, len(own), ", ".join(sorted({str(run.get("device", "unknown device")) for run in own}))


def ablation_chain(arm: Arm) -> list[str]:
    """The arm an arm ablates, the one that one ablates, and so on, while they run as many steps and questions."""
    chain: list[str] = []
    current = arm.ablates
    while current is not None and current not in chain:
        ablated = ARMS[current]
        if (ablated.steps_times, ablated.questions_times) != (arm.steps_times, arm.questions_times):
            break
        chain.append(current)
        current = ablated.ablates
    return chain


def print_estimate(results: dict[str, Any], arms: list[str], train_only: list[str], seeds: list[int], scale: Scale,
                   model: str | None) -> None:
    """How long the asked arms should take, from the times recorded for them (a GRPO arm's training scaled to the
    steps it would run now, --steps and --mixed-steps included): to plan what fits a GPU session."""
    total, unknown = 0.0, []
    for name in arms:
        # An arm never run is timed as the arm it changes one setting of (its ablation's full setting, or that one's,
        # and so on, as long as they run as many steps), or as its twin of fewer passes with the training times its
        # passes over the twin's; last, roughly, per step as every recorded run of its phase (a step trains as many
        # prompt groups whatever the arm's settings).
        arm, twin = ARMS[name], shorter_twin_of(ARMS[name])
        steps = steps_for(arm, scale) if arm.phase not in (None, "sft") else None
        passes = arm.steps_times // ARMS[twin].steps_times if twin is not None else 1
        candidates = ((name, 1), *((ablated, 1) for ablated in ablation_chain(arm)), (twin, passes))
        timed: tuple[str, tuple[float, int, str], float] | None = None  # (timed as, its record, more generation)
        for candidate, times in candidates:
            if candidate is None:
                continue
            more = extra_generation(arm, ARMS[candidate], scale)
            recorded = recorded_seconds(results, candidate, scale.name, model, evaluate=name not in train_only,
                                        training_times=times, steps=steps, more_generation=more)
            if recorded is not None:
                timed = candidate, recorded, more
                break
        if timed is None and steps is not None:
            phase_arms = frozenset(other for other in ARMS if ARMS[other].phase == arm.phase)
            if (recorded := recorded_seconds(results, phase_arms, scale.name, model, evaluate=name not in train_only,
                                             steps=steps, per_step_only=True)) is not None:
                timed = "its phase's arms, per step: rough", recorded, 0.0
        if timed is None:
            unknown.append(name)
            print(f"[estimate] {name}: never run at scale {scale.name}, nor an arm it ablates", flush=True)
            continue
        timed_as, (seconds, runs, devices), more = timed
        total += seconds * len(seeds)
        how = f", its training x{passes}" if timed_as == twin else ""
        how += f", its generation x{1 + more:.2f}" if more else ""
        how += f", for {steps} steps" if steps else ""
        how += ", plus the screen's eval of its questions, not timed" if "--screen_questions" in arm.flags else ""
        print(f"[estimate] {name}: {seconds:.0f} s a seed{'' if name not in train_only else ' (trained only)'} "
              f"(median of {runs} run(s){'' if timed_as == name else ' of ' + timed_as}{how}; {devices})",
              flush=True)
    print(f"[estimate] {len(arms)} arm(s) x {len(seeds)} seed(s): about {total:.0f} s"
          f"{', without ' + ' '.join(unknown) if unknown else ''}; add the model's loading and the session's setup",
          flush=True)


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
    parser.add_argument("--mixed-steps", type=int, default=None,
                        help="GRPO steps of the mixed phase's arms only (after --steps; e.g. one epoch of the "
                             "epoch scale's two, 30 steps, when two do not fit a session)")
    parser.add_argument("--eval-at-step", type=int, default=None, metavar="N",
                        help="also evaluate each GRPO arm's checkpoint of step N on the held-out part, where the arm "
                             "runs longer (e.g. --mixed-steps 59 --eval-at-step 30: one mixed epoch and two, from one "
                             "run; the report lists it as heldout_stepN; an arm whose generation batches train k "
                             "steps each is evaluated at its step k x N, after the same episodes)")
    parser.add_argument("--eval-generation", choices=("padded", "rounds"), default=None,
                        help="how the evals generate a turn (python -m eval --generation; default the scale's: padded "
                             "for gpu, as every line of it, rounds for epoch; rounds took 0.64x the time of padded on "
                             "the H200 at the same accuracy)")
    parser.add_argument("--train-only", nargs="+", choices=list(ARMS), default=[], metavar="ARM",
                        help="arms to train without their evals (about 110-150 s of H200 time an arm): those that "
                             "only start a later arm, so that a comparison of later arms fits one session (a "
                             "warm-up trained only is not checked for tool calls before the arms after it)")
    parser.add_argument("--report-only", action="store_true", help="regenerate the report from the results file")
    parser.add_argument("--estimate", action="store_true",
                        help="print how long --arms (with --train-only, --seeds, --scale) should take, from the times "
                             "--results records for them (median of their runs), and run nothing: what fits a "
                             "GPU session")
    parser.add_argument("--merge", type=Path, nargs="+", default=[], metavar="RESULTS",
                        help="add the runs of these results files (invocations run side by side) to --results, "
                             "then write the report")
    parser.add_argument("--add-heldout", nargs=2, action="append", default=[], metavar=("RUN", "FIGURES"),
                        help="the held-out eval of RUN (e.g. sft/seed28/epoch, trained only) from FIGURES, the JSON "
                             "of benchmarks/eval_generation.py (bash scripts/gpu_session.sh eval-modes ADAPTER); "
                             "repeatable, then write the report")
    arguments = parser.parse_args(argv)
    for name in {*arguments.arms, *arguments.train_only}:
        if ARMS[name].retired:
            parser.error(f"arm {name} is retired: {ARMS[name].retired}")

    if arguments.quick:
        # train first: it imports unsloth before transformers and trl (models imports transformers), as the
        # trainer must.
        import train  # noqa: F401, I001
        import models

        arguments.scale = "quick"
        arguments.model = arguments.model or models.fetch_model("smollm2-135m-instruct", progress=False)
        arguments.data_dir = REPO_DIR / "data" / "builtin"
        arguments.results = arguments.work / "results.json"
        arguments.report = arguments.work / "learning_proof.md"
    figures_dir = arguments.report.parent / arguments.report.stem
    results = load_results(arguments.results)
    own_files = ("give each model its own --results and --report (e.g. docs/learning_proof_1.5b/results.json and "
                 "docs/learning_proof_1.5b.md)")
    if arguments.merge:
        for path in arguments.merge:
            if not path.is_file():
                parser.error(f"--merge: no results file at {path}")
            incoming = load_results(path)["runs"]
            if mixed := models_besides(results, list(incoming.values())):
                parser.error(f"--merge: {path} and {arguments.results} hold runs of {' and '.join(mixed)}; "
                             f"{own_files}")
            for key, run in incoming.items():
                if (attributed := attribute_to_commit(run)) is not None:
                    print(f"[proof] {key}: {attributed}")
                record_run(results, key, run)  # a run measured again replaces the older one, which is kept
        save_results(arguments.results, results)
        print(f"[proof] merged {len(arguments.merge)} results file(s) into {arguments.results}: "
              f"{len(results['runs'])} runs")
    if arguments.add_heldout:
        for run_key, figures_path in arguments.add_heldout:
            if not Path(figures_path).is_file():
                parser.error(f"--add-heldout: no figures file at {figures_path}")
            try:
                print(f"[proof] {add_heldout(results, run_key, Path(figures_path))}")
            except ValueError as error:
                parser.error(f"--add-heldout: {error}")
        save_results(arguments.results, results)
    scale = SCALES[arguments.scale]
    if arguments.steps is not None:
        scale = replace(scale, easy_steps=arguments.steps, mixed_steps=arguments.steps)
    if arguments.mixed_steps is not None:
        scale = replace(scale, mixed_steps=arguments.mixed_steps)
    if arguments.eval_generation is not None:
        scale = replace(scale, eval_generation=arguments.eval_generation)
    if arguments.estimate:
        # The folder may live only on the GPU machine: then its path as the runs recorded it names the model.
        model = arguments.model and (model_name(arguments.model) if arguments.model.is_dir() else str(arguments.model))
        print_estimate(results, arguments.arms, arguments.train_only, arguments.seeds, scale, model)
        return 0
    if arguments.report_only or arguments.merge or arguments.add_heldout:
        write_report(results, arguments.report, figures_dir, arguments.results)
        print(f"[proof] report: {arguments.report}")
        return 0
    if arguments.model is None or not Path(arguments.model).is_dir():
        parser.error("--model DIR is required: a model folder (python models.py fetch qwen2.5-coder-0.5b-instruct "
                     "--out DIR)")
    if mixed := models_besides(results, [{"model_name": model_name(arguments.model)}]):
        parser.error(f"{arguments.results} holds runs of another model ({' and '.join(mixed)}); {own_files}")
    if (arguments.data_dir / "train_spider.json").is_file() and not (arguments.data_dir / "dev.json").is_file():
        data = split_by_database(arguments.data_dir, arguments.work, held_out_databases())
    else:
        data = arguments.data_dir
    # (seed, warm-up) pairs whose warm-up made no tool call: the GRPO arms grown from it would learn nothing.
    stopped: set[tuple[int, str]] = set()
    failed: set[tuple[int, str]] = set()  # (seed, arm) that raised: the arms grown from them cannot run
    for index, name in enumerate(arguments.arms):
        arm = ARMS[name]
        for seed in arguments.seeds:
            if (seed, warm_up_of(arm)) in stopped:
                continue
            broken = [earlier for earlier in start_chain(arm) if (seed, earlier) in failed]
            if broken:
                print(f"[proof] {name} seed {seed}: not run, it starts from {broken[0]}, which failed", flush=True)
                failed.add((seed, name))
                continue
            evaluate = name not in arguments.train_only
            try:
                entry = run_arm(arm, scale, arguments.model, data, arguments.work, seed, evaluate=evaluate,
                                eval_at_step=arguments.eval_at_step)
            except Exception as error:  # one arm's failure must not cost a GPU session the arms after it
                traceback.print_exc()
                print(f"[proof] {name} seed {seed} failed ({type(error).__name__}: {error}); the arms that do not "
                      "start from it go on", flush=True)
                failed.add((seed, name))
                free_accelerator_memory()
                continue
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
    return 1 if stopped or failed else 0


def free_accelerator_memory() -> None:
    """What a failed arm left allocated, released for the next one (its trainer and model are unreachable now)."""
    import gc

    gc.collect()
    try:
        import torch
    except ImportError:
        return
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


if __name__ == "__main__":
    sys.exit(main())
