"""The committed built-in dataset (data/builtin): Spider layout, sound gold SQL, a clean
train/dev split by database, all hardness classes, and byte-for-byte reproducibility by
scripts/make_builtin_data.py."""

from __future__ import annotations

import json
import sqlite3
import sys
from collections import Counter
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import make_builtin_data  # noqa: E402

SPLIT_FILES = ("train_spider.json", "dev.json")
SPIDER_COLUMN_TYPES = {"text", "number", "time", "boolean", "others"}

try:
    from sql_structure import classify_hardness
except ImportError:  # written in parallel; the hardness check waits for it
    classify_hardness = None


def load_json(directory: Path, name: str) -> list[dict]:
    return json.loads((directory / name).read_text(encoding="utf-8"))


def database_path(directory: Path, db_id: str) -> Path:
    return directory / "database" / db_id / f"{db_id}.sqlite"


def open_read_only(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{path}?mode=ro", uri=True)


def table_contents(path: Path) -> list[str]:
    """Schema and rows of a database as SQL text, for comparing two files' contents."""
    connection = open_read_only(path)
    try:
        return list(connection.iterdump())
    finally:
        connection.close()


@pytest.fixture(scope="module")
def schemas(builtin_data_dir: Path) -> dict[str, dict]:
    return {record["db_id"]: record for record in load_json(builtin_data_dir, "tables.json")}


@pytest.fixture(scope="module")
def splits(builtin_data_dir: Path) -> dict[str, list[dict]]:
    return {name: load_json(builtin_data_dir, name) for name in SPLIT_FILES}


def test_layout_has_spider_files_and_a_database_per_schema(builtin_data_dir: Path, schemas: dict[str, dict]) -> None:
    for name in (*SPLIT_FILES, "tables.json"):
        assert (builtin_data_dir / name).is_file(), f"missing {name}"
    for db_id in schemas:
        assert database_path(builtin_data_dir, db_id).is_file(), f"missing database file for {db_id}"


def test_several_databases_with_related_tables(schemas: dict[str, dict]) -> None:
    assert len(schemas) >= 4
    for db_id, schema in schemas.items():
        assert len(schema["table_names_original"]) >= 3, db_id
        assert schema["foreign_keys"], f"{db_id} has no foreign keys"
        assert schema["primary_keys"], f"{db_id} has no primary keys"


def test_schema_records_follow_spider_format(builtin_data_dir: Path, schemas: dict[str, dict]) -> None:
    for db_id, schema in schemas.items():
        columns = schema["column_names_original"]
        assert columns[0] == [-1, "*"], db_id
        assert len(schema["column_names"]) == len(columns) == len(schema["column_types"]), db_id
        assert set(schema["column_types"]) <= SPIDER_COLUMN_TYPES, db_id
        assert all(0 < index < len(columns) for pair in schema["foreign_keys"] for index in pair), db_id
        connection = open_read_only(database_path(builtin_data_dir, db_id))
        try:
            for table_index, table in enumerate(schema["table_names_original"]):
                in_file = [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]
                in_schema = [name for index, name in columns if index == table_index]
                assert in_file == in_schema, f"{db_id}.{table}: tables.json disagrees with the SQLite file"
                row_count = connection.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
                assert 10 <= row_count <= 60, f"{db_id}.{table} has {row_count} rows"
        finally:
            connection.close()


def test_enough_questions_with_spider_fields(splits: dict[str, list[dict]], schemas: dict[str, dict]) -> None:
    records = [record for split in splits.values() for record in split]
    assert len(records) >= 300
    for record in records:
        assert set(record) == {"db_id", "question", "query"}, record
        assert record["db_id"] in schemas, record
        assert "{" not in record["question"] and "{" not in record["query"], f"unfilled slot: {record}"
    assert len({record["question"] for record in records}) == len(records), "duplicate questions"


def test_train_and_dev_use_different_databases(splits: dict[str, list[dict]]) -> None:
    train = {record["db_id"] for record in splits["train_spider.json"]}
    dev = {record["db_id"] for record in splits["dev.json"]}
    assert train and dev
    assert not train & dev, f"databases in both splits: {sorted(train & dev)}"


def test_every_gold_query_executes_and_returns_a_value(builtin_data_dir: Path, splits: dict[str, list[dict]]) -> None:
    for split in splits.values():
        for record in split:
            connection = open_read_only(database_path(builtin_data_dir, record["db_id"]))
            try:
                rows = connection.execute(record["query"]).fetchall()
            finally:
                connection.close()
            assert any(value is not None for row in rows for value in row), f"degenerate gold: {record}"


def test_answers_come_in_several_shapes(builtin_data_dir: Path, splits: dict[str, list[dict]]) -> None:
    shapes = Counter()
    for record in splits["train_spider.json"] + splits["dev.json"]:
        connection = open_read_only(database_path(builtin_data_dir, record["db_id"]))
        try:
            rows = connection.execute(record["query"]).fetchall()
        finally:
            connection.close()
        value = rows[0][0]
        if len(rows) == 1 and len(rows[0]) == 1:
            shapes["integer" if isinstance(value, int) else "float" if isinstance(value, float) else "text"] += 1
        else:
            shapes["list" if len(rows[0]) == 1 else "table"] += 1
        shapes["ordered"] += " ORDER BY " in record["query"]
    for shape in ("integer", "float", "text", "list", "table", "ordered"):
        assert shapes[shape] >= 10, f"too few {shape} answers: {dict(shapes)}"


def test_regenerating_gives_identical_data(tmp_path: Path, builtin_data_dir: Path, schemas: dict[str, dict]) -> None:
    make_builtin_data.build(tmp_path)
    for name in (*SPLIT_FILES, "tables.json"):
        assert (tmp_path / name).read_bytes() == (builtin_data_dir / name).read_bytes(), (
            f"{name} differs from a fresh build: run `python scripts/make_builtin_data.py` and commit data/builtin"
        )
    for db_id in schemas:
        assert table_contents(database_path(tmp_path, db_id)) == table_contents(database_path(builtin_data_dir, db_id)), db_id


@pytest.mark.skipif(classify_hardness is None, reason="sql_structure.classify_hardness is not importable yet")
def test_all_hardness_classes_in_both_splits(splits: dict[str, list[dict]]) -> None:
    for name, records in splits.items():
        counts = Counter(classify_hardness(record["query"]).value for record in records)
        for level in ("easy", "medium", "hard", "extra"):
            assert counts[level] >= 0.08 * len(records), f"{name}: too few {level} questions: {dict(counts)}"
