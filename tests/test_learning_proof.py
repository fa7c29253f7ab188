"""experiments/learning_proof.py, the runner: the by-database split, arms that build on each other (their command
lines, digests and warm-ups), results that accumulate and merge across invocations, and arms skipped after a
warm-up that calls no tool. The report's own tests are in test_proof_report.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import fields, replace
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"
sys.path.insert(0, str(EXPERIMENTS))
import learning_proof  # noqa: E402  (imports no trainer: run_arm imports train where an arm runs)
import proof_arms  # noqa: E402

import train  # noqa: E402  (imports unsloth before transformers and trl, as the trainer must)
import torch  # noqa: E402
from curriculum import load_curriculum, select_phase  # noqa: E402
from spider_data import BUILTIN_DATA_DIR, load_split  # noqa: E402


def test_the_held_out_list_is_fixed_and_covers_every_class() -> None:
    names = learning_proof.held_out_databases()
    assert len(names) == len(set(names)) == 26


@pytest.mark.spider
def test_the_by_database_split_keeps_held_out_databases_out_of_training(spider_path: Path, tmp_path: Path) -> None:
    data = learning_proof.split_by_database(spider_path, tmp_path, learning_proof.held_out_databases())
    train_split = load_split(data, "train", progress=False)
    held_out = load_split(data, "dev", progress=False)
    assert {example.db_id for example in held_out.examples} == set(learning_proof.held_out_databases())
    assert not {example.db_id for example in train_split.examples} & set(learning_proof.held_out_databases())
    assert all(count > 0 for count in held_out.hardness_counts().values())  # every class is represented
    assert len(held_out.examples) == 624


def test_an_arm_whose_start_is_missing_says_which_arm_to_run_first(tmp_path: Path) -> None:
    scale = learning_proof.SCALES["quick"]
    with pytest.raises(FileNotFoundError, match="run --arms sft first"):
        learning_proof.train_argv(proof_arms.ARMS["easy"], scale, tmp_path, BUILTIN_DATA_DIR, tmp_path, 0)
    mixed_only = proof_arms.ARMS["mixed-only"]
    assert learning_proof.steps_for(mixed_only, scale) == scale.easy_steps + scale.mixed_steps


def test_the_cpu_smoke_test_s_warm_ups_are_a_lora_as_on_a_gpu(tmp_path: Path) -> None:
    """On a CPU train.py warms SmolLM2 up by training every weight (embedded mode), which leaves no adapter for the
    arms that start from a warm-up: the quick scale asks for a LoRA, the GPU scales need not."""
    warm_up = proof_arms.ARMS["sft-4x-all"]
    quick = learning_proof.train_argv(warm_up, learning_proof.SCALES["quick"], tmp_path, BUILTIN_DATA_DIR, tmp_path, 0)
    assert quick[quick.index("--sft_full_finetune") + 1] == "false"
    epoch = learning_proof.train_argv(warm_up, learning_proof.SCALES["epoch"], tmp_path, BUILTIN_DATA_DIR, tmp_path, 0)
    assert "--sft_full_finetune" not in epoch


def test_every_ablation_trains_on_as_many_episodes_as_the_full_setting_it_is_compared_with() -> None:
    for scale in learning_proof.SCALES.values():
        for name in proof_arms.ABLATIONS:
            arm = proof_arms.ARMS[name]
            full = proof_arms.ARMS[str(arm.ablates)]
            # mixed-only stands for the whole curriculum: the easy phase's steps and the mixed phase's together
            expected = (scale.easy_steps + scale.mixed_steps if name == "mixed-only"
                        else learning_proof.steps_for(full, scale) // full.optimizer_steps_per_generation)
            generation_batches = learning_proof.steps_for(arm, scale) // arm.optimizer_steps_per_generation
            assert generation_batches == expected, (name, scale.name)


def test_an_arm_that_trains_several_steps_a_generation_batch_splits_the_scales_step_and_takes_more_steps() -> None:
    epoch = learning_proof.SCALES["epoch"]
    arm, full = proof_arms.ARMS["mixed-informative-sft4x-3steps"], proof_arms.ARMS["mixed-informative-sft4x"]
    flags = learning_proof.group_argv(arm, epoch)
    assert flags == ["--per_device_train_batch_size", "16", "--gradient_accumulation_steps", "2",
                     "--steps_per_generation", "6"]
    assert learning_proof.steps_for(arm, epoch) == 3 * learning_proof.steps_for(full, epoch)
    work = Path("/tmp/unused")
    argv = learning_proof.train_argv(replace(arm, start_from=None), epoch, work, BUILTIN_DATA_DIR, work, 29)
    full_argv = learning_proof.train_argv(replace(full, start_from=None), epoch, work, BUILTIN_DATA_DIR, work, 29)
    assert argv[argv.index("--warmup_steps") + 1] == "15" and full_argv[full_argv.index("--warmup_steps") + 1] == "5"
    _, grpo, _ = train.parse_config(["--output_dir", "/tmp/unused", *flags])
    assert grpo.generation_batch_size == 96 and grpo.per_device_train_batch_size * grpo.gradient_accumulation_steps == 32
    two_epochs = replace(epoch, mixed_steps=59)  # --mixed-steps 59 --eval-at-step 30: one mixed epoch and two
    assert learning_proof.step_evaluated_inside(full, two_epochs, 30) == 30
    assert learning_proof.step_evaluated_inside(arm, two_epochs, 30) == 90  # after the same 30 generation batches
    assert learning_proof.step_evaluated_inside(arm, replace(epoch, mixed_steps=30), 30) is None  # it ends there
    with pytest.raises(ValueError, match="4 optimizer steps a generation batch do not divide its 6 micro-batches"):
        learning_proof.group_argv(replace(arm, optimizer_steps_per_generation=4), epoch)


def test_the_two_epoch_arm_is_its_one_pass_arm_run_twice_as_long_and_evaluated_after_the_first_pass_too() -> None:
    one_epoch = replace(learning_proof.SCALES["epoch"], mixed_steps=30)  # --mixed-steps 30: one pass of 467 questions
    work = Path("/tmp/unused")
    arm = proof_arms.ARMS["mixed-informative-sft4x-lr5e-5-direct-2epochs"]
    one_pass = proof_arms.ARMS["mixed-informative-sft4x-lr5e-5-direct"]
    argv = learning_proof.train_argv(replace(arm, start_from=None), one_epoch, work, BUILTIN_DATA_DIR, work, 30)
    one_pass_argv = learning_proof.train_argv(replace(one_pass, start_from=None), one_epoch, work, BUILTIN_DATA_DIR,
                                              work, 30)
    assert argv[argv.index("--max_steps") + 1] == "60" and one_pass_argv[one_pass_argv.index("--max_steps") + 1] == "30"
    differing = {(a, b) for a, b in zip(argv, one_pass_argv) if a != b}
    assert differing == {("60", "30"), (str(work / arm.name) + "-seed30", str(work / one_pass.name) + "-seed30")}
    assert arm.ablates is None  # more episodes than its one-pass arm, the full setting it would be held against
    assert proof_arms.one_pass_of(arm) == one_pass.name and proof_arms.one_pass_of(one_pass) is None
    assert learning_proof.step_evaluated_inside(arm, one_epoch, 30) == 30
    assert learning_proof.step_evaluated_inside(one_pass, one_epoch, 30) is None


def test_the_vllm_line_is_the_recipes_line_with_only_its_rollout_engine_changed() -> None:
    epoch, work = learning_proof.SCALES["epoch"], Path("/tmp/unused")
    for name, native in (("easy-sft4x-vllm", "easy-sft4x"),
                         ("mixed-informative-sft4x-lr5e-5-vllm", "mixed-informative-sft4x-lr5e-5")):
        arm, full = proof_arms.ARMS[name], proof_arms.ARMS[native]
        argv = learning_proof.train_argv(replace(arm, start_from=None), epoch, work, BUILTIN_DATA_DIR, work, 30)
        full_argv = learning_proof.train_argv(replace(full, start_from=None), epoch, work, BUILTIN_DATA_DIR, work, 30)
        for flags in (argv, full_argv):  # the output folders differ by name
            flags[flags.index("--output_dir") + 1] = "OUT"
        cut = argv.index("--fast_inference")
        assert argv[:cut] + argv[cut + 4:] == full_argv and argv[cut:cut + 4] == list(proof_arms.VLLM_ROLLOUTS)
        assert arm.ablates == native and proof_arms.warm_up_of(arm) == proof_arms.warm_up_of(full) == "sft-4x"
    assert proof_arms.ARMS["mixed-informative-sft4x-lr5e-5-vllm"].start_from == "easy-sft4x-vllm"


def test_every_gpu_step_holds_whole_groups_of_several_prompts_and_the_cpu_keeps_train_pys_own() -> None:
    gpu, quick = learning_proof.SCALES["gpu"], learning_proof.SCALES["quick"]
    cases = {("easy", gpu): ["--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "6"],
             ("ng4", gpu): ["--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "4"],
             ("easy", quick): [],
             ("ng4", quick): ["--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "4"]}
    for (arm, scale), expected in cases.items():
        assert learning_proof.group_argv(proof_arms.ARMS[arm], scale) == expected, (arm, scale.name)
    # train.py accepts them: 4 prompts x 6 completions, and 4 x 4 with 4 generations
    for flags in (cases[("easy", gpu)], ["--num_generations", "4", *cases[("ng4", gpu)]]):
        _, grpo, _ = train.parse_config(["--output_dir", "/tmp/unused", *flags])
        batch = grpo.per_device_train_batch_size * grpo.gradient_accumulation_steps
        assert batch // grpo.num_generations == 4 and batch % grpo.num_generations == 0


def test_a_generation_batch_that_trained_three_steps_is_one_entry_of_the_curves(tmp_path: Path) -> None:
    from proof_report import optimizer_steps

    lines = []
    for batch in range(2):  # two generation batches of three optimizer steps each, then the run's summary line
        first = 3 * batch + 1
        lines += [{"step": first, "loss": 0.1, "reward": 0.5 + batch, "frac_reward_zero_std": 0.25, "step_time": 8.0},
                  {"step": first + 1, "loss": 0.2, "step_time": 2.0},
                  {"step": first + 2, "loss": 0.3, "step_time": 2.0, "rollout/episodes_per_s": 8.0,
                   "rollout/generation_s": 2.0}]
    lines.append({"step": 6, "train_loss": 0.2})
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    curves = learning_proof.step_curves(tmp_path)
    assert curves == [{"step": 3 * batch + 3, "reward": 0.5 + batch, "frac_reward_zero_std": 0.25, "step_time": 12.0,
                       "rollout/episodes_per_s": 8.0, "rollout/generation_s": 2.0, "optimizer_steps": 3}
                      for batch in range(2)]
    assert optimizer_steps({"curves": curves}) == 6
    one_step_each = [line for line in lines if "reward" in line]  # a batch that trains one step: its own line
    (tmp_path / "metrics.jsonl").write_text("".join(json.dumps(line) + "\n" for line in one_step_each))
    assert [entry["optimizer_steps"] for entry in learning_proof.step_curves(tmp_path)] == [1, 1]


def test_a_merged_run_is_attributed_to_the_commit_holding_the_code_that_ran(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def git(*args: str) -> str:
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path, check=True,
                              capture_output=True, text=True).stdout.strip()

    monkeypatch.setattr(learning_proof, "REPO_DIR", tmp_path)
    git("init", "-q")
    (tmp_path / ".gitignore").write_text("/.m/\n")
    (tmp_path / "train.py").write_text("LEARNING_RATE = 2e-5\n")
    git("add", "--all")
    git("commit", "-q", "-m", "landed")
    landed = git("rev-parse", "--short", "HEAD")
    (tmp_path / "train.py").write_text("LEARNING_RATE = 5e-5\n")  # the GPU machine's copy: newer files, old HEAD
    (tmp_path / "new_module.py").write_text("")  # untracked, not ignored: part of the code
    (tmp_path / ".m").mkdir()
    (tmp_path / ".m" / "part.00").write_text("model piece")  # ignored: not part of it
    ran = {"commit": learning_proof.git_commit(), "source_tree": learning_proof.source_tree()}
    assert ran["commit"] == landed and git("status", "--short") == "M train.py\n?? new_module.py"  # index untouched
    assert "no commit here" in str(learning_proof.attribute_to_commit(dict(ran)))  # not committed yet: kept
    git("add", "train.py", "new_module.py")
    git("commit", "-q", "-m", "the code that ran")
    holder = git("rev-parse", "--short", "HEAD")
    assert learning_proof.attribute_to_commit(ran) == f"commit {landed} -> {holder}, the commit holding the code that ran"
    assert ran["commit"] == holder
    assert learning_proof.attribute_to_commit(ran) is None  # already right; and runs without a tree are left alone
    assert learning_proof.attribute_to_commit({"commit": landed}) is None


@pytest.mark.slow
def test_arms_accumulate_across_invocations_and_the_report_shows_them(tiny_model_dir: Path, tmp_path: Path) -> None:
    common = ["--model", str(tiny_model_dir), "--scale", "quick", "--data-dir", str(BUILTIN_DATA_DIR),
              "--work", str(tmp_path / "work"), "--results", str(tmp_path / "results.json"),
              "--report", str(tmp_path / "report.md"), "--seed", "0"]
    assert learning_proof.main([*common, "--arms", "base", "sft"]) == 0
    # starts from the sft arm of the first call; its checkpoint of step 1 is evaluated too
    assert learning_proof.main([*common, "--arms", "easy", "--steps", "2", "--eval-at-step", "1"]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert sorted(results["runs"]) == ["base/seed0/quick", "easy/seed0/quick", "sft/seed0/quick"]
    easy = results["runs"]["easy/seed0/quick"]
    assert any("--start_adapter" in command and "sft-seed0" in command for command in easy["commands"])
    assert len(easy["curves"]) == 2 and "reward" in easy["curves"][0]
    assert set(easy["evals"]) == {"heldout", "train_easy", "heldout_step1"}
    assert easy["evals"]["heldout"]["n"]["overall"] == easy["evals"]["heldout_step1"]["n"]["overall"] == 2
    assert any("checkpoint-1" in command for command in easy["commands"])
    report = (tmp_path / "report.md").read_text()
    assert "| easy | 0 |" in report and (tmp_path / "report" / "curves.png").is_file()  # named after the report
    assert "| easy/seed0/quick | heldout_step1 | 2 |" in report


@pytest.mark.slow
def test_quick_smoke_run_on_real_smollm2(smollm2_dir: Path, tmp_path: Path) -> None:
    assert learning_proof.main(["--quick", "--model", str(smollm2_dir), "--work", str(tmp_path),
                                "--arms", "base", "sft"]) == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert sorted(results["runs"]) == ["base/seed0/quick", "sft/seed0/quick"]
    assert (tmp_path / "learning_proof.md").is_file()


def test_grpo_arms_are_not_run_after_a_warm_up_whose_model_never_calls_a_tool(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    silent = ["sft"]  # the warm-ups whose model calls no tool

    def fake_arm(arm, scale, model, data, work, seed, evaluate=True, eval_at_step=None):  # noqa: ANN001, ANN202 (run_arm's shape)
        ran.append(arm.name)
        steps = 0.0 if arm.name in silent else 2.5
        return {"arm": arm.name, "seed": seed, "scale": scale.name, "commands": [], "seconds": 1.0,
                "evals": {"heldout": {"accuracy": {"overall": 0.0}, "mean_steps": steps}}}

    monkeypatch.setattr(learning_proof, "run_arm", fake_arm)
    monkeypatch.setattr(learning_proof, "write_report", lambda *args: None)
    common = ["--model", str(tmp_path), "--data-dir", str(BUILTIN_DATA_DIR), "--work", str(tmp_path / "work"),
              "--results", str(tmp_path / "results.json"), "--report", str(tmp_path / "report.md")]
    assert learning_proof.main([*common, "--arms", "sft", "easy", "mixed"]) == 1
    assert ran == ["sft"]  # easy and mixed would have had the same zero reward in every group
    saved = json.loads((tmp_path / "results.json").read_text())
    assert list(saved["runs"]) == ["sft/seed0/gpu"]  # the warm-up's own measurement is kept
    assert learning_proof.main([*common, "--arms", "base", "easy"]) == 0 and ran[1:] == ["base", "easy"]
    # A silent warm-up stops only the arms grown from it.
    silent[:], ran[:] = ["sft-habit"], []
    arms = ["sft", "sft-habit", "easy", "easy-habit", "no-penalty-habit", "no-sft"]
    assert learning_proof.main([*common, "--arms", *arms]) == 1 and ran == ["sft", "sft-habit", "easy", "no-sft"]


def test_an_arm_that_fails_costs_only_the_arms_grown_from_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    ran: list[str] = []
    failing = {"mixed-oversample"}

    def fake_arm(arm, scale, model, data, work, seed, evaluate=True, eval_at_step=None):  # noqa: ANN001, ANN202
        ran.append(arm.name)
        if arm.name in failing:
            raise RuntimeError(f"{arm.name} broke")
        return {"arm": arm.name, "seed": seed, "scale": scale.name, "commands": [], "seconds": 1.0,
                "evals": {"heldout": {"accuracy": {"overall": 0.5}, "mean_steps": 2.5}}}

    monkeypatch.setattr(learning_proof, "run_arm", fake_arm)
    monkeypatch.setattr(learning_proof, "write_report", lambda *args: None)
    common = ["--model", str(tmp_path), "--data-dir", str(BUILTIN_DATA_DIR), "--work", str(tmp_path / "work"),
              "--results", str(tmp_path / "results.json"), "--report", str(tmp_path / "report.md")]
    assert learning_proof.main([*common, "--arms", "sft", "easy", "mixed-oversample", "mixed-informative"]) == 1
    assert ran == ["sft", "easy", "mixed-oversample", "mixed-informative"]  # the sibling arm still ran
    saved = json.loads((tmp_path / "results.json").read_text())
    assert sorted(saved["runs"]) == ["easy/seed0/gpu", "mixed-informative/seed0/gpu", "sft/seed0/gpu"]
    assert "[proof] mixed-oversample seed 0 failed (RuntimeError: mixed-oversample broke)" in capsys.readouterr().out
    failing, ran[:] = {"easy"}, []
    assert learning_proof.main([*common, "--arms", "easy", "mixed", "ng4"]) == 1
    assert ran == ["easy", "ng4"]  # mixed grows from the easy adapter that failed
    assert "[proof] mixed seed 0: not run, it starts from easy, which failed" in capsys.readouterr().out


def test_seeds_run_arm_by_arm_and_a_seed_whose_warm_up_calls_no_tool_gets_no_grpo_arm(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[tuple[str, int]] = []

    def fake_arm(arm, scale, model, data, work, seed, evaluate=True, eval_at_step=None):  # noqa: ANN001, ANN202 (run_arm's shape)
        ran.append((arm.name, seed))
        steps = 0.0 if (arm.name, seed) == ("sft", 1) else 2.5
        return {"arm": arm.name, "seed": seed, "scale": scale.name, "commands": [], "seconds": 1.0,
                "evals": {"heldout": {"accuracy": {"overall": 0.0}, "mean_steps": steps}}}

    monkeypatch.setattr(learning_proof, "run_arm", fake_arm)
    monkeypatch.setattr(learning_proof, "write_report", lambda *args: None)
    argv = ["--model", str(tmp_path), "--data-dir", str(BUILTIN_DATA_DIR), "--work", str(tmp_path / "work"),
            "--results", str(tmp_path / "results.json"), "--arms", "sft", "easy", "mixed", "--seeds", "0", "1", "2"]
    assert learning_proof.main(argv) == 1  # one seed could not go on
    assert ran == [("sft", 0), ("sft", 1), ("sft", 2), ("easy", 0), ("easy", 2), ("mixed", 0), ("mixed", 2)]
    saved = json.loads((tmp_path / "results.json").read_text())["runs"]
    assert sorted(saved) == ["easy/seed0/gpu", "easy/seed2/gpu", "mixed/seed0/gpu", "mixed/seed2/gpu",
                             "sft/seed0/gpu", "sft/seed1/gpu", "sft/seed2/gpu"]


def test_results_of_side_by_side_invocations_merge_into_one_file(tmp_path: Path) -> None:
    measured = json.loads(learning_proof.DEFAULT_RESULTS.read_text())["runs"]["base/seed0/gpu"]  # a real entry
    for name, arm in (("a", "sft"), ("b", "no-sft")):
        learning_proof.save_results(tmp_path / f"results-{name}.json",
                                    {"runs": {f"{arm}/seed0/gpu": dict(measured, arm=arm)}})
    merged = tmp_path / "results.json"
    learning_proof.save_results(merged, {"runs": {"base/seed0/gpu": measured}, "notes": "kept"})
    argv = ["--results", str(merged), "--report", str(tmp_path / "report.md"), "--merge",
            str(tmp_path / "results-a.json"), str(tmp_path / "results-b.json")]
    assert learning_proof.main(argv) == 0
    results = json.loads(merged.read_text())
    assert sorted(results["runs"]) == ["base/seed0/gpu", "no-sft/seed0/gpu", "sft/seed0/gpu"]
    assert results["notes"] == "kept" and "| no-sft | 0.0% (n=1)" in (tmp_path / "report.md").read_text()
    with pytest.raises(SystemExit):
        learning_proof.main([*argv[:4], "--merge", str(tmp_path / "missing.json")])
    # The same arm measured again replaces the entry; the earlier measurement is kept, under superseded.
    remeasured = dict(measured, arm="sft", commit="abc1234", seconds=1.0)
    learning_proof.save_results(tmp_path / "results-c.json", {"runs": {"sft/seed0/gpu": remeasured}})
    assert learning_proof.main([*argv[:4], "--merge", str(tmp_path / "results-c.json")]) == 0
    results = json.loads(merged.read_text())
    assert results["runs"]["sft/seed0/gpu"] == remeasured
    assert results["superseded"][f"sft/seed0/gpu@{measured['commit']}"] == dict(measured, arm="sft")
    assert learning_proof.main([*argv[:4], "--merge", str(tmp_path / "results-c.json")]) == 0  # merged twice
    assert len(json.loads(merged.read_text())["superseded"]) == 1


def test_an_estimate_times_the_asked_arms_from_their_recorded_runs_and_runs_nothing(tmp_path: Path, capsys) -> None:
    def run(arm: str, train_seconds: float, eval_seconds: float | None, scale: str = "epoch") -> dict:
        evaluated = eval_seconds is not None
        return {"arm": arm, "seed": 1, "scale": scale, "model_name": "qc", "model": "/gpu-machine/qc", "device": "H100",
                "train_seconds": train_seconds, "seconds": train_seconds + (eval_seconds or 0.0),
                "evals": {"heldout": {}} if evaluated else {}}

    results = {"runs": {"sft-4x/seed1/epoch": run("sft-4x", 200.0, 40.0),
                        "easy-sft4x/seed1/epoch": run("easy-sft4x", 300.0, None),
                        "mixed-informative-sft4x/seed1/epoch": run("mixed-informative-sft4x", 250.0, 30.0),
                        "sft-4x/seed1/gpu": run("sft-4x", 9999.0, 1.0, scale="gpu")},  # another scale: not counted
               "superseded": {"sft-4x/seed1/epoch@abc": run("sft-4x", 220.0, 100.0)}}
    path = tmp_path / "results.json"
    learning_proof.save_results(path, results)
    # The median over runs and superseded runs; evals only where the arm is evaluated; an unrun arm timed as the arm
    # it ablates; one that has neither, said.
    assert learning_proof.recorded_seconds(results, "sft-4x", "epoch", "qc", evaluate=True) == (280.0, 2, "H100")
    assert learning_proof.recorded_seconds(results, "sft-4x", "epoch", "qc", evaluate=False) == (210.0, 2, "H100")
    assert learning_proof.recorded_seconds(results, "easy-sft4x", "epoch", "other model", evaluate=True) is None
    # The model folder may exist only on the GPU machine: its recorded path names it too.
    assert learning_proof.recorded_seconds(results, "sft-4x", "epoch", "/gpu-machine/qc", evaluate=False) == (
        210.0, 2, "H100")
    argv = ["--results", str(path), "--report", str(tmp_path / "report.md"), "--estimate", "--scale", "epoch",
            "--seeds", "1", "2", "--arms", "sft-4x", "easy-sft4x", "mixed-informative-sft4x-lr5e-5", "no-penalty",
            "--train-only", "sft-4x"]
    assert learning_proof.main(argv) == 0
    printed = capsys.readouterr().out
    assert "mixed-informative-sft4x-lr5e-5: 280 s a seed (median of 1 run(s) of mixed-informative-sft4x" in printed
    assert "no-penalty: never run at scale epoch, nor an arm it ablates" in printed
    # Easy's own evals were never recorded: it is timed with the median eval of the scale's evaluated runs (40 s).
    assert "about 1660 s, without no-penalty" in printed  # 2 seeds x (210 + 340 + 280)
    assert learning_proof.main([*argv, "--model", "/gpu-machine/qc"]) == 0  # a folder not on this machine
    assert "about 1660 s, without no-penalty" in capsys.readouterr().out
    assert not (tmp_path / "report.md").exists()
    # An arm of two passes never run: its one-pass twin's training twice, and its evals once.
    results["runs"]["mixed-informative-sft4x-lr5e-5-direct/seed1/epoch"] = run("mixed-informative-sft4x-lr5e-5-direct",
                                                                               300.0, 50.0)
    learning_proof.save_results(path, results)
    argv = [*argv[:argv.index("--arms")], "--arms", "mixed-informative-sft4x-lr5e-5-direct-2epochs"]
    assert learning_proof.main(argv) == 0
    assert ("mixed-informative-sft4x-lr5e-5-direct-2epochs: 650 s a seed (median of 1 run(s) of "
            "mixed-informative-sft4x-lr5e-5-direct, its training x2, for 118 steps; H100)") in capsys.readouterr().out

    def estimate_once_run(recorded_arm: str, train_seconds: float, asked: str, *more: str) -> str:
        """What the estimate for arm ``asked`` prints once a run of ``recorded_arm`` is recorded."""
        results["runs"].setdefault(f"{recorded_arm}/seed1/epoch", run(recorded_arm, train_seconds, 50.0))
        learning_proof.save_results(path, results)
        assert learning_proof.main([*argv[:argv.index("--arms")], "--arms", asked, *more]) == 0
        return capsys.readouterr().out

    # An arm whose ablation never ran either: the next arm down the chain that ran as many steps.
    guided = "mixed-all-answers-guided-sft4x-lr5e-5-direct-fresh-2x"
    fresh_2x = "mixed-informative-sft4x-lr5e-5-direct-fresh-2x"
    assert (f"{guided}: 650 s a seed (median of 1 run(s) of {fresh_2x}, for 118 steps; H100)"
            in estimate_once_run(fresh_2x, 600.0, guided))
    assert learning_proof.ablation_chain(proof_arms.ARMS[guided]) == [
        "mixed-all-answers-sft4x-lr5e-5-direct-fresh-2x", fresh_2x]
    # A run whose command says its steps is timed per step: --mixed-steps 15 asks this two-pass arm for 30 of its 60.
    results["runs"][f"{fresh_2x}/seed1/epoch"]["commands"] = [
        "python train.py --phase mixed --max_steps 60 --seed 1", "python -m eval --checkpoint x"]
    assert (f"{guided}: 350 s a seed (median of 1 run(s) of {fresh_2x}, for 30 steps; H100)"
            in estimate_once_run(fresh_2x, 600.0, guided, "--mixed-steps", "15"))
    # The plan-scale arm (4 passes) never run: its 2-pass twin's training twice.
    half = "mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x"
    assert (f"{half}-plan: 850 s a seed (median of 1 run(s) of {half}, its training x2"
            in estimate_once_run(half, 400.0, f"{half}-plan"))
    # The oversampled arm never run: its twin's training with the generation longer by the rows it adds (8 groups to
    # the scale's 16 a round), by the share of the twin's step that generation took (all of it where none is logged).
    oversampled = "mixed-all-answers-guided-oversampled-sft4xall-lr5e-5-direct-fresh-2x"
    assert (f"{oversampled}: 650 s a seed (median of 1 run(s) of {half}, its generation x1.50"
            in estimate_once_run(half, 400.0, oversampled))
    twin_curves = [{"rollout/generation_share": share} for share in (0.4, 0.5, 0.9)]
    results["runs"][f"{half}/seed1/epoch"]["curves"] = twin_curves
    assert f"{oversampled}: 550 s a seed" in estimate_once_run(half, 400.0, oversampled)
    # An arm with nothing timed down its chain: roughly, per step, as every run of its phase whose command says its
    # steps (here only the fresh two-pass run, 600 s for 60 steps, plus its 50 s eval), the screen's eval untimed.
    screened = "mixed-all-answers-guided-screened-sft4xall-lr5e-5-direct-fresh-2x"
    printed = estimate_once_run(fresh_2x, 600.0, screened, "--mixed-steps", "15")
    assert (f"{screened}: 350 s a seed (median of 1 run(s) of its phase's arms, per step: rough, for 30 steps, plus "
            "the screen's eval of its questions, not timed; H100)") in printed


def test_the_fresh_two_pass_arm_draws_twice_the_unseen_questions_for_one_pass_of_as_many_steps() -> None:
    one_epoch = replace(learning_proof.SCALES["epoch"], mixed_steps=30)
    work = Path("/tmp/unused")
    fresh_2x = proof_arms.ARMS["mixed-informative-sft4x-lr5e-5-direct-fresh-2x"]
    two_passes = proof_arms.ARMS["mixed-informative-sft4x-lr5e-5-direct-2epochs"]
    argv = learning_proof.train_argv(replace(fresh_2x, start_from=None), one_epoch, work, BUILTIN_DATA_DIR, work, 30)
    other = learning_proof.train_argv(replace(two_passes, start_from=None), one_epoch, work, BUILTIN_DATA_DIR, work, 30)
    assert argv[argv.index("--max_questions") + 1] == "934" and other[other.index("--max_questions") + 1] == "467"
    assert argv[argv.index("--max_steps") + 1] == other[other.index("--max_steps") + 1] == "60"
    assert "--skip_warmup_questions" in argv and "--skip_warmup_questions" not in other
    # It is held against the two passes (the same episodes), and no arm is its single pass: the one-pass fresh arm
    # draws half its questions.
    assert fresh_2x.ablates == two_passes.name and proof_arms.one_pass_of(fresh_2x) is None
    assert proof_arms.one_pass_of(two_passes) == "mixed-informative-sft4x-lr5e-5-direct"


def test_the_all_classes_arm_of_sixty_steps_changes_only_the_classes_and_the_signal_of_the_fresh_one() -> None:
    one_epoch = replace(learning_proof.SCALES["epoch"], mixed_steps=30)
    work = Path("/tmp/unused")
    all_classes = proof_arms.ARMS["mixed-all-answers-sft4x-lr5e-5-direct-fresh-2x"]
    fresh_2x = proof_arms.ARMS[str(all_classes.ablates)]
    argv = learning_proof.train_argv(replace(all_classes, start_from=None), one_epoch, work, BUILTIN_DATA_DIR, work,
                                     30)
    other = learning_proof.train_argv(replace(fresh_2x, start_from=None), one_epoch, work, BUILTIN_DATA_DIR, work, 30)
    for flag in ("--max_questions", "--max_steps", "--learning_rate", "--sampling"):
        assert argv[argv.index(flag) + 1] == other[other.index(flag) + 1], flag
    assert "--skip_warmup_questions" in argv and "--curriculum" not in other
    from proof_report import lever_of
    assert lever_of(all_classes.name) == (f"--curriculum {proof_arms.MIXED_ALL_CURRICULUM}, --group_signal answers, "
                                          "--scale_rewards batch")
    agent, _, _ = train.parse_config(argv)
    assert (agent.group_signal, agent.max_questions) == ("answers", 934)
    assert proof_arms.warm_up_of(all_classes) == proof_arms.warm_up_of(fresh_2x) == "sft-4x"


def test_the_all_classes_warm_up_line_changes_only_the_warm_ups_classes() -> None:
    """sft-4x-all imitates all four classes where sft-4x imitates easy and medium; its two mixed arms run the flags of
    the sft-4x line's unguided and guided arms, so each pair differs only in the warm-up it grew from."""
    scale, work = learning_proof.SCALES["epoch"], Path("/tmp/unused")
    warm_up = proof_arms.ARMS["sft-4x-all"]
    agent, _, _ = train.parse_config(learning_proof.train_argv(warm_up, scale, work, BUILTIN_DATA_DIR, work, 30))
    assert agent.sft_hardness == ["easy", "medium", "hard", "extra"] and agent.max_questions == 2400
    plain, _, _ = train.parse_config(learning_proof.train_argv(proof_arms.ARMS["sft-4x"], scale, work,
                                                               BUILTIN_DATA_DIR, work, 30))
    assert plain.sft_hardness == ["easy", "medium"]
    for ours, theirs in (("mixed-all-answers-sft4xall-lr5e-5-direct-fresh-2x",
                          "mixed-all-answers-sft4x-lr5e-5-direct-fresh-2x"),
                         ("mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x",
                          "mixed-all-answers-guided-sft4x-lr5e-5-direct-fresh-2x")):
        arm, twin = proof_arms.ARMS[ours], proof_arms.ARMS[theirs]
        assert (arm.flags, arm.steps_times, arm.questions_times) == (twin.flags, twin.steps_times, twin.questions_times)
        assert proof_arms.warm_up_of(arm) == "sft-4x-all" and proof_arms.warm_up_of(twin) == "sft-4x"
    from proof_report import lever_of
    assert lever_of("sft-4x-all") == "--sft_hardness easy medium hard extra"
    assert lever_of("mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x") == "--guide_unsolved"
    oversampled = proof_arms.ARMS["mixed-all-answers-guided-oversampled-sft4xall-lr5e-5-direct-fresh-2x"]
    assert oversampled.ablates == "mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x"
    assert lever_of(oversampled.name) == "--oversample_groups 8" and proof_arms.warm_up_of(oversampled) == "sft-4x-all"
    by_class = proof_arms.ARMS["mixed-all-answers-guided-byclass-sft4xall-lr5e-5-direct-fresh-2x"]
    assert by_class.ablates == oversampled.ablates and lever_of(by_class.name) == "--defer_by_class"
    recovery = proof_arms.ARMS["mixed-all-answers-guided-recovery-sft4xall-lr5e-5-direct-fresh-2x"]
    assert recovery.ablates == oversampled.ablates and lever_of(recovery.name) == "--guide_recovery"
    recovery_agent, _, _ = train.parse_config(learning_proof.train_argv(replace(recovery, start_from=None), scale,
                                                                        work, BUILTIN_DATA_DIR, work, 30))
    assert recovery_agent.guide_unsolved and recovery_agent.guide_recovery
    # At the plan's scale: the same flags, twice the steps over the same questions (one pass of them).
    plan, half = (proof_arms.ARMS[name] for name in ("mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x-plan",
                                                       "mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x"))
    assert (plan.flags, plan.questions_times, plan.start_from) == (half.flags, half.questions_times, half.start_from)
    one_epoch = replace(scale, mixed_steps=15)
    argv = learning_proof.train_argv(replace(plan, start_from=None), one_epoch, work, BUILTIN_DATA_DIR, work, 30)
    assert argv[argv.index("--max_steps") + 1] == "60" and argv[argv.index("--max_questions") + 1] == "934"


