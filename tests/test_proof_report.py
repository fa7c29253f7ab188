"""experiments/proof_report.py: the learning proof's report drawn from a results file, and the statistics behind
it (runs paired by seed, scale and warm-up; McNemar, Welch and Fisher tests; reward slopes; seeds pooled). Results
are built in the test or read from the committed file; nothing here trains or evaluates."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

EXPERIMENTS = Path(__file__).resolve().parents[1] / "experiments"
sys.path.insert(0, str(EXPERIMENTS))
import proof_report  # noqa: E402

RESULTS = EXPERIMENTS.parent / "docs" / "learning_proof" / "results.json"  # the committed measurements


def test_the_report_imports_no_training_stack() -> None:
    # A fresh interpreter: in this one other tests may have imported torch already.
    code = ("import sys; import proof_report; "
            "print(sorted({'train', 'torch', 'unsloth', 'transformers', 'trl'} & set(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], cwd=EXPERIMENTS, capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]"


def test_a_report_of_nothing_yet_says_not_run(tmp_path: Path) -> None:
    proof_report.write_report({"runs": {}}, tmp_path / "report.md", tmp_path / "figures", tmp_path / "r.json")
    report = (tmp_path / "report.md").read_text()
    assert "| base |" not in report and "| no OOM with 6 generations" in report
    never_run = next(line for line in report.splitlines() if line.startswith("Not run in these results: "))
    assert never_run.startswith("Not run in these results: base, sft, easy, mixed,")


def test_a_run_missing_an_eval_shows_not_run_there_and_its_other_numbers(tmp_path: Path) -> None:
    measured = json.loads(RESULTS.read_text())["runs"]["base/seed0/gpu"]
    cut_short = dict(measured, arm="sft", evals={"heldout": measured["evals"]["heldout"]})  # no train_easy eval
    part = dict(measured, arm="easy", evals={"heldout_first150": measured["evals"]["heldout"]})  # part of a split
    proof_report.write_report({"runs": {"sft/seed0/gpu": cut_short, "easy/seed0/gpu": part}}, tmp_path / "report.md",
                                tmp_path / "figures", tmp_path / "r.json")
    lines = (tmp_path / "report.md").read_text().splitlines()
    row = next(line for line in lines if line.startswith("| sft |"))
    assert row.startswith("| sft | 0.0% (n=1)") and row.endswith("| not run |")
    assert next(line for line in lines if line.startswith("| easy |")).startswith("| easy | not run |")
    assert "| easy/seed0/gpu | heldout_first150 | 614 | 0.0% |" in lines[lines.index(
        next(line for line in lines if line.startswith("Other evals:"))) + 4]


def _heldout(overall: float, outcomes: str = "", digest: str = "d") -> dict:
    return {"accuracy": {"overall": overall}, "answered": 0.99, "outcomes": outcomes, "questions_digest": digest}


def test_arms_of_one_seed_compare_question_by_question_only_over_the_same_questions() -> None:
    runs = {"sft/seed0/gpu": {"arm": "sft", "seed": 0, "evals": {"heldout": _heldout(0.5, "1100")}},
            "easy/seed0/gpu": {"arm": "easy", "seed": 0, "evals": {"heldout": _heldout(0.75, "1011")}},
            "mixed/seed0/gpu": {"arm": "mixed", "seed": 0, "evals": {"heldout": _heldout(1.0, "1111", "other")}}}
    rows = proof_report.paired_rows({"runs": runs})
    assert rows == ["| 0 | sft -> easy | 4 | 2 -> 3 | 2 | 1 | 1 |"]  # mixed ran other questions: no pair
    assert proof_report.mcnemar_p(7, 2) == pytest.approx(0.1797, abs=1e-4)
    assert proof_report.mcnemar_p(0, 0) == 1.0


def test_arms_of_one_seed_also_pair_up_class_by_class_where_the_evals_kept_each_questions_class() -> None:
    def run(arm: str, seed: int, outcomes: str, classes: str | None) -> dict:
        heldout = _heldout(outcomes.count("1") / len(outcomes), outcomes)
        if classes:
            heldout["hardness_by_question"] = classes
        return {"arm": arm, "seed": seed, "evals": {"heldout": heldout}}

    #            questions: e  m  m  m  h  x
    runs = {"sft/seed0/gpu": run("sft", 0, "100001", "emmmhx"),
            "easy/seed0/gpu": run("easy", 0, "011100", None),  # one side of a pair keeping the classes is enough
            "sft/seed1/gpu": run("sft", 1, "000000", "emmmhx"),
            "easy/seed1/gpu": run("easy", 1, "011110", "emmmhx")}
    rows = proof_report.paired_hardness_rows({"runs": runs})
    assert rows == ["| 0 | sft -> easy | 0 / 1 (1) | 3 / 0 (0.25) | 0 / 0 (1) | 0 / 1 (1) |",
                    "| 1 | sft -> easy | 0 / 0 (1) | 3 / 0 (0.25) | 1 / 0 (1) | 0 / 0 (1) |",
                    "| all 2 | sft -> easy | 0 / 1 (1) | 6 / 0 (0.031) | 1 / 0 (1) | 0 / 1 (1) |"]
    assert proof_report.paired_rows({"runs": runs})[0] == "| 0 | sft -> easy | 6 | 2 -> 3 | 3 | 2 | 1 |"
    # Neither side kept the classes (results from before 2026-12-06f): no class-by-class row, the overall one stays.
    for key in ("sft/seed0/gpu", "sft/seed1/gpu", "easy/seed1/gpu"):
        del runs[key]["evals"]["heldout"]["hardness_by_question"]
    assert proof_report.paired_hardness_rows({"runs": runs}) == []
    assert len(proof_report.paired_rows({"runs": runs})) == 3


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
        return [verdict for _, _, verdict in proof_report.curriculum_target_rows(measured_results)]

    assert verdicts({"runs": {}}) == ["not run"] * 4
    assert verdicts(results([0.420], [0.423]))[:3] == ["pass", "pass", "fail"]  # 40% reached, GRPO added 0.3 points
    # The easy phase alone, against the same seeds' warm-ups, where it has more seeds than the mixed phase:
    easy_row = proof_report.curriculum_target_rows(results([0.30, 0.32, 0.31], [0.36], easy=(0.40, 0.33, 0.31)))[3]
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
        return proof_report.verification_rows({"runs": runs})[0]

    assert memory_row({"a": grpo(60.4, peak_memory_is_the_phases=False), "b": grpo(7.0)})[1:] == (
        "7.00 GiB (1 run(s) left out: their counter included earlier evals)", "pass")
    assert memory_row({"a": grpo(60.4, peak_memory_is_the_phases=False)})[2] == "not run"
    assert memory_row({"b": grpo(23.0)})[2] == "fail"
    # The 1.5B's mixed phase: reserved 23.09 GiB of cached graph pools over an allocated peak of 17.13 (2026-12-06f).
    grown = grpo(23.09)
    grown["curves"][0]["gpu/peak_allocated_gib"] = 17.13
    assert memory_row({"b": grown})[1:] == ("23.09 GiB (17.13 GiB allocated, 1 of 1 run(s) logged it)",
                                           "pass by the allocated peak (the reserved one holds cached graph pools, "
                                           "released before a failure)")
    grown["curves"][0]["gpu/peak_allocated_gib"] = 22.6  # allocated over the budget too: no excuse
    assert memory_row({"b": grown})[2] == "fail"


def test_what_grpo_adds_is_measured_against_the_warm_up_of_the_same_seed_and_scale() -> None:
    def run(arm: str, scale: str, overall: float) -> dict:
        return {"arm": arm, "seed": 0, "scale": scale, "evals": {"heldout": _heldout(overall)}}

    runs = {"sft/seed0/gpu": run("sft", "gpu", 0.40), "sft/seed0/quick": run("sft", "quick", 0.90),
            "mixed/seed0/gpu": run("mixed", "gpu", 0.46)}
    (_, gain, _), = [row for row in proof_report.curriculum_target_rows({"runs": runs}) if row[0].startswith("GRPO")]
    assert gain.startswith("6.0 points (n=1)")  # against the gpu warm-up, not the quick one


def test_seeds_pool_into_one_question_by_question_test_where_each_alone_is_too_small() -> None:
    runs = {}
    for seed in (0, 1):  # each seed: 3 gained, 1 lost (p = 0.62 alone); together 6 and 2
        runs[f"sft/seed{seed}/gpu"] = {"arm": "sft", "seed": seed, "evals": {"heldout": _heldout(0.5, "00010000")}}
        runs[f"easy/seed{seed}/gpu"] = {"arm": "easy", "seed": seed, "evals": {"heldout": _heldout(0.5, "11100000")}}
    rows = proof_report.paired_rows({"runs": runs})
    assert rows[:2] == [f"| {seed} | sft -> easy | 8 | 1 -> 3 | 3 | 1 | 0.62 |" for seed in (0, 1)]
    assert rows[2] == f"| all 2 | sft -> easy | 16 | 2 -> 6 | 6 | 2 | {proof_report.mcnemar_p(6, 2):.2g} |"
    easy_row = proof_report.curriculum_target_rows({"runs": runs})[3]
    assert easy_row[1].endswith("question by question over 2 seeds: 6 gained, 2 lost (p=0.29)")
    assert easy_row[2] == "within the warm-ups' seed spread"  # 6 against 2 is not yet a measurable gain
    more = dict(runs)
    for seed in (2, 3, 4):  # 15 gained against 5 lost is
        more[f"sft/seed{seed}/gpu"] = runs["sft/seed0/gpu"] | {"seed": seed}
        more[f"easy/seed{seed}/gpu"] = runs["easy/seed0/gpu"] | {"seed": seed}
    assert proof_report.curriculum_target_rows({"runs": more})[3][2] == (
        "a gain (question by question), within the warm-ups' seed spread")
    for seed in (0, 1, 2, 3, 4):  # a 10-point gain in every seed: beyond the warm-ups' spread as well
        more[f"easy/seed{seed}/gpu"] = more[f"easy/seed{seed}/gpu"] | {"evals": {"heldout": _heldout(0.6, "11100000")}}
    assert proof_report.curriculum_target_rows({"runs": more})[3][2] == (
        "a gain (question by question), more than the warm-ups' seed spread")
    del runs["easy/seed1/gpu"]
    assert [row for row in proof_report.paired_rows({"runs": runs}) if row.startswith("| all")] == []


def _grpo_run(arm: str, seed: int, overall: float, outcomes: str, zero_share: float, reward: float,
              scale: str = "gpu") -> dict:
    curves = [{"reward": reward, "frac_reward_zero_std": zero_share, "episode/post_episode_calls": 0.0}] * 3
    return {"arm": arm, "seed": seed, "scale": scale, "curves": curves,
            "evals": {"heldout": dict(_heldout(overall, outcomes), accuracy={"overall": overall, "hard": overall})}}


def _row(runs: dict, check: str) -> tuple[str, str, str]:
    """The verification row whose check starts with ``check``."""
    return next(row for row in proof_report.verification_rows({"runs": runs}) if row[0].startswith(check))


def test_an_ablation_is_compared_with_its_full_setting_of_the_same_seed_and_scale_only() -> None:
    runs = {"easy/seed4/gpu": _grpo_run("easy", 4, 0.75, "1110", zero_share=0.25, reward=0.6),
            "ng4/seed4/gpu": _grpo_run("ng4", 4, 0.50, "1001", zero_share=0.40, reward=0.5),
            "ng4/seed5/gpu": _grpo_run("ng4", 5, 0.25, "1000", zero_share=0.50, reward=0.4),  # no easy of seed 5
            "ng4/seed4/quick": _grpo_run("ng4", 4, 0.0, "0000", zero_share=1.0, reward=0.0, scale="quick")}
    rows = proof_report.ablation_rows({"runs": runs})
    assert rows == [("| ng4 | easy | 4 | 3 / 3 | 75.0% vs 50.0% | -25.0 | 1 / 2 (p=1) | 75.0% vs 50.0% | "
                     "25.0% vs 40.0% | 0.600 vs 0.500 | 0.000 vs 0.000 |")]
    check = _row(runs, "zero-advantage groups")
    assert check[1:] == ("seed 4: 25.0% vs 40.0%", "fewer with 6 (one seed)")
    runs["ng4/seed4/gpu"] = _grpo_run("ng4", 4, 0.50, "1001", zero_share=0.20, reward=0.5)
    assert _row(runs, "zero-advantage groups")[2] == "not fewer with 6 (one seed)"
    few_shot = [row for row in proof_report.verification_rows({"runs": runs}) if row[0].startswith("few-shot")]
    assert [verdict for _, _, verdict in few_shot] == ["not run", "not run"]


def test_the_reward_slope_is_judged_across_seeds_when_no_seed_alone_separates_it_from_flat() -> None:
    noisy_rising = [(0.0046, 0.0032, 0.16), (0.0042, 0.0026, 0.12), (0.0040, 0.0029, 0.18), (0.0019, 0.0028, 0.51)]
    _, text, verdict = proof_report.reward_slope_row(noisy_rising)
    assert verdict == "rising across seeds, not within one" and "(n=4, t-test p=0.0089)" in text
    one_falling = [*noisy_rising[:3], (-0.004, 0.003, 0.2)]
    assert proof_report.reward_slope_row(one_falling)[2] == "not distinguishable from flat"
    assert proof_report.reward_slope_row(noisy_rising[:2])[2] == "not distinguishable from flat"
    assert proof_report.reward_slope_row([(0.01, 0.002, 0.001)])[2] == "rising in every seed"
    assert proof_report.reward_slope_row([None])[1:] == ("not run", "not run")


def test_what_relaxed_matching_adds_is_read_from_evals_that_recorded_the_exact_text_verdict() -> None:
    def run(arm: str, seed: int, relaxed: float, exact: float | None) -> dict:
        heldout = _heldout(relaxed) | {"exact_text_accuracy": {"overall": exact}}
        return {"arm": arm, "seed": seed, "evals": {"heldout": heldout}}

    runs = {"sft/seed0/gpu": run("sft", 0, 0.40, 0.38), "easy/seed0/gpu": run("easy", 0, 0.42, 0.41),
            "easy/seed1/gpu": run("easy", 1, 0.44, None)}  # an older eval: no exact-text verdict
    check, text, verdict = proof_report.relaxed_matching_row({"runs": runs})
    assert text == "sft 40.0% (n=1) vs 38.0% (n=1); easy 42.0% (n=1) vs 41.0% (n=1)"
    assert verdict == "adds 1.5 points (mean of 2 evals)"
    assert proof_report.relaxed_matching_row({"runs": {"easy/seed1/gpu": runs["easy/seed1/gpu"]}})[2] == "not run"


def test_an_ablations_difference_inside_its_noise_is_said_to_be_so() -> None:
    def run(arm: str, rewards: list[float], hard: float) -> dict:
        heldout = _heldout(0.4) | {"accuracy": {"overall": 0.4, "hard": hard}, "n": {"hard": 100}}
        return {"arm": arm, "seed": 5, "scale": "gpu", "evals": {"heldout": heldout},
                "curves": [{"reward": reward, "frac_reward_zero_std": 0.3} for reward in rewards]}

    def few_shot_rows(runs: dict) -> list[tuple[str, str, str]]:
        return [row for row in proof_report.verification_rows({"runs": runs}) if row[0].startswith("few-shot")]

    apart = {"easy/seed5/gpu": run("easy", [0.8, 0.9] * 10, hard=0.30),  # 30 of 100 against 10 of 100
             "no-fewshot/seed5/gpu": run("no-fewshot", [0.2, 0.3] * 10, hard=0.10)}
    (_, reward_text, reward_verdict), (_, hard_text, hard_verdict) = few_shot_rows(apart)
    assert reward_verdict == hard_verdict == "higher with examples (one seed)"
    assert reward_text.startswith("seed 5: 0.850 vs 0.250 (p=") and hard_text.startswith("seed 5: 30.0% vs 10.0% (p=")
    close = {"easy/seed5/gpu": run("easy", [0.5, 0.9] * 10, hard=0.12),  # 12 of 100 against 10 of 100
             "no-fewshot/seed5/gpu": run("no-fewshot", [0.4, 0.9] * 10, hard=0.10)}
    assert [verdict for *_, verdict in few_shot_rows(close)] == ["higher with examples, within the noise (one seed)"] * 2
    assert proof_report.held_out_group_p("hard")(close["easy/seed5/gpu"], close["no-fewshot/seed5/gpu"]) > 0.5
    worse = close | {"easy/seed5/gpu": run("easy", [0.1, 0.2] * 10, hard=0.05)}
    assert [verdict for *_, verdict in few_shot_rows(worse)] == ["not higher with examples (one seed)"] * 2


def test_an_arms_mean_curve_averages_the_seeds_that_reach_each_step() -> None:
    assert proof_report.mean_over_runs([[0.0, 1.0, 1.0], [1.0, 0.0]]) == [0.5, 0.5, 1.0]
    assert proof_report.mean_over_runs([]) == []


def test_arms_pair_up_only_when_they_started_from_the_same_warm_up() -> None:
    def run(arm: str, outcomes: str, warm_up: str | None) -> dict:
        entry = _grpo_run(arm, 6, outcomes.count("1") / 4, outcomes, zero_share=0.25, reward=0.5)
        return entry if warm_up is None else dict(entry, warm_up_digest=warm_up)

    runs = {"sft/seed6/gpu": run("sft", "1000", "a"), "easy/seed6/gpu": run("easy", "1100", "a"),
            "mixed/seed6/gpu": run("mixed", "1110", "a"), "mixed-only/seed6/gpu": run("mixed-only", "1111", "a")}
    assert len(proof_report.paired_rows({"runs": runs})) == 3
    assert [seed for seed, _, _ in proof_report.ablation_pairs({"runs": runs}, "mixed-only")] == [6]
    assert proof_report.gains_over_warm_up({"runs": runs}, "mixed") == [0.5]
    # The warm-up trained again in a later session came out other weights: its arms no longer pair with the
    # arms of the first one, whatever their seed says.
    retrained = dict(runs, **{"sft/seed6/gpu": run("sft", "0000", "b"), "mixed-only/seed6/gpu":
                              run("mixed-only", "1111", "b")})
    assert proof_report.paired_rows({"runs": retrained}) == ["| 6 | easy -> mixed | 4 | 2 -> 3 | 1 | 0 | 1 |"]
    assert proof_report.ablation_pairs({"runs": retrained}, "mixed-only") == []
    assert proof_report.gains_over_warm_up({"runs": retrained}, "mixed") == []
    # The first warm-up, kept under superseded when the second replaced it, still pairs with the arms grown from it;
    # the new warm-up pairs with the arms grown from it.
    kept = {"runs": retrained, "superseded": {"sft/seed6/gpu@abc": runs["sft/seed6/gpu"]}}
    assert proof_report.gains_over_warm_up(kept, "mixed") == [0.5]
    assert [(before["warm_up_digest"], after["arm"]) for _, before, after in proof_report.pairs_by_seed(
        kept, "sft", "mixed-only")] == [("b", "mixed-only")]
    # Runs from before the digests were recorded pair as they always did (one session, one warm-up per seed).
    undigested = {key: {name: value for name, value in entry.items() if name != "warm_up_digest"}
                  for key, entry in retrained.items()}
    assert len(proof_report.paired_rows({"runs": undigested})) == 3
    # The line whose mixed phase ran the sampler pairs with its easy phase and its warm-up too.
    informative = dict(runs, **{"mixed-informative/seed6/gpu": run("mixed-informative", "1111", "a")})
    assert [row for row in proof_report.paired_rows({"runs": informative}) if "informative" in row] == [
        "| 6 | easy -> mixed-informative | 4 | 2 -> 4 | 2 | 0 | 0.5 |",
        "| 6 | sft -> mixed-informative | 4 | 1 -> 4 | 3 | 0 | 0.25 |"]


def test_a_checkpoint_inside_a_run_is_compared_with_its_final_and_with_its_one_pass_twin_of_the_same_warm_up(
        ) -> None:
    def run(arm: str, outcomes: str, steps: int, warm_up: str, **evals: dict) -> dict:
        entry = _grpo_run(arm, 30, outcomes.count("1") / 4, outcomes, zero_share=0.25, reward=0.5, scale="epoch")
        entry["curves"] = [{"reward": 0.5}] * steps
        entry["evals"].update(evals)
        return dict(entry, warm_up_digest=warm_up)

    one_pass, two_passes = "mixed-informative-sft4x-lr5e-5-direct", "mixed-informative-sft4x-lr5e-5-direct-2epochs"
    runs = {f"{one_pass}/seed30/epoch": run(one_pass, "1000", 30, "a"),
            f"{two_passes}/seed30/epoch": run(two_passes, "1110", 60, "a", heldout_step30=_heldout(0.5, "1100"))}
    assert proof_report.checkpoint_rows({"runs": runs}) == [
        f"| 30 | {two_passes}@epoch: step 30 -> step 60 | 4 | 2 -> 3 | 1 | 0 | 1 |",
        f"| 30 | {one_pass}@epoch -> {two_passes}@epoch at step 30 | 4 | 1 -> 2 | 1 | 0 | 1 |"]
    # A twin of another warm-up, or one that trained another number of steps, is not the same setting run again.
    for twin in (run(one_pass, "1000", 30, "b"), run(one_pass, "1000", 29, "a")):
        assert proof_report.checkpoint_rows({"runs": dict(runs, **{f"{one_pass}/seed30/epoch": twin})}) == [
            f"| 30 | {two_passes}@epoch: step 30 -> step 60 | 4 | 2 -> 3 | 1 | 0 | 1 |"]


def test_what_most_adapters_of_one_warm_up_gain_or_lose_is_told_apart_from_questions_that_flip_run_to_run() -> None:
    warm_up = {"arm": "sft-4x", "seed": 30, "scale": "epoch", "adapter_digest": "w", "warm_up_digest": "w",
               "evals": {"heldout": _heldout(0.5, "110000")}}

    def run(arm: str, outcomes: str, warm_up_digest: str = "w", **evals: dict) -> dict:
        entry = _grpo_run(arm, 30, outcomes.count("1") / 6, outcomes, zero_share=0.25, reward=0.5, scale="epoch")
        entry["evals"].update(evals)
        return dict(entry, warm_up_digest=warm_up_digest, adapter_digest=arm)

    # Questions 3 and 4 are gained by most adapters (3 by all four), 1 lost by most; 5 and 6 flip once each.
    runs = {"sft-4x/seed30/epoch": warm_up,
            "a/seed30/epoch": run("mixed-informative-sft4x-lr5e-5-direct", "011100"),
            "b/seed30/epoch": run("mixed-informative-sft4x-lr5e-5-direct-2epochs", "011110",
                                  heldout_step30=_heldout(0.5, "011001")),
            "c/seed30/epoch": run("easy-sft4x", "111100")}
    assert proof_report.steady_rows({"runs": runs}) == [
        "| 30 | sft-4x@epoch | 4 | 6 | 2 (1) of 4 | 1 (0) of 2 | +1 (+16.7 points) |"]
    # A warm-up trained again since keeps its row beside the new one's: its adapters still grew from it.
    again = dict(warm_up, adapter_digest="w2", warm_up_digest="w2")
    moved = {"runs": {**runs, "sft-4x/seed30/epoch": again, "d/seed30/epoch": run("easy-sft4x", "000000", "w2")},
             "superseded": {"sft-4x/seed30/epoch@abc1234": warm_up}}
    assert proof_report.steady_rows(moved) == [
        "| 30 | sft-4x@epoch, trained again since | 4 | 6 | 2 (1) of 4 | 1 (0) of 2 | +1 (+16.7 points) |"]
    # Adapters of another warm-up, or evals of other questions, do not count; under three adapters, no row.
    runs["c/seed30/epoch"] = run("easy-sft4x", "111100", warm_up_digest="other")
    runs["b/seed30/epoch"]["evals"]["heldout_step30"]["questions_digest"] = "other"
    assert proof_report.steady_rows({"runs": runs}) == []


def test_a_larger_warm_ups_line_is_compared_with_the_scales_own_line_of_the_seed_and_gains_over_its_own_warm_up(
        ) -> None:
    def run(arm: str, outcomes: str, warm_up: str) -> dict:
        return dict(_grpo_run(arm, 7, outcomes.count("1") / 4, outcomes, zero_share=0.25, reward=0.5, scale="epoch"),
                    warm_up_digest=warm_up)

    runs = {"sft/seed7/epoch": run("sft", "1000", "a"), "mixed/seed7/epoch": run("mixed", "1100", "a"),
            "sft-4x/seed7/epoch": run("sft-4x", "1100", "b"), "mixed-sft4x/seed7/epoch": run("mixed-sft4x", "1111", "b")}
    # The two lines' warm-ups differ by design: they still pair, by seed and scale.
    assert [row.split(" | ")[:4] for row in proof_report.ablation_rows({"runs": runs})] == [
        ["| sft-4x@epoch", "sft@epoch", "7", "3 / 3"], ["| mixed-sft4x@epoch", "mixed@epoch", "7", "3 / 3"]]
    # What GRPO adds is measured against the warm-up each line grew from, never the other line's.
    assert proof_report.gains_over_warm_up({"runs": runs}, "mixed@epoch") == [0.25]
    assert proof_report.gains_over_warm_up({"runs": runs}, "mixed-sft4x@epoch") == [0.5]
    # A seed's mixed arm from another session's warm-up (other digest) still does not pair with this one.
    other = dict(runs, **{"mixed-lr5e-5/seed7/epoch": run("mixed-lr5e-5", "1111", "c")})
    assert proof_report.ablation_pairs({"runs": other}, "mixed-lr5e-5") == []


def test_each_final_adapter_is_drawn_against_its_own_warm_up_where_both_were_measured(tmp_path: Path) -> None:
    def run(arm: str, seed: int, overall: float, warm_up: str) -> dict:
        return {"arm": arm, "seed": seed, "scale": "epoch", "warm_up_digest": warm_up, "seconds": 60.0,
                "model": "/tmp/qc", "commit": "abc", "commands": [], "evals": {"heldout": _heldout(overall)}}

    runs = {"sft/seed1/epoch": run("sft", 1, 0.37, "a"), "mixed/seed1/epoch": run("mixed", 1, 0.41, "a"),
            "sft-4x/seed1/epoch": run("sft-4x", 1, 0.42, "b"),
            "mixed-sft4x/seed1/epoch": run("mixed-sft4x", 1, 0.47, "b"),
            "mixed/seed2/epoch": run("mixed", 2, 0.40, "c")}  # its warm-up was not evaluated: no point
    assert proof_report.against_warm_up({"runs": runs}, "mixed@epoch") == [(1, 0.37, 0.41)]
    assert proof_report.against_warm_up({"runs": runs}, "mixed-sft4x@epoch") == [(1, 0.42, 0.47)]
    (figure,) = proof_report.plot_final_against_warm_up({"runs": runs}, tmp_path)
    assert figure.name == "final_against_warm_up.png" and figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    proof_report.write_report({"runs": runs}, tmp_path / "report.md", tmp_path / "figures", tmp_path / "r.json")
    assert "![final_against_warm_up](figures/final_against_warm_up.png)" in (tmp_path / "report.md").read_text()
    assert proof_report.plot_final_against_warm_up({"runs": {"mixed/seed2/epoch": runs["mixed/seed2/epoch"]}},
                                                   tmp_path / "none") == []


def test_the_runs_table_says_which_card_each_run_timed_on(tmp_path: Path) -> None:
    def run(arm: str, seed: int, **recorded: str) -> dict:
        return {"arm": arm, "seed": seed, "scale": "epoch", "seconds": 60.0, "model": "/tmp/qc", "commit": "abc",
                "commands": [], "evals": {"heldout": _heldout(0.4)}, **recorded}

    runs = {"sft/seed1/epoch": run("sft", 1, device="NVIDIA H100 80GB HBM3", adapter_digest="c967101509d901e9"),
            "sft/seed2/epoch": run("sft", 2)}
    proof_report.write_report({"runs": runs}, tmp_path / "report.md", tmp_path / "figures", tmp_path / "r.json")
    rows = [line for line in (tmp_path / "report.md").read_text().splitlines() if line.startswith("| sft | ") and "| epoch |" in line]
    # "-": a run that did not record it; the digest names the adapter a later re-evaluation reads
    assert [row.split(" | ")[-3:] for row in rows] == [["H100 80GB HBM3", "abc", "c967101509d901e9 |"],
                                                       ["-", "abc", "- |"]]


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
    assert [row for row in proof_report.ablation_rows({"runs": runs}) if "| no-penalty-habit | easy-habit |" in row]
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
    assert proof_report.pooled_lengths({"runs": runs}) == ["mixed: 40 (seeds 0, 2), 30 (seed 7)"]
    proof_report.write_report({"runs": runs}, tmp_path / "report.md", tmp_path / "figures", tmp_path / "r.json")
    report = (tmp_path / "report.md").read_text()
    assert "Pooled runs of different lengths (GRPO steps): mixed: 40 (seeds 0, 2), 30 (seed 7)." in report
    assert "| easy | 7 | gpu | 30 | - | - | 10 s (trained only) |" in report
    assert "| easy | 0 | gpu | 40 | - | - | 10 s |" in report


def test_the_same_change_on_two_lines_pools_into_one_test_and_a_change_of_the_start_does_not() -> None:
    assert proof_report.lever_of("mixed-lr5e-5") == proof_report.lever_of("mixed-informative-sft4x-lr5e-5") == (
        "--learning_rate 5e-5")
    assert proof_report.lever_of("mixed-informative-sft4x-3steps") == "3 optimizer steps a generation batch"
    assert proof_report.lever_of("mixed-lr1e-4") is None  # it grows from easy-lr1e-4: two phases changed
    assert proof_report.lever_of("sft-4x-retry") is None  # retired: its flags meant something else then

    def run(arm: str, seed: int, outcomes: str) -> dict:
        entry = _grpo_run(arm, seed, outcomes.count("1") / 4, outcomes, zero_share=0.25, reward=0.5)
        return dict(entry, scale="epoch", warm_up_digest=str(seed))

    runs = {"mixed/seed27/epoch": run("mixed", 27, "1100"),
            "mixed-lr5e-5/seed27/epoch": run("mixed-lr5e-5", 27, "1110"),
            "mixed-informative-sft4x/seed30/epoch": run("mixed-informative-sft4x", 30, "0100"),
            "mixed-informative-sft4x-lr5e-5/seed30/epoch": run("mixed-informative-sft4x-lr5e-5", 30, "1011")}
    [row] = proof_report.lever_rows({"runs": runs})
    assert row == ("| `--learning_rate 5e-5` | mixed-lr5e-5@epoch vs mixed@epoch, seed 27: +25.0; "
                   "mixed-informative-sft4x-lr5e-5@epoch vs mixed-informative-sft4x@epoch, seed 30: +50.0 | "
                   "+37.5 ± 17.7 (n=2) | 4 / 1 (p=0.38, 2 pair(s)) |")
    del runs["mixed-lr5e-5/seed27/epoch"]
    assert proof_report.lever_rows({"runs": runs}) == []  # measured once: the ablation table has it


def test_an_ablation_pairs_with_its_full_setting_at_the_same_scale_only() -> None:
    def run(arm: str, scale: str, outcomes: str) -> dict:
        entry = _grpo_run(arm, 21, outcomes.count("1") / 4, outcomes, zero_share=0.25, reward=0.5)
        return dict(entry, scale=scale, warm_up_digest="a")

    runs = {"easy/seed21/epoch": run("easy", "epoch", "1100"),
            "easy-lr1e-4/seed21/epoch": run("easy-lr1e-4", "epoch", "1000"),
            "easy/seed21/gpu": run("easy", "gpu", "1111")}
    [(seed, full, ablated)] = proof_report.ablation_pairs({"runs": runs}, "easy-lr1e-4")
    assert (seed, full["scale"], ablated["arm"]) == (21, "epoch", "easy-lr1e-4")
    [row] = proof_report.ablation_rows({"runs": runs})
    assert row.startswith("| easy-lr1e-4@epoch | easy@epoch | 21 |") and "| -25.0 |" in row
    assert proof_report.ablation_pairs({"runs": {"easy/seed21/gpu": runs["easy/seed21/gpu"],
                                                 "easy-lr1e-4/seed21/epoch": runs["easy-lr1e-4/seed21/epoch"]}},
                                       "easy-lr1e-4") == []


def test_the_zero_advantage_share_counts_the_groups_trained_on() -> None:
    plain = {"curves": [{"frac_reward_zero_std": 0.4}, {"frac_reward_zero_std": 0.6}]}
    oversampled = {"curves": [{"frac_reward_zero_std": 0.4, "oversample/trained_zero_advantage_share": 0.0},
                              {"frac_reward_zero_std": 0.6, "oversample/trained_zero_advantage_share": 0.25}]}
    assert proof_report.trained_zero_share(plain) == 0.5  # every generated group was trained on
    assert proof_report.trained_zero_share(oversampled) == 0.125  # the alike groups dropped after generation
    oversampled["curves"][1]["oversample/trained_zero_advantage_share"] = 0.0
    assert proof_report.trained_zero_share(oversampled) == 0.0  # none trained on, whatever was generated


def test_the_zero_advantage_share_is_each_groups_own_where_the_run_logged_it() -> None:
    # Under scale_rewards='batch' TRL's frac_reward_zero_std tests the whole batch's spread and reads 0.
    batch_scaled = {"curves": [{"frac_reward_zero_std": 0.0, "episode/zero_advantage_groups": 0.5}] * 2}
    assert proof_report.trained_zero_share(batch_scaled) == 0.5
    assert proof_report.curve({"curves": [{"frac_reward_zero_std": 0.3}]}, proof_report.ZERO_SHARE) == [0.3]


def test_the_groups_spread_is_split_into_answers_shaping_and_none() -> None:
    # Before the share was logged, it is what the other three leave: all right 0.2 + none right 0.4 - no spread 0.5
    older = {"arm": "mixed", "seed": 1, "scale": "gpu",
             "curves": [{"episode/groups_all_correct": 0.2, "episode/groups_none_correct": 0.4,
                         "frac_reward_zero_std": 0.5}] * 10}
    logged = {"arm": "mixed", "seed": 2, "scale": "gpu",
              "curves": [{"episode/groups_all_correct": 0.2, "episode/groups_none_correct": 0.4,
                          "episode/zero_advantage_groups": 0.3, "episode/shaping_only_groups": 0.3,
                          "episode/shaping_only_advantage": 0.25}] * 10}
    assert proof_report.shaping_only_curve(older) == pytest.approx([0.1] * 10)
    [row] = proof_report.signal_rows({"runs": {"mixed/seed1/gpu": older}})
    assert row == "| mixed | 1 | 40.0% (40.0%) | 10.0% (10.0%) | 50.0% (50.0%) | not logged | not logged |"
    [row] = proof_report.signal_rows({"runs": {"mixed/seed2/gpu": logged}})
    assert row.endswith("| 30.0% (30.0%) | 30.0% (30.0%) | 25.0% (25.0%) | not logged |")
    # The sampler's deferrals: none in a first pass, some in a second (the last tenth is the last step of ten)
    two_passes = dict(logged, curves=[{**entry, "sampler/deferred": 0.0 if step < 5 else 4.0}
                                      for step, entry in enumerate(logged["curves"])])
    [row] = proof_report.signal_rows({"runs": {"mixed/seed3/gpu": two_passes}})
    assert row.endswith("| 25.0% (25.0%) | 2.0 (4.0) |")
    # --defer_by_class's own deferrals of questions never visited, beside them
    by_class = dict(logged, curves=[{**entry, "sampler/deferred": 0.0, "sampler/deferred_by_class": float(step)}
                                    for step, entry in enumerate(logged["curves"])])
    [row] = proof_report.signal_rows({"runs": {"mixed/seed4/gpu": by_class}})
    assert row.endswith("| 0.0 (0.0) + 4.5 (9.0) by class |")


def test_the_plan_scale_targets_are_read_line_by_line_against_each_seeds_own_warm_up() -> None:
    def run(arm: str, seed: int, overall: float, zero_shares: tuple[float, ...] = (), trained: bool = False) -> dict:
        key = "oversample/trained_zero_advantage_share" if trained else "frac_reward_zero_std"
        return {"arm": arm, "seed": seed, "scale": "epoch", "evals": {"heldout": _heldout(overall)},
                "curves": [{key: share} for share in zero_shares]}

    runs = {"sft/seed1/epoch": run("sft", 1, 0.37), "sft/seed2/epoch": run("sft", 2, 0.36),
            "easy/seed1/epoch": run("easy", 1, 0.40, (0.1,) * 9 + (0.3,)),
            "mixed-informative/seed1/epoch": run("mixed-informative", 1, 0.43, (0.4,) * 10),
            "mixed-informative/seed2/epoch": run("mixed-informative", 2, 0.42, (0.4,) * 10),
            "mixed-oversample/seed1/epoch": run("mixed-oversample", 1, 0.40, (0.0,) * 9 + (0.2,), trained=True),
            "mixed/seed1/gpu": {"arm": "mixed", "seed": 1, "evals": {"heldout": _heldout(0.50)}}}
    gain, dependence, final, share, by_answers = proof_report.plan_scale_rows({"runs": runs})
    assert gain[1] == ("mixed-informative@epoch: 6.0 points ± 0.0 (n=2); mixed-oversample@epoch: 3.0 points (n=1)")
    assert gain[2] == "5 points or more on mixed-informative@epoch, 2 of the 3 seeds asked"  # the gpu line is not here
    # every final of one warm-up arm against its own seed's warm-up: three points, slope -0.5, far too few to tell
    assert dependence[1:] == ("from sft: -0.50 +- 2.60 (3 finals, 2 seeds; finals 40.0-43.0% from warm-ups "
                              "36.0-37.0%)", "within the noise of 1: GRPO adds about the same whatever the warm-up")
    assert final[1:] == ("mixed-informative@epoch: 42.5% ± 0.7 (n=2); mixed-oversample@epoch: 40.0% (n=1)", "fail")
    # the last tenth only (one step of ten), and oversampling's own share of the groups it trained on
    assert share[1] == ("easy@epoch: 30.0% (n=1); mixed-informative@epoch: 40.0% ± 0.0 (n=2); "
                        "mixed-oversample@epoch: 20.0% (n=1)")
    assert share[2] == "met by mixed-oversample@epoch"
    assert by_answers[1:] == ("not run", "not run")  # no run logged how its groups answered
    # read by answers: all right 0.2 + none right 0.3 answered alike, whatever their reward spread
    runs["mixed-informative/seed1/epoch"]["curves"] = [{"episode/groups_all_correct": 0.2,
                                                        "episode/groups_none_correct": 0.3}] * 10
    assert proof_report.plan_scale_rows({"runs": runs})[4][1:] == ("mixed-informative@epoch: 50.0% (n=1)", "fail")
    assert [row[1:] for row in proof_report.plan_scale_rows({"runs": {}})] == [
        ("not run", "not run"), ("too few seeds", "not run"), *[("not run", "not run")] * 3]


def test_a_final_that_follows_its_warm_up_less_than_one_for_one_is_said_to() -> None:
    def run(arm: str, seed: int, overall: float) -> dict:
        return {"arm": arm, "seed": seed, "scale": "epoch", "evals": {"heldout": _heldout(overall)}}

    warm_ups = {seed: 0.36 + 0.02 * seed for seed in range(5)}  # 36-44%; every final near 45% whatever its warm-up
    runs = {f"sft/seed{seed}/epoch": run("sft", seed, value) for seed, value in warm_ups.items()}
    runs |= {f"mixed-informative/seed{seed}/epoch": run("mixed-informative", seed, 0.45 + 0.001 * seed)
             for seed in warm_ups}
    text, verdict = proof_report.warm_up_dependence_row({"runs": runs}, ["mixed-informative@epoch"])[1:]
    assert text.startswith("from sft: 0.05 +- 0.00 (5 finals, 5 seeds;")
    assert verdict == "below 1 from sft: GRPO lifts the weaker warm-ups more"


def test_why_held_out_answers_were_wrong_pools_an_arms_runs_that_recorded_it(tmp_path: Path) -> None:
    measured = json.loads(RESULTS.read_text())["runs"]["base/seed0/gpu"]  # from before the kinds were recorded

    def run(arm: str, seed: int, kinds: dict[str, int] | None) -> dict:
        heldout = dict(measured["evals"]["heldout"], wrong_answer_kinds=kinds)
        return dict(measured, arm=arm, seed=seed, evals={"heldout": heldout})

    results = {"runs": {"easy/seed0/gpu": run("easy", 0, {"gold result seen, answer wrong": 1, "no query ran": 3}),
                        "easy/seed1/gpu": run("easy", 1, {"no query returned the gold result": 4}),
                        "easy/seed2/gpu": run("easy", 2, None),
                        "sft/seed0/gpu": measured}}
    kinds, rows = proof_report.wrong_answer_table(results)
    assert kinds == ["gold result seen, answer wrong", "no query ran", "no query returned the gold result"]
    assert rows == ["| easy | 2 | 8 | 12.5% | 37.5% | 50.0% |"]  # seed 2 recorded none; sft has none at all
    proof_report.write_report(results, tmp_path / "report.md", tmp_path / "figures", tmp_path / "r.json")
    assert "| easy | 2 | 8 | 12.5% | 37.5% | 50.0% |" in (tmp_path / "report.md").read_text()
    assert proof_report.wrong_answer_table({"runs": {"sft/seed0/gpu": measured}}) == ([], [])
    # How the SQL missed, from the evals that recorded it, the same way.
    results["runs"]["easy/seed1/gpu"]["evals"]["heldout"]["wrong_sql_kinds"] = {
        "last query read other tables than the gold query": 1, "gold tables, another result": 3}
    assert proof_report.wrong_sql_table(results) == (
        ["last query read other tables than the gold query", "gold tables, another result"],
        ["| easy | 1 | 4 | 25.0% | 75.0% |"])
    proof_report.write_report(results, tmp_path / "report.md", tmp_path / "figures", tmp_path / "r.json")
    assert "| easy | 1 | 4 | 25.0% | 75.0% |" in (tmp_path / "report.md").read_text()


def test_an_arm_evaluated_by_another_script_counts_overall_and_says_where_its_figure_came_from(tmp_path: Path) -> None:
    measured = json.loads(RESULTS.read_text())["runs"]["base/seed0/gpu"]
    elsewhere = {"accuracy": {"overall": 0.394}, "n": {"overall": 614}, "source": "eval_generation.py, after"}
    warm_up = dict(measured, arm="sft", scale="epoch", seed=26, evals={"heldout": elsewhere}, warm_up_digest="w")
    final = dict(measured, arm="mixed", scale="epoch", seed=26, warm_up_digest="w",
                 evals={"heldout": dict(measured["evals"]["heldout"], accuracy={"overall": 0.41})})
    results = {"runs": {"sft/seed26/epoch": warm_up, "mixed/seed26/epoch": final}}
    assert proof_report.gains_over_warm_up(results, "mixed@epoch") == [pytest.approx(0.016)]
    proof_report.write_report(results, tmp_path / "report.md", tmp_path / "figures", tmp_path / "r.json")
    lines = (tmp_path / "report.md").read_text().splitlines()
    assert "sft/seed26/epoch 39.4% (eval_generation.py, after)" in next(
        line for line in lines if line.startswith("Held-out figures not from the proof's own eval"))
    assert "(trained only)" in next(line for line in lines if line.startswith("| sft | 26 |"))  # by the proof



def test_how_held_out_episodes_ended_pools_an_arms_stop_reasons(tmp_path: Path) -> None:
    measured = json.loads(RESULTS.read_text())["runs"]["base/seed0/gpu"]

    def run(arm: str, seed: int, stops: dict[str, int]) -> dict:
        return dict(measured, arm=arm, seed=seed, evals={"heldout": dict(measured["evals"]["heldout"],
                                                                         stop_reasons=stops)})

    results = {"runs": {"mixed/seed0/gpu": run("mixed", 0, {"no_tool_call": 6, "truncated": 2}),
                        "mixed/seed1/gpu": run("mixed", 1, {"no_tool_call": 5, "malformed_tool_call": 3}),
                        "sft/seed0/gpu": run("sft", 0, {"no_tool_call": 4})}}
    columns, rows = proof_report.stop_reason_table(results)
    assert columns == ["no_tool_call", "truncated", "malformed_tool_call"]
    assert rows == ["| sft | 1 | 4 | 100.0% | 0.0% | 0.0% |", "| mixed | 2 | 16 | 68.8% | 12.5% | 18.8% |"]
    proof_report.write_report(results, tmp_path / "report.md", tmp_path / "figures", tmp_path / "r.json")
    assert "| mixed | 2 | 16 | 68.8% | 12.5% | 18.8% |" in (tmp_path / "report.md").read_text()


def test_the_report_shows_an_unreadable_tool_call_as_the_model_wrote_it(tmp_path: Path) -> None:
    measured = json.loads(RESULTS.read_text())["runs"]["base/seed0/gpu"]
    written = '<tool_call>\n{"name": "query", "arguments": {"sql": "SELECT `a` FROM t WHERE b = "x""}}\n</tool_call>'
    heldout = dict(measured["evals"]["heldout"], unreadable_call_examples=[written, "another"])
    results = {"runs": {"mixed/seed27/epoch": dict(measured, arm="mixed", seed=27, evals={"heldout": heldout}),
                        "sft/seed0/gpu": measured}}  # from before examples were kept: no line
    expected = ('- mixed/seed27/epoch: `<tool_call>\\n{"name": "query", "arguments": {"sql": "SELECT \'a\' FROM t '
                'WHERE b = "x""}}\\n</tool_call>`')
    assert proof_report.unreadable_call_lines(results) == [expected]
    proof_report.write_report(results, tmp_path / "report.md", tmp_path / "figures", tmp_path / "r.json")
    assert expected in (tmp_path / "report.md").read_text()


def test_what_a_phase_did_on_its_own_groups_reads_the_first_and_last_fifth_of_its_steps() -> None:
    def run(arm: str, seed: int, accuracy: list[float], none_correct: list[float]) -> dict:
        return {"arm": arm, "seed": seed, "scale": "epoch",
                "curves": [{"episode/accuracy": right, "episode/groups_none_correct": none}
                           for right, none in zip(accuracy, none_correct, strict=True)]}

    # ten steps: the fifths are steps 1-2 and 9-10; the middle steps count in neither
    runs = {"easy/seed1/epoch": run("easy", 1, [0.4, 0.4, *[0.9] * 6, 0.6, 0.6], [0.3, 0.3, *[0.0] * 6, 0.2, 0.2]),
            "easy/seed2/epoch": run("easy", 2, [0.5, 0.5, *[0.9] * 6, 0.7, 0.7], [0.3, 0.3, *[0.0] * 6, 0.2, 0.2]),
            "sft/seed1/epoch": {"arm": "sft", "seed": 1, "scale": "epoch", "curves": [{"loss": 1.0}]}}
    assert proof_report.sharpening_rows({"runs": runs}) == [
        "| easy@epoch | 2 | 10 | 45.0% ± 7.1 -> 65.0% ± 7.1 | 70.0% ± 0.0 -> 80.0% ± 0.0 |"]  # no row for sft


def test_the_report_shows_what_held_out_episodes_did_after_a_refused_query(tmp_path: Path) -> None:
    def run(arm: str, counts: dict[str, int] | None) -> dict:
        heldout = _heldout(0.4) | ({"after_refused_query": counts} if counts is not None else {})
        return {"arm": arm, "seed": 1, "scale": "epoch", "seconds": 60.0, "model": "/tmp/qc", "commit": "abc",
                "commands": [], "evals": {"heldout": heldout}}

    # results.json keeps its keys sorted; the table shows them in the eval's order
    runs = {"sft/seed1/epoch": run("sft", {"a changed query, then right": 1, "no query after it": 2,
                                           "the refused query again": 1}),
            "easy/seed1/epoch": run("easy", None)}  # evaluated before it was counted: no row
    assert proof_report.refused_query_table({"runs": runs}) == (
        ["no query after it", "the refused query again", "a changed query, then right"],
        ["| sft@epoch | 1 | 4 | 50.0% | 25.0% | 25.0% |"])


def test_the_reports_kinds_of_what_followed_a_refused_query_are_the_evals() -> None:
    sys.path.insert(0, str(EXPERIMENTS.parent))
    from eval import metrics

    assert proof_report.AFTER_REFUSED_QUERY_KINDS == (metrics.NO_QUERY_AFTER, metrics.RESENT, metrics.CHANGED_WRONG,
                                                      metrics.CHANGED_RIGHT)
