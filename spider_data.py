"""Spider-format data: read a split, run each gold query, classify it, and build trainer rows.

A Spider-format folder (the layout of the official ``spider.zip``) holds ``train_spider.json``
and/or ``dev.json`` (items with ``db_id``, ``question``, ``query``), ``tables.json`` and
``database/<db_id>/<db_id>.sqlite``. Loading a split runs every gold query read-only, gives it
Spider's official hardness class and an answer type, and marks the questions no episode can be
scored on (missing database, gold that fails, returns nothing or only NULLs, or an answer too
long for the answer tool) with a reason.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar

from tqdm.auto import tqdm

from agent_env import MAX_ANSWER_CHARS
from sql_structure import Hardness, SQLStructureError, classify_hardness
from sqlite_readonly import DatabaseError, ReadOnlyDatabase
from verifier import format_answer

T = TypeVar("T")

BUILTIN_DATA_DIR = Path(__file__).resolve().parent / "data" / "builtin"
SPLIT_FILES = {"train": "train_spider.json", "dev": "dev.json"}
GOLD_TIMEOUT_S = 10.0
HARDNESS_ORDER = [Hardness.EASY, Hardness.MEDIUM, Hardness.HARD, Hardness.EXTRA]


class SkipReason(str, Enum):
    """Why a question cannot be used to train or evaluate."""

    MISSING_DATABASE = "database file missing"
    NOT_A_DATABASE = "database file is not a SQLite database"
    GOLD_FAILS = "gold query fails"
    GOLD_EMPTY = "gold query returns no rows"
    GOLD_ALL_NULL = "gold query returns only NULL"
    ANSWER_TOO_LONG = "gold answer longer than the answer tool accepts"
    UNCLASSIFIABLE = "gold SQL cannot be classified"


class AnswerType(str, Enum):
    """The shape and type of a gold result, which decides how answers are compared."""

    INTEGER = "integer"
    FLOAT = "float"
    TEXT = "text"
    LIST = "list"
    TABLE = "table"


@dataclass(frozen=True)
class SpiderExample:
    """One question with everything known about its gold query."""

    db_id: str
    question: str
    gold_sql: str
    db_path: str
    hardness: Hardness | None
    answer_type: AnswerType | None
    gold_row_count: int
    skip_reason: SkipReason | None = None
    skip_detail: str = ""

    @property
    def is_usable(self) -> bool:
        return self.skip_reason is None


@dataclass
class SpiderSplit:
    """A loaded split: every question (usable or not) and what is missing."""

    data_dir: Path
    split: str
    examples: list[SpiderExample]
    missing_databases: dict[str, int] = field(default_factory=dict)
    unreadable_databases: dict[str, str] = field(default_factory=dict)  # db_id -> file and SQLite's error

    def usable(self) -> list[SpiderExample]:
        return [example for example in self.examples if example.is_usable]

    def skipped(self) -> list[SpiderExample]:
        return [example for example in self.examples if not example.is_usable]

    def hardness_counts(self) -> dict[str, int]:
        counts = Counter(example.hardness.value for example in self.usable() if example.hardness is not None)
        return {hardness.value: counts.get(hardness.value, 0) for hardness in HARDNESS_ORDER}

    def summary(self) -> str:
        """A few lines a person reads before training: what is used, what is skipped and why."""
        lines = [
            f"{self.split} split of {self.data_dir}: {len(self.examples)} questions, "
            f"{len(self.usable())} usable, {len(self.skipped())} skipped",
            "  by hardness: " + ", ".join(f"{name} {count}" for name, count in self.hardness_counts().items()),
        ]
        for reason, count in Counter(example.skip_reason for example in self.skipped()).most_common():
            lines.append(f"  skipped, {reason.value}: {count}")
        if self.missing_databases:
            missing = ", ".join(f"{db_id} ({count} questions)" for db_id, count in sorted(self.missing_databases.items()))
            lines.append(f"  missing database files: {missing}")
        for db_id, problem in sorted(self.unreadable_databases.items()):
            lines.append(f"  unreadable database {db_id}: {problem}")
        return "\n".join(lines)


# --- reading -------------------------------------------------------------------------------


def split_path(data_dir: str | Path, split: str) -> Path:
    """The JSON file of a split: 'train', 'dev', or a file name inside data_dir."""
    data_dir = Path(data_dir)
    if not data_dir.is_dir():
        raise FileNotFoundError(
            f"no data folder at {data_dir}: point --data_dir (or --data-dir) at a Spider-format folder "
            f"(train_spider.json, dev.json, tables.json, database/) or leave it out to use {BUILTIN_DATA_DIR}"
        )
    path = data_dir / SPLIT_FILES.get(split, split)
    if not path.is_file():
        present = sorted(p.name for p in data_dir.glob("*.json"))
        raise FileNotFoundError(f"no {split!r} split in {data_dir}: {path.name} not found (JSON files here: {present})")
    return path


def check_data_dir(data_dir: str | Path, split: str = "train") -> Path:
    """The split's file, or FileNotFoundError saying what is missing: for a check before any work starts."""
    path = split_path(data_dir, split)
    if not (Path(data_dir) / "database").is_dir():
        raise FileNotFoundError(f"no database/ folder in {data_dir}: a Spider-format folder holds "
                                "database/<db_id>/<db_id>.sqlite for every db_id its questions name")
    return path


