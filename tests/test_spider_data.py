"""The Spider data layer: reading splits, gold execution, hardness, skip reasons, trainer rows."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from agent_env import DEFAULT_STEP_BUDGET
from prompt import system_prompt
from spider_data import AnswerType, SkipReason, infer_answer_type, link_schemas_and_databases, load_split, to_grpo_rows
from tests.helpers import make_shop_database

PUBLISHED_TRAIN_HARDNESS = {"easy": 1694, "medium": 2777, "hard": 1460, "extra": 1068}


def write_split(data_dir: Path, items: list[dict[str, str]]) -> Path:
    (data_dir / "database" / "shop").mkdir(parents=True)
    make_shop_database(data_dir / "database" / "shop" / "shop.sqlite")
    (data_dir / "train_spider.json").write_text(json.dumps(items))
    return data_dir


@pytest.fixture()
def shop_dir(tmp_path: Path) -> Path:
    items = [
        {"db_id": "shop", "question": "How many customers?", "query": "SELECT count(*) FROM customer"},
        {"db_id": "shop", "question": "Names by city?", "query": "SELECT name, city FROM customer"},
        {"db_id": "shop", "question": "Broken", "query": "SELECT nope FROM customer"},
        {"db_id": "shop", "question": "Nobody", "query": "SELECT name FROM customer WHERE id > 100"},
        {"db_id": "shop", "question": "Notes", "query": "SELECT note FROM \"order\" WHERE id = 1"},
        {"db_id": "gone", "question": "Missing db", "query": "SELECT 1"},
    ]
    return write_split(tmp_path, items)


def test_loader_marks_every_unusable_question_with_a_reason(shop_dir: Path) -> None:
    split = load_split(shop_dir, "train", progress=False)
    reasons = [example.skip_reason for example in split.examples]
    assert reasons == [None, None, SkipReason.GOLD_FAILS, SkipReason.GOLD_EMPTY, SkipReason.GOLD_ALL_NULL,
                       SkipReason.MISSING_DATABASE]
    assert split.missing_databases == {"gone": 1}
    assert "no such column" in split.examples[2].skip_detail
    summary = split.summary()
    assert "6 questions, 2 usable, 4 skipped" in summary and "gone (1 questions)" in summary


def test_answer_types_come_from_the_gold_rows() -> None:
    assert infer_answer_type([(3,)]) == AnswerType.INTEGER
    assert infer_answer_type([(2.5,)]) == AnswerType.FLOAT
    assert infer_answer_type([("Ada",)]) == AnswerType.TEXT
    assert infer_answer_type([("Ada",), ("Grace",)]) == AnswerType.LIST
    assert infer_answer_type([("Ada", 1)]) == AnswerType.TABLE


def test_filters_by_hardness_database_and_limit(shop_dir: Path) -> None:
    easy = load_split(shop_dir, hardness=["easy"], progress=False)
    assert easy.examples and all(example.hardness.value == "easy" for example in easy.examples)
    assert len(load_split(shop_dir, db_ids=["shop"], limit=2, progress=False).examples) == 2


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hardness": ["eazy"]}, "unknown hardness 'eazy'; choose from easy, medium, hard, extra"),
        ({"db_ids": ["nowhere"]}, "no questions for database"),
        ({"split": "dev"}, "no 'dev' split"),
    ],
)
def test_bad_arguments_get_clear_errors(shop_dir: Path, kwargs: dict, message: str) -> None:
    with pytest.raises((ValueError, FileNotFoundError), match=message):
        load_split(shop_dir, progress=False, **kwargs)


def test_missing_folder_and_malformed_files_get_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no data folder"):
        load_split(tmp_path / "absent")
    (tmp_path / "train_spider.json").write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        load_split(tmp_path)
    (tmp_path / "train_spider.json").write_text(json.dumps([{"db_id": "x", "question": "q"}]))
    with pytest.raises(ValueError, match="item 0 lacks query"):
        load_split(tmp_path)


def test_grpo_rows_carry_prompt_and_reset_columns(shop_dir: Path) -> None:
    rows = to_grpo_rows(load_split(shop_dir, progress=False).examples, system_prompt(DEFAULT_STEP_BUDGET))
    assert len(rows) == 2
    row = rows[0]
    assert [message["role"] for message in row["prompt"]] == ["system", "user"]
    assert row["prompt"][1]["content"] == "How many customers?"
    assert {"db_path", "question", "gold_sql", "hardness", "db_id"} <= set(row)


def test_builtin_data_loads_with_all_hardness_classes(builtin_data_dir: Path) -> None:
    for split_name in ("train", "dev"):
        split = load_split(builtin_data_dir, split_name, progress=False)
        assert not split.skipped(), split.summary()
        assert all(count > 0 for count in split.hardness_counts().values()), split.summary()


@pytest.mark.spider
def test_real_spider_train_split_reproduces_published_hardness_and_reports_gaps(spider_path: Path) -> None:
    split = load_split(spider_path, "train", progress=False)
    counts = Counter(example.hardness.value for example in split.examples if example.hardness is not None)
    for hardness, published in PUBLISHED_TRAIN_HARDNESS.items():
        deviation = abs(counts[hardness] - published) / published
        print(f"{hardness}: measured {counts[hardness]}, published {published}, deviation {deviation:.2%}")
        assert deviation <= 0.005
    assert split.missing_databases == {"baseball_1": 82, "soccer_1": 14}
    skipped = Counter(example.skip_reason for example in split.skipped())
    assert skipped[SkipReason.GOLD_FAILS] == 3
    assert len(split.usable()) > 6500


def test_a_file_that_is_not_a_database_is_named_with_its_own_reason(shop_dir: Path) -> None:
    corrupt = shop_dir / "database" / "broken" / "broken.sqlite"
    corrupt.parent.mkdir(parents=True)
    corrupt.write_bytes(b"this is not SQLite" * 100)
    items = json.loads((shop_dir / "train_spider.json").read_text())
    items += [{"db_id": "broken", "question": f"Q{n}?", "query": "SELECT 1"} for n in range(3)]
    (shop_dir / "train_spider.json").write_text(json.dumps(items))
    split = load_split(shop_dir, "train", progress=False)
    broken = [example for example in split.examples if example.db_id == "broken"]
    assert {example.skip_reason for example in broken} == {SkipReason.NOT_A_DATABASE}
    assert f"unreadable database broken: {corrupt}: SQLite error: file is not a database" in split.summary()
    assert "database file is not a SQLite database: 3" in split.summary()


def test_a_folder_without_databases_is_refused_before_any_work(tmp_path: Path) -> None:
    from spider_data import check_data_dir

    (tmp_path / "train_spider.json").write_text("[]")
    with pytest.raises(FileNotFoundError, match="no database/ folder"):
        check_data_dir(tmp_path)


def test_a_new_split_folder_reads_the_same_databases_and_schemas(shop_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "screen" / "data"
    folder.mkdir(parents=True)
    (folder / "dev.json").write_text(json.dumps([{"db_id": "shop", "question": "How many customers?",
                                                  "query": "SELECT count(*) FROM customer"}]), encoding="utf-8")
    link_schemas_and_databases(shop_dir, folder)
    link_schemas_and_databases(shop_dir, folder)  # a second writer of the same folder finds the links there
    assert (folder / "database").resolve() == (shop_dir / "database").resolve()
    assert [example.question for example in load_split(folder, "dev").usable()] == ["How many customers?"]
    empty = tmp_path / "empty"
    empty.mkdir()
    link_schemas_and_databases(tmp_path / "elsewhere", empty)  # nothing there to link: nothing made
    assert not list(empty.iterdir())