def test_the_guided_config_file_runs_the_measured_guided_arm(monkeypatch: pytest.MonkeyPatch) -> None:
    """configs/mixed_guided.yaml, the README's strongest measured mixed phase, sets what the guided arm ran with,
    for as long as it ran (the arm at the learning proof's scale, --mixed-steps 15)."""
    monkeypatch.chdir(EXPERIMENTS.parent)  # the file names its curriculum relative to the repo, as a user runs it
    guided = proof_arms.ARMS["mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x"]
    from_file, grpo, _ = train.parse_config(["--phase", "mixed", "--config", "configs/mixed_guided.yaml"])
    measured = replace(learning_proof.SCALES["epoch"], mixed_steps=15)
    work = Path("/tmp/unused")
    from_arm, arm_grpo, _ = train.parse_config(
        learning_proof.train_argv(replace(guided, start_from=None), measured, work, BUILTIN_DATA_DIR, work, 31))
    for name in ("guide_unsolved", "group_signal", "sampling", "skip_warmup_questions", "max_questions"):
        assert getattr(from_file, name) == getattr(from_arm, name), name
    assert grpo.max_steps == arm_grpo.max_steps == 30
    # The proof's micro-batch is larger than the L4's default; a step holds as many episodes either way.
    assert (grpo.per_device_train_batch_size * grpo.gradient_accumulation_steps
            == arm_grpo.per_device_train_batch_size * arm_grpo.gradient_accumulation_steps == 96)
    assert Path(from_file.curriculum).resolve() == Path(from_arm.curriculum).resolve()
    assert (grpo.learning_rate, grpo.scale_rewards) == (arm_grpo.learning_rate, arm_grpo.scale_rewards) == (5e-5, "batch")
    assert from_file.guide_unsolved and load_curriculum(from_file.curriculum)[-1].hardness == (
        "easy", "medium", "hard", "extra")


