"""Safe, read-only access to a SQLite database, for the agent's tools and for gold queries.

Safety is by construction, not by inspecting SQL text:
- the file is opened with ``mode=ro``, so SQLite itself refuses every write;
- an authorizer allows only reads (SELECT, column reads, functions, recursive CTEs), so ATTACH,
  PRAGMA, temp tables, and ``load_extension`` are refused before they run;
- a progress handler interrupts any statement after a time limit (a real interrupt of the
  running statement, which an async wrapper around a blocking call cannot do);
- SQL text length, string/blob size and the number of fetched rows are bounded.

The progress handler runs only between SQLite's virtual-machine instructions (and SQLite looks at
it only on jumps), so it cannot stop one function call, or a straight run of calls, or the
compiling of a statement. What bounds those is that no such step can do much work:
- SQLite comes from ``apsw`` (pinned in requirements.txt), which bundles a recent SQLite (3.54). It
  refuses a huge printf width at once and CTEs nested deeper than it can expand cheaply; the
  SQLite 3.40 of Python 3.11 takes ~8 s for ``printf('%.*c', 2000000000, 'x')`` and exponential
  time and memory to compile a chain of CTEs that each read the previous one twice;
- values are at most MAX_VALUE_BYTES and LIKE/GLOB patterns at most MAX_LIKE_PATTERN_BYTES, so a
  function whose cost is quadratic in its arguments (instr, replace, trim with a character set,
  LIKE, GLOB) takes about a millisecond a call at worst, and MAX_SQL_CHARS bounds how many calls
  one straight run of instructions can hold;
- the functions that can run unbounded in one call are refused, with what to write instead.
Without apsw, the standard library's sqlite3 runs with the same limits and refusals; only the
CTE expansion is then unbounded (``SQLITE_BACKEND`` says which one is in use).

Every failure surfaces as ``DatabaseError`` (a ``ValueError``) whose message says what to do.
"""

from __future__ import annotations

import itertools
import re
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any

try:
    import apsw
except ImportError:  # requirements.txt pins apsw; without it the standard library's SQLite is used
    apsw = None

SQLITE_BACKEND = "sqlite3" if apsw is None else "apsw"
SQLITE_VERSION = sqlite3.sqlite_version if apsw is None else apsw.sqlite_lib_version()

DEFAULT_TIMEOUT_S = 5.0
MAX_SQL_CHARS = 4_000
# Bounds any one string, blob or row that SQLite builds or reads. Spider's longest stored value
# is 213 bytes and the model sees 1,200 characters of a result; at this size the costliest
# function call (trim with a character set, quadratic in its arguments) takes about 1 ms.
MAX_VALUE_BYTES = 4_000
# A LIKE or GLOB costs up to value length x pattern length; Spider's longest pattern is 21 bytes.
MAX_LIKE_PATTERN_BYTES = 100
# How many SQLite virtual-machine instructions run between two checks of the clock; measured,
# checking every 1,000 costs ~2% on a busy query, while the loop between checks stays short.
_PROGRESS_CHECK_INTERVAL = 1_000