def read_questions(path: Path) -> list[dict[str, str]]:
    """The items of a split file, checked for the three fields the project needs."""
    try:
        items = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise ValueError(f"{path} is not valid JSON: {error}") from None
    if not isinstance(items, list):
        raise ValueError(f"{path} must hold a JSON list of questions, found {type(items).__name__}")
    for index, item in enumerate(items):
        missing = [key for key in ("db_id", "question", "query") if not isinstance(item, dict) or key not in item]
        if missing:
            raise ValueError(f"{path}: item {index} lacks {', '.join(missing)}; each item needs db_id, question, query")
    return items


def database_path(data_dir: Path, db_id: str) -> Path:
    return data_dir / "database" / db_id / f"{db_id}.sqlite"


def link_schemas_and_databases(data_dir: Path, folder: Path) -> None:
    """Link ``tables.json`` and ``database/`` of ``data_dir`` into ``folder``: a Spider-format folder of other
    question splits over the same databases, without copying them."""
    for name in ("tables.json", "database"):
        link, source = folder / name, (data_dir / name).resolve()
        if source.exists() and not link.exists():
            try:
                link.symlink_to(source)
            except FileExistsError:  # made by a process writing the same folder beside this one
                pass


def infer_answer_type(rows: list[tuple]) -> AnswerType:
    """Integer, float or text for one value; list for one column of several rows; else table."""
    if len(rows) == 1 and len(rows[0]) == 1:
        value = rows[0][0]
        if isinstance(value, bool | int):
            return AnswerType.INTEGER
        if isinstance(value, float):
            return AnswerType.FLOAT
        return AnswerType.TEXT
    return AnswerType.LIST if len(rows[0]) == 1 else AnswerType.TABLE


def _gold_problem(rows: list[tuple]) -> SkipReason | None:
    if not rows:
        return SkipReason.GOLD_EMPTY
    if all(value is None for row in rows for value in row):
        return SkipReason.GOLD_ALL_NULL
    if len(format_answer(rows)) > MAX_ANSWER_CHARS:
        return SkipReason.ANSWER_TOO_LONG
    return None


def _examine(item: dict[str, str], db_path: Path, database: ReadOnlyDatabase | str | None) -> SpiderExample:
    """Run one gold query and classify it; problems become a skip reason, never an exception."""
    common = dict(db_id=item["db_id"], question=item["question"].strip(), gold_sql=item["query"].strip(), db_path=str(db_path))
    try:
        hardness: Hardness | None = classify_hardness(common["gold_sql"])
    except SQLStructureError as error:
        hardness, unclassifiable = None, str(error)
    else:
        unclassifiable = ""
    if database is None:
        return SpiderExample(**common, hardness=hardness, answer_type=None, gold_row_count=0,
                             skip_reason=SkipReason.MISSING_DATABASE, skip_detail=str(db_path))
    if isinstance(database, str):  # the file is there but SQLite cannot read it; the string says why
        return SpiderExample(**common, hardness=hardness, answer_type=None, gold_row_count=0,
                             skip_reason=SkipReason.NOT_A_DATABASE, skip_detail=database)
    try:
        rows = database.run_select(common["gold_sql"]).rows
    except DatabaseError as error:
        return SpiderExample(**common, hardness=hardness, answer_type=None, gold_row_count=0,
                             skip_reason=SkipReason.GOLD_FAILS, skip_detail=str(error))
    problem = _gold_problem(rows)
    if problem is None and hardness is None:
        problem = SkipReason.UNCLASSIFIABLE
    return SpiderExample(
        **common,
        hardness=hardness,
        answer_type=None if problem in (SkipReason.GOLD_EMPTY, SkipReason.GOLD_ALL_NULL) else infer_answer_type(rows),
        gold_row_count=len(rows),
        skip_reason=problem,
        skip_detail=unclassifiable,
    )