def test_the_guided_arm_adds_only_oracle_guidance_to_the_all_classes_one() -> None:
    one_epoch = replace(learning_proof.SCALES["epoch"], mixed_steps=30)
    work = Path("/tmp/unused")
    guided = proof_arms.ARMS["mixed-all-answers-guided-sft4x-lr5e-5-direct-fresh-2x"]
    unguided = proof_arms.ARMS[str(guided.ablates)]
    argv = learning_proof.train_argv(replace(guided, start_from=None), one_epoch, work, BUILTIN_DATA_DIR, work, 30)
    other = learning_proof.train_argv(replace(unguided, start_from=None), one_epoch, work, BUILTIN_DATA_DIR, work, 30)
    flags = [word for word in argv if word.startswith("--")]
    assert sorted(flags) == sorted(word for word in other if word.startswith("--"))
    assert other[other.index("--guide_unsolved") + 1] == "false" and argv.count("false") == 0
    for flag in ("--max_questions", "--max_steps", "--learning_rate", "--group_signal", "--scale_rewards"):
        assert argv[argv.index(flag) + 1] == other[other.index(flag) + 1], flag
    from proof_report import lever_of
    assert lever_of(guided.name) == "--guide_unsolved"
    agent, _, _ = train.parse_config(argv)
    assert agent.guide_unsolved and not agent.oversample_groups
    # The oversampled arm adds only --oversample_groups 8 to the guided one.
    oversampled = proof_arms.ARMS["mixed-all-answers-guided-oversampled-sft4x-lr5e-5-direct-fresh-2x"]
    assert oversampled.ablates == guided.name and lever_of(oversampled.name) == "--oversample_groups 8"
    argv = learning_proof.train_argv(replace(oversampled, start_from=None), one_epoch, work, BUILTIN_DATA_DIR, work,
                                     30)
    agent, _, _ = train.parse_config(argv)
    assert agent.guide_unsolved and agent.oversample_groups == 8 and agent.max_questions == 934


