"""experiments/unreadable_answers.py: the answer an unreadable call held, read by eye and judged against the gold
result of a built-in database, from episodes written as an eval report records them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
import unreadable_answers  # noqa: E402
from agent_env import load_gold  # noqa: E402
from spider_data import BUILTIN_DATA_DIR, database_path  # noqa: E402
from verifier import format_answer  # noqa: E402

DB_ID = "town_library"
GOLD_SQL = "SELECT T1.title FROM book AS T1 JOIN author AS T2 ON T1.author_id = T2.author_id WHERE T2.country = 'Japan'"
REFUSED = {"tool": "query", "arguments": {"sql": "SELECT nope FROM book"}, "error": "SQLite error: no such column: nope",
           "after_episode": False}


EMPTY = {"tool": "query", "arguments": {"sql": "SELECT title FROM book WHERE 0"}, "output": "title\n(no rows)",
         "error": None, "after_episode": False}


def _episode(final_text: str, *, stop_reason: str = "malformed_tool_call", last: dict | None = None) -> dict:
    calls = [{"tool": "describe", "arguments": {"table": "book"}, "error": None, "after_episode": False}]
    return {"db_id": DB_ID, "gold_sql": GOLD_SQL, "skip_reason": None, "stop_reason": stop_reason,
            "final_text": final_text, "tool_calls": calls + ([last] if last else [])}


def _flat_answer(value: str) -> str:
    """The drift seen in GRPO phases: the arguments object dropped, its closing brace kept."""
    return '<tool_call>\n{"name": "answer", "value": ' + json.dumps(value) + '}}\n</tool_call>'


def test_an_answer_lost_to_a_dropped_arguments_object_is_judged_as_answer_would() -> None:
    right = format_answer(load_gold(str(database_path(BUILTIN_DATA_DIR, DB_ID)), GOLD_SQL).rows)
    questions = [_episode(_flat_answer(right)), _episode(_flat_answer("nobody"), last=REFUSED),
                 _episode('<tool_call>\n{"name": "answer", \'SQLite error: no such column"}}\n</tool_call>',
                          last=REFUSED),
                 _episode('<tool_call>\n{"name": "query", "sql": "SELECT 1"}}\n</tool_call>', last=EMPTY),
                 _episode(_flat_answer(right), stop_reason="no_tool_call")]  # read fine: not counted
    counts = unreadable_answers.count_lost_answers(questions, BUILTIN_DATA_DIR)
    assert dict(counts) == {"episodes ending on an unreadable call": 4, "  right after a refused query": 2,
                            "  right after a query that returned no rows": 1, "a whole answer value in it": 2, "that value right": 1,
                            "shape: an answer without its arguments object": 3, "shape: another tool's call": 1}


def test_a_value_is_read_only_where_a_whole_json_string_follows_it() -> None:
    assert unreadable_answers.value_read_by_eye(_flat_answer('say "hi"\n')) == 'say "hi"\n'
    assert unreadable_answers.value_read_by_eye('<tool_call>\n{"name": "answer", "value": "cut off') is None
    assert unreadable_answers.value_read_by_eye('{"name": "query", "value": "x"}') is None


def test_a_report_whose_databases_are_missing_is_refused_naming_them(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"questions": [_episode(_flat_answer("x"))]}))
    with pytest.raises(SystemExit):
        unreadable_answers.main([str(report), "--data-dir", str(tmp_path)])
    assert f"no database for {DB_ID} under {tmp_path}/database" in capsys.readouterr().err
    unreadable_answers.main([str(report), "--data-dir", str(BUILTIN_DATA_DIR)])
    assert "what the defect cost: at most 0.0 points" in capsys.readouterr().out
