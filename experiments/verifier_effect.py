"""How much of a measured accuracy only the relaxed verifier accepts, from an eval report's recorded answers.

    python experiments/verifier_effect.py docs/gpu_measurements/builtin_dev_eval_sft_seed2_2026-12-01f.json
    python experiments/verifier_effect.py eval_out/easy/report.json --data-dir ../shared/spider --json out.json

The plan's relaxed, type-aware answer matching (verifier.verify_answer) is one of its levers against "wrong
answer formats". Reports written since 2026-12-02 carry both verdicts per question (``correct`` and
``correct_exact_text``); this re-scores any report, older ones too: each scored question's answer is judged
again against its gold rows (the gold query run on the question's database) as the answer tool judges it
(agent_env.judge_answer: the relaxed verifier, and the exact text the prompt asks for). It prints both
accuracies by hardness (eval.metrics, as the eval report counts them) and the answers only the relaxed reading
accepts.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict, fields, replace
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_DIR))

from agent_env import GoldResult, judge_answer, load_gold  # noqa: E402
from eval.metrics import by_hardness as stats_by_hardness  # noqa: E402
from eval.runner import QuestionRecord  # noqa: E402
from spider_data import BUILTIN_DATA_DIR, database_path  # noqa: E402
from verifier import format_answer  # noqa: E402

EXAMPLES_SHOWN = 12
RECORD_FIELDS = {field.name for field in fields(QuestionRecord)}


def gold_of(record: QuestionRecord, data_dir: Path) -> GoldResult:
    db_path = database_path(data_dir, record.db_id)
    if not db_path.is_file():
        raise FileNotFoundError(f"no database for {record.db_id} at {db_path}: pass the report's --data-dir")
    return load_gold(str(db_path), record.gold_sql)


def rescore(report: dict[str, Any], data_dir: Path) -> list[QuestionRecord]:
    """Every scored question of ``report``, with its exact-text verdict judged again; raises where the report's
    relaxed verdict differs from today's verifier (a changed verifier would make the comparison meaningless)."""
    rescored = []
    for question in report["questions"]:
        record = QuestionRecord(**{key: value for key, value in question.items() if key in RECORD_FIELDS})
        if not record.is_scored:
            continue
        correct, exact_text = (False, False) if record.answer is None else judge_answer(
            record.answer, gold_of(record, data_dir))
        if correct != record.correct:
            raise ValueError(f"{record.db_id}: {record.question!r} was scored {record.correct} and is {correct} "
                             "now: the report is not from this verifier or this data")
        rescored.append(replace(record, correct_exact_text=exact_text))
    return rescored


def by_hardness(records: list[QuestionRecord]) -> dict[str, dict[str, float | int]]:
    """Both accuracies of each hardness class that has questions, and overall."""
    return {group: {"n": stats.n, "relaxed": stats.accuracy, "exact_text": stats.exact_text_accuracy}
            for group, stats in stats_by_hardness(records).items() if stats.n}


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
    only_relaxed = [record for record in rescored if record.correct and not record.correct_exact_text]
    print(f"\n{len(only_relaxed)} of {sum(record.correct for record in rescored)} right answers are right only "
          f"by the relaxed reading; the first {min(len(only_relaxed), EXAMPLES_SHOWN)}:")
    for record in only_relaxed[:EXAMPLES_SHOWN]:
        print(f"- [{record.hardness}] answered {record.answer!r}, asked for "
              f"{format_answer(gold_of(record, data_dir).rows)!r}")
    if arguments.json is not None:
        arguments.json.write_text(json.dumps({"report": str(arguments.report), "by_hardness": table,
                                              "questions": [asdict(record) for record in rescored]}, indent=1),
                                  encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
