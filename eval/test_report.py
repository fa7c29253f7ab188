"""The report files: report.json's keys, the Markdown table, the chart, and Spider's gold.sql/pred.sql."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eval import report as report_module
from eval.runner import QuestionRecord

SETTINGS = {"policy": "oracle", "data_dir": "/data", "split": "dev", "step_budget": 10, "limit": None}


def record(**fields) -> QuestionRecord:
    defaults = dict(db_id="shop", question="How many?", hardness="easy", gold_sql="SELECT count(*) FROM item")
    return QuestionRecord(**(defaults | fields))


RECORDS = [
    record(correct=True, steps=3, answer="3", pred_sql="SELECT count(*)\nFROM\titem", stop_reason="policy_stopped"),
    record(hardness="hard", gold_sql="SELECT a\nFROM b", steps=10, stop_reason="call_cap"),
    record(hardness=None, skip_reason="gold query fails", skip_detail="no such table: b"),
    record(db_id="zoo", hardness="medium", answer="x", pred_sql="SELECT 1", steps=2, executed_queries=1,
           wrong_sql_kind="gold tables, no rows"),
]


@pytest.fixture()
def written(tmp_path: Path) -> dict[str, Path]:
    return report_module.write_report(report_module.build_report(RECORDS, settings=SETTINGS, elapsed_s=2.0), tmp_path)


def read_like_spider(path: Path) -> list[list[str]]:
    """How taoyds/spider's evaluation.py reads gold and pred files."""
    with open(path) as file:
        return [line.strip().split("\t") for line in file.readlines() if len(line.strip()) > 0]


def test_report_json_has_the_documented_keys(written: dict[str, Path]) -> None:
    report = json.loads(written["report.json"].read_text())
    assert list(report) == ["settings", "counts", "by_hardness", "stop_reasons", "wrong_answer_kinds",
                            "wrong_sql_kinds", "after_refused_query", "timing", "questions"]
    assert report["wrong_answer_kinds"] == {"no query ran": 1, "no query returned the gold result": 1}
    assert report["wrong_sql_kinds"] == {"gold tables, no rows": 1}
    assert report["counts"] == {"questions": 4, "scored": 3, "skipped": 1, "skipped_by_reason": {"gold query fails": 1}}
    assert list(report["by_hardness"]) == ["easy", "medium", "hard", "extra", "overall"]
    overall = report["by_hardness"]["overall"]
    for key in ("n", "accuracy", "mean_steps", "post_episode_calls", "answered", "tool_error_rate",
                "requery_after_refusal"):
        assert key in overall
    assert overall["n"] == 3 and overall["accuracy"] == pytest.approx(1 / 3)
    assert report["by_hardness"]["extra"]["accuracy"] is None
    assert report["timing"]["episodes_per_second"] == 1.5
    question = report["questions"][0]
    for key in ("db_id", "question", "hardness", "correct", "steps", "tool_calls", "answer", "skip_reason"):
        assert key in question
    assert report["questions"][2]["skip_reason"] == "gold query fails"


def test_report_json_puts_one_question_on_each_line(written: dict[str, Path]) -> None:
    lines = written["report.json"].read_text().splitlines()
    question_lines = [line for line in lines if line.startswith('    {"db_id"')]
    assert len(question_lines) == len(RECORDS)


def test_spider_files_read_back_as_the_official_script_reads_them(written: dict[str, Path]) -> None:
    gold, pred = read_like_spider(written["gold.sql"]), read_like_spider(written["pred.sql"])
    assert gold == [
        ["SELECT count(*) FROM item", "shop"], ["SELECT a FROM b", "shop"], ["SELECT count(*) FROM item", "zoo"]
    ]
    assert pred == [["SELECT count(*) FROM item"], [report_module.NO_QUERY_SQL], ["SELECT 1"]]


@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT 1", "SELECT 1"),
        ("SELECT a\nFROM t\r\nWHERE x = 1", "SELECT a FROM t WHERE x = 1"),
        ("\tSELECT a\t\tFROM t  ", "SELECT a FROM t"),
        ("SELECT 'two  spaces' FROM t", "SELECT 'two  spaces' FROM t"),
    ],
    ids=["plain", "line breaks", "tabs", "inner spacing kept"],
)
def test_one_line(sql: str, expected: str) -> None:
    assert report_module.one_line(sql) == expected


def test_markdown_report_has_the_table_chart_and_official_command(written: dict[str, Path]) -> None:
    text = written["report.md"].read_text()
    # the easy answer is right by the relaxed verifier only (correct_exact_text left False): 0% by exact text
    assert "| easy | 1 | 100.0% | 0.0% | 3.00 |" in text and "| extra | 0 | – | – |" in text
    easy = json.loads(written["report.json"].read_text())["by_hardness"]["easy"]
    del easy["exact_text_accuracy"]  # as in a report from before the column: it reads as not measured
    assert "| easy | 1 | 100.0% | – | 3.00 |" in report_module.markdown_table({"easy": easy})
    assert "![accuracy and steps by hardness](by_hardness.png)" in text
    assert "--gold gold.sql --pred pred.sql --etype exec" in text
    assert "Wrong answers (first 2 of 2)" in text
    assert "Why the 2 wrong answers were wrong: no query ran 1 (50%), no query returned the gold result 1 (50%)." in text
    assert "How the SQL of the 1 that never returned the gold result missed it: gold tables, no rows 1 (100%)." in text
    assert report_module.wrong_sql_lines({}) == []  # a report from before the kinds, or none missed
    one_wrong = {"n": 3, "correct": 2}
    assert report_module.wrong_answer_lines({"no query ran": 1}, one_wrong)[0] == (
        "Why the 1 wrong answer was wrong: no query ran 1 (100%).")


def test_chart_is_a_png(written: dict[str, Path]) -> None:
    assert written["by_hardness.png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_report_shows_the_first_unreadable_tool_call_as_written(tmp_path: Path) -> None:
    written = '<tool_call>\n{"name": "query", "arguments": {"sql": "SELECT * FROM t WHERE a = "x""}}'
    records = [*RECORDS, record(stop_reason="malformed_tool_call", final_text=written, steps=1),
               record(stop_reason="malformed_tool_call", final_text="another", steps=1)]
    files = report_module.write_report(report_module.build_report(records, settings=SETTINGS, elapsed_s=2.0), tmp_path)
    markdown = files["report.md"].read_text()
    assert f"The first unreadable tool call, as the model wrote it:\n\n```\n{written}\n```" in markdown
    assert "another" not in markdown
    fenced = {"stop_reason": "malformed_tool_call", "final_text": "```sql\nSELECT 1\n```"}
    assert report_module.unreadable_call_lines([fenced])[2] == "````"  # the text's own fence cannot close it
    plain = report_module.render_markdown(report_module.build_report(RECORDS, settings=SETTINGS, elapsed_s=2.0))
    assert "unreadable" not in plain
