"""What a prior on unseen questions (--defer_by_class and finer ones) can do to the share of groups that score alike.

    python benchmarks/class_deferral.py [--runs 20] [--max-class-deferral 0.75]
    python benchmarks/class_deferral.py --heldout-results docs/learning_proof_1.5b/results.json [--data-dir DIR]

A guided mixed phase of the recipe's shape: 30 steps of 16 prompt groups x 6 over 934 questions (at most one visit a
question); under guidance only a group all right taught nothing. Each question is right with its own probability:

- by default drawn from a Beta around its class's late-phase pass rate in the real 1.5B's guided runs (docs/gpu.md
  2026-12-07c, d), classes in the held-out databases' proportions: plain informative sampling against the class prior;
- with ``--heldout-results``, the pass rates of real questions: the held-out questions (drawn with replacement), each
  right with the share of the final adapters (``--arms``, default the guided phase and its class-prior twin, every
  seed) that answered it, smoothed. A question's known facts are read from its gold query (``--data-dir``); the priors
  compared key the class prior's windows on them: class, tables read, class x tables, database, and a screen (one or
  two episodes played per question before the phase, right or not); then --screen_questions itself (one episode a
  question, the wrong ones served first in each pass) over 934 and 1,868 questions. Then, exactly over the same pass
  rates, the share of all-right groups among questions by screen result.

Prints the share of alike groups over the phase and its last tenth for each prior. Its held-out effect needs a GPU
run (experiments/proof_arms.py: mixed-all-answers-guided-byclass-sft4xall-lr5e-5-direct-fresh-2x).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from math import comb
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))

from question_screen import screen_ranks  # noqa: E402
from sampling import InformativeSampler  # noqa: E402

CLASS_SHARES = {"easy": 0.257, "medium": 0.451, "hard": 0.199, "extra": 0.093}  # held-out: 158/277/122/57 of 614
LATE_PASS_RATES = {"easy": 0.85, "medium": 0.60, "hard": 0.55, "extra": 0.35}  # accuracy/CLASS, the runs' last steps
CONCENTRATION = 2.0  # Beta(a, b) with a + b = 2: questions mostly easy or mostly hard for the model, as observed
QUESTIONS, STEPS, GROUPS, GENERATIONS = 934, 30, 16, 6
SCREENED_QUESTIONS = 1868  # the screened arm's pool: four times the epoch scale's 467 mixed questions
DEFAULT_ARMS = ("mixed-all-answers-guided-sft4xall-lr5e-5-direct-fresh-2x",
                "mixed-all-answers-guided-byclass-sft4xall-lr5e-5-direct-fresh-2x")
DEFAULT_DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "spider"


@dataclass(frozen=True)
class Question:
    """What the phase would meet: how often the model answers it right, and what is known of it beforehand."""

    pass_rate: float
    hardness: str
    tables: int = 1
    database: str = ""
    share_right: float = 0.0  # of the runs it was read from (unsmoothed): their accuracy on it


Prior = Callable[[Question, random.Random], str] | None  # a question's bucket for the class prior's windows; None: off

PRIORS: dict[str, Prior] = {
    "none (plain informative)": None,
    "class (--defer_by_class)": lambda question, _rng: question.hardness,
    "tables read": lambda question, _rng: str(min(question.tables, 3)),
    "class x tables": lambda question, _rng: f"{question.hardness}, {min(question.tables, 3)}",
    "database": lambda question, _rng: question.database,
    "screen, 1 episode": lambda question, rng: str(rng.random() < question.pass_rate),
    "screen, 2 episodes": lambda question, rng: str(sum(rng.random() < question.pass_rate for _ in range(2))),
}


def simulated_questions(rng: random.Random) -> list[Question]:
    """Questions of the four classes in the held-out proportions, each with its own pass rate around its class's."""
    questions = []
    for _ in range(QUESTIONS):
        name = rng.choices(list(CLASS_SHARES), weights=list(CLASS_SHARES.values()))[0]
        rate = LATE_PASS_RATES[name]
        questions.append(Question(rng.betavariate(rate * CONCENTRATION, (1 - rate) * CONCENTRATION), name))
    return questions


def heldout_questions(results: Path, arms: Sequence[str], data_dir: Path) -> list[Question]:
    """The held-out questions with the share of the runs of ``arms`` (every seed) that answered each right, smoothed
    (add a half right and a half wrong), and their facts from the gold query."""
    from learning_proof import held_out_databases, split_by_database
    from spider_data import load_split
    from sql_structure import tables_used

    runs = json.loads(results.read_text(encoding="utf-8"))["runs"]
    outcomes = [run["evals"]["heldout"]["outcomes"] for run in runs.values()
                if run["arm"] in arms and "heldout" in run.get("evals", {})]
    if not outcomes:
        raise ValueError(f"no held-out eval of {', '.join(arms)} in {results}")
    with tempfile.TemporaryDirectory() as work:  # the proof's own split: its dev part is the held-out databases
        data = split_by_database(data_dir, Path(work), held_out_databases())
        examples = [example for example in load_split(data, "dev", progress=False).examples if example.is_usable]
    if len(examples) != len(outcomes[0]):
        raise ValueError(f"{len(examples)} held-out questions in {data_dir}, {len(outcomes[0])} in the runs' evals")
    questions = []
    for index, example in enumerate(examples):
        right = sum(outcome[index] == "1" for outcome in outcomes)
        questions.append(Question((right + 0.5) / (len(outcomes) + 1), example.hardness.value,
                                  len(set(tables_used(example.gold_sql))), example.db_id, right / len(outcomes)))
    return questions