def test_an_arm_without_guidance_runs_without_it_now_that_train_py_guides_by_default() -> None:
    """train.py guides by default since 2026-12-07c; every arm measured before keeps meaning what it meant."""
    scale, work = learning_proof.SCALES["epoch"], Path("/tmp/unused")
    grpo_arms = [arm for arm in proof_arms.ARMS.values() if arm.phase not in (None, "sft") and arm.retired is None]
    assert len(grpo_arms) > 10
    for arm in grpo_arms:
        argv = learning_proof.train_argv(replace(arm, start_from=None), scale, work, BUILTIN_DATA_DIR, work, 30)
        assert argv.count("--guide_unsolved") == 1, arm.name
        if "--fast_inference" not in argv:  # parsed where no vLLM is installed
            agent, _, _ = train.parse_config(argv)
            assert agent.guide_unsolved == ("--guide_unsolved" in arm.flags), arm.name


def test_runs_of_another_model_go_to_their_own_results_file(tmp_path: Path) -> None:
    measured = json.loads(learning_proof.DEFAULT_RESULTS.read_text())["runs"]["base/seed0/gpu"]
    assert measured["model_name"] == "qwen2.5-coder-0.5b-instruct"
    results, report = tmp_path / "results.json", tmp_path / "learning_proof_1.5b.md"
    learning_proof.save_results(results, {"runs": {"base/seed0/gpu": measured}})
    larger = dict(measured, model="/tmp/q15", model_name="qwen2.5-coder-1.5b-instruct")
    learning_proof.save_results(tmp_path / "results-q15.json", {"runs": {"sft/seed0/gpu": larger}})
    merge = ["--results", str(results), "--report", str(report), "--merge", str(tmp_path / "results-q15.json")]
    with pytest.raises(SystemExit):
        learning_proof.main(merge)
    assert sorted(json.loads(results.read_text())["runs"]) == ["base/seed0/gpu"]  # nothing merged
    model = tmp_path / "q15"
    model.mkdir()
    (model / "source.json").write_text(json.dumps({"name": "qwen2.5-coder-1.5b-instruct"}))
    with pytest.raises(SystemExit):
        learning_proof.main(["--model", str(model), "--results", str(results), "--arms", "sft"])
    own = tmp_path / "own" / "results.json"
    assert learning_proof.main(["--results", str(own), *merge[2:]]) == 0
    assert sorted(json.loads(own.read_text())["runs"]) == ["sft/seed0/gpu"] and report.is_file()


