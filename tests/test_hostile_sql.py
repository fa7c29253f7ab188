"""Hostile SQL cannot hold a tool call past its time limit, change a database, or leave the model without advice.

The progress handler stops long statements, but SQLite consults it only between instructions, so
one costly function call, a straight run of them, or the compiling of a statement can outlast it.
These tests send the families of SQL a model could write to do that (huge printf widths and blobs,
string functions that are quadratic in long values, long LIKE/GLOB patterns, runaway CTEs and
joins, deep nesting), then seeded random mixtures of them through the environment's tools, and
check the safety bound itself: every call returns, or raises a ValueError that says what to do,
within the time limit plus SLACK_S, and the database file stays byte for byte the same.
"""

from __future__ import annotations

import functools
import hashlib
import random
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import sqlite_readonly
from agent_env import SQLEnv
from sqlite_readonly import DatabaseError, ReadOnlyDatabase

TIMEOUT_S = 0.25
# The bound under test is TIMEOUT_S + SLACK_S. The worst overrun measured on a 2-core machine is a
# straight run of ~380 trim(4 KB, 280 characters) calls, which no progress handler can split:
# 0.35 s when idle, up to 0.75 s at a load average of 5. 2 s leaves room for a busier machine and
# stays far below what an unbounded call takes (printf's width: 10-19 s; a quadratic call on the
# 1 MB values allowed before: 6 s to minutes).
SLACK_S = 2.0
# Every refusal tells the model what to do instead: these are the instructions our errors give, and
# SQLite's own diagnoses that name the one thing to change.
ADVICE = re.compile(
    r"add a WHERE clause|select fewer or shorter values|use a shorter pattern|use fewer levels|write a simpler"
    r"|send exactly one SELECT|only reading is allowed|is not available here|select hex\(column\)|tables are: "
    r"|SQLite error: (no such (function|column|table)|near \S+: syntax error)"
)