def accuracy_by(questions: Sequence[Question], bucket: Callable[[Question], str]) -> dict[str, float]:
    """The runs' accuracy on the questions of each bucket."""
    totals: dict[str, list[float]] = {}
    for question in questions:
        totals.setdefault(bucket(question), []).append(question.share_right)
    return {name: statistics.mean(shares) for name, shares in sorted(totals.items())}


def simulate(questions: Sequence[Question], prior: Prior, seed: int, max_class_deferral: float,
             draw: bool, screened: bool = False, pool_size: int = QUESTIONS) -> tuple[float, float]:
    """One phase: the share of alike groups overall and over its last tenth. ``draw``: the phase's ``pool_size``
    questions are drawn with replacement from ``questions`` (real held-out questions, fewer than a phase's).
    ``screened``: --screen_questions, each question played once before the phase and the wrong ones served first."""
    rng = random.Random(seed)
    pool = [rng.choice(questions) for _ in range(pool_size)] if draw else list(questions)
    keys = [f"db|question {index}" for index in range(len(pool))]
    buckets = {key: prior(question, rng) for key, question in zip(keys, pool)} if prior else None
    ranks = screen_ranks({key: rng.random() < question.pass_rate for key, question in zip(keys, pool)}) \
        if screened else None
    sampler = InformativeSampler(keys, GENERATIONS, GROUPS, 1, seed, signal="answers", guided=True,
                                 question_classes=buckets, max_class_deferral=max_class_deferral,
                                 question_ranks=ranks)
    stream = iter(sampler)
    alike: list[bool] = []
    for _ in range(STEPS):
        chunk = [next(stream) for _ in range(GROUPS * GENERATIONS)][::GENERATIONS]
        group_keys, rewards, right = [], [], []
        for index in chunk:
            outcomes = [rng.random() < pool[index].pass_rate for _ in range(GENERATIONS)]
            alike.append(all(outcomes))  # guided: an all-wrong group trains on the oracle's episode
            group_keys += [keys[index]] * GENERATIONS
            rewards += [float(outcome) for outcome in outcomes]
            right += outcomes
        sampler.record(group_keys, rewards, right)
    last_tenth = alike[-len(alike) // 10:]
    return sum(alike) / len(alike), sum(last_tenth) / len(last_tenth)


def all_right_by_screen(questions: Sequence[Question], episodes: int) -> list[tuple[int, float, float]]:
    """For each screen result (right answers of ``episodes``): the share of questions with it and the chance that a
    group of six of theirs is all right, exactly over the questions' pass rates."""
    rows = []
    for right in range(episodes + 1):
        weights = [comb(episodes, right) * q.pass_rate ** right * (1 - q.pass_rate) ** (episodes - right)
                   for q in questions]
        alike = sum(weight * q.pass_rate ** GENERATIONS for weight, q in zip(weights, questions)) / sum(weights)
        rows.append((right, sum(weights) / len(questions), alike))
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=20, help="simulated phases per setting (seeds 0..runs-1)")
    parser.add_argument("--max-class-deferral", type=float, default=0.75, help="sampling.py's cap")
    parser.add_argument("--heldout-results", type=Path, default=None,
                        help="a learning proof's results.json: pass rates of real held-out questions")
    parser.add_argument("--arms", nargs="+", default=list(DEFAULT_ARMS), help="whose held-out evals give them")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="the Spider folder (gold queries)")
    args = parser.parse_args(argv)
    if args.heldout_results is None:
        priors = {name: PRIORS[name] for name in ("none (plain informative)", "class (--defer_by_class)")}
        print(f"simulated questions (pass rates around their class's), {args.runs} phases a prior")
    else:
        try:
            questions = heldout_questions(args.heldout_results, args.arms, args.data_dir)
        except (OSError, ValueError) as error:
            parser.error(str(error))
        priors = PRIORS
        print(f"{len(questions)} held-out questions, pass rates from {', '.join(args.arms)} "
              f"({args.heldout_results}); {args.runs} phases a prior")
        for name, bucket in (("class", lambda q: q.hardness), ("tables read", lambda q: str(min(q.tables, 3)))):
            shares = ", ".join(f"{key} {share:.1%}" for key, share in accuracy_by(questions, bucket).items())
            print(f"  the runs' accuracy by {name}: {shares}")
    for name, prior in priors.items():
        runs = [simulate(questions if args.heldout_results else simulated_questions(random.Random(seed)), prior,
                         seed, args.max_class_deferral, draw=args.heldout_results is not None)
                for seed in range(args.runs)]
        overall, last_tenth = (statistics.mean(run[part] for run in runs) for part in (0, 1))
        print(f"  {name:26s} groups all right {overall:.1%} (last tenth {last_tenth:.1%})")
    if args.heldout_results is not None:
        screens = {"--screen_questions": None, "  + --defer_by_class": PRIORS["class (--defer_by_class)"]}
        for pool_size in (QUESTIONS, SCREENED_QUESTIONS):
            for name, prior in screens.items():
                runs = [simulate(questions, prior, seed, args.max_class_deferral, draw=True, screened=True,
                                 pool_size=pool_size) for seed in range(args.runs)]
                overall, last_tenth = (statistics.mean(run[part] for run in runs) for part in (0, 1))
                print(f"  {name:26s} groups all right {overall:.1%} (last tenth {last_tenth:.1%}), "
                      f"{pool_size} questions: the wrong ones served first")
        print("a group's chance to be all right, by a screen before the phase (exact over the same pass rates):")
        for episodes in (1, 2):
            for right, share, alike in all_right_by_screen(questions, episodes):
                print(f"  screen {right}/{episodes} right: {share:.1%} of the questions, all right {alike:.1%}")


if __name__ == "__main__":
    main()
