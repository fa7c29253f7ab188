"""What fixing the column a refused query named wrong would have bought, from an eval report's recorded episodes.

    python experiments/refused_query_fixes.py eval_out/mixed/report.json --data-dir ../shared/spider

For each episode whose first refused query was "no such column: T1.x" where exactly one other table of the query
has x (the alias mix-up the environment's error names: "x is a column of T2 (game), not of T1"), the query is
rewritten with x under that table's reference and run read-only on the question's database, then judged against
the gold result as the query tool judges it. The count that then returns the gold result bounds what learning that
one fix can add: the rest of the query is often wrong too. It prints the counts, and what the episodes did.
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

REPO_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_DIR))

from agent_env import MISSING_COLUMN, columns_read, load_gold, references_with_column  # noqa: E402
from eval_reports import each_report  # noqa: E402
from spider_data import database_path  # noqa: E402
from sql_structure import SQLStructureError, table_references  # noqa: E402
from sqlite_readonly import DatabaseError, ReadOnlyDatabase  # noqa: E402
from verifier import format_answer, verify_answer  # noqa: E402

def requalified(sql: str, error: str, database: ReadOnlyDatabase) -> str | None:
    """``sql`` with the column SQLite found missing under its qualifier moved to the one other table reference of
    the query that has it (the table the environment's error names); None where the error is not such a column,
    or no single table of the query has it."""
    missing = MISSING_COLUMN.search(error)
    if missing is None or missing.group(1) is None:
        return None
    qualifier, column = missing.groups()
    try:
        references, columns = table_references(sql), columns_read(sql, database)
    except SQLStructureError:
        return None
    owners = references_with_column(column, references, columns, other_than=qualifier)
    if len(owners) != 1:
        return None
    pattern = rf"(?<![\w.\"']){re.escape(qualifier)}\.{re.escape(column)}\b"
    return re.sub(pattern, f"{owners[0]}.{column}", sql, flags=re.IGNORECASE)


def first_refused_query(question: dict[str, Any]) -> dict[str, Any] | None:
    return next((call for call in question.get("tool_calls") or [] if call["tool"] == "query" and call.get("error")
                 and not call.get("after_episode")), None)


def count_fixes(questions: list[dict[str, Any]], data_dir: Path) -> Counter[str]:
    counts: Counter[str] = Counter()
    for question in questions:
        refused = first_refused_query(question)
        if refused is None:
            continue
        counts["refused episodes"] += 1
        counts["refused episodes, right anyway"] += bool(question.get("correct"))
        db_path = str(database_path(data_dir, question["db_id"]))
        with ReadOnlyDatabase(db_path) as database:
            fixed = requalified(str(refused["arguments"].get("sql") or ""), refused["error"], database)
            if fixed is None:
                continue
            counts["one other table has the column"] += 1
            try:
                result = database.run_select(fixed)
            except DatabaseError:
                continue
        counts["fixed query runs"] += 1
        gold = load_gold(db_path, question["gold_sql"])
        counts["fixed query returns the gold result"] += verify_answer(format_answer(result.rows), gold.rows,
                                                                       gold.ordered)
    return counts


def main(argv: list[str] | None = None) -> int:
    for report, questions, data_dir in each_report(__doc__, argv):
        print(f"{report}: {len(questions)} questions")
        for name, count in count_fixes(questions, data_dir).items():
            print(f"  {name}: {count}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
