"""How much of a measured accuracy only the relaxed verifier accepts, from an eval report's recorded answers.

    python experiments/verifier_effect.py docs/gpu_measurements/builtin_dev_eval_sft_seed2_2026-12-01f.json
    python experiments/verifier_effect.py eval_out/easy/report.json --data-dir ../shared/spider --json out.json

The plan's relaxed, type-aware answer matching (verifier.verify_answer) is one of its levers against "wrong
answer formats". Reports written since 2026-12-02 carry both verdicts per question (``correct`` and
``correct_exact_text``); this re-scores any report, older ones too: each scored question's answer is checked
again against its gold rows (the gold query run on the question's database, as the environment runs it) by the
exact text the prompt asks for (verifier.matches_exact_text) and by the relaxed verifier. It prints both
accuracies by hardness and the answers only the relaxed reading accepts.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_DIR))

from agent_env import load_gold  # noqa: E402
from spider_data import BUILTIN_DATA_DIR, HARDNESS_ORDER, database_path  # noqa: E402
from verifier import format_answer, matches_exact_text, verify_answer  # noqa: E402

EXAMPLES_SHOWN = 12


@dataclass(frozen=True)
class Rescored:
    """One scored question of a report, checked both ways."""

    db_id: str
    question: str
    hardness: str | None
    answer: str | None
    relaxed: bool
    exact_text: bool
    gold_text: str


def rescore(report: dict[str, Any], data_dir: Path) -> list[Rescored]:
    """Every scored question of ``report`` checked by both verifiers; raises where the report's relaxed verdict
    differs from today's verifier (a changed verifier would make the comparison meaningless)."""
    rescored = []
    for question in report["questions"]:
        if question.get("skip_reason") is not None:
            continue
        db_path = database_path(data_dir, question["db_id"])
        if not db_path.is_file():
            raise FileNotFoundError(f"no database for {question['db_id']} at {db_path}: pass the report's "
                                    f"--data-dir (its settings say {report['settings'].get('data_dir')})")
        gold = load_gold(str(db_path), question["gold_sql"])
        answer = question.get("answer")
        relaxed = answer is not None and verify_answer(answer, gold.rows, ordered=gold.ordered)
        if relaxed != question["correct"]:
            raise ValueError(f"{question['db_id']}: {question['question']!r} was scored {question['correct']} and "
                             f"is {relaxed} now: the report is not from this verifier or this data")
        rescored.append(Rescored(question["db_id"], question["question"], question.get("hardness"), answer, relaxed,
                                 answer is not None and matches_exact_text(answer, gold.rows),
                                 format_answer(gold.rows)))
    return rescored


def by_hardness(rescored: list[Rescored]) -> dict[str, dict[str, float | int]]:
    groups: dict[str, list[Rescored]] = defaultdict(list)
    for question in rescored:
        groups[question.hardness or "unknown"].append(question)
    groups["overall"] = rescored
    order = [hardness.value for hardness in HARDNESS_ORDER] + ["unknown", "overall"]
    return {name: {"n": len(groups[name]),
                   "relaxed": sum(question.relaxed for question in groups[name]) / len(groups[name]),
                   "exact_text": sum(question.exact_text for question in groups[name]) / len(groups[name])}
            for name in order if groups.get(name)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("report", type=Path,
                        help="an eval report.json (python -m eval --out DIR writes DIR/report.json)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="the data the report was evaluated on (default: its settings' data_dir if it exists "
                             "here, else the built-in data)")
    parser.add_argument("--json", type=Path, default=None, help="also write the table and every question here")
    arguments = parser.parse_args(argv)
    if not arguments.report.is_file():
        parser.error(f"no report at {arguments.report}")
    report = json.loads(arguments.report.read_text(encoding="utf-8"))
    if "questions" not in report:
        parser.error(f"{arguments.report} is not an eval report.json (no 'questions')")
    data_dir = arguments.data_dir
    if data_dir is None:
        recorded = Path(report.get("settings", {}).get("data_dir") or BUILTIN_DATA_DIR)
        data_dir = recorded if recorded.is_dir() else BUILTIN_DATA_DIR
    rescored = rescore(report, data_dir)
    table = by_hardness(rescored)
    print("| hardness | n | relaxed verifier | exact text | points only the relaxed one accepts |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for name, row in table.items():
        print(f"| {name} | {row['n']} | {row['relaxed']:.1%} | {row['exact_text']:.1%} | "
              f"{(row['relaxed'] - row['exact_text']) * 100:.1f} |")
    only_relaxed = [question for question in rescored if question.relaxed and not question.exact_text]
    print(f"\n{len(only_relaxed)} of {sum(question.relaxed for question in rescored)} right answers are right only "
          f"by the relaxed reading; the first {min(len(only_relaxed), EXAMPLES_SHOWN)}:")
    for question in only_relaxed[:EXAMPLES_SHOWN]:
        print(f"- [{question.hardness}] answered {question.answer!r}, asked for {question.gold_text!r}")
    if arguments.json is not None:
        arguments.json.write_text(json.dumps({"report": str(arguments.report), "by_hardness": table,
                                              "questions": [asdict(question) for question in rescored]}, indent=1),
                                  encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
