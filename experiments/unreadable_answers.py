"""What the answers lost in unreadable tool calls would have scored, from an eval report's recorded episodes.

    python experiments/unreadable_answers.py eval_out/mixed/report.json --data-dir ../shared/spider

An episode that ends on a tool call the parser cannot read (stop_reason ``malformed_tool_call``) scores as one that
never answered. Where that call is an answer whose value can still be read by eye (the drift GRPO phases showed:
``{"name": "answer", "value": "..."}}``, the arguments object dropped), the value is judged against the gold result
as answer() judges it. The count right bounds what the format defect costs; the rest of those episodes were lost
anyway. It prints the counts, by the call's shape and by what came right before it (a refused query, a result of
no rows).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_DIR))

from agent_env import judge_answer, load_gold, returned_no_rows  # noqa: E402
from eval_reports import each_report  # noqa: E402
from spider_data import database_path  # noqa: E402

ANSWER_CALL = re.compile(r'"name"\s*:\s*"answer"')
# A JSON string after "value": escapes kept, so json.loads can read it; an unclosed one does not match.
VALUE = re.compile(r'"value"\s*:\s*("(?:[^"\\]|\\.)*")')


COUNTED = ("episodes ending on an unreadable call", "  right after a refused query",
           "  right after a query that returned no rows", "a whole answer value in it", "that value right")


def shape_of(text: str) -> str:
    """Which kind of unreadable call ``text`` ends on: an answer without its arguments object, another answer, or
    another tool's call."""
    if not ANSWER_CALL.search(text):
        return "another tool's call"
    return "an answer without its arguments object" if '"arguments"' not in text else "an answer, otherwise broken"


def value_read_by_eye(text: str) -> str | None:
    """The answer value an unreadable answer call holds, where one whole JSON string follows ``"value":``."""
    found = VALUE.search(text)
    if found is None or not ANSWER_CALL.search(text):
        return None
    try:
        return str(json.loads(found.group(1)))
    except json.JSONDecodeError:
        return None


def count_lost_answers(questions: list[dict[str, Any]], data_dir: Path) -> Counter[str]:
    counts: Counter[str] = Counter(dict.fromkeys(COUNTED, 0))  # printed in this order, zeros too
    for question in questions:
        if question.get("skip_reason") is not None or question.get("stop_reason") != "malformed_tool_call":
            continue
        text = str(question.get("final_text") or "")
        counts["episodes ending on an unreadable call"] += 1
        counts[f"shape: {shape_of(text)}"] += 1
        calls = [call for call in question.get("tool_calls") or [] if not call.get("after_episode")]
        last = calls[-1] if calls else {}
        counts["  right after a refused query"] += bool(last.get("tool") == "query" and last.get("error"))
        counts["  right after a query that returned no rows"] += returned_no_rows(str(last.get("output") or ""))
        value = value_read_by_eye(text)
        if value is None:
            continue
        counts["a whole answer value in it"] += 1
        gold = load_gold(str(database_path(data_dir, question["db_id"])), question["gold_sql"])
        counts["that value right"] += judge_answer(value, gold)[0]
    return counts


def main(argv: list[str] | None = None) -> int:
    for report, questions, data_dir in each_report(__doc__, argv):
        scored = sum(question.get("skip_reason") is None for question in questions)
        print(f"{report}: {scored} questions scored")
        counts = count_lost_answers(questions, data_dir)
        for name, count in counts.items():
            if not name.startswith("shape: "):
                print(f"  {name}: {count}")
        print("  the unreadable calls: " + ", ".join(f"{name[len('shape: '):]} {count}"
                                                     for name, count in counts.items() if name.startswith("shape: ")))
        print(f"  what the defect cost: at most {100 * counts['that value right'] / max(scored, 1):.1f} points")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
