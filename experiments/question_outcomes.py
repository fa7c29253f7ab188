"""What a phase's groups were like, question by question, and what could have told them apart before they ran.

    python experiments/question_outcomes.py RUN/mixed/adapter/question_history.json [--data-dir ../shared/spider]
        [--screen RUN/mixed/screen/report.json]

A GRPO phase saves its sampler's history beside its adapter (``question_history.json``: for every question, each of
its groups' right answers and reward spread); ``scripts/gpu_session.sh watch`` brings it back in metrics.tgz. Under
oracle guidance (the default) a group all right taught nothing; ``--unguided`` counts all-wrong groups too.

It prints the share of groups that taught nothing by Spider class, by the number of tables the gold query reads and
by the query's clauses, then how well each grouping predicts a group's fate before it runs: the Brier score of
the leave-one-out share of the other groups in its bucket (smoothed toward the phase's share), against the phase's
share alone. ``--defer_by_class`` defers by class; a grouping that scores clearly lower than class is what a finer
prior could use. A phase run with ``--screen_questions`` (its ``screen/report.json`` beside the adapter's folder, read
by default) is also split by what the screen's one greedy episode did: the groups of questions it got wrong against
those it got right, which the screen's simulation put at 11.8% and 42.3% all right over the 1.5B's held-out pass
rates, 4.1% and 36.3% over the 0.5B's (docs/results.md 2026-12-07h, i).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from question_screen import read_screen  # noqa: E402
from spider_data import question_key, read_questions, split_path  # noqa: E402
from sql_structure import SQLStructureError, classify_hardness, tables_used  # noqa: E402

DEFAULT_DATA_DIR = Path(__file__).resolve().parents[2] / "shared" / "spider"
PRIOR_WEIGHT = 4.0  # pseudo-groups at the phase's share: a bucket of one or two groups says little


@dataclass(frozen=True)
class Group:
    """One prompt group of a question, with what was known of the question before it ran."""

    key: str
    right: int
    completions: int
    hardness: str
    tables: int
    clauses: str
    screen: str = "not screened"  # --screen_questions: what its one greedy episode did ("screened wrong", ...)

    def taught_nothing(self, guided: bool) -> bool:
        return self.right == self.completions or (not guided and self.right == 0)


def gold_facts(data_dir: Path) -> dict[str, tuple[str, int, str]]:
    """Every training question's class, number of tables read and clauses (GROUP/ORDER/nested), by question key."""
    facts = {}
    for item in read_questions(split_path(data_dir, "train")):
        sql = item["query"]
        try:
            hardness, tables = classify_hardness(sql).value, len(set(tables_used(sql)))
        except SQLStructureError:
            hardness, tables = "unparsed", 0
        upper = f" {sql.upper()} "
        clauses = "+".join(name for name, word in (("group", " GROUP BY "), ("order", " ORDER BY "))
                           if word in upper) + ("+nested" if upper.count("SELECT ") > 1 else "")
        facts[question_key(item["db_id"], item["question"])] = (hardness, tables, clauses.strip("+") or "plain")
    return facts


def read_groups(history: Mapping[str, Sequence[Sequence[float]]], facts: Mapping[str, tuple[str, int, str]],
                screen: Mapping[str, bool] | None = None) -> tuple[list[Group], int]:
    """The history's groups joined with their questions' gold facts (and the screen's outcome, where one ran), and
    how many questions had no facts."""
    groups, unknown = [], 0
    for key, visits in history.items():
        if key not in facts:
            unknown += 1
            continue
        hardness, tables, clauses = facts[key]
        screened = "not screened"
        if screen is not None:
            screened = "not played" if key not in screen else "screened right" if screen[key] else "screened wrong"
        groups += [Group(key, int(right), int(completions), hardness, tables, clauses, screened)
                   for right, completions, _spread in visits]
    return groups, unknown


GROUPINGS: dict[str, Callable[[Group], str]] = {
    "class": lambda group: group.hardness,
    "tables": lambda group: f"{min(group.tables, 3)}{'+' if group.tables >= 3 else ''} table(s)",
    "clauses": lambda group: group.clauses,
    "class x tables": lambda group: f"{group.hardness}, {min(group.tables, 3)} table(s)",
    "database": lambda group: group.key.split("\t", 1)[0],
    "screen": lambda group: group.screen,
}