def test_an_eval_keeps_each_questions_outcome_with_a_digest_of_which_questions() -> None:
    groups = {group: {"accuracy": 0.5, "n": 2} for group in learning_proof.HARDNESS}
    groups["overall"] |= {"answered": 1.0, "post_episode_calls": 0.0, "tool_error_rate": 0.0, "mean_steps": 3.0}
    questions = [{"db_id": "a", "question": "q1", "correct": True, "skip_reason": None, "answered": True,
                  "post_episode_calls": 2, "hardness": "extra"},
                 {"db_id": "a", "question": "q2", "correct": False, "skip_reason": "gold query failed",
                  "answered": True, "post_episode_calls": 1, "hardness": "easy"},
                 {"db_id": "b", "question": "q3", "correct": False, "skip_reason": None, "answered": False,
                  "post_episode_calls": 12, "stop_reason": "malformed_tool_call", "hardness": "medium",
                  "final_text": '<tool_call>{"name": "query", "arguments": {"sql": "SELECT "a""}}</tool_call>'}]
    report = {"by_hardness": groups, "timing": {"elapsed_s": 1.0}, "questions": questions}
    summary = learning_proof.summarize(report)
    assert summary["outcomes"] == "10"  # skipped questions are not scored, so they have no outcome
    assert summary["answered_outcomes"] == "10"
    assert summary["post_episode_calls_by_question"] == "29"  # one digit a question: 12 calls show as 9
    assert summary["hardness_by_question"] == "xm"  # extra and easy share a first letter, not a code
    assert summary["unreadable_call_examples"] == [questions[2]["final_text"]]
    reordered = learning_proof.summarize(dict(report, questions=questions[::-1]))
    assert reordered["outcomes"] == "01" and reordered["questions_digest"] != summary["questions_digest"]