# The limit ids are SQLite's own numbers, the same in apsw and in the standard library.
_LIMITS = {
    sqlite3.SQLITE_LIMIT_SQL_LENGTH: MAX_SQL_CHARS * 4,
    sqlite3.SQLITE_LIMIT_LENGTH: MAX_VALUE_BYTES,
    sqlite3.SQLITE_LIMIT_LIKE_PATTERN_LENGTH: MAX_LIKE_PATTERN_BYTES,
    sqlite3.SQLITE_LIMIT_ATTACHED: 0,
}
_ALLOWED_QUERY_ACTIONS = {sqlite3.SQLITE_SELECT, sqlite3.SQLITE_READ, sqlite3.SQLITE_RECURSIVE}
_FORBIDDEN_FUNCTIONS = {"load_extension", "readfile", "writefile", "edit", "fts3_tokenizer"}
_INSTEAD_OF_PRINTF = "join text with || and round numbers with round(x, digits)"
_INSTEAD_OF_MEDIAN = "sort and take the middle row: ORDER BY x LIMIT 1 OFFSET (SELECT count(*) / 2 FROM ...)"
# Functions that can run for seconds inside one call, where no progress handler can stop them,
# each with what the model can write instead: on SQLite 3.40 (Python 3.11's) printf/format loop
# over their whole width (~8 s for 2e9) even past the length limit; median/percentile sort every
# row in one final step. They are refused on every backend, so a query fares alike on every machine.
_UNBOUNDED_FUNCTIONS = {
    "printf": _INSTEAD_OF_PRINTF,
    "format": _INSTEAD_OF_PRINTF,
    "median": _INSTEAD_OF_MEDIAN,
    "percentile": _INSTEAD_OF_MEDIAN,
    "percentile_cont": _INSTEAD_OF_MEDIAN,
    "percentile_disc": _INSTEAD_OF_MEDIAN,
}
# Introspection (describe, table lists) needs these read-only pragmas; the model's SQL never gets them.
_ALLOWED_INTROSPECTION_PRAGMAS = {"table_info", "foreign_key_list"}
# What may follow the one statement: whitespace, semicolons and comments (an unclosed /* runs to the end).
_IGNORABLE_SQL = re.compile(r"(?:\s|;|--[^\n]*|/\*.*?(?:\*/|\Z))*", re.DOTALL)
_ONE_STATEMENT = "send exactly one SELECT statement"

Authorizer = Callable[[int, "str | None", "str | None", "str | None", "str | None"], int]


class DatabaseError(ValueError):
    """A query or database problem, with a message a person or a model can act on."""


@dataclass(frozen=True)
class QueryResult:
    """Rows of one SELECT: column names, at most ``max_rows`` rows, and whether more existed."""

    columns: list[str]
    rows: list[tuple]
    truncated: bool


def _decode_text(raw: bytes) -> str:
    # Some real Spider databases hold text that is not valid UTF-8; replacing the bad bytes keeps
    # the value readable instead of failing the whole query (apsw has no such hook: see _explain).
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
        self._refused_function: str | None = None
        # mode=ro: SQLite refuses all writes to this file, whatever the SQL says.
        uri = f"{self.path.resolve().as_uri()}?mode=ro"
        if apsw is None:
            self._connection: Any = sqlite3.connect(uri, uri=True, check_same_thread=False)
            self._connection.text_factory = _decode_text
            set_limit = self._connection.setlimit
        else:
            self._connection = apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
            set_limit = self._connection.limit
        for limit, value in _LIMITS.items():
            set_limit(limit, value)
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

    def _authorize_query(
        self, action: int, arg1: str | None, arg2: str | None, db_name: str | None, source: str | None
    ) -> int:
        """Authorizer for untrusted SQL: reads only, and no function that can run unbounded."""
        if action in _ALLOWED_QUERY_ACTIONS:
            return sqlite3.SQLITE_OK
        if action == sqlite3.SQLITE_FUNCTION:
            name = (arg2 or "").lower()
            if name in _UNBOUNDED_FUNCTIONS:
                self._refused_function = name  # so that _explain can say what to write instead
                return sqlite3.SQLITE_DENY
            return sqlite3.SQLITE_DENY if name in _FORBIDDEN_FUNCTIONS else sqlite3.SQLITE_OK
        return sqlite3.SQLITE_DENY

    def _authorize_introspection(
        self, action: int, arg1: str | None, arg2: str | None, db_name: str | None, source: str | None
    ) -> int:
        """Authorizer for the project's own schema queries: reads plus two read-only pragmas."""
        if action == sqlite3.SQLITE_PRAGMA:
            # Both pragmas only read, whatever their argument (the table name).
            return sqlite3.SQLITE_OK if (arg1 or "").lower() in _ALLOWED_INTROSPECTION_PRAGMAS else sqlite3.SQLITE_DENY
        return self._authorize_query(action, arg1, arg2, db_name, source)

    def _execute(self, sql: str, parameters: tuple, max_rows: int | None, *, trusted: bool) -> QueryResult:
        authorizer = self._authorize_introspection if trusted else self._authorize_query
        run = _run_with_sqlite3 if apsw is None else _run_with_apsw
        self._refused_function = None
        self._deadline = time.monotonic() + self.timeout_s
        try:
            columns, rows = run(self._connection, authorizer, sql, parameters, max_rows)
        except (sqlite3.Warning, sqlite3.ProgrammingError) as error:
            # The standard library raises these for more than one statement in one call.
            raise DatabaseError(f"SQL error: {error}; {_ONE_STATEMENT}") from None
        except (*_sqlite_errors(), MemoryError, UnicodeDecodeError) as error:
            raise DatabaseError(self._explain(error)) from None
        truncated = max_rows is not None and len(rows) > max_rows
        return QueryResult(columns=columns, rows=rows[:max_rows] if truncated else rows, truncated=truncated)

    def _explain(self, error: Exception) -> str:
        message = str(error)
        if self._refused_function is not None:
            return (
                f"{self._refused_function}() is not available here (one call of it can run too long to "
                f"stop); {_UNBOUNDED_FUNCTIONS[self._refused_function]}"
            )
        if "interrupted" in message:
            return (
                f"the query ran longer than {self.timeout_s:g} s and was stopped; "
                "add a WHERE clause or a LIMIT, or avoid joining large tables without a condition"
            )
        if "too big" in message:
            return (
                f"a value is too large to return ({message}; the limit is {MAX_VALUE_BYTES} bytes); "
                "select fewer or shorter values"
            )
        if "pattern too complex" in message:
            return f"a LIKE or GLOB pattern may be at most {MAX_LIKE_PATTERN_BYTES} bytes long; use a shorter pattern"
        if "nested too deep" in message:
            return "the CTEs or subqueries are nested too deeply; use fewer levels of WITH or of subqueries"
        if "parser stack overflow" in message or "tree is too large" in message:
            return "the expression is nested too deeply; use fewer levels of parentheses or of function calls"
        if isinstance(error, MemoryError) or "out of memory" in message:
            return "the query needs too much memory to prepare; write a simpler query"
        if isinstance(error, UnicodeDecodeError):
            return "a text value in the result is not valid UTF-8; select hex(column) to see its bytes"
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


