"""Safe, read-only access to a SQLite database, for the agent's tools and for gold queries.

Safety is by construction, not by inspecting SQL text:
- the file is opened with ``mode=ro``, so SQLite itself refuses every write;
- an authorizer allows only reads (SELECT, column reads, functions, recursive CTEs), so ATTACH,
  PRAGMA, temp tables, and ``load_extension`` are refused before they run;
- a progress handler interrupts any statement after a time limit (a real interrupt of the
  running statement, which an async wrapper around a blocking call cannot do);
- SQL text length, string/blob size and the number of fetched rows are bounded.

Every failure surfaces as ``DatabaseError`` (a ``ValueError``) whose message says what to do.
"""

from __future__ import annotations

import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

DEFAULT_TIMEOUT_S = 5.0
MAX_SQL_CHARS = 4_000
# Bounds the size of any one string or blob SQLite will build (e.g. group_concat over a huge join).
MAX_VALUE_BYTES = 1_000_000
# How many SQLite virtual-machine instructions run between two checks of the clock.
_PROGRESS_CHECK_INTERVAL = 10_000

_ALLOWED_QUERY_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE}
_FORBIDDEN_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"}
# Introspection (describe, table lists) needs these read-only pragmas; the model's SQL never gets them.
_ALLOWED_INTROSPECTION_PRAGMAS = {"table_info", "foreign_key_list"}


class DatabaseError(ValueError):
    """A query or database problem, with a message a person or a model can act on."""


@dataclass(frozen=True)
class QueryResult:
    """Rows of one SELECT: column names, at most ``max_rows`` rows, and whether more existed."""

    columns: list[str]
    rows: list[tuple]
    truncated: bool


def _authorize_query(action: int, arg1: str | None, arg2: str | None, db_name: str | None, source: str | None) -> int:
    """Authorizer for untrusted SQL: reads only."""
    if action in _ALLOWED_QUERY_ACTIONS:
        return sqlite3.SQLITE_OK
    if action == sqlite3.SQLITE_FUNCTION:
        return sqlite3.SQLITE_DENY if (arg2 or "").lower() in _FORBIDDEN_FUNCTIONS else sqlite3.SQLITE_OK
    return sqlite3.SQLITE_DENY


def _authorize_introspection(
    action: int, arg1: str | None, arg2: str | None, db_name: str | None, source: str | None
) -> int:
    """Authorizer for the project's own schema queries: reads plus two read-only pragmas."""
    if action == sqlite3.SQLITE_PRAGMA:
        # Both pragmas only read, whatever their argument (the table name).
        return sqlite3.SQLITE_OK if (arg1 or "").lower() in _ALLOWED_INTROSPECTION_PRAGMAS else sqlite3.SQLITE_DENY
    return _authorize_query(action, arg1, arg2, db_name, source)


def _decode_text(raw: bytes) -> str:
    # Some real Spider databases hold text that is not valid UTF-8; replacing the bad bytes keeps
    # the value readable instead of failing the whole query.
    return raw.decode("utf-8", errors="replace")


def quote_identifier(name: str) -> str:
    """Quote a table or column name for SQL, so names with spaces or keywords work."""
    return '"' + name.replace('"', '""') + '"'


