"""experiments/learning_proof.py: the by-database split, arms that build on each other, results that
accumulate across invocations, and the report drawn from them (its parts tested directly, on the tiny model)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
import learning_proof  # noqa: E402  (imports train, which imports unsloth first)
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
        learning_proof.train_argv(learning_proof.ARMS["easy"], scale, tmp_path, BUILTIN_DATA_DIR, tmp_path, 0)
    mixed_only = learning_proof.ARMS["mixed-only"]
    assert learning_proof.steps_for(mixed_only, scale) == scale.easy_steps + scale.mixed_steps


def test_every_ablation_trains_as_many_steps_as_the_full_setting_it_is_compared_with() -> None:
    for scale in learning_proof.SCALES.values():
        for name in learning_proof.ABLATIONS:
            arm = learning_proof.ARMS[name]
            full = learning_proof.ARMS[str(arm.ablates)]
            # mixed-only stands for the whole curriculum: the easy phase's steps and the mixed phase's together
            expected = (scale.easy_steps + scale.mixed_steps if name == "mixed-only"
                        else learning_proof.steps_for(full, scale))
            assert learning_proof.steps_for(arm, scale) == expected, (name, scale.name)


def test_every_gpu_step_holds_whole_groups_of_several_prompts_and_the_cpu_keeps_train_pys_own() -> None:
    gpu, quick = learning_proof.SCALES["gpu"], learning_proof.SCALES["quick"]
    cases = {("easy", gpu): ["--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "6"],
             ("ng4", gpu): ["--per_device_train_batch_size", "4", "--gradient_accumulation_steps", "4"],
             ("easy", quick): [],
             ("ng4", quick): ["--per_device_train_batch_size", "1", "--gradient_accumulation_steps", "4"]}
    for (arm, scale), expected in cases.items():
        assert learning_proof.group_argv(learning_proof.ARMS[arm], scale) == expected, (arm, scale.name)
    # train.py accepts them: 4 prompts x 6 completions, and 4 x 4 with 4 generations
    import train

    for flags in (cases[("easy", gpu)], ["--num_generations", "4", *cases[("ng4", gpu)]]):
        _, grpo, _ = train.parse_config(["--output_dir", "/tmp/unused", *flags])
        batch = grpo.per_device_train_batch_size * grpo.gradient_accumulation_steps
        assert batch // grpo.num_generations == 4 and batch % grpo.num_generations == 0


def test_a_report_of_nothing_yet_says_not_run(tmp_path: Path) -> None:
    learning_proof.write_report({"runs": {}}, tmp_path / "report.md", tmp_path / "figures", tmp_path / "r.json")
    report = (tmp_path / "report.md").read_text()
    assert "| base | not run |" in report and "| no OOM with 6 generations" in report


@pytest.mark.slow
def test_arms_accumulate_across_invocations_and_the_report_shows_them(tiny_model_dir: Path, tmp_path: Path) -> None:
    common = ["--model", str(tiny_model_dir), "--scale", "quick", "--data-dir", str(BUILTIN_DATA_DIR),
              "--work", str(tmp_path / "work"), "--results", str(tmp_path / "results.json"),
              "--report", str(tmp_path / "report.md"), "--seed", "0"]
    assert learning_proof.main([*common, "--arms", "base", "sft"]) == 0
    assert learning_proof.main([*common, "--arms", "easy"]) == 0  # starts from the sft arm of the first call
    results = json.loads((tmp_path / "results.json").read_text())
    assert sorted(results["runs"]) == ["base/seed0/quick", "easy/seed0/quick", "sft/seed0/quick"]
    easy = results["runs"]["easy/seed0/quick"]
    assert any("--start_adapter" in command and "sft-seed0" in command for command in easy["commands"])
    assert len(easy["curves"]) == 1 and "reward" in easy["curves"][0]
    assert set(easy["evals"]) == {"heldout", "train_easy"} and easy["evals"]["heldout"]["n"]["overall"] == 2
    report = (tmp_path / "report.md").read_text()
    assert "| easy | 0 |" in report and (tmp_path / "learning_proof" / "curves.png").is_file()


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

    def fake_arm(arm, scale, model, data, work, seed, evaluate=True):  # noqa: ANN001, ANN202 (run_arm's shape)
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


def test_seeds_run_arm_by_arm_and_a_seed_whose_warm_up_calls_no_tool_gets_no_grpo_arm(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[tuple[str, int]] = []

    def fake_arm(arm, scale, model, data, work, seed, evaluate=True):  # noqa: ANN001, ANN202 (run_arm's shape)
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


def test_a_run_missing_an_eval_shows_not_run_there_and_its_other_numbers(tmp_path: Path) -> None:
    measured = json.loads(learning_proof.DEFAULT_RESULTS.read_text())["runs"]["base/seed0/gpu"]
    cut_short = dict(measured, arm="sft", evals={"heldout": measured["evals"]["heldout"]})  # no train_easy eval
    part = dict(measured, arm="easy", evals={"heldout_first150": measured["evals"]["heldout"]})  # part of a split
    learning_proof.write_report({"runs": {"sft/seed0/gpu": cut_short, "easy/seed0/gpu": part}}, tmp_path / "report.md",
                                tmp_path / "figures", tmp_path / "r.json")
    lines = (tmp_path / "report.md").read_text().splitlines()
    row = next(line for line in lines if line.startswith("| sft |"))
    assert row.startswith("| sft | 0.0% (n=1)") and row.endswith("| not run |")
    assert next(line for line in lines if line.startswith("| easy |")).startswith("| easy | not run |")
    assert "| easy/seed0/gpu | heldout_first150 | 614 | 0.0% |" in lines[lines.index(
        next(line for line in lines if line.startswith("Evals of part of a split"))) + 4]


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


def _heldout(overall: float, outcomes: str = "", digest: str = "d") -> dict:
    return {"accuracy": {"overall": overall}, "answered": 0.99, "outcomes": outcomes, "questions_digest": digest}


def test_an_eval_keeps_each_questions_outcome_with_a_digest_of_which_questions() -> None:
    groups = {group: {"accuracy": 0.5, "n": 2} for group in learning_proof.HARDNESS}
    groups["overall"] |= {"answered": 1.0, "post_episode_calls": 0.0, "tool_error_rate": 0.0, "mean_steps": 3.0}
    questions = [{"db_id": "a", "question": "q1", "correct": True, "skip_reason": None, "answered": True,
                  "post_episode_calls": 2},
                 {"db_id": "a", "question": "q2", "correct": False, "skip_reason": "gold query failed",
                  "answered": True, "post_episode_calls": 1},
                 {"db_id": "b", "question": "q3", "correct": False, "skip_reason": None, "answered": False,
                  "post_episode_calls": 12}]
    report = {"by_hardness": groups, "timing": {"elapsed_s": 1.0}, "questions": questions}
    summary = learning_proof.summarize(report)
    assert summary["outcomes"] == "10"  # skipped questions are not scored, so they have no outcome
    assert summary["answered_outcomes"] == "10"
    assert summary["post_episode_calls_by_question"] == "29"  # one digit a question: 12 calls show as 9
    reordered = learning_proof.summarize(dict(report, questions=questions[::-1]))
    assert reordered["outcomes"] == "01" and reordered["questions_digest"] != summary["questions_digest"]


def test_arms_of_one_seed_compare_question_by_question_only_over_the_same_questions() -> None:
    runs = {"sft/seed0/gpu": {"arm": "sft", "seed": 0, "evals": {"heldout": _heldout(0.5, "1100")}},
            "easy/seed0/gpu": {"arm": "easy", "seed": 0, "evals": {"heldout": _heldout(0.75, "1011")}},
            "mixed/seed0/gpu": {"arm": "mixed", "seed": 0, "evals": {"heldout": _heldout(1.0, "1111", "other")}}}
    rows = learning_proof.paired_rows({"runs": runs})
    assert rows == ["| 0 | sft -> easy | 4 | 2 -> 3 | 2 | 1 | 1 |"]  # mixed ran other questions: no pair
    assert learning_proof.mcnemar_p(7, 2) == pytest.approx(0.1797, abs=1e-4)
    assert learning_proof.mcnemar_p(0, 0) == 1.0


def test_the_curriculum_targets_fail_below_five_points_and_say_when_the_spread_is_unmeasured() -> None:
    def results(sft: list[float], mixed: list[float], easy: tuple[float, ...] = ()) -> dict:
        runs = {f"sft/seed{seed}/gpu": {"arm": "sft", "seed": seed, "evals": {"heldout": _heldout(value)}}
                for seed, value in enumerate(sft)}
        runs |= {f"mixed/seed{seed}/gpu": {"arm": "mixed", "seed": seed, "evals": {"heldout": _heldout(value)}}
                 for seed, value in enumerate(mixed)}
        runs |= {f"easy/seed{seed}/gpu": {"arm": "easy", "seed": seed, "evals": {"heldout": _heldout(value)}}
                 for seed, value in enumerate(easy)}
        return {"runs": runs}

    def verdicts(measured_results: dict) -> list[str]:
        return [verdict for _, _, verdict in learning_proof.curriculum_target_rows(measured_results)]

    assert verdicts({"runs": {}}) == ["not run"] * 4
    assert verdicts(results([0.420], [0.423]))[:3] == ["pass", "pass", "fail"]  # 40% reached, GRPO added 0.3 points
    # The easy phase alone, against the same seeds' warm-ups, where it has more seeds than the mixed phase:
    easy_row = learning_proof.curriculum_target_rows(results([0.30, 0.32, 0.31], [0.36], easy=(0.40, 0.33, 0.31)))[3]
    assert easy_row[1] == "3.7 points ± 5.5 (n=3); warm-ups' spread across seeds ± 1.0"
    assert easy_row[2] == "more than the warm-ups' seed spread"
    assert verdicts(results([0.30, 0.45], [0.40], easy=(0.30, 0.46)))[3] == "within the warm-ups' seed spread"
    assert verdicts(results([0.30], [0.40], easy=(0.35,)))[3].startswith("see numbers")
    assert verdicts(results([0.30], [0.36]))[0] == "fail"
    assert verdicts(results([0.30], [0.36]))[2].startswith("5 points or more; the seed spread is not measured")
    # gains of 10 and 5 points: beyond warm-ups 2 points apart, not beyond warm-ups 15 points apart
    assert verdicts(results([0.30, 0.32], [0.40, 0.37]))[2] == "pass"
    assert verdicts(results([0.30, 0.45], [0.40, 0.50]))[2] == "within the warm-ups' seed spread"


def test_the_memory_check_leaves_out_peaks_that_included_earlier_evals() -> None:
    def grpo(peak: float, **flags: bool) -> dict:
        return {"arm": "easy", "seed": 0, "curves": [{"reward": 0.5, "gpu/peak_reserved_gib": peak}], **flags}

    def memory_row(runs: dict) -> tuple[str, str, str]:
        return learning_proof.verification_rows({"runs": runs})[0]

    assert memory_row({"a": grpo(60.4, peak_memory_is_the_phases=False), "b": grpo(7.0)})[1:] == (
        "7.00 GiB (1 run(s) left out: their counter included earlier evals)", "pass")
    assert memory_row({"a": grpo(60.4, peak_memory_is_the_phases=False)})[2] == "not run"
    assert memory_row({"b": grpo(23.0)})[2] == "fail"


def test_what_grpo_adds_is_measured_against_the_warm_up_of_the_same_seed_and_scale() -> None:
    def run(arm: str, scale: str, overall: float) -> dict:
        return {"arm": arm, "seed": 0, "scale": scale, "evals": {"heldout": _heldout(overall)}}

    runs = {"sft/seed0/gpu": run("sft", "gpu", 0.40), "sft/seed0/quick": run("sft", "quick", 0.90),
            "mixed/seed0/gpu": run("mixed", "gpu", 0.46)}
    (_, gain, _), = [row for row in learning_proof.curriculum_target_rows({"runs": runs}) if row[0].startswith("GRPO")]
    assert gain.startswith("6.0 points (n=1)")  # against the gpu warm-up, not the quick one


def test_evals_generate_padded_unless_asked_and_name_the_mode(tmp_path: Path) -> None:
    scale = learning_proof.SCALES["gpu"]
    argv = learning_proof.eval_argv(tmp_path, tmp_path, "dev", tmp_path / "out", scale, hardness=None, limit=None)
    assert argv[argv.index("--generation") + 1] == "padded"  # python -m eval's own default is rounds
    rounds = learning_proof.replace(scale, eval_generation="rounds")
    argv = learning_proof.eval_argv(tmp_path, tmp_path, "dev", tmp_path / "out", rounds, hardness=None, limit=None)
    assert argv[argv.index("--generation") + 1] == "rounds"


def test_seeds_pool_into_one_question_by_question_test_where_each_alone_is_too_small() -> None:
    runs = {}
    for seed in (0, 1):  # each seed: 3 gained, 1 lost (p = 0.62 alone); together 6 and 2
        runs[f"sft/seed{seed}/gpu"] = {"arm": "sft", "seed": seed, "evals": {"heldout": _heldout(0.5, "00010000")}}
        runs[f"easy/seed{seed}/gpu"] = {"arm": "easy", "seed": seed, "evals": {"heldout": _heldout(0.5, "11100000")}}
    rows = learning_proof.paired_rows({"runs": runs})
    assert rows[:2] == [f"| {seed} | sft -> easy | 8 | 1 -> 3 | 3 | 1 | 0.62 |" for seed in (0, 1)]
    assert rows[2] == f"| all 2 | sft -> easy | 16 | 2 -> 6 | 6 | 2 | {learning_proof.mcnemar_p(6, 2):.2g} |"
    easy_row = learning_proof.curriculum_target_rows({"runs": runs})[3]
    assert easy_row[1].endswith("question by question over 2 seeds: 6 gained, 2 lost (p=0.29)")
    assert easy_row[2] == "within the warm-ups' seed spread"  # 6 against 2 is not yet a measurable gain
    more = dict(runs)
    for seed in (2, 3, 4):  # 15 gained against 5 lost is
        more[f"sft/seed{seed}/gpu"] = runs["sft/seed0/gpu"] | {"seed": seed}
        more[f"easy/seed{seed}/gpu"] = runs["easy/seed0/gpu"] | {"seed": seed}
    assert learning_proof.curriculum_target_rows({"runs": more})[3][2] == (
        "a gain (question by question), within the warm-ups' seed spread")
    for seed in (0, 1, 2, 3, 4):  # a 10-point gain in every seed: beyond the warm-ups' spread as well
        more[f"easy/seed{seed}/gpu"] = more[f"easy/seed{seed}/gpu"] | {"evals": {"heldout": _heldout(0.6, "11100000")}}
    assert learning_proof.curriculum_target_rows({"runs": more})[3][2] == (
        "a gain (question by question), more than the warm-ups' seed spread")
    del runs["easy/seed1/gpu"]
    assert [row for row in learning_proof.paired_rows({"runs": runs}) if row.startswith("| all")] == []


def _grpo_run(arm: str, seed: int, overall: float, outcomes: str, zero_share: float, reward: float,
              scale: str = "gpu") -> dict:
    curves = [{"reward": reward, "frac_reward_zero_std": zero_share, "episode/post_episode_calls": 0.0}] * 3
    return {"arm": arm, "seed": seed, "scale": scale, "curves": curves,
            "evals": {"heldout": dict(_heldout(overall, outcomes), accuracy={"overall": overall, "hard": overall})}}


def _row(runs: dict, check: str) -> tuple[str, str, str]:
    """The verification row whose check starts with ``check``."""
    return next(row for row in learning_proof.verification_rows({"runs": runs}) if row[0].startswith(check))


def test_an_ablation_is_compared_with_its_full_setting_of_the_same_seed_and_scale_only() -> None:
    runs = {"easy/seed4/gpu": _grpo_run("easy", 4, 0.75, "1110", zero_share=0.25, reward=0.6),
            "ng4/seed4/gpu": _grpo_run("ng4", 4, 0.50, "1001", zero_share=0.40, reward=0.5),
            "ng4/seed5/gpu": _grpo_run("ng4", 5, 0.25, "1000", zero_share=0.50, reward=0.4),  # no easy of seed 5
            "ng4/seed4/quick": _grpo_run("ng4", 4, 0.0, "0000", zero_share=1.0, reward=0.0, scale="quick")}
    rows = learning_proof.ablation_rows({"runs": runs})
    assert rows == [("| ng4 | easy | 4 | 3 / 3 | 75.0% vs 50.0% | -25.0 | 1 / 2 (p=1) | 75.0% vs 50.0% | "
                     "25.0% vs 40.0% | 0.600 vs 0.500 | 0.000 vs 0.000 |")]
    check = _row(runs, "zero-advantage groups")
    assert check[1:] == ("seed 4: 25.0% vs 40.0%", "fewer with 6 (one seed)")
    runs["ng4/seed4/gpu"] = _grpo_run("ng4", 4, 0.50, "1001", zero_share=0.20, reward=0.5)
    assert _row(runs, "zero-advantage groups")[2] == "not fewer with 6 (one seed)"
    few_shot = [row for row in learning_proof.verification_rows({"runs": runs}) if row[0].startswith("few-shot")]
    assert [verdict for _, _, verdict in few_shot] == ["not run", "not run"]


def test_the_reward_slope_is_judged_across_seeds_when_no_seed_alone_separates_it_from_flat() -> None:
    noisy_rising = [(0.0046, 0.0032, 0.16), (0.0042, 0.0026, 0.12), (0.0040, 0.0029, 0.18), (0.0019, 0.0028, 0.51)]
    _, text, verdict = learning_proof.reward_slope_row(noisy_rising)
    assert verdict == "rising across seeds, not within one" and "(n=4, t-test p=0.0089)" in text
    one_falling = [*noisy_rising[:3], (-0.004, 0.003, 0.2)]
    assert learning_proof.reward_slope_row(one_falling)[2] == "not distinguishable from flat"
    assert learning_proof.reward_slope_row(noisy_rising[:2])[2] == "not distinguishable from flat"
    assert learning_proof.reward_slope_row([(0.01, 0.002, 0.001)])[2] == "rising in every seed"
    assert learning_proof.reward_slope_row([None])[1:] == ("not run", "not run")


def test_what_relaxed_matching_adds_is_read_from_evals_that_recorded_the_exact_text_verdict() -> None:
    def run(arm: str, seed: int, relaxed: float, exact: float | None) -> dict:
        heldout = _heldout(relaxed) | {"exact_text_accuracy": {"overall": exact}}
        return {"arm": arm, "seed": seed, "evals": {"heldout": heldout}}

    runs = {"sft/seed0/gpu": run("sft", 0, 0.40, 0.38), "easy/seed0/gpu": run("easy", 0, 0.42, 0.41),
            "easy/seed1/gpu": run("easy", 1, 0.44, None)}  # an older eval: no exact-text verdict
    check, text, verdict = learning_proof.relaxed_matching_row({"runs": runs})
    assert text == "sft 40.0% (n=1) vs 38.0% (n=1); easy 42.0% (n=1) vs 41.0% (n=1)"
    assert verdict == "adds 1.5 points (mean of 2 evals)"
    assert learning_proof.relaxed_matching_row({"runs": {"easy/seed1/gpu": runs["easy/seed1/gpu"]}})[2] == "not run"
    groups = {group: {"accuracy": 0.5, "exact_text_accuracy": 0.25, "n": 2} for group in learning_proof.HARDNESS}
    groups["overall"] |= {"answered": 1.0, "post_episode_calls": 0.0, "tool_error_rate": 0.0, "mean_steps": 3.0}
    summary = learning_proof.summarize({"by_hardness": groups, "timing": {"elapsed_s": 1.0}, "questions": []})
    assert summary["exact_text_accuracy"]["overall"] == 0.25


def test_an_ablations_difference_inside_its_noise_is_said_to_be_so() -> None:
    def run(arm: str, rewards: list[float], hard: float) -> dict:
        heldout = _heldout(0.4) | {"accuracy": {"overall": 0.4, "hard": hard}, "n": {"hard": 100}}
        return {"arm": arm, "seed": 5, "scale": "gpu", "evals": {"heldout": heldout},
                "curves": [{"reward": reward, "frac_reward_zero_std": 0.3} for reward in rewards]}

    def few_shot_rows(runs: dict) -> list[tuple[str, str, str]]:
        return [row for row in learning_proof.verification_rows({"runs": runs}) if row[0].startswith("few-shot")]

    apart = {"easy/seed5/gpu": run("easy", [0.8, 0.9] * 10, hard=0.30),  # 30 of 100 against 10 of 100
             "no-fewshot/seed5/gpu": run("no-fewshot", [0.2, 0.3] * 10, hard=0.10)}
    (_, reward_text, reward_verdict), (_, hard_text, hard_verdict) = few_shot_rows(apart)
    assert reward_verdict == hard_verdict == "higher with examples (one seed)"
    assert reward_text.startswith("seed 5: 0.850 vs 0.250 (p=") and hard_text.startswith("seed 5: 30.0% vs 10.0% (p=")
    close = {"easy/seed5/gpu": run("easy", [0.5, 0.9] * 10, hard=0.12),  # 12 of 100 against 10 of 100
             "no-fewshot/seed5/gpu": run("no-fewshot", [0.4, 0.9] * 10, hard=0.10)}
    assert [verdict for *_, verdict in few_shot_rows(close)] == ["higher with examples, within the noise (one seed)"] * 2
    assert learning_proof.held_out_group_p("hard")(close["easy/seed5/gpu"], close["no-fewshot/seed5/gpu"]) > 0.5
    worse = close | {"easy/seed5/gpu": run("easy", [0.1, 0.2] * 10, hard=0.05)}
    assert [verdict for *_, verdict in few_shot_rows(worse)] == ["not higher with examples (one seed)"] * 2


def test_an_arms_mean_curve_averages_the_seeds_that_reach_each_step() -> None:
    assert learning_proof.mean_over_runs([[0.0, 1.0, 1.0], [1.0, 0.0]]) == [0.5, 0.5, 1.0]
    assert learning_proof.mean_over_runs([]) == []


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
    monkeypatch.setattr(learning_proof.train, "main", _fake_train)
    monkeypatch.setattr(learning_proof, "run_eval", lambda *args, **kwargs: pytest.fail("a train-only arm evaluated"))
    scale, work = learning_proof.SCALES["quick"], tmp_path / "work"
    sft = learning_proof.run_arm(learning_proof.ARMS["sft"], scale, tmp_path, BUILTIN_DATA_DIR, work, 3, evaluate=False)
    assert sft["evals"] == {} and sft["seconds"] == sft["train_seconds"]
    assert sft["warm_up_digest"] == sft["adapter_digest"] == learning_proof.adapter_digest(
        learning_proof.adapter_of(work, "sft", 3))
    easy = learning_proof.run_arm(learning_proof.ARMS["easy"], scale, tmp_path, BUILTIN_DATA_DIR, work, 3,
                                  evaluate=False)
    assert easy["warm_up_digest"] == sft["adapter_digest"] != easy["adapter_digest"]
    mixed_only = learning_proof.run_arm(learning_proof.ARMS["mixed-only"], scale, tmp_path, BUILTIN_DATA_DIR, work, 3,
                                        evaluate=False)
    assert mixed_only["warm_up_digest"] == sft["adapter_digest"]
    no_sft = learning_proof.run_arm(learning_proof.ARMS["no-sft"], scale, tmp_path, BUILTIN_DATA_DIR, work, 3,
                                    evaluate=False)
    assert "warm_up_digest" not in no_sft  # GRPO from the base model: no warm-up to share


def test_arms_pair_up_only_when_they_started_from_the_same_warm_up() -> None:
    def run(arm: str, outcomes: str, warm_up: str | None) -> dict:
        entry = _grpo_run(arm, 6, outcomes.count("1") / 4, outcomes, zero_share=0.25, reward=0.5)
        return entry if warm_up is None else dict(entry, warm_up_digest=warm_up)

    runs = {"sft/seed6/gpu": run("sft", "1000", "a"), "easy/seed6/gpu": run("easy", "1100", "a"),
            "mixed/seed6/gpu": run("mixed", "1110", "a"), "mixed-only/seed6/gpu": run("mixed-only", "1111", "a")}
    assert len(learning_proof.paired_rows({"runs": runs})) == 3
    assert [seed for seed, _, _ in learning_proof.ablation_pairs({"runs": runs}, "mixed-only")] == [6]
    assert learning_proof.gains_over_warm_up({"runs": runs}, "mixed") == [0.5]
    # The warm-up trained again in a later session came out other weights: its arms no longer pair with the
    # arms of the first one, whatever their seed says.
    retrained = dict(runs, **{"sft/seed6/gpu": run("sft", "0000", "b"), "mixed-only/seed6/gpu":
                              run("mixed-only", "1111", "b")})
    assert learning_proof.paired_rows({"runs": retrained}) == ["| 6 | easy -> mixed | 4 | 2 -> 3 | 1 | 0 | 1 |"]
    assert learning_proof.ablation_pairs({"runs": retrained}, "mixed-only") == []
    assert learning_proof.gains_over_warm_up({"runs": retrained}, "mixed") == []
    # Runs from before the digests were recorded pair as they always did (one session, one warm-up per seed).
    undigested = {key: {name: value for name, value in entry.items() if name != "warm_up_digest"}
                  for key, entry in retrained.items()}
    assert len(learning_proof.paired_rows({"runs": undigested})) == 3


def test_train_only_arms_run_without_evals_and_the_report_shows_them_not_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[tuple[str, bool]] = []

    def fake_arm(arm, scale, model, data, work, seed, evaluate=True):  # run_arm's shape
        asked.append((arm.name, evaluate))
        evals = {"heldout": _heldout(0.5, "1100") | {"mean_steps": 3.0}} if evaluate else {}
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


def test_every_arm_knows_its_warm_up_and_the_habit_warm_up_learns_to_keep_calling(tmp_path: Path) -> None:
    warm_ups = {name: learning_proof.warm_up_of(arm) for name, arm in learning_proof.ARMS.items()}
    assert warm_ups == {"base": None, "sft": "sft", "easy": "sft", "mixed": "sft", "ng4": "sft", "no-penalty": "sft",
                        "no-fewshot": "sft", "no-sft": None, "mixed-only": "sft", "mixed-informative": "sft",
                        "sft-habit": "sft-habit", "easy-habit": "sft-habit", "no-penalty-habit": "sft-habit"}
    scale = learning_proof.SCALES["gpu"]
    argv = learning_proof.train_argv(learning_proof.ARMS["sft-habit"], scale, tmp_path, BUILTIN_DATA_DIR, tmp_path, 8)
    agent, _, _ = learning_proof.train.parse_config(argv)
    assert agent.sft_never_stop_share == learning_proof.HABIT_SHARE > 0
    plain = learning_proof.train_argv(learning_proof.ARMS["sft"], scale, tmp_path, BUILTIN_DATA_DIR, tmp_path, 8)
    assert learning_proof.train.parse_config(plain)[0].sft_never_stop_share == 0
    with pytest.raises(FileNotFoundError, match="run --arms sft-habit first"):
        learning_proof.train_argv(learning_proof.ARMS["no-penalty-habit"], scale, tmp_path, BUILTIN_DATA_DIR,
                                  tmp_path, 8)


def test_a_habit_arm_records_the_habit_warm_up_as_its_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(learning_proof.train, "main", _fake_train)
    scale, work = learning_proof.SCALES["quick"], tmp_path / "work"
    entries = {name: learning_proof.run_arm(learning_proof.ARMS[name], scale, tmp_path, BUILTIN_DATA_DIR, work, 8,
                                            evaluate=False) for name in ("sft", "sft-habit", "no-penalty-habit")}
    assert entries["sft"]["adapter_digest"] != entries["sft-habit"]["adapter_digest"]
    assert entries["no-penalty-habit"]["warm_up_digest"] == entries["sft-habit"]["adapter_digest"]


def test_the_penalty_is_judged_by_the_calls_after_the_episode_with_and_without_it_from_the_habit_warm_up() -> None:
    def run(arm: str, calls: list[float], held_out_calls: float) -> dict:
        entry = _grpo_run(arm, 8, 0.5, "1100", zero_share=0.25, reward=0.5)
        entry["curves"] = [{"reward": 0.5, "episode/post_episode_calls": value} for value in calls]
        entry["evals"]["heldout"]["post_episode_calls"] = held_out_calls
        return dict(entry, warm_up_digest="h")

    runs = {"sft-habit/seed8/gpu": dict(run("sft-habit", [], 0.9), curves=[]),
            "easy-habit/seed8/gpu": run("easy-habit", [1.0] * 10 + [0.4, 0.1] * 10, 0.05),
            "no-penalty-habit/seed8/gpu": run("no-penalty-habit", [1.0] * 10 + [0.9, 1.1] * 10, 0.8)}
    training, held_out = (_row(runs, "the post-episode penalty: " + kind) for kind in ("calls", "held-out"))
    assert training[1].startswith("seed 8: 0.250 vs 1.000 (p=") and training[2] == "fewer with the penalty (one seed)"
    assert held_out[1:] == ("seed 8: 0.050 vs 0.800", "fewer with the penalty (one seed)")
    assert [row for row in learning_proof.ablation_rows({"runs": runs}) if "| no-penalty-habit | easy-habit |" in row]
    # A penalty arm from another warm-up is not compared.
    runs["no-penalty-habit/seed8/gpu"]["warm_up_digest"] = "other"
    assert _row(runs, "the post-episode penalty: calls")[1:] == ("not run", "not run")


def test_the_report_says_which_pooled_runs_are_shorter_and_which_runs_were_only_trained(tmp_path: Path) -> None:
    def run(arm: str, seed: int, steps: int, evaluated: bool = True) -> dict:
        entry = _grpo_run(arm, seed, 0.5, "1100", zero_share=0.25, reward=0.5)
        entry |= {"curves": entry["curves"][:1] * steps, "seconds": 10.0, "commit": "abc1234", "commands": []}
        return entry if evaluated else dict(entry, evals={})

    runs = {"mixed/seed0/gpu": run("mixed", 0, 40), "mixed/seed2/gpu": run("mixed", 2, 40),
            "mixed/seed7/gpu": run("mixed", 7, 30), "easy/seed7/gpu": run("easy", 7, 30, evaluated=False),
            "easy/seed0/gpu": run("easy", 0, 40)}
    assert learning_proof.pooled_lengths({"runs": runs}) == ["mixed: 40 (seeds 0, 2), 30 (seed 7)"]
    learning_proof.write_report({"runs": runs}, tmp_path / "report.md", tmp_path / "figures", tmp_path / "r.json")
    report = (tmp_path / "report.md").read_text()
    assert "Pooled runs of different lengths (GRPO steps): mixed: 40 (seeds 0, 2), 30 (seed 7)." in report
    assert "| easy | 7 | gpu | 30 | - | 10 s (trained only) |" in report
    assert "| easy | 0 | gpu | 40 | - | 10 s |" in report