@pytest.fixture(params=["apsw", "sqlite3"])
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test through apsw's SQLite and through the standard library's (the fallback).

    A copy of test_sqlite_readonly's, written against the module's stable API only, so that this
    file also runs (and shows the time bound failing) against the module before apsw.
    """
    if request.param == "apsw" and getattr(sqlite_readonly, "apsw", None) is None:
        pytest.skip("apsw is not installed: pip install -r requirements.txt")
    if request.param == "sqlite3":
        monkeypatch.setattr(sqlite_readonly, "apsw", None, raising=False)
    return request.param


def file_digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def builtin_databases(builtin_data_dir: Path) -> list[Path]:
    paths = sorted((builtin_data_dir / "database").glob("*/*.sqlite"))
    assert paths, f"no built-in databases under {builtin_data_dir}: run scripts/make_builtin_data.py"
    return paths


def timed_call(call: Callable[[], object]) -> tuple[float, object | ValueError]:
    """Seconds the call took, and its result or the ValueError it raised (anything else escapes)."""
    start = time.monotonic()
    try:
        outcome: object | ValueError = call()
    except ValueError as error:
        outcome = error
    return time.monotonic() - start, outcome


def assert_bounded(seconds: float, outcome: object, sql: str, timeout_s: float = TIMEOUT_S) -> None:
    shown = sql if len(sql) <= 160 else sql[:160] + "..."
    assert seconds <= timeout_s + SLACK_S, f"took {seconds:.2f} s (bound {timeout_s + SLACK_S:g} s): {shown}"
    if isinstance(outcome, ValueError):
        assert ADVICE.search(str(outcome)), f"error without advice: {outcome!s} for {shown}"


# --- the families ------------------------------------------------------------------------------

_NUMBERS = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n LIMIT 100000), "
# Two 4 KB-ish values: s is ~4,000 zeros, t a pattern or character set built for the worst case.
_ZEROS = "a(s) AS MATERIALIZED (SELECT hex(zeroblob(1990)))"
_TRIM_SET = "b(t) AS MATERIALIZED (SELECT replace(hex(zeroblob(140)), '0', '1') || '0')"
_NEEDLE = "b(t) AS MATERIALIZED (SELECT hex(zeroblob(995)) || '1')"
_LIKE_PATTERN = "b(t) AS MATERIALIZED (SELECT '%' || hex(zeroblob(48)) || '1')"
_GLOB_CLASS = "b(t) AS MATERIALIZED (SELECT '*[' || replace(hex(zeroblob(48)), '0', '1') || ']1')"
# ~1 MB of zeros, the value size the module allowed before; quadratic calls on it take seconds to minutes.
_MEGABYTE = "WITH x(s) AS (SELECT hex(zeroblob(499999)))"


def straight_run(call: str, values: str) -> str:
    """As many copies of one call as fit in the SQL limit, summed per row over 100,000 rows.

    SQLite checks the progress handler only on jumps, so the copies within one row run unbroken.
    """
    head, tail = f"{_NUMBERS}{_ZEROS}, {values} SELECT sum(", ") FROM a, b, n"
    copies = (sqlite_readonly.MAX_SQL_CHARS - len(head) - len(tail)) // (len(call) + 1)
    return head + "+".join([call] * copies) + tail


def doubling_ctes(levels: int) -> str:
    """CTEs that each read the one before twice: SQLite 3.40 compiles 2**levels copies."""
    ctes = ["c0(x) AS (SELECT 1)"] + [
        f"c{i}(x) AS (SELECT x FROM c{i - 1} UNION ALL SELECT x FROM c{i - 1})" for i in range(1, levels)
    ]
    return "WITH " + ", ".join(ctes) + f" SELECT count(*) FROM c{levels - 1}"


# name -> (SQL, what the answer may be: "rows" or a regex its error must match).
HOSTILE_FAMILIES: dict[str, tuple[str, str]] = {
    "printf_width": ("SELECT printf('%.*c', 2000000000, 'x')", "is not available"),
    "format_width": ("SELECT format('%.*c', 2000000000, 'x')", "is not available"),
    "printf_padding": ("SELECT length(printf('%2000000000d', 1))", "is not available"),
    "zeroblob": ("SELECT zeroblob(2000000000)", "select fewer"),
    "randomblob": ("SELECT length(randomblob(2000000000))", "select fewer"),
    "replace_blowup": (
        "SELECT length(replace(replace(replace(hex(zeroblob(1000)), '0', '0000000000'), '0', '00000'), '0', 'xy'))",
        "select fewer",
    ),
    "upper_of_a_megabyte": (f"{_MEGABYTE} SELECT length(upper(s)) FROM x", "select fewer"),
    "substr_of_char": ("SELECT length(substr(char(" + ", ".join(["1114111"] * 120) + "), 1, 2000000000))", "rows"),
    "group_concat_over_a_join": (
        (
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) "
            "SELECT length(group_concat(hex(randomblob(400)))) FROM n"
        ),
        "select fewer|add a WHERE",
    ),
    "endless_recursive_cte": (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT count(*) FROM n",
        "add a WHERE",
    ),
    "cartesian_product": (
        "SELECT count(*) FROM " + ", ".join(f"sqlite_master AS m{i}" for i in range(16)),
        "rows|add a WHERE",
    ),
    "endless_sort": (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n ORDER BY random() LIMIT 1",
        "add a WHERE",
    ),
    "nested_parentheses": ("SELECT " + "(" * 1500 + "1" + ")" * 1500, "rows|fewer levels"),
    "nested_operators": ("SELECT " + "1+" * 1300 + "1", "fewer levels"),
    "nested_calls": ("SELECT " + "abs(" * 790 + "1" + ")" * 790, "rows|fewer levels"),
    "deep_json": ("SELECT json_valid('" + "[" * 1900 + "]" * 1900 + "')", "rows"),
    "like_a_megabyte": (f"{_MEGABYTE} SELECT s LIKE '%' || substr(s, 1, 40000) || '1' FROM x", "select fewer"),
    "glob_class_a_megabyte": (f"{_MEGABYTE} SELECT s GLOB '*[' || substr(s, 1, 40000) || ']1' FROM x", "select fewer"),
    "instr_a_megabyte": (f"{_MEGABYTE} SELECT instr(s, substr(s, 1, 400000) || '1') FROM x", "select fewer"),
    "long_like_pattern": ("SELECT 'a' LIKE '%" + "_%" * 200 + "'", "shorter pattern"),
    "straight_run_of_instr": (straight_run("instr(s,t)", _NEEDLE), "add a WHERE"),
    "straight_run_of_replace": (straight_run("length(replace(s,t,''))", _NEEDLE), "add a WHERE"),
    "straight_run_of_trim": (straight_run("length(trim(s,t))", _TRIM_SET), "add a WHERE"),
    "straight_run_of_rtrim": (straight_run("length(rtrim(s,t))", _TRIM_SET), "add a WHERE"),
    "straight_run_of_like": (straight_run("(s LIKE t)", _LIKE_PATTERN), "add a WHERE"),
    "straight_run_of_glob_class": (straight_run("(s GLOB t)", _GLOB_CLASS), "add a WHERE"),
    "median_of_endless_rows": (
        "WITH RECURSIVE n(x) AS (SELECT random() UNION ALL SELECT random() FROM n) SELECT median(x) FROM n",
        "is not available|no such function",
    ),
}


@pytest.mark.parametrize("family", list(HOSTILE_FAMILIES))
def test_hostile_family_ends_in_time_with_advice(builtin_data_dir: Path, backend: str, family: str) -> None:
    sql, expected = HOSTILE_FAMILIES[family]
    assert len(sql) <= sqlite_readonly.MAX_SQL_CHARS, f"{family} is {len(sql)} characters: shorten the test SQL"
    path = builtin_databases(builtin_data_dir)[0]
    before = file_digest(path)
    with ReadOnlyDatabase(path, timeout_s=TIMEOUT_S) as database:
        seconds, outcome = timed_call(lambda: database.run_select(sql, max_rows=5))
        assert_bounded(seconds, outcome, sql)
        if isinstance(outcome, ValueError):
            assert isinstance(outcome, DatabaseError)
            assert re.search(expected, str(outcome)), f"{family}: unexpected error {outcome}"
        else:
            assert "rows" in expected.split("|"), f"{family} returned rows; expected an error matching {expected!r}"
        # The connection stays usable after whatever happened.
        assert database.run_select("SELECT 1").rows == [(1,)]
    assert file_digest(path) == before


def test_printf_width_is_refused_at_once_with_the_default_limit(builtin_data_dir: Path) -> None:
    # Python 3.11's SQLite spends ~8-10 s in this one call, past the default 5 s limit.
    path = builtin_databases(builtin_data_dir)[0]
    with ReadOnlyDatabase(path) as database:
        seconds, outcome = timed_call(lambda: database.run_select("SELECT printf('%.*c', 2000000000, 'x')"))
    assert_bounded(seconds, outcome, "printf", timeout_s=sqlite_readonly.DEFAULT_TIMEOUT_S)
    assert isinstance(outcome, DatabaseError) and "is not available here" in str(outcome)


def test_ctes_that_double_are_refused_before_they_compile(builtin_data_dir: Path, backend: str) -> None:
    if backend == "sqlite3":
        pytest.skip("known gap of the fallback: SQLite 3.40 compiles 2**levels copies, in time and memory")
    path = builtin_databases(builtin_data_dir)[0]
    sql = doubling_ctes(24)  # 3.40 would need minutes and tens of GB to compile this
    with ReadOnlyDatabase(path, timeout_s=TIMEOUT_S) as database:
        seconds, outcome = timed_call(lambda: database.run_select(sql))
    assert_bounded(seconds, outcome, sql)
    assert isinstance(outcome, DatabaseError) and "nested too deeply" in str(outcome)


# --- random mixtures, through the environment's tools ---------------------------------------------

_SIZES = [1, 100, 1000, 1990, 1990, 2100, 2 * 10**9]
_VALUES = [
    "hex(zeroblob({size}))",
    "hex(randomblob({size}))",
    "replace(hex(zeroblob({size})), '0', 'é')",
    "upper(hex(randomblob({size})))",
    "substr(hex(zeroblob({size})), 2) || '1'",
    "(SELECT group_concat(name) FROM sqlite_master)",
    "'%' || hex(zeroblob({size})) || '_'",
]
_CALLS = [
    "instr(s, t)",
    "length(replace(s, t, ''))",
    "length(trim(s, t))",
    "length(ltrim(s, t))",
    "length(rtrim(s, t))",
    "(s LIKE t)",
    "(s GLOB '*' || t || '1')",
    "length(upper(s) || lower(t))",
    "length(substr(s, 2, {size}))",
    "length(quote(s))",
    "json_valid(s)",
    "unicode(s)",
    "length(zeroblob({size}))",
    "length(printf('%.*c', {size}, 'x'))",
]
_ROWS = ["n", "n AS n1, n AS n2", "sqlite_master AS m1, sqlite_master AS m2, n", "{table} AS r1, {table} AS r2, n"]
_LIMITS = ["", " LIMIT 10", " LIMIT 1000", " LIMIT 100000"]


def random_hostile_sql(rng: random.Random, table: str) -> str:
    """One query mixing a long value, costly calls repeated to the SQL limit, and many rows."""

    def pick(options: list[str]) -> str:
        return rng.choice(options).format(size=rng.choice(_SIZES), table=table)

    # Either one expression (inside an aggregate or not) or a list of columns.
    operator = rng.choice(["+", " || ", " AND ", " OR ", ", "])
    aggregate = "" if operator == ", " else rng.choice(["sum", "max", "count", "group_concat", ""]) + "("
    head = (
        f"WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n{rng.choice(_LIMITS)}), "
        f"a(s) AS MATERIALIZED (SELECT {pick(_VALUES)}), b(t) AS MATERIALIZED (SELECT {pick(_VALUES)}) "
        f"SELECT {aggregate}"
    )
    tail = f"{')' if aggregate else ''} FROM a, b, {pick(_ROWS)}"
    calls = [pick(_CALLS) for _ in range(rng.randint(1, 4))]
    body: list[str] = []
    while len(head) + len(tail) + len(operator.join(body)) + 60 < sqlite_readonly.MAX_SQL_CHARS and len(body) < 400:
        body.append(calls[len(body) % len(calls)])
    return head + operator.join(body) + tail


def episodes(env: SQLEnv, paths: list[Path]) -> Iterator[tuple[Path, str]]:
    """Start one episode per database; yield it with one of its tables."""
    for path in paths:
        env.reset(db_path=str(path), question="How many tables?", gold_sql="SELECT count(*) FROM sqlite_master")
        assert env._database is not None
        yield path, env._database.table_names()[0]


@pytest.mark.parametrize("seed", [0, 1])
def test_random_hostile_queries_end_in_time_through_the_tools(builtin_data_dir: Path, backend: str, seed: int) -> None:
    paths = builtin_databases(builtin_data_dir)
    before = {path: file_digest(path) for path in paths}
    rng = random.Random(seed)
    env = SQLEnv(query_timeout_s=TIMEOUT_S, step_budget=1_000)
    for _, table in episodes(env, paths):
        for _ in range(2):
            sql = random_hostile_sql(rng, sqlite_readonly.quote_identifier(table))
            seconds, outcome = timed_call(functools.partial(env.query, sql))
            assert_bounded(seconds, outcome, sql)
        for hostile_name in [table + "; DROP TABLE " + table, "x" * 5_000, "sqlite_master"]:
            seconds, outcome = timed_call(functools.partial(env.describe, hostile_name))
            assert_bounded(seconds, outcome, hostile_name)
    assert {path: file_digest(path) for path in paths} == before


@pytest.mark.spider
def test_hostile_queries_on_a_real_spider_database(spider_path: Path) -> None:
    # The largest Spider database, so joins of its tables are real work.
    path = max((spider_path / "database").glob("*/*.sqlite"), key=lambda candidate: candidate.stat().st_size)
    before = file_digest(path)
    rng = random.Random(7)
    with ReadOnlyDatabase(path, timeout_s=TIMEOUT_S) as database:
        tables = database.table_names()
        joins = [
            f"SELECT count(*) FROM {', '.join(sqlite_readonly.quote_identifier(table) for table in tables * 3)}",
            (
                f"SELECT group_concat(hex(randomblob(100))) FROM {sqlite_readonly.quote_identifier(tables[0])} AS x, "
                f"{sqlite_readonly.quote_identifier(tables[-1])} AS y"
            ),
        ]
        queries = [HOSTILE_FAMILIES[name][0] for name in ("printf_width", "straight_run_of_trim", "like_a_megabyte")]
        queries += joins + [random_hostile_sql(rng, sqlite_readonly.quote_identifier(table)) for table in tables[:4]]
        for sql in queries:
            seconds, outcome = timed_call(functools.partial(database.run_select, sql, max_rows=20))
            assert_bounded(seconds, outcome, sql)
    assert file_digest(path) == before
