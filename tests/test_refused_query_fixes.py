"""experiments/refused_query_fixes.py: a refused query's alias mix-up fixed as the environment's error names it, run
on a built-in database and judged against the gold result, from episodes written as an eval report records them."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "experiments"))
import refused_query_fixes  # noqa: E402
from agent_env import SQLEnv  # noqa: E402
from spider_data import BUILTIN_DATA_DIR, database_path  # noqa: E402
from sqlite_readonly import DatabaseError, ReadOnlyDatabase  # noqa: E402

DB_ID = "town_library"
GOLD_SQL = "SELECT T1.title FROM book AS T1 JOIN author AS T2 ON T1.author_id = T2.author_id WHERE T2.country = 'Japan'"
SWAPPED = "SELECT T1.title FROM book AS T1 JOIN author AS T2 ON T1.author_id = T2.author_id WHERE T1.country = 'Japan'"


def _refusal(sql: str) -> str:
    """The error SQLEnv's query tool gives ``sql`` on the built-in town library (its schema hint included)."""
    env = SQLEnv()
    env.reset(db_path=str(database_path(BUILTIN_DATA_DIR, DB_ID)), question="Which books have Japanese authors?",
              gold_sql=GOLD_SQL)
    with pytest.raises(DatabaseError) as refused:
        env.query(sql)
    return str(refused.value)


def _question(sql: str, correct: bool = False) -> dict:
    return {"db_id": DB_ID, "gold_sql": GOLD_SQL, "correct": correct,
            "tool_calls": [{"tool": "describe", "arguments": {"table": "book"}, "error": None, "after_episode": False},
                           {"tool": "query", "arguments": {"sql": sql}, "error": _refusal(sql),
                            "after_episode": False}]}


def test_the_column_moves_to_the_one_table_of_the_query_that_has_it() -> None:
    with ReadOnlyDatabase(str(database_path(BUILTIN_DATA_DIR, DB_ID))) as database:
        assert refused_query_fixes.requalified(SWAPPED, _refusal(SWAPPED), database) == GOLD_SQL
        # A name no table of the query has, and an unqualified one, have nothing to move.
        invented = SWAPPED.replace("T1.country", "T1.nation")
        assert refused_query_fixes.requalified(invented, _refusal(invented), database) is None
        unqualified = "SELECT title FROM book WHERE nation = 'Japan'"
        assert refused_query_fixes.requalified(unqualified, _refusal(unqualified), database) is None


def test_fixes_are_counted_and_judged_against_the_gold_result(tmp_path: Path, capsys) -> None:
    wrong_after_fix = SWAPPED.replace("T1.title", "T1.genre")  # fixed, it runs but returns another result
    questions = [_question(SWAPPED), _question(wrong_after_fix, correct=True),
                 {"db_id": DB_ID, "gold_sql": GOLD_SQL, "correct": True, "tool_calls": []}]  # never refused
    counts = refused_query_fixes.count_fixes(questions, BUILTIN_DATA_DIR)
    assert dict(counts) == {"refused episodes": 2, "refused episodes, right anyway": 1,
                            "one other table has the column": 2, "fixed query runs": 2,
                            "fixed query returns the gold result": 1}
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"questions": questions}), encoding="utf-8")
    assert refused_query_fixes.main([str(report), "--data-dir", str(BUILTIN_DATA_DIR)]) == 0
    assert "fixed query returns the gold result: 1" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # a data folder without the report's databases is refused, naming them
        refused_query_fixes.main([str(report), "--data-dir", str(tmp_path)])
