"""Read-only access: every write, escape hatch and runaway query is refused, the file never changes."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from sqlite_readonly import MAX_SQL_CHARS, DatabaseError, ReadOnlyDatabase
from tests.helpers import make_shop_database


@pytest.fixture()
def shop(tmp_path: Path) -> Path:
    return make_shop_database(tmp_path / "shop.sqlite")


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_reads_tables_columns_foreign_keys_and_rows(shop: Path) -> None:
    with ReadOnlyDatabase(shop) as database:
        assert database.table_names() == ["customer", "order"]
        assert database.columns("order")[2] == ("amount", "REAL")
        assert database.foreign_keys("order") == [("customer_id", "customer", "id")]
        assert database.row_count("customer") == 3
        result = database.run_select("SELECT name FROM customer ORDER BY id", max_rows=2)
        assert result.columns == ["name"]
        assert result.rows == [("Ada",), ("Grace",)]
        assert result.truncated


@pytest.mark.parametrize(
    "sql",
    [
        "DELETE FROM customer",
        "UPDATE customer SET name = 'x'",
        "INSERT INTO customer VALUES (9, 'x', 'y')",
        "DROP TABLE customer",
        "CREATE TABLE t (a)",
        "CREATE TEMP TABLE t (a)",
        "ATTACH DATABASE '/tmp/other.sqlite' AS other",
        "PRAGMA journal_mode = DELETE",
        "PRAGMA table_info(customer)",
        "SELECT load_extension('libevil')",
        "VACUUM",
        "SELECT * FROM pragma_table_info('customer')",
    ],
)
def test_refuses_anything_but_reading(shop: Path, sql: str) -> None:
    before = file_digest(shop)
    with ReadOnlyDatabase(shop) as database, pytest.raises(DatabaseError, match="only reading|SQLite error"):
        database.run_select(sql)
    assert file_digest(shop) == before


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("", "empty"),
        ("   \n", "empty"),
        ("SELECT 1; SELECT 2", "one"),
        ("SELEC name FROM customer", "syntax error"),
        ("SELECT nope FROM customer", "no such column"),
        ("SELECT 1 -- " + "x" * MAX_SQL_CHARS, "limit"),
        ("SELECT '\x00'", "NUL"),
    ],
)
def test_bad_sql_gets_an_actionable_error(shop: Path, sql: str, message: str) -> None:
    with ReadOnlyDatabase(shop) as database, pytest.raises(DatabaseError, match=message):
        database.run_select(sql)


def test_runaway_query_is_interrupted(shop: Path) -> None:
    endless = "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n) SELECT count(*) FROM n"
    with ReadOnlyDatabase(shop, timeout_s=0.2) as database:
        with pytest.raises(DatabaseError, match="longer than 0.2 s"):
            database.run_select(endless)
        # The connection stays usable after an interrupt.
        assert database.run_select("SELECT count(*) FROM customer").rows == [(3,)]


def test_huge_values_are_refused(shop: Path) -> None:
    with ReadOnlyDatabase(shop) as database, pytest.raises(DatabaseError):
        database.run_select("SELECT zeroblob(100000000)")


def test_unknown_table_lists_valid_ones(shop: Path) -> None:
    with ReadOnlyDatabase(shop) as database:
        assert database.resolve_table("CUSTOMER") == "customer"
        with pytest.raises(DatabaseError, match="tables are: customer, order"):
            database.resolve_table("customers")


def test_missing_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(DatabaseError, match="not found"):
        ReadOnlyDatabase(tmp_path / "absent.sqlite")
