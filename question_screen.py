"""Before a GRPO phase, one greedy episode of its start model on each of its questions (--screen_questions).

    outcomes = run_screen(start, base_model, phase_questions(dataset), data_dir, out_dir / SCREEN_DIRNAME, ...)
    sampler = question_sampler(..., ranks=screen_ranks(outcomes))    # each pass: the questions it got wrong first

Late in the recipe's guided mixed phase about a third of the groups are all right and teach nothing, and nothing known
of a question beforehand (its Spider class, the tables its gold query reads, its database) tells them apart: over the
real 1.5B's held-out pass rates such priors leave 32-34% of the groups all right, where a question that one greedy
episode got wrong has an all-right group 11.8% of the time (docs/results.md, 2026-12-07h;
``benchmarks/class_deferral.py --heldout-results``). So the phase's questions are played once first, by the project's
own eval (``python -m eval`` in a child process, with the turn cap and step budget of training: its memory is given
back before the phase loads its model), and the sampler serves the wrong ones first (sampling.InformativeSampler's
``question_ranks``). What it costs is an eval of the phase's questions (the 1.5B's held-out eval plays about ten
questions a second on one H100). The eval's report stays in the phase's folder (``screen/``): a resumed phase reads
it instead of playing again.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from sampling import UNRANKED
from spider_data import link_schemas_and_databases, question_key

SCREEN_DIRNAME = "screen"
RANK_WRONG, RANK_RIGHT = UNRANKED - 1, UNRANKED + 1  # a question the screen did not play comes between them
EVAL_TAIL_CHARS = 2000  # of a failed eval's output, in the error


class ScreenError(RuntimeError):
    """The screen's eval failed; its message holds the eval's last output."""


def phase_questions(dataset: Any) -> list[dict[str, str]]:
    """A phase's questions as Spider items (db_id, question, query), from its ``datasets.Dataset`` rows' columns."""
    columns = [dataset.data.column(name).to_pylist() for name in ("db_id", "question", "gold_sql")]
    return [{"db_id": db_id, "question": question, "query": sql} for db_id, question, sql in zip(*columns, strict=True)]


def write_screen_data(items: Sequence[Mapping[str, str]], data_dir: Path, folder: Path) -> Path:
    """A Spider-format folder holding ``items`` (the phase's questions) as its dev split, the databases and schemas
    linked from ``data_dir``: what ``python -m eval --split dev`` plays."""
    data = folder / "data"
    data.mkdir(parents=True, exist_ok=True)
    (data / "dev.json").write_text(json.dumps(list(items), indent=1), encoding="utf-8")
    link_schemas_and_databases(data_dir, data)
    return data


def screen_command(checkpoint: Path, base_model: str, data: Path, out: Path, backend: str, step_budget: int,
                   max_new_tokens: int) -> list[str]:
    """The eval that plays every question once, greedily, as the held-out evals do."""
    return [sys.executable, "-m", "eval", "--checkpoint", str(checkpoint), "--base-model", base_model,
            "--data-dir", str(data), "--split", "dev", "--out", str(out), "--backend", backend,
            "--step-budget", str(step_budget), "--max-new-tokens", str(max_new_tokens), "--no-progress"]


def read_screen(report: Path) -> dict[str, bool]:
    """Each played question's key and whether its episode answered right, from the eval's report.json (questions
    the eval skipped, e.g. a gold query that failed there, are left out)."""
    questions = json.loads(report.read_text(encoding="utf-8"))["questions"]
    return {question_key(record["db_id"], record["question"]): bool(record["correct"])
            for record in questions if not record.get("skip_reason")}


def screen_ranks(outcomes: Mapping[str, bool]) -> dict[str, int]:
    """The sampler's ranks: the questions the screen got wrong first, then those it got right."""
    return {key: RANK_RIGHT if right else RANK_WRONG for key, right in outcomes.items()}


def run_screen(checkpoint: Path, base_model: str, items: Sequence[Mapping[str, str]], data_dir: Path, folder: Path,
               *, backend: str, step_budget: int, max_new_tokens: int, echo: TextIO | None = None) -> dict[str, bool]:
    """Play every question of ``items`` once with ``checkpoint`` (an adapter on ``base_model``, or a model folder)
    into ``folder``, or read the report a run before left there; returns each question's outcome. ``echo``: where
    the eval's output goes too, line by line as it comes (its progress every 30 s, its report), besides its log."""
    report = folder / "report.json"
    if not report.is_file():
        data = write_screen_data(items, data_dir, folder)
        command = screen_command(checkpoint, base_model, data, folder, backend, step_budget, max_new_tokens)
        log = folder / "eval.log"  # written as the eval runs: its progress lines, and what it said if it failed
        # The child finds this project's modules (eval, agent_env...) from its working directory.
        with log.open("w", encoding="utf-8") as output, subprocess.Popen(
                command, cwd=Path(__file__).resolve().parent, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                text=True, encoding="utf-8", errors="replace") as child:
            for line in child.stdout:
                output.write(line)
                output.flush()
                if echo is not None:
                    echo.write(f"[screen] {line}")
                    echo.flush()
        if child.returncode != 0 or not report.is_file():
            raise ScreenError(f"the screen's eval ({' '.join(command)}) failed with exit code {child.returncode} "
                              f"(all it wrote: {log}); its last output:\n"
                              f"{log.read_text(encoding='utf-8')[-EVAL_TAIL_CHARS:]}")
    outcomes = read_screen(report)
    if not outcomes:
        raise ScreenError(f"the screen's eval played none of the phase's {len(items)} questions ({report})")
    return outcomes


def describe_screen(outcomes: Mapping[str, bool], questions: int, seconds: float | None) -> str:
    """The phase's log line: how many questions the screen played and got wrong."""
    wrong = sum(not right for right in outcomes.values())
    took = f" in {seconds:.0f} s" if seconds is not None else " (read from the report a run before left)"
    return (f"[train] screen: {len(outcomes)} of {questions} questions played once by the start model{took}; "
            f"{wrong} answered wrong, served first in each pass, {len(outcomes) - wrong} right, served last")
