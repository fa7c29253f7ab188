"""The evaluation report: report.json (numbers and every question), report.md (for a person), a
chart of accuracy and steps by hardness, and gold.sql/pred.sql for Spider's official scripts.

report.json:
    settings      what was evaluated, on what, how (policy or checkpoint, data, split, filters, budgets)
    counts        questions, scored, skipped, skipped_by_reason
    by_hardness   easy/medium/hard/extra/overall -> n, correct, accuracy, exact_text_accuracy (right by the
                  exact text asked for, without the relaxed matching), mean_steps, mean_steps_correct,
                  post_episode_calls (per episode), answered (share), tool_error_rate, mean_reward,
                  requery_after_refusal (of the episodes with a refused query, the share that queried again),
                  resend_after_refusal (of those, the share whose next query was the refused one again)
    stop_reasons  how scored episodes ended on the agent's side
    wrong_answer_kinds  the wrong ones by why (episode_stats.WRONG_ANSWER_KINDS): a gold result their own query
                  found and the answer then lost, or SQL that never returned the gold result
    wrong_sql_kinds  that SQL by how it missed (episode_stats.WRONG_SQL_KINDS): its last query read other tables
                  than the gold query, or the gold tables with no rows or another result
    after_refused_query  the episodes with a refused query, by their next query: none, the refused one again, or
                  a changed one (then right or still wrong)
    timing        elapsed_s, episodes_per_second, and for a model: generation (its generate calls, their
                  seconds, mean batch, decode steps, idle_decode_share: row-steps spent on rows already done)
    questions     one record per question (eval.runner.QuestionRecord): db_id, question, hardness,
                  correct, correct_exact_text, steps, tool_calls, answer, pred_sql, skip_reason, ...

gold.sql / pred.sql follow taoyds/spider's evaluation.py (and test-suite-sql-eval's): one scored
question per line, in the same order; gold lines are ``SQL<TAB>db_id``, pred lines are ``SQL``. Both
scripts split lines on tabs and skip blank lines, so tabs and line breaks inside a query become
spaces, and a question where the agent ran no query gets NO_QUERY_SQL (which never matches).
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict
from pathlib import Path
from typing import Any

from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from eval import metrics
from eval.runner import QuestionRecord

REPORT_JSON = "report.json"
REPORT_MARKDOWN = "report.md"
CHART_PNG = "by_hardness.png"
GOLD_SQL = "gold.sql"
PRED_SQL = "pred.sql"
NO_QUERY_SQL = "SELECT 'no query was run'"
WRONG_EXAMPLES_SHOWN = 10


def build_report(records: list[QuestionRecord], *, settings: dict[str, Any], elapsed_s: float) -> dict[str, Any]:
    """Everything report.json holds, from the records of one evaluation run."""
    stats = metrics.by_hardness(records)
    scored = stats[metrics.OVERALL].n
    return {
        "settings": settings,
        "counts": {
            "questions": len(records),
            "scored": scored,
            "skipped": len(records) - scored,
            "skipped_by_reason": metrics.skipped_by_reason(records),
        },
        "by_hardness": {group: group_stats.to_dict() for group, group_stats in stats.items()},
        "stop_reasons": metrics.stop_reasons(records),
        "wrong_answer_kinds": metrics.wrong_answer_kinds(records),
        "wrong_sql_kinds": metrics.wrong_sql_kinds(records),
        "after_refused_query": metrics.after_refused_query(records),
        "timing": {
            "elapsed_s": round(elapsed_s, 3),
            "episodes_per_second": round(scored / elapsed_s, 3) if elapsed_s > 0 else None,
        },
        "questions": [asdict(record) | {"answered": record.answered} for record in records],
    }


def write_report(report: dict[str, Any], out_dir: str | Path) -> dict[str, Path]:
    """Write every report file into out_dir (created if needed); returns them by name."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {name: out_dir / name for name in (REPORT_JSON, REPORT_MARKDOWN, CHART_PNG, GOLD_SQL, PRED_SQL)}
    files[REPORT_JSON].write_text(report_json(report), encoding="utf-8")
    files[REPORT_MARKDOWN].write_text(render_markdown(report), encoding="utf-8")
    plot_by_hardness(report["by_hardness"], files[CHART_PNG])
    gold_lines, pred_lines = spider_lines(report["questions"])
    files[GOLD_SQL].write_text("".join(line + "\n" for line in gold_lines), encoding="utf-8")
    files[PRED_SQL].write_text("".join(line + "\n" for line in pred_lines), encoding="utf-8")
    return files