def test_an_eval_keeps_the_exact_text_verdict_beside_the_relaxed_one() -> None:
    groups = {group: {"accuracy": 0.5, "exact_text_accuracy": 0.25, "n": 2} for group in learning_proof.HARDNESS}
    groups["overall"] |= {"answered": 1.0, "post_episode_calls": 0.0, "tool_error_rate": 0.0, "mean_steps": 3.0}
    summary = learning_proof.summarize({"by_hardness": groups, "timing": {"elapsed_s": 1.0}, "questions": []})
    assert summary["exact_text_accuracy"]["overall"] == 0.25


def test_evals_generate_padded_unless_asked_and_name_the_mode(tmp_path: Path) -> None:
    scale = learning_proof.SCALES["gpu"]
    argv = learning_proof.eval_argv(tmp_path, tmp_path, "dev", tmp_path / "out", scale, hardness=None, limit=None)
    assert argv[argv.index("--generation") + 1] == "padded"  # python -m eval's own default is rounds
    rounds = replace(scale, eval_generation="rounds")
    argv = learning_proof.eval_argv(tmp_path, tmp_path, "dev", tmp_path / "out", rounds, hardness=None, limit=None)
    assert argv[argv.index("--generation") + 1] == "rounds"


def test_a_warm_up_digest_is_of_the_weights_alone_and_changes_with_any_of_their_bytes(tmp_path: Path) -> None:
    adapter = tmp_path / "adapter"
    adapter.mkdir()
    (adapter / "adapter_model.safetensors").write_bytes(b"lora" * 100)
    (adapter / "tool_token_rows.safetensors").write_bytes(b"rows")
    (adapter / "README.md").write_text("written at save time")
    digest = learning_proof.adapter_digest(adapter)
    (adapter / "README.md").write_text("another save, the same weights")
    assert learning_proof.adapter_digest(adapter) == digest
    (adapter / "tool_token_rows.safetensors").write_bytes(b"Rows")  # the warm-up's tag rows are weights too
    assert learning_proof.adapter_digest(adapter) != digest


def _fake_train(argv: list[str]) -> str:
    """train.main's shape: writes an adapter whose weights differ by arm and seed (its output folder), returns it."""
    output, phase = Path(argv[argv.index("--output_dir") + 1]), argv[argv.index("--phase") + 1]
    adapter = output / phase / "adapter"
    adapter.mkdir(parents=True)
    (adapter / "adapter_model.safetensors").write_bytes(output.name.encode())
    (output / phase / "metrics.jsonl").write_text(json.dumps({"step": 1, "reward": 0.5}) + "\n")
    return str(adapter)


def test_an_arm_records_the_warm_up_it_started_from_and_a_train_only_arm_skips_its_evals(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(train, "main", _fake_train)
    monkeypatch.setattr("eval.__main__.run", lambda *args, **kwargs: pytest.fail("a train-only arm evaluated"))
    scale, work = learning_proof.SCALES["quick"], tmp_path / "work"
    sft = learning_proof.run_arm(proof_arms.ARMS["sft"], scale, tmp_path, BUILTIN_DATA_DIR, work, 3, evaluate=False)
    assert sft["evals"] == {} and sft["seconds"] == sft["train_seconds"]
    assert sft["device"] == "cpu" or torch.cuda.is_available()  # the accelerator its speeds come from
    assert sft["warm_up_digest"] == sft["adapter_digest"] == learning_proof.adapter_digest(
        learning_proof.adapter_of(work, "sft", 3))
    easy = learning_proof.run_arm(proof_arms.ARMS["easy"], scale, tmp_path, BUILTIN_DATA_DIR, work, 3,
                                  evaluate=False)
    assert easy["warm_up_digest"] == sft["adapter_digest"] != easy["adapter_digest"]
    mixed_only = learning_proof.run_arm(proof_arms.ARMS["mixed-only"], scale, tmp_path, BUILTIN_DATA_DIR, work, 3,
                                        evaluate=False)
    assert mixed_only["warm_up_digest"] == sft["adapter_digest"]
    no_sft = learning_proof.run_arm(proof_arms.ARMS["no-sft"], scale, tmp_path, BUILTIN_DATA_DIR, work, 3,
                                    evaluate=False)
    assert "warm_up_digest" not in no_sft  # GRPO from the base model: no warm-up to share


def test_train_only_arms_run_without_evals_and_the_report_shows_them_not_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, bool]] = []

    def fake_arm(arm, scale, model, data, work, seed, evaluate=True, eval_at_step=None):  # run_arm's shape
        asked.append((arm.name, evaluate))
        heldout = {"accuracy": {"overall": 0.5}, "answered": 0.99, "outcomes": "1100", "questions_digest": "d",
                   "mean_steps": 3.0}
        evals = {"heldout": heldout} if evaluate else {}
        return {"arm": arm.name, "seed": seed, "scale": scale.name, "commands": [], "seconds": 1.0, "evals": evals,
                "commit": "abc1234"}

    monkeypatch.setattr(learning_proof, "run_arm", fake_arm)
    argv = ["--model", str(tmp_path), "--data-dir", str(BUILTIN_DATA_DIR), "--work", str(tmp_path / "work"),
            "--results", str(tmp_path / "results.json"), "--report", str(tmp_path / "report.md"),
            "--arms", "sft", "easy", "mixed", "mixed-only", "--train-only", "sft", "easy"]
    assert learning_proof.main(argv) == 0  # an unevaluated warm-up does not stop the arms after it
    assert asked == [("sft", False), ("easy", False), ("mixed", True), ("mixed-only", True)]
    report = (tmp_path / "report.md").read_text().splitlines()
    assert next(line for line in report if line.startswith("| sft |")).startswith("| sft | not run |")
    assert "| 50.0% (n=1) |" in next(line for line in report if line.startswith("| mixed |"))  # overall
    with pytest.raises(SystemExit):
        learning_proof.main([*argv, "--train-only", "nonsense"])