def parse_hardness(values: Iterable[str | Hardness] | None) -> set[Hardness] | None:
    """Hardness names (any case) as classes; None for no filter; ValueError naming an unknown one."""
    if values is None:
        return None
    valid = {hardness.value: hardness for hardness in Hardness}
    chosen = set()
    for value in values:
        name = value.value if isinstance(value, Hardness) else str(value).strip().lower()
        if name not in valid:
            raise ValueError(f"unknown hardness {value!r}; choose from {', '.join(valid)}")
        chosen.add(valid[name])
    return chosen


def hardness_names(values: Iterable[str | Hardness]) -> list[str]:
    """Hardness names (any case) as Spider's class names, in Spider's order (easy first), each once; ValueError naming
    an unknown one (parse_hardness)."""
    chosen = parse_hardness(values) or set()
    return [hardness.value for hardness in Hardness if hardness in chosen]


def load_split(
    data_dir: str | Path = BUILTIN_DATA_DIR,
    split: str = "train",
    *,
    hardness: Iterable[str | Hardness] | None = None,
    db_ids: Iterable[str] | None = None,
    limit: int | None = None,
    progress: bool = True,
) -> SpiderSplit:
    """Read a split, run its gold queries, and keep the questions matching the filters.

    ``hardness`` and ``db_ids`` keep only those classes and databases (skipped questions stay in
    the split so they can be counted); ``limit`` keeps the first N questions after filtering.
    """
    data_dir = Path(data_dir)
    items = read_questions(split_path(data_dir, split))
    if db_ids is not None:
        wanted = set(db_ids)
        unknown = wanted - {item["db_id"] for item in items}
        if unknown:
            raise ValueError(f"no questions for database(s) {sorted(unknown)} in the {split} split of {data_dir}")
        items = [item for item in items if item["db_id"] in wanted]
    hardness_filter = parse_hardness(hardness)

    # Open each database once: group question positions by database, fill results in file order.
    examples: list[SpiderExample | None] = [None] * len(items)
    positions_by_database: dict[str, list[int]] = {}
    for position, item in enumerate(items):
        positions_by_database.setdefault(item["db_id"], []).append(position)
    missing: dict[str, int] = {}
    unreadable: dict[str, str] = {}
    with tqdm(total=len(items), desc=f"gold queries ({split})", disable=not progress, unit="q") as bar:
        for db_id, positions in positions_by_database.items():
            path = database_path(data_dir, db_id)
            if not path.is_file():
                missing[db_id] = len(positions)
                for position in positions:
                    examples[position] = _examine(items[position], path, None)
                bar.update(len(positions))
                continue
            with ReadOnlyDatabase(path, timeout_s=GOLD_TIMEOUT_S) as database:
                try:
                    database.table_names()  # SQLite reads the file's header here: a corrupt file fails now
                except DatabaseError as error:
                    unreadable[db_id] = f"{path}: {error}"
                for position in positions:
                    examples[position] = _examine(items[position], path, unreadable.get(db_id, database))
                    bar.update()
    loaded = [example for example in examples if example is not None]
    if hardness_filter is not None:
        loaded = [example for example in loaded if example.hardness in hardness_filter]
    if limit is not None:
        loaded = loaded[:limit]
    return SpiderSplit(data_dir=data_dir, split=split, examples=loaded, missing_databases=missing,
                       unreadable_databases=unreadable)


# --- trainer rows ----------------------------------------------------------------------------


def question_key(db_id: str, question: str) -> str:
    """A question's identity across phases and datasets: its database and its text."""
    return f"{db_id}\t{question}"


def spread_sample(examples: Sequence[T], count: int | None) -> list[T]:
    """At most ``count`` of ``examples``, evenly spaced through them (all of them for None). Spider's files group
    questions by database, so the first ``count`` would come from a handful of databases; evenly spaced picks keep
    every database's share, in the original order."""
    if count is None or count >= len(examples):
        return list(examples)
    return [examples[index * len(examples) // count] for index in range(count)]


def to_grpo_rows(examples: Iterable[SpiderExample], system_prompt: str) -> list[dict[str, Any]]:
    """Rows for TRL's GRPOTrainer: a chat ``prompt`` plus the columns ``SQLEnv.reset`` reads.

    Unusable examples are left out. The table names are not in the prompt: ``SQLEnv.reset``
    appends them, so training and evaluation show the model the same first message. The system prompt
    has no default: it states the step budget (``prompt.system_prompt``), which is the caller's setting.
    """
    return [
        {
            "prompt": [
                {"role": "system", "content": system_prompt},
                {"role": "user", "content": example.question},
            ],
            "db_path": example.db_path,
            "question": example.question,
            "gold_sql": example.gold_sql,
            "hardness": example.hardness.value if example.hardness else "",
            "db_id": example.db_id,
        }
        for example in examples
        if example.is_usable
    ]