class ReadOnlyDatabase:
    """One read-only connection to a SQLite file. Use as a context manager, or call ``close()``."""

    def __init__(self, path: str | Path, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> None:
        self.path = Path(path)
        if not self.path.is_file():
            raise DatabaseError(f"database file not found: {self.path}")
        self.timeout_s = timeout_s
        self._deadline = 0.0
        # mode=ro: SQLite refuses all writes to this file, whatever the SQL says.
        self._connection = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=ro", uri=True, check_same_thread=False)
        self._connection.text_factory = _decode_text
        self._connection.setlimit(sqlite3.SQLITE_LIMIT_SQL_LENGTH, MAX_SQL_CHARS * 4)
        self._connection.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, MAX_VALUE_BYTES)
        self._connection.setlimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
        self._connection.set_progress_handler(self._is_past_deadline, _PROGRESS_CHECK_INTERVAL)
        self._table_names: list[str] | None = None

    def __enter__(self) -> ReadOnlyDatabase:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        self._connection.close()

    def _is_past_deadline(self) -> int:
        # A non-zero return makes SQLite abort the running statement with "interrupted".
        return int(time.monotonic() > self._deadline)

    def _execute(self, sql: str, parameters: tuple, max_rows: int | None, *, trusted: bool) -> QueryResult:
        self._connection.set_authorizer(_authorize_introspection if trusted else _authorize_query)
        self._deadline = time.monotonic() + self.timeout_s
        try:
            cursor = self._connection.execute(sql, parameters)
            rows = cursor.fetchall() if max_rows is None else cursor.fetchmany(max_rows + 1)
            columns = [column[0] for column in cursor.description or []]
            cursor.close()
        except (sqlite3.Warning, sqlite3.ProgrammingError) as error:
            # sqlite3 raises these for more than one statement in one call.
            raise DatabaseError(f"SQL error: {error}; send exactly one SELECT statement") from None
        except sqlite3.DataError as error:
            raise DatabaseError(f"a value is too large to return ({error}); select fewer or shorter values") from None
        except sqlite3.Error as error:
            raise DatabaseError(self._explain(error)) from None
        finally:
            self._connection.set_authorizer(None)
        truncated = max_rows is not None and len(rows) > max_rows
        return QueryResult(columns=columns, rows=rows[:max_rows] if truncated else rows, truncated=truncated)

    def _explain(self, error: sqlite3.Error) -> str:
        message = str(error)
        if "interrupted" in message:
            return (
                f"the query ran longer than {self.timeout_s:g} s and was stopped; "
                "add a WHERE clause or a LIMIT, or avoid joining large tables without a condition"
            )
        if "not authorized" in message or "readonly" in message:
            return "only reading is allowed: use a single SELECT (or WITH ... SELECT) statement"
        return f"SQLite error: {message}"

    def run_select(self, sql: str, *, max_rows: int | None = None) -> QueryResult:
        """Run one untrusted read-only statement; ``max_rows=None`` fetches every row."""
        if not sql or not sql.strip():
            raise DatabaseError("the SQL is empty; write one SELECT statement")
        if len(sql) > MAX_SQL_CHARS:
            raise DatabaseError(f"the SQL is {len(sql)} characters long; the limit is {MAX_SQL_CHARS}")
        if "\x00" in sql:
            raise DatabaseError("the SQL contains a NUL character; remove it")
        return self._execute(sql, (), max_rows, trusted=False)

    def table_names(self) -> list[str]:
        """User tables in the order SQLite stores them (sqlite_ internals left out)."""
        if self._table_names is None:
            result = self._execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY rowid",
                (),
                None,
                trusted=True,
            )
            self._table_names = [row[0] for row in result.rows]
        return self._table_names

    def resolve_table(self, name: str) -> str:
        """The stored spelling of a table name given in any case, or an error listing valid tables."""
        cleaned = name.strip().strip("`\"'[]") if isinstance(name, str) else ""
        by_lower = {table.lower(): table for table in self.table_names()}
        if cleaned.lower() not in by_lower:
            shown = cleaned if len(cleaned) <= 60 else cleaned[:60] + "..."
            raise DatabaseError(f"no table {shown!r}; tables are: {', '.join(self.table_names())}")
        return by_lower[cleaned.lower()]

    def columns(self, table: str) -> list[tuple[str, str]]:
        """(name, declared type) of each column of a table, as SQLite stores them."""
        result = self._execute(f"PRAGMA table_info({quote_identifier(table)})", (), None, trusted=True)
        return [(row[1], row[2] or "") for row in result.rows]

    def foreign_keys(self, table: str) -> list[tuple[str, str, str]]:
        """(column, referenced table, referenced column) for each foreign key of a table."""
        result = self._execute(f"PRAGMA foreign_key_list({quote_identifier(table)})", (), None, trusted=True)
        return [(row[3], row[2], row[4] or "") for row in result.rows]

    def row_count(self, table: str) -> int:
        result = self._execute(f"SELECT count(*) FROM {quote_identifier(table)}", (), None, trusted=True)
        return int(result.rows[0][0])

    def sample_rows(self, table: str, limit: int) -> QueryResult:
        return self._execute(f"SELECT * FROM {quote_identifier(table)} LIMIT ?", (limit,), None, trusted=True)