def test_a_retired_arm_is_refused_with_why_and_its_runs_stay_in_the_report(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        learning_proof.main(["--model", str(tmp_path), "--work", str(tmp_path), "--arms", "sft-4x-retry"])
    assert "arm sft-4x-retry is retired: recorded at bdf1a7c" in capsys.readouterr().err
    report = learning_proof.DEFAULT_REPORT.read_text(encoding="utf-8")
    assert next(line for line in report.splitlines() if line.startswith("| sft-4x-retry@epoch |"))


def test_every_arm_knows_its_warm_up_and_the_habit_warm_up_learns_to_keep_calling(tmp_path: Path) -> None:
    warm_ups = {name: proof_arms.warm_up_of(arm) for name, arm in proof_arms.ARMS.items()}
    assert warm_ups == {"base": None, "sft": "sft", "easy": "sft", "mixed": "sft", "ng4": "sft", "no-penalty": "sft",
                        "no-fewshot": "sft", "no-sft": None, "mixed-only": "sft", "mixed-informative": "sft",
                        "easy-lr1e-4": "sft", "mixed-lr1e-4": "sft", "mixed-informative-answer": "sft",
                        "mixed-oversample": "sft", "easy-oversample": "sft", "mixed-oversample-lr5e-5": "sft",
                        "mixed-lr5e-5": "sft", "mixed-all": "sft", "mixed-dr-grpo": "sft", "mixed-temp1.2": "sft",
                        "mixed-temp0.7": "sft",
                        "sft-4x": "sft-4x", "easy-sft4x": "sft-4x", "mixed-sft4x": "sft-4x",
                        "mixed-informative-sft4x": "sft-4x", "mixed-informative-sft4x-lr5e-5": "sft-4x",
                        "mixed-informative-sft4x-lr5e-5-batchstd": "sft-4x", "mixed-dapo-sft4x-lr5e-5": "sft-4x",
                        "mixed-informative-sft4x-lr5e-5-temp0.7": "sft-4x",
                        "mixed-informative-sft4x-lr5e-5-direct": "sft-4x",
                        "mixed-all-informative-sft4x-lr5e-5": "sft-4x",
                        "mixed-all-answers-sft4x-lr5e-5": "sft-4x",
                        "mixed-informative-sft4x-lr5e-5-direct-2epochs": "sft-4x",
                        "mixed-informative-sft4x-lr5e-5-direct-fresh": "sft-4x",
                        "mixed-informative-sft4x-lr5e-5-direct-fresh-2x": "sft-4x",
                        "mixed-all-answers-sft4x-lr5e-5-direct-fresh-2x": "sft-4x",
                        "mixed-all-answers-guided-sft4x-lr5e-5-direct-fresh-2x": "sft-4x",
                        "mixed-all-answers-guided-oversampled-sft4x-lr5e-5-direct-fresh-2x": "sft-4x",
                        "sft-4x-all": "sft-4x-all", "mixed-all-answers-sft4xall-lr5e-5-direct-fresh-2x": "sft-4x-all",
                        "mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x": "sft-4x-all",
                        "mixed-all-answers-guided-oversampled-sft4xall-lr5e-5-direct-fresh-2x": "sft-4x-all",
                        "mixed-all-answers-guided-byclass-sft4xall-lr5e-5-direct-fresh-2x": "sft-4x-all",
                        "mixed-all-answers-guided-screened-sft4xall-lr5e-5-direct-fresh-2x": "sft-4x-all",
                        "mixed-all-answers-guided-recovery-sft4xall-lr5e-5-direct-fresh-2x": "sft-4x-all",
                        "mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x-temp1.2": "sft-4x-all",
                        "mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x-plan": "sft-4x-all",
                        "easy-sft4xall": "sft-4x-all", "mixed-sft4xall": "sft-4x-all",
                        "easy-sft4x-vllm": "sft-4x", "mixed-informative-sft4x-lr5e-5-vllm": "sft-4x",
                        "mixed-informative-sft4x-3steps": "sft-4x",
                        "easy-sft4x-fresh": "sft-4x", "mixed-informative-sft4x-fresh": "sft-4x",
                        "sft-4x-retry": "sft-4x-retry",
                        "sft-4x-recover": "sft-4x-recover", "easy-sft4x-recover": "sft-4x-recover",
                        "mixed-informative-sft4x-recover": "sft-4x-recover",
                        "mixed-informative-sft4x-recover-3steps": "sft-4x-recover",
                        "sft-habit": "sft-habit", "easy-habit": "sft-habit",
                        "no-penalty-habit": "sft-habit"}
    # The larger warm-up's line is compared with the scale's own warm-up's, arm by arm; the rest share their warm-up.
    assert [name for name, arm in proof_arms.ARMS.items() if proof_arms.trains_its_own_warm_up(arm)] == [
        "no-sft", "sft-4x", "easy-sft4x", "mixed-sft4x", "mixed-informative-sft4x", "sft-4x-all",
        "mixed-all-answers-sft4xall-lr5e-5-direct-fresh-2x", "sft-4x-retry", "sft-4x-recover",
        "easy-sft4x-recover", "mixed-informative-sft4x-recover", "mixed-informative-sft4x-recover-3steps"]  # the lr arm shares its full setting's warm-up
    scale = learning_proof.SCALES["gpu"]
    argv = learning_proof.train_argv(proof_arms.ARMS["sft-habit"], scale, tmp_path, BUILTIN_DATA_DIR, tmp_path, 8)
    agent, _, _ = train.parse_config(argv)
    assert agent.sft_never_stop_share == proof_arms.HABIT_SHARE > 0
    plain = learning_proof.train_argv(proof_arms.ARMS["sft"], scale, tmp_path, BUILTIN_DATA_DIR, tmp_path, 8)
    assert train.parse_config(plain)[0].sft_never_stop_share == 0
    larger = learning_proof.train_argv(proof_arms.ARMS["sft-4x"], scale, tmp_path, BUILTIN_DATA_DIR, tmp_path, 8)
    assert (train.parse_config(plain)[0].max_questions, train.parse_config(larger)[0].max_questions) == (
        scale.sft_questions, 4 * scale.sft_questions)
    retrying = train.parse_config(learning_proof.train_argv(proof_arms.ARMS["sft-4x-recover"], scale, tmp_path,
                                                            BUILTIN_DATA_DIR, tmp_path, 8))[0]
    assert (retrying.max_questions, retrying.sft_retry_share, train.parse_config(larger)[0].sft_retry_share) == (
        4 * scale.sft_questions, proof_arms.RETRY_SHARE, 0.0)
    (tmp_path / "sft-seed8" / "sft" / "adapter").mkdir(parents=True)
    (tmp_path / "sft-seed8" / "sft" / "adapter" / "adapter_model.safetensors").write_bytes(b"")
    faster = learning_proof.train_argv(proof_arms.ARMS["easy-lr1e-4"], scale, tmp_path, BUILTIN_DATA_DIR, tmp_path, 8)
    assert train.parse_config(faster)[1].learning_rate == 1e-4 != scale.grpo_learning_rate
    (tmp_path / "easy-seed8" / "easy" / "adapter").mkdir(parents=True)
    (tmp_path / "easy-seed8" / "easy" / "adapter" / "adapter_model.safetensors").write_bytes(b"")
    every_class = learning_proof.train_argv(proof_arms.ARMS["mixed-all"], scale, tmp_path, BUILTIN_DATA_DIR,
                                            tmp_path, 8)
    agent, _, _ = train.parse_config(every_class)
    assert select_phase(load_curriculum(agent.curriculum), "mixed")[0].hardness == ("easy", "medium", "hard", "extra")
    plain_faster = learning_proof.train_argv(proof_arms.ARMS["mixed-lr5e-5"], scale, tmp_path, BUILTIN_DATA_DIR,
                                             tmp_path, 8)
    agent, grpo, _ = train.parse_config(plain_faster)
    assert (agent.oversample_groups, grpo.learning_rate) == (0, 5e-5)
    # The arms measured before train.py's default became informative sampling keep TRL's plain passes.
    assert (agent.sampling, train.parse_config([])[0].sampling) == ("plain", "informative")
    assert train.parse_config(learning_proof.train_argv(proof_arms.ARMS["mixed-informative"], scale, tmp_path,
                                                        BUILTIN_DATA_DIR, tmp_path, 8))[0].sampling == "informative"
    (tmp_path / "easy-sft4x-seed8" / "easy" / "adapter").mkdir(parents=True)
    (tmp_path / "easy-sft4x-seed8" / "easy" / "adapter" / "adapter_model.safetensors").write_bytes(b"")
    agent, grpo, _ = train.parse_config(learning_proof.train_argv(proof_arms.ARMS["mixed-informative-sft4x-lr5e-5"],
                                                                  scale, tmp_path, BUILTIN_DATA_DIR, tmp_path, 8))
    assert (agent.sampling, grpo.learning_rate) == ("informative", 5e-5)
    (tmp_path / "easy-sft4x-fresh-seed8" / "easy" / "adapter").mkdir(parents=True)
    (tmp_path / "easy-sft4x-fresh-seed8" / "easy" / "adapter" / "adapter_model.safetensors").write_bytes(b"")
    agent = train.parse_config(learning_proof.train_argv(proof_arms.ARMS["mixed-informative-sft4x-fresh"], scale,
                                                         tmp_path, BUILTIN_DATA_DIR, tmp_path, 8))[0]
    assert (agent.sampling, agent.skip_warmup_questions, train.parse_config(plain)[0].skip_warmup_questions) == (
        "informative", True, False)
    for arm, setting in (("mixed-dr-grpo", ("loss_type", "dr_grpo")), ("mixed-temp1.2", ("temperature", 1.2)),
                         ("mixed-temp0.7", ("temperature", 0.7))):
        grpo = train.parse_config(learning_proof.train_argv(proof_arms.ARMS[arm], scale, tmp_path, BUILTIN_DATA_DIR,
                                                            tmp_path, 8))[1]
        assert getattr(grpo, setting[0]) == setting[1] != getattr(train.parse_config(plain_faster)[1], setting[0])
    argv = learning_proof.train_argv(proof_arms.ARMS["mixed-oversample-lr5e-5"], scale, tmp_path, BUILTIN_DATA_DIR,
                                     tmp_path, 8)
    agent, grpo, _ = train.parse_config(argv)  # the arm's rate replaces the scale's
    assert (agent.oversample_groups, grpo.learning_rate, argv.count("--learning_rate")) == (8, 5e-5, 1)
    # A mixed arm without a rate of its own names the scale's, so curriculum.yaml's mixed rate does not apply to it.
    grpo, explicit = train.parse_config(learning_proof.train_argv(proof_arms.ARMS["mixed-informative"], scale,
                                                                  tmp_path, BUILTIN_DATA_DIR, tmp_path, 8))[1:]
    assert "learning_rate" in explicit and grpo.learning_rate == scale.grpo_learning_rate
    assert select_phase(load_curriculum(agent.curriculum), "mixed")[0].learning_rate != scale.grpo_learning_rate
    with pytest.raises(FileNotFoundError, match="run --arms sft-habit first"):
        learning_proof.train_argv(proof_arms.ARMS["no-penalty-habit"], scale, tmp_path, BUILTIN_DATA_DIR,
                                  tmp_path, 8)


def test_a_habit_arm_records_the_habit_warm_up_as_its_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(train, "main", _fake_train)
    scale, work = learning_proof.SCALES["quick"], tmp_path / "work"
    entries = {name: learning_proof.run_arm(proof_arms.ARMS[name], scale, tmp_path, BUILTIN_DATA_DIR, work, 8,
                                            evaluate=False) for name in ("sft", "sft-habit", "no-penalty-habit")}
    assert entries["sft"]["adapter_digest"] != entries["sft-habit"]["adapter_digest"]
    assert entries["no-penalty-habit"]["warm_up_digest"] == entries["sft-habit"]["adapter_digest"]


def test_the_report_alone_loads_no_training_stack(tmp_path: Path) -> None:
    # A fresh interpreter (in this one train is imported already): --report-only redraws the report without
    # importing train.py, unsloth or torch.
    code = ("import sys, learning_proof; "
            f"learning_proof.main(['--report-only', '--results', {str(tmp_path / 'r.json')!r}, "
            f"'--report', {str(tmp_path / 'report.md')!r}]); "
            "print(sorted({'train', 'torch', 'unsloth', 'transformers', 'trl'} & set(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], cwd=EXPERIMENTS, capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "[]" and (tmp_path / "report.md").is_file()


def test_an_eval_of_eval_generation_becomes_a_trained_only_runs_held_out_eval(tmp_path: Path,
                                                                                tiny_model_dir: Path) -> None:
    """The GPU session evaluates its warm-ups with benchmarks/eval_generation.py to save time; its figures now
    carry the proof's summary, so the warm-up's held-out eval pairs question by question with the arms after it."""
    sys.path.insert(0, str(EXPERIMENTS.parent / "benchmarks"))
    import eval_generation

    figures = tmp_path / "figures.json"
    assert eval_generation.main(["--checkpoint", str(tiny_model_dir), "--split", "dev", "--limit", "2",
                                 "--max-new-tokens", "8", "--backend", "transformers", "--modes", "rounds",
                                 "--out", str(figures)]) == 0
    summary = json.loads(figures.read_text())["modes"]["rounds"]["summary"]
    assert len(summary["outcomes"]) == 2 and summary["questions_digest"] and "stop_reasons" in summary

    results_path = tmp_path / "results.json"
    measured = json.loads((EXPERIMENTS.parent / "docs" / "learning_proof" / "results.json").read_text())
    trained_only = dict(measured["runs"]["sft/seed27/epoch"], seed=28, evals={})
    learning_proof.save_results(results_path, {"runs": {"sft/seed28/epoch": trained_only}})
    whole = json.loads(figures.read_text())
    whole["settings"]["limit"], whole["settings"]["max_new_tokens"] = None, 256  # as the GPU session's eval runs
    figures.write_text(json.dumps(whole))
    argv = ["--results", str(results_path), "--report", str(tmp_path / "report.md"), "--add-heldout"]
    assert learning_proof.main([*argv, "sft/seed28/epoch", str(figures)]) == 0
    heldout = json.loads(results_path.read_text())["runs"]["sft/seed28/epoch"]["evals"]["heldout"]
    assert heldout["outcomes"] == summary["outcomes"] and "eval_generation.py --modes rounds" in heldout["source"]

    results = learning_proof.load_results(results_path)
    with pytest.raises(ValueError, match="no run 'sft/seed29/epoch'"):
        learning_proof.add_heldout(results, "sft/seed29/epoch", figures)
    results["runs"]["sft/seed28/epoch"]["evals"]["heldout"].pop("source")  # as if the proof had evaluated it
    with pytest.raises(ValueError, match="has the proof's own held-out eval; it stays"):
        learning_proof.add_heldout(results, "sft/seed28/epoch", figures)
    whole["settings"]["split"] = "train"
    figures.write_text(json.dumps(whole))
    with pytest.raises(ValueError, match="evaluated {'split': 'train'}"):
        learning_proof.add_heldout(learning_proof.load_results(results_path), "sft/seed28/epoch", figures)
    with pytest.raises(SystemExit):  # a missing file: the parser's error, nothing written
        learning_proof.main([*argv, "sft/seed28/epoch", str(tmp_path / "missing.json")])


def test_an_eval_report_becomes_a_trained_only_runs_held_out_eval(tmp_path: Path, tiny_model_dir: Path) -> None:
    """gpu_session.sh veval writes python -m eval's report.json: it pairs question by question like the proof's own."""
    from eval.__main__ import main as evaluate

    out = tmp_path / "eval"
    evaluate(["--checkpoint", str(tiny_model_dir), "--split", "dev", "--limit", "2", "--max-new-tokens", "8",
                     "--backend", "transformers", "--out", str(out), "--no-progress"])
    report = json.loads((out / "report.json").read_text())
    report["settings"]["limit"], report["settings"]["max_new_tokens"] = None, 256  # as the GPU session's eval runs
    figures = tmp_path / "report.json"
    figures.write_text(json.dumps(report))
    measured = json.loads((EXPERIMENTS.parent / "docs" / "learning_proof" / "results.json").read_text())
    results = {"runs": {"sft/seed28/epoch": dict(measured["runs"]["sft/seed27/epoch"], seed=28, evals={})}}
    said = learning_proof.add_heldout(results, "sft/seed28/epoch", figures)
    heldout = results["runs"]["sft/seed28/epoch"]["evals"]["heldout"]
    assert heldout["outcomes"] == learning_proof.summarize(report)["outcomes"] and len(heldout["outcomes"]) == 2
    assert "python -m eval --backend transformers" in heldout["source"] and "python -m eval" in said
    report["settings"]["max_new_tokens"] = 96
    figures.write_text(json.dumps(report))
    with pytest.raises(ValueError, match="evaluated {'max_new_tokens': 96}"):
        learning_proof.add_heldout(results, "sft/seed28/epoch", figures)


def test_the_readme_flow_arms_run_train_py_defaults_but_for_length_and_the_curriculum_learning_rate() -> None:
    """easy-sft4xall then mixed-sft4xall are `python train.py --phase easy` then `--phase mixed` from the
    all-classes warm-up: every setting train.py would choose itself, except the proof's length and batch layout."""
    one_epoch = replace(learning_proof.SCALES["epoch"], mixed_steps=30)
    work = Path("/tmp/unused")
    length_and_layout = {"model", "data_dir", "output_dir", "seed", "report_to", "max_steps", "warmup_steps",
                         "max_completion_length", "save_steps", "max_questions", "per_device_train_batch_size",
                         "gradient_accumulation_steps", "generation_batch_size", "steps_per_generation"}
    for name, phase in (("easy-sft4xall", "easy"), ("mixed-sft4xall", "mixed")):
        arm = proof_arms.ARMS[name]
        argv = learning_proof.train_argv(replace(arm, start_from=None), one_epoch, work, BUILTIN_DATA_DIR, work, 32)
        agent, grpo, _ = train.parse_config(argv)
        default_agent, default_grpo, _ = train.parse_config(["--phase", phase])
        changed = {field.name for settings, defaults in ((agent, default_agent), (grpo, default_grpo))
                   for field in fields(settings) if field.name not in length_and_layout
                   and getattr(settings, field.name) != getattr(defaults, field.name)}
        # curriculum.yaml gives the mixed phase its rate when the phase is planned; the arm names the same one
        assert changed == ({"learning_rate"} if phase == "mixed" else set()), (name, changed)
        phase_rate = select_phase(load_curriculum(Path(agent.curriculum)), phase)[0].learning_rate
        assert grpo.learning_rate == (phase_rate or default_grpo.learning_rate), name
    assert proof_arms.ARMS["mixed-sft4xall"].start_from == "easy-sft4xall"
    assert proof_arms.warm_up_of(proof_arms.ARMS["mixed-sft4xall"]) == "sft-4x-all"