def brier(groups: Sequence[Group], guided: bool, bucket: Callable[[Group], str] | None) -> float:
    """Mean squared error of predicting each group's fate by the other groups of its bucket (all groups: None)."""
    outcomes = [float(group.taught_nothing(guided)) for group in groups]
    overall = sum(outcomes) / len(outcomes)
    totals: dict[str, list[float]] = {}
    for group, outcome in zip(groups, outcomes, strict=True):
        name = bucket(group) if bucket else ""
        totals.setdefault(name, [0.0, 0.0])
        totals[name][0] += outcome
        totals[name][1] += 1
    error = 0.0
    for group, outcome in zip(groups, outcomes, strict=True):
        alike, count = totals[bucket(group) if bucket else ""]
        others, other_alike = count - 1, alike - outcome
        predicted = (other_alike + PRIOR_WEIGHT * overall) / (others + PRIOR_WEIGHT)
        error += (predicted - outcome) ** 2
    return error / len(groups)


def share_table(groups: Sequence[Group], guided: bool, bucket: Callable[[Group], str]) -> list[str]:
    """Markdown rows: each bucket's groups, its share that taught nothing, and its right answers."""
    rows: dict[str, list[Group]] = {}
    for group in groups:
        rows.setdefault(bucket(group), []).append(group)
    lines = []
    for name, members in sorted(rows.items(), key=lambda item: -len(item[1])):
        alike = sum(group.taught_nothing(guided) for group in members) / len(members)
        right = sum(group.right for group in members) / sum(group.completions for group in members)
        lines.append(f"| {name} | {len(members)} | {alike:.1%} | {right:.1%} |")
    return lines


def report(groups: Sequence[Group], guided: bool) -> str:
    """The phase's share that taught nothing, by each grouping, and how well each predicts it (the screen's only
    where the phase was screened)."""
    if not groups:
        raise ValueError("no group of the history is a question of this data's training split: is --data-dir the "
                         "Spider folder the phase trained on?")
    alike = sum(group.taught_nothing(guided) for group in groups) / len(groups)
    what = "all right" if guided else "all right or all wrong"
    lines = [f"{len(groups)} groups of {len({group.key for group in groups})} questions; {alike:.1%} taught nothing "
             f"({what})"]
    screened = any(group.screen != "not screened" for group in groups)
    groupings = {name: bucket for name, bucket in GROUPINGS.items() if screened or name != "screen"}
    for name in ("class", "tables", "clauses", *(("screen",) if screened else ())):
        lines += ["", f"| {name} | groups | taught nothing | right episodes |", "|---|---|---|---|",
                  *share_table(groups, guided, GROUPINGS[name])]
    baseline = brier(groups, guided, None)
    lines += ["", "| predicting a group's fate by | Brier score | against the phase's share |", "|---|---|---|",
              f"| the phase's share alone | {baseline:.4f} | |"]
    for name, bucket in groupings.items():
        score = brier(groups, guided, bucket)
        lines.append(f"| {name} | {score:.4f} | {score / baseline - 1:+.1%} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("history", type=Path, help="a phase's question_history.json (beside its adapter)")
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA_DIR, help="the Spider folder it trained on")
    parser.add_argument("--screen", type=Path, default=None,
                        help="the --screen_questions eval's report.json (default: the phase's screen/report.json, "
                             "read where it is there)")
    parser.add_argument("--unguided", action="store_true",
                        help="the phase ran without oracle guidance: all-wrong groups taught nothing too")
    args = parser.parse_args(argv)
    if not args.history.is_file():
        parser.error(f"no question history at {args.history}")
    history = json.loads(args.history.read_text(encoding="utf-8"))
    screen_report = args.screen or args.history.resolve().parents[1] / "screen" / "report.json"
    if args.screen is not None and not args.screen.is_file():
        parser.error(f"no screen report at {args.screen}")
    screen = read_screen(screen_report) if screen_report.is_file() else None
    if screen is not None:
        print(f"the screen: {screen_report}, {sum(not right for right in screen.values())} of {len(screen)} questions "
              f"wrong")
    groups, unknown = read_groups(history, gold_facts(args.data_dir), screen)
    if unknown:
        print(f"{unknown} question(s) of the history are not in {args.data_dir}'s training split: left out")
    try:
        print(report(groups, guided=not args.unguided))
    except ValueError as error:
        parser.error(str(error))


if __name__ == "__main__":
    main()
