"""Read-only access: every write, escape hatch and runaway query is refused, the file never changes."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

import sqlite_readonly
from sqlite_readonly import (
    MAX_LIKE_PATTERN_BYTES,
    MAX_SQL_CHARS,
    MAX_VALUE_BYTES,
    DatabaseError,
    ReadOnlyDatabase,
)
from tests.helpers import make_shop_database


@pytest.fixture(params=["apsw", "sqlite3"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test through apsw's SQLite and through the standard library's (the fallback)."""
    if request.param == "apsw" and sqlite_readonly.apsw is None:
        pytest.skip("apsw is not installed: pip install -r requirements.txt")
    if request.param == "sqlite3":
        monkeypatch.setattr(sqlite_readonly, "apsw", None)
    return request.param


pytestmark = pytest.mark.usefixtures("backend")


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


@pytest.mark.parametrize("sql", ["SELECT 1;", "SELECT 1; -- done", "SELECT 1 /* one */ ;  ", "  SELECT 1\n"])
def test_comments_and_semicolons_after_the_one_statement_are_fine(shop: Path, sql: str) -> None:
    with ReadOnlyDatabase(shop) as database:
        assert database.run_select(sql).rows == [(1,)]


def test_a_second_statement_after_rows_is_refused_before_any_row(shop: Path) -> None:
    with ReadOnlyDatabase(shop) as database, pytest.raises(DatabaseError, match="exactly one SELECT"):
        database.run_select("SELECT name FROM customer; SELECT 1", max_rows=1)


def test_an_empty_result_still_has_its_columns(shop: Path) -> None:
    with ReadOnlyDatabase(shop) as database:
        result = database.run_select("SELECT name, city FROM customer WHERE id > 99")
    assert (result.columns, result.rows, result.truncated) == (["name", "city"], [], False)


@pytest.mark.parametrize(
    ("sql", "instead"),
    [
        ("SELECT printf('%.*c', 2000000000, 'x')", r"round\(x, digits\)"),
        ("SELECT format('%d items', count(*)) FROM customer", r"\|\|"),
        ("SELECT upper(printf('%s', name)) FROM customer", "round"),
    ],
)
def test_functions_that_cannot_be_interrupted_are_refused_with_what_to_do(shop: Path, sql: str, instead: str) -> None:
    with ReadOnlyDatabase(shop) as database, pytest.raises(DatabaseError, match="is not available here") as error:
        database.run_select(sql)
    assert error.match(instead)


def test_median_is_refused_where_sqlite_has_it(shop: Path, backend: str) -> None:
    # SQLite 3.40 (the fallback) has no median; apsw's 3.54 has one that sorts all rows in one step.
    message = "ORDER BY x LIMIT 1 OFFSET" if backend == "apsw" else "no such function: median"
    with ReadOnlyDatabase(shop) as database, pytest.raises(DatabaseError, match=message):
        database.run_select('SELECT median(amount) FROM "order"')


def test_values_past_the_limit_are_refused_with_the_limit(shop: Path) -> None:
    with ReadOnlyDatabase(shop) as database:
        assert database.run_select(f"SELECT length(zeroblob({MAX_VALUE_BYTES}))").rows == [(MAX_VALUE_BYTES,)]
        with pytest.raises(DatabaseError, match=f"the limit is {MAX_VALUE_BYTES} bytes.*select fewer or shorter"):
            database.run_select(f"SELECT length(hex(zeroblob({MAX_VALUE_BYTES})))")


def test_long_like_patterns_are_refused_with_the_limit(shop: Path) -> None:
    with ReadOnlyDatabase(shop) as database:
        assert database.run_select("SELECT count(*) FROM customer WHERE name LIKE '%a%'").rows == [(2,)]
        with pytest.raises(DatabaseError, match=f"at most {MAX_LIKE_PATTERN_BYTES} bytes"):
            database.run_select(f"SELECT name FROM customer WHERE name LIKE '%{'a' * MAX_LIKE_PATTERN_BYTES}%'")


def test_deeply_nested_expressions_get_an_actionable_error(shop: Path) -> None:
    with ReadOnlyDatabase(shop) as database, pytest.raises(DatabaseError, match="fewer levels"):
        database.run_select("SELECT " + "1+" * 1300 + "1")


def test_text_that_is_not_utf8_is_replaced_or_explained(tmp_path: Path, backend: str) -> None:
    path = tmp_path / "latin1.sqlite"
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE person (name TEXT)")
    connection.execute("INSERT INTO person VALUES (CAST(x'4ac3a972f46d65' AS TEXT))")  # "Jér\xf4me"
    connection.commit()
    connection.close()
    with ReadOnlyDatabase(path) as database:
        if backend == "sqlite3":
            assert database.run_select("SELECT name FROM person").rows == [("Jér\ufffdme",)]
        else:  # apsw decodes strictly; the model is told how to see the bytes
            with pytest.raises(DatabaseError, match=r"not valid UTF-8; select hex\(column\)"):
                database.run_select("SELECT name FROM person")
        assert database.run_select("SELECT hex(name) FROM person").rows == [("4AC3A972F46D65",)]


def test_the_backend_in_use_is_named_with_its_sqlite_version() -> None:
    version = tuple(int(part) for part in sqlite_readonly.SQLITE_VERSION.split("."))
    if sqlite_readonly.SQLITE_BACKEND == "apsw":
        assert version >= (3, 54, 0), "apsw must bundle SQLite 3.54 or newer: requirements.txt pins apsw==3.54.1.0"
    else:
        assert sqlite_readonly.SQLITE_VERSION == sqlite3.sqlite_version