def report_json(report: dict[str, Any]) -> str:
    """The report as JSON: the summary indented, then one question per line (greppable, and a
    7,000-question report stays a fraction of its fully indented size)."""
    summary = {key: value for key, value in report.items() if key != "questions"}
    questions = ",\n".join("    " + json.dumps(question, ensure_ascii=False) for question in report["questions"])
    head = json.dumps(summary, indent=2, ensure_ascii=False).removesuffix("\n}")
    return f'{head},\n  "questions": [\n{questions}\n  ]\n}}\n'


# --- Spider's official format -----------------------------------------------------------------


def one_line(sql: str) -> str:
    """A query on one line with no tabs, as the official scripts read it (other spacing is kept)."""
    return re.sub(r"[\t\r\n]+", " ", sql).strip()


def spider_lines(questions: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """Gold lines (``SQL<TAB>db_id``) and pred lines (``SQL``) for the scored questions, in order."""
    scored = [question for question in questions if question["skip_reason"] is None]
    gold = [f"{one_line(question['gold_sql'])}\t{question['db_id']}" for question in scored]
    pred = [one_line(question["pred_sql"] or "") or NO_QUERY_SQL for question in scored]
    return gold, pred


# --- for a person -----------------------------------------------------------------------------


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{100 * value:.1f}%"


def _number(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def markdown_table(by_hardness: dict[str, dict[str, Any]]) -> str:
    """The by-hardness numbers as a Markdown table (also what the command line prints)."""
    lines = [
        ("| hardness | n | accuracy | exact-text accuracy | mean steps | steps when correct "
         "| post-episode calls / episode | answered | tool error rate | queried again after a refused query |"),
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for group, stats in by_hardness.items():
        # exact-text accuracy: reports written before it was measured have none
        lines.append(
            f"| {group} | {stats['n']} | {_percent(stats['accuracy'])} "
            f"| {_percent(stats.get('exact_text_accuracy'))} | {_number(stats['mean_steps'])} "
            f"| {_number(stats['mean_steps_correct'])} | {_number(stats['post_episode_calls'], 3)} "
            f"| {_percent(stats['answered'])} | {_percent(stats['tool_error_rate'])} "
            f"| {_percent(stats.get('requery_after_refusal'))} |"
        )
    return "\n".join(lines)


def generation_lines(generation: dict[str, Any] | None) -> list[str]:
    """A model's generation time in a sentence (nothing for scripted policies)."""
    if not generation:
        return []
    idle = generation["idle_decode_share"]
    waiting = ("rows left the batch as they ended (continuous batching)" if idle is None else
               f"{_percent(idle)} of the row-steps decoded rows that had already ended their turn (a call lasts as "
               "long as its longest row)")
    cached = generation.get("prefix_cache_hit_rate")
    caching = "" if cached is None else f"; the prefix cache served {_percent(cached)} of the context tokens"
    sentence = (f"Generation: {generation['calls']} generate calls, {generation['seconds']:.1f} s "
                f"({_percent(generation['share_of_elapsed'])} of the run), {generation['mean_batch']:g} episodes a "
                f"call on average, {generation['decode_steps']} decode steps; {waiting}{caching}.")
    return [sentence, ""]


def wrong_answer_lines(kinds: dict[str, int] | None, overall: dict[str, Any]) -> list[str]:
    """Why the wrong answers were wrong: a result the agent's own query found and then lost (the answer's side)
    against SQL that never reached the gold result (the model's side). Nothing for a report from before it."""
    wrong = overall["n"] - overall["correct"]
    if kinds is None or not wrong:
        return []
    listed = ", ".join(f"{kind} {count} ({count / wrong:.0%})" for kind, count in kinds.items())
    return [f"Why the {wrong} wrong {'answer was' if wrong == 1 else 'answers were'} wrong: {listed}.", ""]


def wrong_sql_lines(kinds: dict[str, int] | None) -> list[str]:
    """How the SQL that never returned the gold result missed it, read off each episode's last query that ran:
    which tables (schema linking), or the values and logic over the right tables. Nothing where none did."""
    if not kinds:
        return []
    missed = sum(kinds.values())
    listed = ", ".join(f"{kind} {count} ({count / missed:.0%})" for kind, count in kinds.items())
    return [f"How the SQL of the {missed} that never returned the gold result missed it: {listed}.", ""]


def unreadable_call_lines(questions: list[dict[str, Any]]) -> list[str]:
    """The first episode that ended on a tool call the parser could not read, its last turn as written: what the
    stop reason's count alone cannot show (an unescaped quote in the JSON, a cut call, another format)."""
    written = next((question.get("final_text") for question in questions
                    if question.get("stop_reason") == "malformed_tool_call" and question.get("final_text")), None)
    if written is None:
        return []
    longest_run = max((len(run) for run in re.findall(r"`+", written)), default=0)
    fence = "`" * max(3, longest_run + 1)  # a fence the text's own backticks cannot close
    return ["The first unreadable tool call, as the model wrote it:", "", fence, written, fence, ""]


def render_markdown(report: dict[str, Any]) -> str:
    settings, counts, timing = report["settings"], report["counts"], report["timing"]
    skipped = ", ".join(f"{reason}: {count}" for reason, count in counts["skipped_by_reason"].items())
    stops = ", ".join(f"{reason} {count}" for reason, count in report["stop_reasons"].items()) or "–"
    lines = [
        f"# Evaluation of {settings['policy']}",
        "",
        f"{settings['split']} split of `{settings['data_dir']}`"
        + (f", hardness {', '.join(settings['hardness'])}" if settings.get("hardness") else "")
        + (f", first {settings['limit']} questions" if settings.get("limit") else "")
        + f". Step budget {settings['step_budget']}.",
        "",
        f"{counts['scored']} questions scored, {counts['skipped']} skipped" + (f" ({skipped})" if skipped else "")
        + f"; {timing['elapsed_s']:.1f} s, {_number(timing['episodes_per_second'], 1)} episodes/s.",
        "",
        *generation_lines(timing.get("generation")),
        markdown_table(report["by_hardness"]),
        "",
        "Steps are tool calls inside the episode; post-episode calls came after `answer` or after the budget ran"
        " out (each costs reward in training). The tool error rate is failed in-episode calls over in-episode calls.",
        "",
        f"How the agent stopped: {stops}.",
        "",
        *unreadable_call_lines(report["questions"]),
        *wrong_answer_lines(report.get("wrong_answer_kinds"), report["by_hardness"]["overall"]),
        *wrong_sql_lines(report.get("wrong_sql_kinds")),
        f"![accuracy and steps by hardness]({CHART_PNG})",
        "",
        "## Scoring with Spider's official scripts",
        "",
        f"`{GOLD_SQL}` and `{PRED_SQL}` hold the gold query and the last query the agent ran for each scored"
        " question, one per line, in the same order. With taoyds/spider's (or test-suite-sql-eval's) `evaluation.py`:",
        "",
        "```",
        f"python evaluation.py --gold {GOLD_SQL} --pred {PRED_SQL} --etype exec "
        f"--db {Path(settings['data_dir']) / 'database'} --table {Path(settings['data_dir']) / 'tables.json'}",
        "```",
        "",
        f"Execution accuracy there scores the SQL, not the answer: it can differ from the accuracy above."
        f" Questions where no query ran have `{NO_QUERY_SQL}`.",
    ]
    scored = [question for question in report["questions"] if question["skip_reason"] is None]
    wrong = [question for question in scored if not question["correct"]]
    if wrong:
        lines += ["", f"## Wrong answers (first {min(len(wrong), WRONG_EXAMPLES_SHOWN)} of {len(wrong)})", ""]
        for question in wrong[:WRONG_EXAMPLES_SHOWN]:
            answer = "no answer" if question["answer"] is None else f"answered `{one_line(question['answer'])[:120]}`"
            lines.append(
                f"- [{question['hardness']}] {question['db_id']}: {question['question']} — {answer} after "
                f"{question['steps']} steps ({question['stop_reason']}); gold `{one_line(question['gold_sql'])}`"
            )
    return "\n".join(lines) + "\n"


def plot_by_hardness(by_hardness: dict[str, dict[str, Any]], path: Path) -> None:
    """Two bar charts side by side: accuracy and mean steps per hardness class with questions, and overall."""
    groups = [group for group in by_hardness if by_hardness[group]["n"] > 0] or [metrics.OVERALL]
    labels = [f"{group}\n(n={by_hardness[group]['n']})" for group in groups]
    colors = ["#55a868" if group == metrics.OVERALL else "#4c72b0" for group in groups]
    figure = Figure(figsize=(10, 4), layout="constrained")
    FigureCanvasAgg(figure)
    accuracy_axes, steps_axes = figure.subplots(1, 2)
    for axes, metric, scale, title, unit in (
        (accuracy_axes, "accuracy", 100, "accuracy (%)", "{:.0f}%"),
        (steps_axes, "mean_steps", 1, "mean tool calls per episode", "{:.1f}"),
    ):
        values = [scale * (by_hardness[group][metric] or 0.0) for group in groups]
        bars = axes.bar(labels, values, color=colors)
        axes.bar_label(bars, labels=[unit.format(value) for value in values], padding=2)
        axes.set_title(title)
        axes.margins(y=0.15)
    accuracy_axes.set_ylim(0, 110)
    figure.savefig(path, dpi=100)