# --- the two backends: the same statement run through apsw or through the standard library --------


def _sqlite_errors() -> tuple[type[Exception], ...]:
    """What the backend in use raises for SQLite's errors (it runs out of memory as MemoryError)."""
    return (sqlite3.Error,) if apsw is None else (sqlite3.Error, apsw.Error)


def _run_with_sqlite3(
    connection: sqlite3.Connection, authorizer: Authorizer, sql: str, parameters: tuple, max_rows: int | None
) -> tuple[list[str], list[tuple]]:
    """Column names and rows (at most max_rows + 1) of one statement, through the standard library."""
    connection.set_authorizer(authorizer)
    cursor = connection.cursor()
    try:
        cursor.execute(sql, parameters)
        rows = cursor.fetchall() if max_rows is None else cursor.fetchmany(max_rows + 1)
        columns = [column[0] for column in cursor.description or []]
    finally:
        cursor.close()
        connection.set_authorizer(None)
    return columns, rows


def _run_with_apsw(
    connection: Any, authorizer: Authorizer, sql: str, parameters: tuple, max_rows: int | None
) -> tuple[list[str], list[tuple]]:
    """Column names and rows (at most max_rows + 1) of one statement, through apsw."""
    columns: list[str] = []

    def check_statement(cursor: Any, statement: str, bindings: Any) -> bool:
        # apsw runs each statement of the text in turn and calls this before each; the first must
        # be the whole text but for comments. The column names are only readable before it runs.
        if _IGNORABLE_SQL.fullmatch(statement):
            return True
        if not (sql.startswith(statement) and _IGNORABLE_SQL.fullmatch(sql[len(statement) :])):
            raise DatabaseError(f"the SQL holds more than one statement; {_ONE_STATEMENT}")
        columns.extend(name for name, _ in cursor.get_description())
        return True

    connection.authorizer = authorizer
    cursor = connection.cursor()
    cursor.exec_trace = check_statement
    try:
        cursor.execute(sql, parameters)
        rows = list(cursor if max_rows is None else itertools.islice(cursor, max_rows + 1))
    finally:
        cursor.close(True)  # force: also when a statement failed or rows are left unread
        connection.authorizer = None
    return columns, rows
