"""What --defer_by_class can do to the share of groups that score alike, on simulated groups (no model).

    python benchmarks/class_deferral.py [--runs 20] [--max-class-deferral 0.75]

A guided mixed phase of the recipe's shape: 30 steps of 16 prompt groups x 6 over 934 questions (at most one visit a
question), Spider's classes in the proportions of the 26 held-out databases, each question right with its own
probability, drawn from a Beta around its class's late-phase pass rate in the real 1.5B's guided runs (docs/gpu.md
2026-12-07c, d). Under guidance only a group all right taught nothing. Prints the share of alike groups over the
phase and its last tenth, and the groups each class got, plain informative sampling against --defer_by_class: what
the lever can move at most when classes are the only thing known about an unseen question. Its held-out effect needs a
GPU run (experiments/proof_arms.py: mixed-all-answers-guided-byclass-sft4xall-lr5e-5-direct-fresh-2x).
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sampling import InformativeSampler  # noqa: E402

CLASS_SHARES = {"easy": 0.257, "medium": 0.451, "hard": 0.199, "extra": 0.093}  # held-out: 158/277/122/57 of 614
LATE_PASS_RATES = {"easy": 0.85, "medium": 0.60, "hard": 0.55, "extra": 0.35}  # accuracy/CLASS, the runs' last steps
CONCENTRATION = 2.0  # Beta(a, b) with a + b = 2: questions mostly easy or mostly hard for the model, as observed
QUESTIONS, STEPS, GROUPS, GENERATIONS = 934, 30, 16, 6


def simulate(by_class: bool, seed: int, max_class_deferral: float) -> tuple[float, float, dict[str, int]]:
    """One phase: the share of alike groups overall and over the last tenth, and the groups of each class."""
    rng = random.Random(seed)
    keys = [f"db|question {index}" for index in range(QUESTIONS)]
    classes = {key: rng.choices(list(CLASS_SHARES), weights=list(CLASS_SHARES.values()))[0] for key in keys}
    pass_rate = {key: rng.betavariate(LATE_PASS_RATES[name] * CONCENTRATION,
                                      (1 - LATE_PASS_RATES[name]) * CONCENTRATION) for key, name in classes.items()}
    sampler = InformativeSampler(keys, GENERATIONS, GROUPS, 1, seed, signal="answers", guided=True,
                                 question_classes=classes if by_class else None, max_class_deferral=max_class_deferral)
    stream = iter(sampler)
    alike: list[bool] = []
    served = dict.fromkeys(CLASS_SHARES, 0)
    for _ in range(STEPS):
        chunk = [next(stream) for _ in range(GROUPS * GENERATIONS)][::GENERATIONS]
        group_keys, rewards, right = [], [], []
        for index in chunk:
            key = keys[index]
            served[classes[key]] += 1
            outcomes = [rng.random() < pass_rate[key] for _ in range(GENERATIONS)]
            alike.append(all(outcomes))  # guided: an all-wrong group trains on the oracle's episode
            group_keys += [key] * GENERATIONS
            rewards += [float(outcome) for outcome in outcomes]
            right += outcomes
        sampler.record(group_keys, rewards, right)
    last_tenth = alike[-len(alike) // 10:]
    return sum(alike) / len(alike), sum(last_tenth) / len(last_tenth), served


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="simulated phases per setting (seeds 0..runs-1)")
    parser.add_argument("--max-class-deferral", type=float, default=0.75, help="sampling.py's cap")
    args = parser.parse_args()
    for by_class in (False, True):
        runs = [simulate(by_class, seed, args.max_class_deferral) for seed in range(args.runs)]
        groups = {name: round(statistics.mean(run[2][name] for run in runs)) for name in CLASS_SHARES}
        overall, last_tenth = (statistics.mean(run[part] for run in runs) for part in (0, 1))
        print(f"{'--defer_by_class' if by_class else 'plain informative':18s} alike groups {overall:.1%} "
              f"(last tenth {last_tenth:.1%}), groups by class {groups}, {args.runs} simulated phases")


if __name__ == "__main__":
    main()
