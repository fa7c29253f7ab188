"""The eval reports that the experiments re-judging recorded episodes read, from their command line.

    for report, questions, data_dir in each_report(__doc__, argv):   # REPORT.json ... --data-dir SPIDER
        ...

A report whose databases the Spider folder lacks is refused, naming them, before any episode is judged.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from spider_data import database_path  # noqa: E402


def each_report(doc: str | None, argv: list[str] | None) -> Iterator[tuple[Path, list[dict[str, Any]], Path]]:
    """(report, its questions, the Spider folder) for each report.json on the command line ``argv``; the help is
    the first paragraph of ``doc``."""
    parser = argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])
    parser.add_argument("reports", nargs="+", type=Path, help="report.json files of python -m eval")
    parser.add_argument("--data-dir", type=Path, required=True, help="the Spider folder the reports were run on")
    arguments = parser.parse_args(argv)
    for report in arguments.reports:
        questions = json.loads(report.read_text(encoding="utf-8"))["questions"]
        missing = sorted({question["db_id"] for question in questions
                          if not database_path(arguments.data_dir, question["db_id"]).is_file()})
        if missing:
            parser.error(f"{report}: no database for {', '.join(missing[:3])} under {arguments.data_dir}/database")
        yield report, questions, arguments.data_dir
